//===- LinearAttentionImporter.cpp - LinearAttention unrolled over time ---===//
//
// LinearAttention (opset 27: linear attention, Mamba-2/GLA-style gating,
// DeltaNet and Gated DeltaNet) is imported as its definition's recurrence,
// unrolled over the (static) sequence as LSTM's is: a state S of [batch,
// kv heads, d_k, d_v] in FP32 and, per token t,
//   S = exp(g_t) * S                              gated rules
//   v_t = beta_t * (v_t - k_t S)                  delta rules
//   S = S + k_t^T v_t
//   o_t = scale * q_t S                           each group of q heads
//                                                 reading its kv head's S
// as mpc ops, so autodiff, the precision passes and every backend handle
// it with no rule of its own. The tokens are processed in order, which
// suits decoding (one token) and short prefills; a chunked form for long
// sequences is not built. Outputs in Q's type, present_state in
// past_state's (Q's without one), as onnx's reference.
//
//===----------------------------------------------------------------------===//

#include "frontend/Composer.h"
#include "frontend/ImporterImpl.h"

#include <cmath>

namespace mlir::mpc::importer {
namespace {

/// (B, T, H * D) -> (B, H, T, D) in FP32.
Value toHeads(Composer &m, Value x, int64_t heads) {
  return m.cast(m.transpose(m.reshape(x, {0, 0, heads, -1}), {0, 2, 1, 3}),
                m.c.b.getF32Type());
}

/// What the chunked form reads: heads in FP32, (B, H, T, d) (Q's H the q
/// heads), g the per-head log decays (B, Hkv, T, 1) or null, beta (B,
/// Hkv or 1, T, 1) or null, the state (B, Hkv, dk, dv).
struct Recurrence {
  Value q, k, v, g, beta, state;
  int64_t batch, steps, kvHeads, group, dk, dv;
  double scale;
};

/// A (B, H, T, d) tensor padded with zeros to `padded` tokens and viewed as
/// (B, H, chunks, C, d).
Value chunks(Composer &m, Value x, int64_t padded, int64_t chunk) {
  auto t = typeOf(x);
  SmallVector<int64_t> pads(8, 0);
  pads[6] = padded - t.getDimSize(2);
  if (pads[6])
    x = m.op("mpc.pad", {x, m.scalar(t.getElementType(), 0.0)},
             {m.c.named("pads", m.c.b.getDenseI64ArrayAttr(pads))});
  return m.reshape(x, {t.getDimSize(0), t.getDimSize(1), padded / chunk, chunk,
                       t.getDimSize(3)});
}

/// The recurrence over chunks of C tokens (FLA's chunked form, for decays
/// per head): within a chunk, with b the cumulative log decay from its
/// start, A = exp(b), D[t, i] = exp(b_t - b_i) and S0 the state before it,
///   u = (I + L)^-1 (beta v) - (I + L)^-1 (beta A k) S0    delta rules
///       (L[t, i] = beta_t D[t, i] k_t.k_i for i < t), else u = v
///   o = scale ((A q) S0 + (D o (q k^T), i <= t) u)
///   S = A_C S0 + (k exp(b_C - b))^T u
/// All but the three lines that read S0 are computed for every chunk at
/// once, (I + L)^-1 applied by forward substitution. Returns the output
/// (B, Hq, T, dv) and the last state.
std::pair<Value, Value> chunked(Composer &m, const Recurrence &r,
                                int64_t chunk) {
  NodeContext &c = m.c;
  Type f32 = c.b.getF32Type();
  int64_t n = (r.steps + chunk - 1) / chunk, padded = n * chunk;
  auto named = [&](StringRef name, Attribute a) { return c.named(name, a); };
  auto matmul = [&](Value a, Value b) { return m.op("mpc.matmul", {a, b}); };
  auto swap = [&](Value x) { // the last two axes
    SmallVector<int64_t> perm;
    for (int64_t i = 0; i < typeOf(x).getRank(); ++i)
      perm.push_back(i);
    std::swap(perm[perm.size() - 1], perm[perm.size() - 2]);
    return m.transpose(x, perm);
  };
  Value k = chunks(m, r.k, padded, chunk), v = chunks(m, r.v, padded, chunk);
  // b: (B, H, N, C, 1), cumulative within each chunk; zeros ungated.
  Value b = r.g ? m.op("mpc.cum_sum", {chunks(m, r.g, padded, chunk)},
                       {named("axis", c.b.getI64IntegerAttr(3))})
                : m.splat(f32, {r.batch, r.kvHeads, n, chunk, 1}, 0.0);
  Value a = m.op("mpc.exp", {b});
  SmallVector<bool> lowerStrict, lower;
  for (int64_t t = 0; t < chunk; ++t)
    for (int64_t i = 0; i < chunk; ++i) {
      lowerStrict.push_back(i < t);
      lower.push_back(i <= t);
    }
  auto mask = [&](ArrayRef<bool> bits) {
    return m.constant(DenseElementsAttr::get(
        RankedTensorType::get({chunk, chunk}, c.b.getI1Type()), bits));
  };
  Value ninf = m.scalar(f32, -INFINITY);
  Value diff = m.bin("mpc.sub", b, swap(b)); // b_t - b_i: (B, H, N, C, C)
  Value dLower = m.op("mpc.exp", {m.where(mask(lower), diff, ninf)});
  Value u = v, w;
  if (r.beta) {
    Value beta = chunks(m, r.beta, padded, chunk);
    Value dStrict = m.op("mpc.exp", {m.where(mask(lowerStrict), diff, ninf)});
    Value l =
        m.bin("mpc.mul", beta, m.bin("mpc.mul", dStrict, matmul(k, swap(k))));
    // (I + L) [u w] = [beta v, beta A k] by forward substitution, a row of
    // every chunk at a time (C steps whatever the length; the product form
    // of the inverse lost 1e-4 to cancellation where keys are not unit).
    Value rhs = m.concat({m.bin("mpc.mul", beta, v),
                          m.bin("mpc.mul", beta, m.bin("mpc.mul", a, k))},
                         4);
    Value solved;
    for (int64_t t = 0; t < chunk && !c.failed(); ++t) {
      Value row = m.slice(rhs, 3, t, t + 1);
      if (t)
        row = m.bin("mpc.sub", row,
                    matmul(m.slice(m.slice(l, 3, t, t + 1), 4, 0, t), solved));
      solved = t ? m.concat({solved, row}, 3) : row;
    }
    u = m.slice(solved, 4, 0, r.dv);
    w = m.slice(solved, 4, r.dv, r.dv + r.dk);
  }
  // q as (B, Hkv, N, group, C, dk); its scores with k, masked and decayed.
  Value q =
      m.transpose(m.reshape(chunks(m, r.q, padded, chunk),
                            {r.batch, r.kvHeads, r.group, n, chunk, r.dk}),
                  {0, 1, 3, 2, 4, 5});
  Value k6 = m.unsqueeze(k, {3});
  Value p = m.bin("mpc.mul", matmul(q, swap(k6)), m.unsqueeze(dLower, {3}));
  Value aq = m.bin("mpc.mul", m.unsqueeze(a, {3}), q);
  Value bLast = m.slice(b, 3, chunk - 1, chunk); // (B, H, N, 1, 1)
  Value kEnd =
      m.bin("mpc.mul", k, m.op("mpc.exp", {m.bin("mpc.sub", bLast, b)}));
  Value aLast = m.op("mpc.exp", {bLast});
  Value scale = m.scalar(f32, r.scale);
  Value state = r.state;
  SmallVector<Value> outs;
  auto at = [&](Value x, int64_t i) { return m.sliceAt(x, 2, i); }; // chunk i
  for (int64_t i = 0; i < n && !c.failed(); ++i) {
    Value ui =
        r.beta ? m.bin("mpc.sub", at(u, i), matmul(at(w, i), state)) : at(u, i);
    Value s4 = m.unsqueeze(state, {2}); // over the q heads of a group
    Value o = m.bin("mpc.add", matmul(at(aq, i), s4),
                    matmul(at(p, i), m.unsqueeze(ui, {2})));
    outs.push_back(m.bin("mpc.mul", o, scale)); // (B, Hkv, group, C, dv)
    state = m.bin("mpc.add", m.bin("mpc.mul", at(aLast, i), state),
                  matmul(swap(at(kEnd, i)), ui));
  }
  if (c.failed())
    return {};
  Value o = outs.size() == 1 ? outs[0] : m.concat(outs, 3);
  o = m.reshape(m.slice(o, 3, 0, r.steps),
                {r.batch, r.kvHeads * r.group, r.steps, r.dv});
  return {o, state};
}

} // namespace

LogicalResult importLinearAttention(NodeContext &c) {
  if (failed(c.requireInputs(3)) ||
      failed(c.checkAttrs({"chunk_size", "kv_num_heads", "q_num_heads", "scale",
                           "update_rule"})))
    return failure();
  std::string rule = c.getString("update_rule", "gated_delta");
  if (rule != "linear" && rule != "gated" && rule != "delta" &&
      rule != "gated_delta")
    return c.fail("update_rule '" + rule +
                  "' is not linear, gated, delta or gated_delta");
  bool gated = rule == "gated" || rule == "gated_delta";
  bool delta = rule == "delta" || rule == "gated_delta";
  Value q = c.input(0), k = c.input(1), v = c.input(2), past = c.input(3),
        decay = c.input(4), beta = c.input(5);
  if (gated != bool(decay))
    return c.fail("update_rule '" + rule + "' " +
                  (gated ? "needs" : "takes no") + " input decay");
  if (delta != bool(beta))
    return c.fail("update_rule '" + rule + "' " +
                  (delta ? "needs" : "takes no") + " input beta");
  int64_t qHeads = c.getInt("q_num_heads", 0),
          kvHeads = c.getInt("kv_num_heads", 0);
  if (qHeads <= 0 || kvHeads <= 0 || qHeads % kvHeads)
    return c.fail("q_num_heads " + Twine(qHeads) +
                  " must be a positive multiple of kv_num_heads " +
                  Twine(kvHeads));
  Type type = typeOf(q).getElementType();
  if (!llvm::isa<FloatType>(type))
    return c.fail("query must be a float tensor");
  for (Value x : {q, k, v})
    if (typeOf(x).getRank() != 3 || !typeOf(x).hasStaticShape())
      return c.fail("query, key and value must be 3-D (batch, sequence, "
                    "heads * head size) of static shape (bind the batch)");
  int64_t batch = typeOf(q).getDimSize(0), steps = typeOf(q).getDimSize(1);
  int64_t qWidth = typeOf(q).getDimSize(2), kWidth = typeOf(k).getDimSize(2),
          vWidth = typeOf(v).getDimSize(2);
  if (qWidth % qHeads || kWidth % kvHeads || vWidth % kvHeads ||
      qWidth / qHeads != kWidth / kvHeads)
    return c.fail("query's and key's widths must be q_num_heads and "
                  "kv_num_heads heads of one head size, value's kv_num_heads "
                  "heads");
  int64_t dk = kWidth / kvHeads, dv = vWidth / kvHeads,
          group = qHeads / kvHeads;
  Composer m{c};
  Type f32 = c.b.getF32Type();
  Value qh = toHeads(m, q, qHeads), kh = toHeads(m, k, kvHeads),
        vh = toHeads(m, v, kvHeads);
  // g as [B, Hkv, T, dk or 1], beta as [B, Hkv or 1, T, 1].
  Value g, betaT;
  bool perHeadDecay = true;
  if (gated) {
    auto d = typeOf(decay);
    int64_t last = d.getRank() == 3 ? d.getDimSize(2) : -1;
    if (d.getRank() != 3 || (last != kvHeads && last != kvHeads * dk))
      return c.fail("decay must be (batch, sequence, kv_num_heads) or "
                    "(batch, sequence, kv_num_heads * head size)");
    perHeadDecay = last == kvHeads;
    g = toHeads(m, decay, kvHeads);
  }
  if (delta) {
    auto d = typeOf(beta);
    int64_t last = d.getRank() == 3 ? d.getDimSize(2) : -1;
    if (d.getRank() != 3 || (last != kvHeads && last != 1))
      return c.fail("beta must be (batch, sequence, kv_num_heads) or "
                    "(batch, sequence, 1)");
    betaT = toHeads(m, beta, last);
  }
  Type stateType = past ? typeOf(past).getElementType() : type;
  Value state;
  if (past) {
    if (typeOf(past).getShape() != ArrayRef<int64_t>{batch, kvHeads, dk, dv})
      return c.fail("past_state must be (batch, kv_num_heads, head size, "
                    "value head size) = (" +
                    Twine(batch) + ", " + Twine(kvHeads) + ", " + Twine(dk) +
                    ", " + Twine(dv) + ")");
    state = m.cast(past, f32);
  } else {
    state = m.splat(f32, {batch, kvHeads, dk, dv}, 0.0);
  }
  float scaleAttr = c.getFloat("scale", 0.0f);
  double scale = scaleAttr == 0.0f ? 1.0 / std::sqrt((double)dk) : scaleAttr;
  Value scaleC = m.scalar(f32, scale);

  // Chunks of chunk_size tokens (64 by default, fewer for a short prefill)
  // where the decays are per head; token by token for one token (decoding)
  // and for decays per key dimension (GLA's), whose chunked form needs
  // exp(-b) factors that overflow.
  int64_t chunk =
      c.getInt("chunk_size", 0) > 0 ? c.getInt("chunk_size", 0) : 64;
  int64_t pow2 = 1;
  while (pow2 < steps)
    pow2 *= 2;
  chunk = std::min(chunk, pow2);
  if (steps > 1 && perHeadDecay) {
    Recurrence r{qh,    kh,      vh,    g,  betaT, state, batch,
                 steps, kvHeads, group, dk, dv,    scale};
    auto [o, last] = chunked(m, r, chunk);
    if (c.failed() || !o)
      return failure();
    Value y = m.cast(m.reshape(m.transpose(o, {0, 2, 1, 3}), {0, 0, -1}), type);
    Value present = m.cast(last, stateType);
    if (c.failed())
      return failure();
    return c.setOutputs({y, present});
  }

  // exp(g) as [B, Hkv, dk or 1, T]: one slice per token.
  Value decayT =
      gated ? m.op("mpc.exp", {m.transpose(g, {0, 1, 3, 2})}) : Value();
  SmallVector<Value> outs;
  for (int64_t t = 0; t < steps && !c.failed(); ++t) {
    Value kt = m.slice(kh, 2, t, t + 1); // [B, Hkv, 1, dk]
    Value vt = m.slice(vh, 2, t, t + 1); // [B, Hkv, 1, dv]
    if (gated)
      state = m.bin("mpc.mul", state, m.slice(decayT, 3, t, t + 1));
    if (delta) {
      Value retrieved = m.op("mpc.matmul", {kt, state});
      vt = m.bin("mpc.mul", m.slice(betaT, 2, t, t + 1),
                 m.bin("mpc.sub", vt, retrieved));
    }
    state = m.bin("mpc.add", state,
                  m.bin("mpc.mul", m.transpose(kt, {0, 1, 3, 2}), vt));
    // The group of q heads over kv head h reads S[h]: [B, Hkv, group, dk].
    Value qt = m.reshape(m.slice(qh, 2, t, t + 1), {batch, kvHeads, group, dk});
    Value ot = m.bin("mpc.mul", m.op("mpc.matmul", {qt, state}), scaleC);
    outs.push_back(m.reshape(ot, {batch, qHeads, 1, dv}));
  }
  if (c.failed())
    return failure();
  Value o = outs.size() == 1 ? outs[0] : m.concat(outs, 2);
  Value y = m.cast(m.reshape(m.transpose(o, {0, 2, 1, 3}), {0, 0, -1}), type);
  Value present = m.cast(state, stateType);
  if (c.failed())
    return failure();
  return c.setOutputs({y, present});
}

} // namespace mlir::mpc::importer
