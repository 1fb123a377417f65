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

RankedTensorType typeOf(Value v) {
  return llvm::cast<RankedTensorType>(v.getType());
}

/// (B, T, H * D) -> (B, H, T, D) in FP32.
Value toHeads(Composer &m, Value x, int64_t heads) {
  return m.cast(m.transpose(m.reshape(x, {0, 0, heads, -1}), {0, 2, 1, 3}),
                m.c.b.getF32Type());
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
  // exp(g) as [B, Hkv, dk or 1, T], beta as [B, Hkv or 1, T, 1]: one slice
  // of each per token.
  Value decayT, betaT;
  if (gated) {
    auto d = typeOf(decay);
    int64_t last = d.getRank() == 3 ? d.getDimSize(2) : -1;
    if (d.getRank() != 3 || (last != kvHeads && last != kvHeads * dk))
      return c.fail("decay must be (batch, sequence, kv_num_heads) or "
                    "(batch, sequence, kv_num_heads * head size)");
    decayT = m.op("mpc.exp",
                  {m.transpose(toHeads(m, decay, kvHeads), {0, 1, 3, 2})});
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
