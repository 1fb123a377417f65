//===- AttentionImporters.cpp - ONNX Attention and FlexAttention ----------===//
//
// Attention (opset 23) and FlexAttention (ai.onnx.preview 1) are imported as
// the mpc ops of their ONNX definitions (the reference implementations in
// onnx/reference/ops, step for step): the scores Q K^T scaled as the
// reference scales them, the mask or the user's score_mod, softmax, the
// user's prob_mod, the product with V. mpc-fuse-attention turns the forms
// it recognises (a bias, causal and window masks, a softcap) into one
// mpc.attention; autodiff and the precision passes handle the rest as the
// ops they are. An attribute or input form outside what is built here is a
// one-line error naming it; nothing is dropped.
//
//===----------------------------------------------------------------------===//

#include "frontend/Composer.h"
#include "frontend/ImporterImpl.h"
#include "ir/MpcOps.h"

#include "mlir/IR/Matchers.h"
#include "llvm/ADT/APFloat.h"

#include <cmath>

using namespace mlir;
using namespace mlir::mpc;
using namespace mlir::mpc::importer;

namespace {

/// The softmax's element type: `dflt`, or what softmax_precision names
/// (FLOAT, FLOAT16 or BFLOAT16); null, the node failed, for another.
Type softmaxPrecision(NodeContext &c, Type dflt) {
  if (!c.attr("softmax_precision"))
    return dflt;
  switch (int64_t p = c.getInt("softmax_precision", 1)) {
  case onnx::TensorProto::FLOAT:
    return c.b.getF32Type();
  case onnx::TensorProto::FLOAT16:
    return c.b.getF16Type();
  case onnx::TensorProto::BFLOAT16:
    return c.b.getBF16Type();
  default:
    (void)c.fail("softmax_precision " + dataTypeName(p) +
                 ": element type not supported (mpc computes softmax in "
                 "FLOAT, FLOAT16 or BFLOAT16)");
    return {};
  }
}

/// Whether some row (along the last axis) of `bias` may be entirely -inf:
/// false only when it is a constant with no such row.
bool mayMaskWholeRow(Value bias) {
  DenseElementsAttr value;
  if (!matchPattern(bias, m_Constant(&value)))
    return true;
  int64_t row = typeOf(bias).getRank() ? typeOf(bias).getShape().back() : 1;
  auto values = value.getValues<APFloat>();
  int64_t n = value.getNumElements();
  for (int64_t r = 0; row > 0 && r < n; r += row) {
    bool all = true;
    for (int64_t j = 0; j < row && all; ++j)
      all = values[value.isSplat() ? 0 : r + j].isNegInfinity();
    if (all)
      return true;
  }
  return false;
}

/// Q, K or V as (batch, heads, sequence, head size).
Value toHeads(Composer &m, Value x, int64_t heads) {
  return m.transpose(m.reshape(x, {0, 0, heads, -1}), {0, 2, 1, 3});
}

/// Each of the `kvHeads` heads of `x` repeated `rep` times in place
/// ([h0, h0, h1, h1...]), as grouped-query attention reads them.
Value repeatHeads(Composer &m, Value x, int64_t rep) {
  auto shape = typeOf(x).getShape();
  Value wide =
      m.op("mpc.expand", {m.unsqueeze(x, {2}), m.i64s({1, 1, rep, 1, 1})});
  return m.reshape(wide, {0, shape[1] * rep, -1, shape[3]});
}

/// The scores (Q * root) (K * root)^T as the references scale them, K and
/// V first repeated to Q's heads (grouped-query attention).
Value scaledScores(Composer &m, Value q, Value &k, Value &v, float root) {
  Value rootScale = m.scalar(typeOf(q).getElementType(), root);
  int64_t qHeads = typeOf(q).getShape()[1], kvHeads = typeOf(k).getShape()[1];
  if (qHeads != kvHeads) {
    k = repeatHeads(m, k, qHeads / kvHeads);
    v = repeatHeads(m, v, qHeads / kvHeads);
  }
  return m.op("mpc.matmul",
              {m.bin("mpc.mul", q, rootScale),
               m.transpose(m.bin("mpc.mul", k, rootScale), {0, 1, 3, 2})});
}

struct MaskSpec {
  bool causal;
  int64_t left, right; // sliding window; -1: unbounded
  int64_t sq, skv;     // query and total key lengths (static)
};

/// Whether some query row of the causal and sliding-window bias for a
/// fixed `offset` sees no key: key j is attended where diff = i + offset
/// - j (how far it lies before query i) is >= 0 (causal), <= left and >=
/// -right, one range of j a row.
bool positionMasksWholeRow(const MaskSpec &s, int64_t offset) {
  for (int64_t i = 0; i < s.sq; ++i) {
    int64_t hi = s.skv - 1, lo = 0, at = i + offset; // diff = at - j
    if (s.causal)
      hi = std::min(hi, at);
    if (s.right >= 0)
      hi = std::min(hi, at + s.right);
    if (s.left >= 0)
      lo = std::max(lo, at - s.left);
    if (lo > hi)
      return true;
  }
  return false;
}

/// The causal and sliding-window bias (0 where attended, -inf elsewhere)
/// from diff = i + offset - j: (sq, skv) for a fixed `offset`, or (batch,
/// 1, sq, skv) from nonpad_kv_seqlen, whose per-batch offset is nonpad -
/// sq. Computed from a column of rows and a row of columns, so that the
/// constants grow with the sequence, not its square (a (sq, skv) constant
/// took 17 GB and a minute to compile at 16k tokens); FuseAttention reads
/// a causal one back as its `causal` attribute. Positions in FP32 (exact
/// to 2^24; what the GPU's float kernels compute).
Value positionBias(Composer &m, Type type, const MaskSpec &s, int64_t offset,
                   Value nonpad) {
  SmallVector<float> rows, cols;
  for (int64_t i = 0; i < s.sq; ++i)
    rows.push_back((float)(i + (nonpad ? 0 : offset)));
  for (int64_t j = 0; j < s.skv; ++j)
    cols.push_back((float)j);
  Type f32 = m.c.b.getF32Type();
  Value diff =
      m.bin("mpc.sub", m.f32s(rows, {s.sq, 1}), m.f32s(cols, {1, s.skv}));
  if (nonpad)
    diff = m.bin("mpc.add", diff,
                 m.reshape(m.bin("mpc.sub", m.cast(nonpad, f32),
                                 m.scalar(f32, (double)s.sq)),
                           {-1, 1, 1}));
  Value ok;
  auto conj = [&](Value cond) { ok = ok ? m.bin("mpc.and", ok, cond) : cond; };
  if (s.causal)
    conj(m.bin("mpc.less_or_equal", m.scalar(f32, 0.0), diff));
  if (s.left >= 0)
    conj(m.bin("mpc.less_or_equal", diff, m.scalar(f32, (double)s.left)));
  if (s.right >= 0)
    conj(m.bin("mpc.less_or_equal", m.scalar(f32, -(double)s.right), diff));
  Value bias = m.where(ok, m.scalar(type, 0.0), m.scalar(type, -INFINITY));
  return nonpad ? m.reshape(bias, {-1, 1, s.sq, s.skv}) : bias;
}

/// attn_mask as an additive bias of `type`, its last axis padded to `skv`
/// with masked positions.
Value maskBias(Composer &m, Value mask, Type type, int64_t skv) {
  auto t = typeOf(mask);
  bool isBool = t.getElementType().isInteger(1);
  if (!isBool && !llvm::isa<FloatType>(t.getElementType())) {
    (void)m.c.fail("input attn_mask must be bool or float");
    return {};
  }
  Value bias =
      isBool ? m.where(mask, m.scalar(type, 0.0), m.scalar(type, -INFINITY))
             : m.cast(mask, type);
  int64_t last = t.getRank() ? t.getShape().back() : 1;
  if (t.getRank() == 0 || last == ShapedType::kDynamic || last > skv) {
    (void)m.c.fail("input attn_mask's last dimension must be static and at "
                   "most the total key length " +
                   Twine(skv));
    return {};
  }
  if (last == skv)
    return bias;
  if (!t.hasStaticShape()) {
    (void)m.c.fail("input attn_mask, shorter than the keys, must have a "
                   "static shape to be padded");
    return {};
  }
  SmallVector<int64_t> padShape(t.getShape());
  padShape.back() = skv - last;
  int64_t n = 1;
  for (int64_t d : padShape)
    n *= d;
  SmallVector<bool> all(n, true);
  return m.concat({bias, m.floats(type, padShape, 0.0, all)}, -1);
}

/// FlexAttention's score_mod or prob_mod applied to `x`: the graph
/// attribute imported in place, which must give back one tensor of x's
/// type (the op's definition).
Value applyModifier(NodeContext &c, StringRef name, Value x) {
  const onnx::AttributeProto *attr = c.attr(name);
  if (!x || !attr)
    return x;
  if (attr->type() != onnx::AttributeProto::GRAPH || !attr->has_g()) {
    (void)c.fail("attribute '" + name + "' must be a graph");
    return {};
  }
  if (attr->g().input_size() != 1 || attr->g().output_size() != 1) {
    (void)c.fail("attribute '" + name +
                 "' must be a graph of one input and "
                 "one output (it has " +
                 Twine(attr->g().input_size()) + " and " +
                 Twine(attr->g().output_size()) + ")");
    return {};
  }
  auto outs = c.inlineGraph(*attr, {x});
  if (failed(outs))
    return {};
  Value y = (*outs)[0];
  if (y.getType() != x.getType()) {
    std::string want, got;
    llvm::raw_string_ostream(want) << x.getType();
    llvm::raw_string_ostream(got) << y.getType();
    (void)c.fail("attribute '" + name + "' must give back its input's type " +
                 want + ", not " + got);
    return {};
  }
  return y;
}

} // namespace

namespace mlir::mpc::importer {

LogicalResult importAttention(NodeContext &c) {
  if (failed(c.requireInputs(3)) ||
      failed(c.checkAttrs({"is_causal", "kv_num_heads", "q_num_heads",
                           "qk_matmul_output_mode", "scale", "softcap",
                           "softmax_precision", "left_window_size",
                           "right_window_size"})))
    return failure();
  Composer m{c};
  // Its sequence x sequence scores, which mpc-fuse-attention's op never
  // holds: a 64k-token head passes 16 GiB (the plan builder bounds them
  // where they stay).
  c.largeResults = true;
  Value q = c.input(0), k = c.input(1), v = c.input(2);
  Type type = typeOf(q).getElementType();
  int64_t rank = typeOf(q).getRank();
  if (!llvm::isa<FloatType>(type))
    return c.fail("Q must be a float tensor");
  if ((rank != 3 && rank != 4) || typeOf(k).getRank() != rank ||
      typeOf(v).getRank() != rank)
    return c.fail("Q, K and V must all be 3-D or all 4-D");
  bool flat = rank == 3;
  if (flat) {
    int64_t qHeads = c.getInt("q_num_heads", 0);
    int64_t kvHeads = c.getInt("kv_num_heads", 0);
    if (qHeads <= 0 || kvHeads <= 0)
      return c.fail("3-D Q, K and V need attributes q_num_heads and "
                    "kv_num_heads");
    q = toHeads(m, q, qHeads);
    k = toHeads(m, k, kvHeads);
    v = toHeads(m, v, kvHeads);
  }
  Value pastK = c.input(4), pastV = c.input(5), nonpad = c.input(6);
  if (!pastK != !pastV)
    return c.fail("past_key and past_value must be given together");
  if (pastK && nonpad)
    return c.fail("nonpad_kv_seqlen cannot be combined with past_key");
  if (pastK) {
    k = m.concat({pastK, k}, 2);
    v = m.concat({pastV, v}, 2);
  }
  if (c.failed())
    return failure();
  Value presentK = k, presentV = v;
  auto qs = typeOf(q).getShape(), ks = typeOf(k).getShape(),
       vs = typeOf(v).getShape();
  for (int64_t d : {qs[1], qs[2], qs[3], ks[1], ks[2], vs[3]})
    if (d == ShapedType::kDynamic)
      return c.fail("heads, sequence lengths and head sizes must be static "
                    "(bind the input shapes)");
  int64_t qHeads = qs[1], kvHeads = ks[1];
  if (qHeads % kvHeads)
    return c.fail("q_num_heads " + Twine(qHeads) +
                  " is not a multiple of kv_num_heads " + Twine(kvHeads));

  // Scores: (Q * sqrt(scale)) (K * sqrt(scale))^T, as the reference scales.
  double scale = c.attr("scale") ? c.getFloat("scale", 1.0f)
                                 : 1.0 / std::sqrt((double)qs[3]);
  Value scores = scaledScores(m, q, k, v, (float)std::sqrt(scale));
  float softcap = c.getFloat("softcap", 0.0f);
  if (softcap > 0) {
    Value cap = m.scalar(type, softcap);
    scores = m.bin("mpc.mul", m.op("mpc.tanh", {m.bin("mpc.div", scores, cap)}),
                   cap);
  }

  // The additive bias: attn_mask, causal and sliding window (offset by the
  // past length, or per batch by nonpad_kv_seqlen), key padding.
  MaskSpec spec{c.getInt("is_causal", 0) != 0, c.getInt("left_window_size", -1),
                c.getInt("right_window_size", -1), qs[2], ks[2]};
  if (spec.left < -1 || spec.right < -1)
    return c.fail("left_window_size and right_window_size must be -1 or "
                  "nonnegative");
  if (nonpad)
    nonpad = m.cast(nonpad, c.b.getI64Type());
  Value bias;
  auto addBias = [&](Value term) {
    bias = bias ? m.bin("mpc.add", bias, term) : term;
  };
  if (Value mask = c.input(3))
    addBias(maskBias(m, mask, type, spec.skv));
  if (spec.causal || spec.left >= 0 || spec.right >= 0)
    addBias(positionBias(m, type, spec, pastK ? typeOf(pastK).getShape()[2] : 0,
                         nonpad));
  if (nonpad) {
    SmallVector<int64_t> keys;
    for (int64_t j = 0; j < spec.skv; ++j)
      keys.push_back(j);
    Value inside = m.bin("mpc.less", m.i64s(keys, {1, spec.skv}),
                         m.reshape(nonpad, {-1, 1}));
    addBias(m.reshape(
        m.where(inside, m.scalar(type, 0.0), m.scalar(type, -INFINITY)),
        {-1, 1, 1, spec.skv}));
  }
  if (c.failed())
    return failure();
  Value biased = bias ? m.bin("mpc.add", scores, bias) : scores;

  int64_t mode = c.getInt("qk_matmul_output_mode", 0);
  if (mode < 0 || mode > 3)
    return c.fail("qk_matmul_output_mode " + Twine(mode) + " is not 0 to 3");
  Type softmaxType = softmaxPrecision(c, type);
  if (!softmaxType)
    return failure();
  Value probs = m.op("mpc.softmax", {m.cast(biased, softmaxType)},
                     {c.named("axis", c.b.getI64IntegerAttr(-1))});
  // A query row with no attendable key gets zero probabilities (decided on
  // the bias, as the reference does), not softmax's NaN.
  // (A causal or window bias alone: decided on its rows' ranges.)
  bool positionsOnly = !c.input(3) && !nonpad;
  if (bias &&
      (positionsOnly ? positionMasksWholeRow(
                           spec, pastK ? typeOf(pastK).getShape()[2] : 0)
                     : mayMaskWholeRow(bias))) {
    Value rowMax =
        m.op("mpc.reduce_max", {bias},
             {c.named("keepdims", c.b.getBoolAttr(true)),
              c.named("noop_with_empty_axes", c.b.getBoolAttr(false)),
              c.named("axes", c.b.getDenseI64ArrayAttr({-1}))});
    Value dead = m.op("mpc.is_inf", {rowMax},
                      {c.named("detect_positive", c.b.getBoolAttr(false))});
    probs = m.where(dead, m.scalar(softmaxType, 0.0), probs);
  }
  Value qk = mode == 3 ? probs : mode == 2 ? biased : scores;
  Value y = m.op("mpc.matmul", {m.cast(probs, type), v});
  if (flat)
    y = m.reshape(m.transpose(y, {0, 2, 1, 3}), {0, 0, -1});
  if (c.failed())
    return failure();
  return c.setOutputs({y, presentK, presentV, m.cast(qk, type)});
}

LogicalResult importFlexAttention(NodeContext &c) {
  if (failed(c.requireInputs(3)) ||
      failed(c.checkAttrs(
          {"scale", "score_mod", "prob_mod", "softmax_precision"})))
    return failure();
  Composer m{c};
  c.largeResults = true; // its scores, as Attention's
  Value q = c.input(0), k = c.input(1), v = c.input(2);
  Type type = typeOf(q).getElementType();
  if (!llvm::isa<FloatType>(type))
    return c.fail("Q must be a float tensor");
  if (typeOf(q).getRank() != 4 || typeOf(k).getRank() != 4 ||
      typeOf(v).getRank() != 4)
    return c.fail("Q, K and V must be 4-D (batch, heads, sequence, head "
                  "size)");
  auto qs = typeOf(q).getShape(), ks = typeOf(k).getShape(),
       vs = typeOf(v).getShape();
  for (int64_t d :
       {qs[1], qs[2], qs[3], ks[1], ks[2], ks[3], vs[1], vs[2], vs[3]})
    if (d == ShapedType::kDynamic)
      return c.fail("heads, sequence lengths and head sizes must be static "
                    "(bind the input shapes)");
  if (ks[3] != qs[3] || vs[1] != ks[1] || vs[2] != ks[2])
    return c.fail("K must have Q's head size and V K's heads and sequence "
                  "length");
  int64_t qHeads = qs[1], kvHeads = ks[1];
  if (qHeads % kvHeads)
    return c.fail("Q's " + Twine(qHeads) + " heads are not a multiple of " +
                  "K's and V's " + Twine(kvHeads));
  // Softmax (and score_mod, prob_mod, the product with V) in FLOAT unless
  // softmax_precision says otherwise.
  Type softmaxType = softmaxPrecision(c, c.b.getF32Type());
  if (!softmaxType)
    return failure();
  // Scores: (Q * sqrt(scale)) (K * sqrt(scale))^T, the root taken in FP32
  // and rounded to Q's type, as the reference does.
  float scale = c.attr("scale") ? c.getFloat("scale", 1.0f)
                                : (float)(1.0 / std::sqrt((double)qs[3]));
  Value scores = scaledScores(m, q, k, v, std::sqrt(scale));
  scores = applyModifier(c, "score_mod", m.cast(scores, softmaxType));
  Value probs =
      applyModifier(c, "prob_mod",
                    m.op("mpc.softmax", {scores},
                         {c.named("axis", c.b.getI64IntegerAttr(-1))}));
  // P V in Q's type with FP32 accumulation, as Attention's import and the
  // fused kernel compute it (the reference multiplies in the softmax's
  // precision: for FP16 Q, P rounded to FP16 first is the difference).
  Value y = m.op("mpc.matmul", {m.cast(probs, type), v});
  if (c.failed() || !y)
    return failure();
  return c.setOutputs({y});
}

} // namespace mlir::mpc::importer
