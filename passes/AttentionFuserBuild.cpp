//===- AttentionFuserBuild.cpp - a matched attention to mpc.attention ----===//
//
// Fuser::build (passes/AttentionFuser.h): Q, K and V taken from before the
// export's views and transposes, the masks summed into one bias whose
// positional terms become the op's band, grouped-query K and V read
// unrepeated, the op's attributes, its output viewed back.
//
//===----------------------------------------------------------------------===//

#include "ir/MpcOps.h"
#include "passes/AttentionFuser.h"

#include "mlir/IR/Matchers.h"

using namespace mlir;
using namespace mlir::mpc;

namespace mlir::mpc::attention_patterns {

void Fuser::build(Match &m) {
  Location loc = m.pv->getLoc();
  b.setInsertionPoint(m.pv);
  if (m.qScale) // (Q as the product read it: the scale broadcasts alike)
    m.q = make<MulOp>(loc, {m.q, m.qScale});
  if (!m.split.empty()) {
    m.q = unmerge(loc, m.q, m.split, m.dead);
    m.k = unmerge(loc, m.k, m.split, m.dead);
  }
  if (!m.pvSplit.empty())
    m.v = unmerge(loc, m.v, m.pvSplit, m.dead);
  if (!m.rows.empty()) { // Q [b, sq * h, d] as [b, h, sq, d]; one K, V head
    auto q = typeOf(m.q);
    m.q = transpose(
        loc,
        reshapeTo(b, loc, m.q,
                  {q.getDimSize(0), m.rows[0], m.rows[1], q.getDimSize(2)}),
        {0, 2, 1, 3});
    m.k = unmerge(loc, m.k, {typeOf(m.k).getDimSize(0), 1}, m.dead);
    m.v = unmerge(loc, m.v, {typeOf(m.v).getDimSize(0), 1}, m.dead);
  }
  int64_t r = typeOf(m.q).getRank();
  // K from K^T: compose with the export's own transpose when it is one.
  SmallVector<int64_t> swap;
  for (int64_t i = 0; i < r; ++i)
    swap.push_back(i < r - 2 ? i : 2 * r - 3 - i);
  // K^T cast to Q's type after its transpose (`mpc convert` keeps the
  // rotary products FP32): the cast moves onto K below, so that the
  // transposes compose and grouped-query heads are seen.
  Type kCast;
  if (auto c = m.k.getDefiningOp<CastOp>();
      c && singleUse(m.k) && c.getX().getDefiningOp<TransposeOp>() &&
      singleUse(c.getX())) {
    kCast = typeOf(m.k).getElementType();
    m.dead.push_back(c);
    m.k = c.getX();
  }
  Value k;
  auto t = m.k.getDefiningOp<TransposeOp>();
  auto viewed = t ? std::nullopt : viewedTranspose(m.k, m.dead);
  if ((t && (singleUse(m.k) || m.k.use_empty()) &&
       t.getPerm()) || // (unmerge's)
      viewed) {
    ArrayRef<int64_t> kPerm =
        viewed ? ArrayRef<int64_t>(viewed->second) : *t.getPerm();
    SmallVector<int64_t> perm;
    for (int64_t i = 0; i < r; ++i)
      perm.push_back(kPerm[swap[i]]);
    bool identity = true;
    for (int64_t i = 0; i < r; ++i)
      identity &= perm[i] == i;
    // A scale on K before its transpose (ONNX Attention's sqrt(scale)
    // on Q and on K) folds like one on K^T.
    Value x = peelScale(viewed ? viewed->first : t.getX(), m.scale, m.dead);
    k = identity ? x : transpose(loc, x, perm);
    if (t)
      m.dead.push_back(t);
  } else {
    k = transpose(loc, m.k, swap);
  }
  int64_t sq = typeOf(m.q).getDimSize(r - 2), skv = typeOf(k).getDimSize(r - 2);
  Value bias;
  for (const Mask &mask : pendingMasks) {
    Value term = mask.value;
    double outer = mask.outerScale;
    if (mask.merged && typeOf(term).getRank() == r - 1)
      term = typeOf(term).getDimSize(0) == 1
                 ? reshapeTo(b, loc, term,
                             unmergedType(typeOf(term), {1, 1}).getShape())
                 : unmerge(loc, term, m.split, m.dead);
    if (mask.scoreWhere) {
      auto where = mask.value.getDefiningOp<WhereOp>();
      bool fillIsB = (bool)scalarConstant(where.getY()) &&
                     typeOf(where.getX()).getRank() == r;
      double fill = *scalarConstant(fillIsB ? where.getY() : where.getX());
      // where(m, s, fill): the bias is fill where m is false.
      // (in the where's type: FP32 in an FP32 softmax, where a finite
      // fill must stay finite; a row masked whole is then uniform. FP16's
      // lowest unscaled: match() found a key in every row, and the band
      // reads it so)
      double added = fill == kHalfLowest ? fill : fill * outer;
      auto biasOf = [&](Value cond) {
        return maskBias(b, loc, rowsToHeads(b, loc, cond, m.rows),
                        typeOf(where.getResult()).getElementType(), added,
                        !fillIsB);
      };
      term = Value();
      // A causal constant and padding joined (seen where both are: And;
      // masked where either is: Or) are two biases, the first a band:
      // where both mask a key the sum is 2 fill, masked as well.
      if (auto parts = splitConstantOperand(b, where.getCondition(), fillIsB);
          parts && sq != ShapedType::kDynamic && skv != ShapedType::kDynamic)
        if (Value causal = biasOf(parts->first); constantBand(causal, sq, skv))
          term = make<AddOp>(loc, {causal, biasOf(parts->second)});
      if (!term)
        term = biasOf(where.getCondition());
    } else {
      term = rowsToHeads(b, loc, term, m.rows);
      // where(C and P, 0, fill) added (torch 2's SDPA over Hugging Face
      // 5's boolean mask): the same two biases as the where() above.
      if (Value split = splitWhereBias(b, loc, term, sq, skv))
        term = split;
      if (outer != 1.0)
        term = make<MulOp>(
            loc,
            {term, scalarValue(b, loc, typeOf(term).getElementType(), outer)});
    }
    // Terms of Q's type (before an FP32 softmax's widening cast) and FP32
    // ones (after it) are summed in FP32, exactly.
    auto f32 = [&](Value x) -> Value {
      if (typeOf(x).getElementType().isF32())
        return x;
      return b.create<CastOp>(loc, typeOf(x).clone(b.getF32Type()), x);
    };
    if (bias &&
        typeOf(bias).getElementType() != typeOf(term).getElementType()) {
      bias = f32(bias);
      term = f32(term);
    }
    bias = bias ? make<AddOp>(loc, {bias, term}) : term;
  }
  // The terms of the bias that are positional masks (a causal constant,
  // the import's causal and window bias, torch code's Trilus) become
  // the band, merged where several; the others (attn_mask, padding)
  // stay the bias.
  std::optional<Band> band;
  if (bias && sq != ShapedType::kDynamic && skv != ShapedType::kDynamic) {
    band = bandOfBias(b, loc, bias, sq, skv);
    b.setInsertionPoint(m.pv);
  }
  // A padding bias the same for every query: one row.
  if (bias && !matchPattern(bias, m_Constant()))
    if (Value narrow = queryInvariantBias(b, bias, narrowed))
      bias = narrow;
  // Grouped-query K and V, their heads repeated for the products: read
  // in place instead (the kernels index head h / rep; no copies of K
  // and V, nor their gradients' sums over the copies).
  Value v = m.v;
  auto kHeads = repeatedHeads(k), vHeads = repeatedHeads(v);
  if (kHeads && vHeads && kHeads->second == vHeads->second) {
    k = kHeads->first;
    v = vHeads->first;
  }
  if (kCast) {
    b.setInsertionPoint(m.pv);
    k = b.create<CastOp>(loc, typeOf(k).clone(kCast), k);
  }
  SmallVector<Value> operands{m.q, k, v};
  if (bias)
    operands.push_back(bias);
  SmallVector<NamedAttribute> attrs{
      b.getNamedAttr("scale", b.getF32FloatAttr((float)m.scale)),
      b.getNamedAttr("causal", b.getBoolAttr(band && band->causal)),
      b.getNamedAttr("zero_masked_rows", b.getBoolAttr(m.zeroMaskedRows)),
      b.getNamedAttr("operandSegmentSizes",
                     b.getDenseI32ArrayAttr({1, 1, 1, bias ? 1 : 0, 0}))};
  if (band && band->offset != skv - sq)
    attrs.push_back(
        b.getNamedAttr("causal_offset", b.getI64IntegerAttr(band->offset)));
  if (band && band->left >= 0)
    attrs.push_back(
        b.getNamedAttr("window_left", b.getI64IntegerAttr(band->left)));
  if (band && band->right >= 0)
    attrs.push_back(
        b.getNamedAttr("window_right", b.getI64IntegerAttr(band->right)));
  if (m.softcap > 0.0)
    attrs.push_back(
        b.getNamedAttr("softcap", b.getF32FloatAttr((float)m.softcap)));
  if (m.dropout > 0.0) {
    attrs.push_back(
        b.getNamedAttr("dropout", b.getF32FloatAttr((float)m.dropout)));
    if (m.seed)
      attrs.push_back(b.getNamedAttr("seed", m.seed));
    if (m.stream)
      attrs.push_back(b.getNamedAttr("stream", m.stream));
  }
  std::string diag;
  auto at = createInferred(b, loc, AttentionOp::getOperationName(), operands,
                           attrs, &diag);
  Value y = (*at)->getResult(0);
  if (!m.rows.empty()) // ([b, h, sq, dv] to the rows' [b, sq * h, dv])
    y = transpose(loc, y, {0, 2, 1, 3});
  if (!m.pvSplit.empty() ||
      !m.rows.empty()) // (the merged product's [b * h, sq, dv])
    y = reshapeTo(b, loc, y, typeOf(m.pv->getResult(0)).getShape());
  m.pv->getResult(0).replaceAllUsesWith(y);
  for (Operation *op : m.dead)
    if (op->use_empty())
      op->erase();
}

/// `x` [b * h, ..., m, n] as [b, h, ..., m, n]: the tensor a reshape
/// merged, or a new reshape (through a transpose of the last two
/// dimensions).
Value Fuser::unmerge(Location loc, Value x, ArrayRef<int64_t> split,
                     SmallVectorImpl<Operation *> &dead) {
  RankedTensorType want = unmergedType(typeOf(x), split);
  if (auto rs = x.getDefiningOp<ReshapeOp>();
      rs && typeOf(rs.getData()) == want) {
    dead.push_back(rs);
    return rs.getData();
  }
  auto t = x.getDefiningOp<TransposeOp>();
  int64_t r = typeOf(x).getRank();
  if (t && singleUse(x) && t.getPerm() &&
      llvm::ArrayRef<int64_t>(*t.getPerm()) ==
          ArrayRef<int64_t>(lastTwoSwapped(r))) {
    dead.push_back(t); // (K^T: the transpose composes with build()'s)
    return transpose(loc, unmerge(loc, t.getX(), split, dead),
                     lastTwoSwapped(r + 1));
  }
  return reshapeTo(b, loc, x, want.getShape());
}

SmallVector<int64_t> Fuser::lastTwoSwapped(int64_t rank) {
  SmallVector<int64_t> perm = llvm::to_vector(llvm::seq<int64_t>(0, rank));
  std::swap(perm[rank - 2], perm[rank - 1]);
  return perm;
}

Value Fuser::transpose(Location loc, Value x, ArrayRef<int64_t> perm) {
  return make<TransposeOp>(
      loc, {x}, {b.getNamedAttr("perm", b.getDenseI64ArrayAttr(perm))});
}

} // namespace mlir::mpc::attention_patterns
