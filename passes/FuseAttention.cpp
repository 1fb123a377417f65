//===- FuseAttention.cpp - attention subgraphs to mpc.attention -----------===//
//
// Recognizes softmax(scale * Q K^T + mask) V as torch 1.13/2.x exports of
// BERT, GPT-2, ViT and nn.TransformerEncoder write it, and as mpc imports
// ONNX Attention, and rewrites it to one mpc.attention:
//
//   matmul(Q', K')      Q' = Q, or Q * c, Q / c (scalar constants)
//                       K' = transpose(K) swapping the last two dimensions
//                            (composed with the export's own transpose),
//                            optionally * c or / c, before or after it
//   * c, / c            on the scores (folded into `scale`)
//   * t                 on the product itself, t a tensor broadcasting
//                       with its last two dimensions 1 (SwinV2's learned
//                       per-head scale): moved onto Q as Q * t
//   + bias              any float tensor broadcasting to the scores
//   where(m, s, fill)   or where(m, fill, s), fill a scalar constant: the
//                       mask becomes the bias where(m, 0, fill)...
//   softmax(axis = -1)
//   dropout(P, ratio, training)   optional: constant ratio and flag, the
//                                 mask unread (the backward redraws it)
//   matmul(P, V)
//
// In a half-precision model the softmax may run in FP32 between casts,
// cast(softmax(cast(s, f32)), T), masks on either side of the widening
// cast: the op computes in FP32 anyway, so both casts are taken into it.
//
// Scores over merged leading dimensions ([b * h, sq, skv] of bmm exports,
// [b * nw, h, sq, skv] of Swin's windows) viewed split for a mask and
// back become one attention over the split dimensions, its output merged.
//
// A constant bias that is exactly a causal mask (0 on and below the offset
// diagonal, -inf or below -1e30 above), or the causal and sliding-window
// one ONNX Attention's import computes from rows and columns (with its own
// `causal_offset` where not the diagonal through the last query and key),
// becomes `causal`, `window_left` and `window_right` and is dropped (a
// term of a sum of biases too: an attn_mask beside it stays the bias), so
// no Sq x Skv tensor is left. Every intermediate must have its
// one use on the path (an extra consumer of the scores or probabilities, a
// softmax on another axis, a dropout whose mask is read or whose ratio or
// training flag is only known at run time leave the subgraph as it is: fusing
// would change what the other consumer sees). A fused dropout draws the mask
// the unfused one would (same key, same counter: the probability's index).
//
//===----------------------------------------------------------------------===//

#include "ir/MpcOps.h"
#include "passes/AttentionFuser.h"
#include "passes/DeadOps.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Matchers.h"

#include <cmath>

namespace mlir::mpc {
#define GEN_PASS_DEF_FUSEATTENTION
#include "passes/Passes.h.inc"
} // namespace mlir::mpc

using namespace mlir;
using namespace mlir::mpc;

namespace mlir::mpc::attention_patterns {

std::optional<Match> Fuser::match(SoftmaxOp sm) {
  auto x = typeOf(sm.getX());
  int64_t r = x.getRank();
  if (r < 3 || !llvm::isa<FloatType>(x.getElementType()) ||
      ((int64_t)sm.getAxis() != -1 && (int64_t)sm.getAxis() != r - 1))
    return std::nullopt;
  Match m;
  Value probs = sm.getResult();
  // torch 2's scaled_dot_product_attention decomposed ("safe softmax"):
  // where(isnan(P), 0, P) zeroes the rows with no attendable key, whose
  // softmax is 0/0; over finite scores no other row is NaN.
  bool nanGuard = false;
  if (WhereOp w = nanGuardOf(probs)) {
    nanGuard = true;
    m.dead = {w, w.getCondition().getDefiningOp(), sm};
    probs = w.getResult();
  } else if (!singleUse(probs)) {
    return std::nullopt;
  }
  // ONNX Attention's guard, as imported: where(rows whose bias is all
  // -inf, 0, P) zeroes the rows with no attendable key.
  Value guardBias;
  if (auto w =
          nanGuard ? WhereOp() : dyn_cast<WhereOp>(*probs.getUsers().begin())) {
    auto dead = w.getCondition().getDefiningOp<IsInfOp>();
    auto rowMax =
        dead ? dead.getX().getDefiningOp<ReduceMaxOp>() : ReduceMaxOp();
    std::optional<double> zero = scalarConstant(w.getX());
    if (!rowMax || w.getY() != probs || !zero || *zero != 0.0 ||
        dead.getDetectPositive() || !dead.getDetectNegative() ||
        !rowMax.getKeepdims() || !rowMax.getAxes() ||
        rowMax.getAxes()->size() != 1 ||
        ((*rowMax.getAxes())[0] != -1 &&
         (*rowMax.getAxes())[0] != typeOf(rowMax.getX()).getRank() - 1) ||
        !singleUse(w.getResult()))
      return std::nullopt;
    guardBias = rowMax.getX();
    m.dead = {w, sm, dead, rowMax};
    probs = w.getResult();
  }
  // From the softmax to P V, in any order, each once: a dropout; the cast
  // back of an FP32 softmax in a half-precision model, cast(softmax(
  // cast(s, f32)), T) (torch's softmax(dtype=float32).to(q.dtype) in
  // LLaMA-style model code, `mpc convert`'s output, ONNX Attention's
  // softmax_precision; the op computes scores and softmax in FP32
  // whatever Q's type, so both casts go, the scores no longer rounded to
  // T between them); a view of the probabilities as [b * h, sq, skv] for
  // a merged product with V (Bloom's bmm: build() unmerges V and views
  // the output back) or as [b, sq * h, skv] (GPT-BigCode's multi-query
  // bmm).
  DropoutOp drop;
  CastOp narrow;
  ReshapeOp merge;
  SmallVector<Operation *> toPv; // (softmax side first)
  for (;;) {
    if (!singleUse(probs))
      return std::nullopt;
    Operation *user = *probs.getUsers().begin();
    if (auto d = dyn_cast<DropoutOp>(user); d && !drop) {
      if (d.getX() != probs || !d.getMask().use_empty() || d.getStep())
        return std::nullopt;
      std::optional<double> ratio = constantDropoutRatio(d);
      if (!ratio || *ratio < 0.0 || *ratio >= 1.0)
        return std::nullopt;
      m.dropout = *ratio;
      m.seed = d.getSeedAttr();
      m.stream = d.getStreamAttr();
      drop = d;
      probs = d.getY();
    } else if (auto c = dyn_cast<CastOp>(user); c && !narrow) {
      Type to = typeOf(c.getY()).getElementType();
      if (!typeOf(probs).getElementType().isF32() ||
          !(to.isF16() || to.isBF16()))
        return std::nullopt;
      narrow = c;
      probs = c.getY();
    } else if (auto rs = dyn_cast<ReshapeOp>(user); rs && !merge) {
      auto heads = headsOf(typeOf(rs.getReshaped()), typeOf(probs));
      auto rowSplit = heads ? std::nullopt
                            : rowsOf(typeOf(rs.getReshaped()), typeOf(probs));
      if (!heads && !rowSplit)
        return std::nullopt;
      if (heads)
        m.pvSplit = {heads->first, heads->second};
      else
        m.pvRows = {rowSplit->first, rowSplit->second};
      merge = rs;
      probs = rs.getReshaped();
    } else {
      break;
    }
    toPv.push_back(user);
  }
  auto pv = dyn_cast<MatMulOp>(*probs.getUsers().begin());
  if (!pv || pv->getOperand(0) != probs ||
      typeOf(pv->getOperand(1)).getRank() != (merge ? r - 1 : r))
    return std::nullopt;
  m.pv = pv;
  m.v = pv->getOperand(1);
  if (m.dead.empty())
    m.dead.push_back(sm);
  for (Operation *op : toPv) // (users first)
    m.dead.insert(m.dead.begin(), op);
  m.dead.insert(m.dead.begin(), pv);
  // Masks and scales, from the softmax back to the QK^T product.
  Value s = sm.getX();
  // Additive biases, or where()s over the scores to convert, each with
  // the scale applied outside it (softmax((QK + m) / c) adds m / c).
  SmallVector<Mask> masks;
  // Whether `s` is [b * h, sq, skv] scores of known heads (below a split
  // into heads), and whether the softmax itself reads merged scores that
  // a view brought to heads for the mask (BART's bmm attention).
  bool inMerged = false, headsView = false;
  bool widened = false; // (past the FP32 softmax's widening cast)
  // Only a fill that exp() maps to 0 as -inf does.
  auto bigNegative = [](std::optional<double> f) {
    return f && *f <= -1e30 ? f : std::nullopt;
  };
  for (int guard = 0; guard < 10; ++guard) {
    if (!s.getDefiningOp() || !singleUse(s))
      return std::nullopt;
    Operation *op = s.getDefiningOp();
    if (isa<MatMulOp>(op))
      break;
    // The widening half of the FP32 softmax's casts (above), from the
    // type the softmax's result is cast back to.
    if (auto widen = dyn_cast<CastOp>(op)) {
      if (!narrow || widened || !typeOf(s).getElementType().isF32() ||
          typeOf(widen.getX()).getElementType() !=
              typeOf(narrow.getY()).getElementType())
        return std::nullopt;
      widened = true;
      m.dead.push_back(op);
      s = widen.getX();
      continue;
    }
    // A softcap, with no scale outside it (the op caps the scaled
    // scores) and one at most.
    if (auto cap = softcapOf(s, m.dead)) {
      if (m.scale != 1.0 || m.softcap > 0.0)
        return std::nullopt;
      m.softcap = cap->first;
      s = cap->second;
      continue;
    }
    if (isa<MulOp, DivOp>(op)) {
      Value peeled = peelScale(s, m.scale, m.dead);
      if (peeled == s) {
        // SwinV2's cosine attention: the product times a learned
        // [h, 1, 1] scale, the same for every query and key of a head:
        // moved onto Q.
        Value scale = tensorScaleOfProduct(op);
        if (!scale || m.qScale)
          return std::nullopt;
        m.qScale = scale;
        m.dead.push_back(op);
        s = op->getOperand(op->getOperand(0) == scale ? 1 : 0);
        continue;
      }
      s = peeled;
      continue;
    }
    if (auto add = dyn_cast<AddOp>(op)) {
      // The scores side is the one with the scores' type (the bias may
      // broadcast); a product on both sides is not a mask.
      bool aScores =
          typeOf(add.getA()) == typeOf(s) && leadsToProduct(add.getA());
      bool bScores =
          typeOf(add.getB()) == typeOf(s) && leadsToProduct(add.getB());
      if (aScores == bScores)
        return std::nullopt;
      // A constant zero addend (baddbmm's beta * zeros as GPT-NeoX
      // exports it) changes no score's exponent: dropped.
      if (Value zeros = aScores ? add.getB() : add.getA();
          scalarConstant(zeros) == 0.0) {
        m.dead.push_back(op);
        if (zeros.getDefiningOp() && singleUse(zeros))
          m.dead.push_back(zeros.getDefiningOp());
        s = aScores ? add.getA() : add.getB();
        continue;
      }
      Value bias = aScores ? add.getB() : add.getA();
      if ((inMerged &&
           !unmergeable(typeOf(bias), typeOf(s).getRank(), m.split)) ||
          !m.rows.empty())
        return std::nullopt;
      masks.push_back({bias, m.scale, false, inMerged});
      m.dead.push_back(op);
      s = aScores ? add.getA() : add.getB();
      continue;
    }
    // max(s, c), c <= -1e30: OPT clamps its masked scores to the finite
    // minimum. It changes only scores below c, which exp() maps to 0
    // either way (a row with every score so low aside, as for -inf).
    if (auto clamp = dyn_cast<MaxOp>(op); clamp && op->getNumOperands() == 2) {
      Value x = op->getOperand(0), c = op->getOperand(1);
      if (!bigNegative(scalarConstant(c)))
        std::swap(x, c);
      if (!bigNegative(scalarConstant(c)) || typeOf(x) != typeOf(s) ||
          m.scale <= 0.0) // (a negative scale outside would make it a cap)
        return std::nullopt;
      m.dead.push_back(op);
      s = x;
      continue;
    }
    if (auto rs = dyn_cast<ReshapeOp>(op)) {
      // A softmax over [b * h, sq, skv] scores viewed as heads for the
      // mask (BART, Whisper: `w.view(b, h, q, k) + mask`, then back), or
      // over [b * w, h, sq, skv] viewed as batch and windows (Swin's
      // shifted windows: `w.view(b, nw, h, n, n) + mask`): the attention
      // is built over the split and its output merged.
      if (auto heads = headsOf(typeOf(s), typeOf(rs.getData()));
          heads && m.split.empty()) {
        m.split = {heads->first, heads->second};
        headsView = true;
        m.dead.push_back(op);
        s = rs.getData();
        continue;
      }
      // Scores of [b * h, sq, skv] products split into heads (GPT-NeoX's
      // baddbmm, BART's bmm on merged views): build() unmerges Q and K^T.
      auto heads = headsOf(typeOf(rs.getData()), typeOf(rs.getReshaped()));
      // Multi-query scores of [b, sq * h, skv] viewed [b, sq, h, skv]:
      // build() takes Q as heads and one K and V head.
      if (auto rowSplit =
              rowsOf(typeOf(rs.getData()), typeOf(rs.getReshaped()));
          !heads && rowSplit && r == 4 && m.split.empty() && m.rows.empty()) {
        m.rows = {rowSplit->first, rowSplit->second};
        m.dead.push_back(op);
        s = rs.getData();
        continue;
      }
      if (!heads || inMerged || !m.rows.empty() ||
          (!m.split.empty() &&
           (!headsView ||
            m.split != SmallVector<int64_t>{heads->first, heads->second})))
        return std::nullopt;
      m.split = {heads->first, heads->second};
      inMerged = true;
      m.dead.push_back(op);
      s = rs.getData();
      continue;
    }
    if (auto where = dyn_cast<WhereOp>(op)) {
      if (inMerged || !m.rows.empty())
        return std::nullopt;
      // where() replaces the score, the bias adds to it: equal only for
      // a fill exp() maps to 0. FP16's lowest is one where scaled it stays
      // below -1000 and a constant condition keeps a key in every row (a
      // row masked whole would be uniform, not the scores' softmax): the
      // bias adds it unscaled (`mpc convert`'s GPT-J, its -FLT_MAX fill
      // saturated).
      auto sq = typeOf(s).getDimSize(r - 2), skv = typeOf(s).getDimSize(r - 1);
      auto masking = [&](Value fill, bool keptWhereTrue) {
        std::optional<double> f = scalarConstant(fill);
        return bigNegative(f) ? f
               : f && *f == kHalfLowest && *f * m.scale <= -1000.0 &&
                       sq != ShapedType::kDynamic &&
                       skv != ShapedType::kDynamic &&
                       everyRowKeepsKey(where.getCondition(), keptWhereTrue, sq,
                                        skv)
                   ? f
                   : std::nullopt;
      };
      std::optional<double> fillB = masking(where.getY(), true),
                            fillA = masking(where.getX(), false);
      bool scoresA = fillB && typeOf(where.getX()) == typeOf(s);
      bool scoresB = fillA && typeOf(where.getY()) == typeOf(s);
      if (scoresA == scoresB)
        return std::nullopt;
      if (m.scale <= 0.0 || // a negative scale would turn -inf into +inf
          masksQueriesFromInput(where.getCondition()))
        return std::nullopt;
      masks.push_back({where, m.scale, true});
      m.dead.push_back(op);
      s = scoresA ? where.getX() : where.getY();
      continue;
    }
    return std::nullopt;
  }
  auto qk = dyn_cast_or_null<MatMulOp>(s.getDefiningOp());
  if (!qk || !singleUse(s) || (bool)narrow != widened)
    return std::nullopt;
  m.dead.push_back(qk);
  m.q = peelScale(qk->getOperand(0), m.scale, m.dead);
  Value kt = peelScale(qk->getOperand(1), m.scale, m.dead);
  if (headsView) { // (P V over merged heads too)
    if (!m.pvSplit.empty())
      return std::nullopt;
    m.pvSplit = m.split;
    r += 1;
  }
  if (m.rows != m.pvRows || (!m.rows.empty() && !m.pvSplit.empty()))
    return std::nullopt;
  auto q = unmergedType(typeOf(m.q), m.split),
       ktT = unmergedType(typeOf(kt), m.split),
       v = unmergedType(typeOf(m.v), m.pvSplit);
  if (!m.rows.empty()) {
    if (!rowsOfQuery(q, m.rows))
      return std::nullopt;
    q = *rowsOfQuery(q, m.rows);
    // (one K and V head: [b, m, n] as [b, 1, m, n])
    ktT = unmergedType(ktT, {ktT.getDimSize(0), 1});
    v = unmergedType(v, {v.getDimSize(0), 1});
  }
  if (q.getRank() != r || ktT.getRank() != r || v.getRank() != r ||
      q.getElementType() != v.getElementType() ||
      q.getElementType() != ktT.getElementType())
    return std::nullopt;
  // Equal leading dimensions, but for one K and V head against Q's
  // (multi-query: Falcon's matmul broadcasts it).
  for (int64_t i = 0; i < r - 2; ++i)
    if (ktT.getDimSize(i) != v.getDimSize(i) ||
        (q.getDimSize(i) != ktT.getDimSize(i) &&
         !(i == r - 3 && ktT.getDimSize(i) == 1)))
      return std::nullopt; // a broadcasting batched product
  if (ktT.getDimSize(r - 1) != v.getDimSize(r - 2))
    return std::nullopt;
  m.k = kt; // K^T for now: build() transposes it
  // The guard must test the one bias the scores get, unscaled.
  if (guardBias && (masks.size() != 1 || masks[0].value != guardBias ||
                    masks[0].outerScale != 1.0 || masks[0].scoreWhere))
    return std::nullopt;
  m.zeroMaskedRows = guardBias || nanGuard;
  m.bias = Value();
  pendingMasks = masks;
  return m;
}

} // namespace mlir::mpc::attention_patterns

namespace {

using attention_patterns::Fuser;

struct FuseAttention : public mpc::impl::FuseAttentionBase<FuseAttention> {
  void runOnOperation() override {
    for (auto f : getOperation().getOps<func::FuncOp>()) {
      SmallVector<SoftmaxOp> softmaxes(f.getOps<SoftmaxOp>());
      Fuser fuser(&getContext());
      bool fused = false;
      for (SoftmaxOp sm : softmaxes)
        if (auto m = fuser.match(sm)) {
          fuser.build(*m);
          fused = true;
        }
      if (!fused)
        continue;
      // The masks' and scales' constants nothing reads any more.
      eraseDeadOps(f.getBody().front());
    }
  }
};

} // namespace
