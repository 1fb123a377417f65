//===- MaskSplit.cpp - a padding mask over a causal one: band + bias ------===//
//
// Hugging Face's mask utilities combine the padding mask with the causal
// one at run time: where(P, min, C) with C the constant causal mask (0 on
// and below the diagonal, min above) and P "this key is padding" (4.38+:
// (C + attention_mask) == 0, a masked_fill of C). As a whole it depends on
// an input, so it would stay an (S, S) bias a batch row, and no key tile
// would be skipped. Outside C's band both branches are <= -1e30, so the
// mask is C's band plus where(P, min, 0) inside it; and inside the band C
// is 0, so P may read 0 for C: (0 + attention_mask) == 0, a [b, 1, 1, S]
// bias. (A query whose visible keys are all padding attends among them
// here, where the graph's finite min spreads it over every key: the rows
// FlashAttention and Hugging Face's own SDPA path also leave undefined.)
//
//===----------------------------------------------------------------------===//

#include "passes/AttentionPatterns.h"

#include "mlir/IR/Matchers.h"

namespace mlir::mpc::attention_patterns {

namespace {

/// A scalar 0 of float type `elem`.
Value zeroOf(OpBuilder &b, Location loc, Type elem) {
  APFloat zero = APFloat::getZero(llvm::cast<FloatType>(elem).getFloatSemantics());
  return b.create<ConstantOp>(loc,
                              DenseElementsAttr::get(RankedTensorType::get({}, elem), {zero}));
}

/// Whether `v` is computed from constants alone.
bool fromConstants(Value v, llvm::DenseMap<Value, bool> &memo, int depth = 0) {
  if (auto it = memo.find(v); it != memo.end())
    return it->second;
  Operation *op = v.getDefiningOp();
  bool constant = op && depth < 32 &&
                  (matchPattern(v, m_Constant()) ||
                   llvm::all_of(op->getOperands(), [&](Value x) {
                     return fromConstants(x, memo, depth + 1);
                   }));
  return memo[v] = constant;
}

/// `v` with each maximal constant part that is 0 wherever `band` shows a
/// key and <= -1e30 elsewhere replaced by a scalar 0 (ops above rebuilt
/// with the shapes that gives): the same values inside the band.
Value zeroInBand(OpBuilder &b, Value v, const Band &band, int64_t sq, int64_t skv,
                 llvm::DenseMap<Value, bool> &constant, int depth = 0) {
  Operation *op = v.getDefiningOp();
  if (!op || depth > 16)
    return v;
  if (fromConstants(v, constant)) {
    auto t = typeOf(v);
    std::optional<Band> here = llvm::isa<FloatType>(t.getElementType())
                                   ? constantBand(v, sq, skv)
                                   : std::nullopt;
    if (!here || !(*here == band))
      return v;
    return zeroOf(b, op->getLoc(), t.getElementType());
  }
  // Only elementwise ops (their shapes follow their operands').
  if (!isa<AddOp, SubOp, MulOp, EqualOp, LessOp, LessOrEqualOp, GreaterOp,
           GreaterOrEqualOp, AndOp, OrOp, NotOp, CastOp, WhereOp, NegOp>(op))
    return v;
  SmallVector<Value> operands;
  bool changed = false;
  for (Value x : op->getOperands()) {
    operands.push_back(zeroInBand(b, x, band, sq, skv, constant, depth + 1));
    changed |= operands.back() != x;
  }
  if (!changed)
    return v;
  auto rebuilt = createInferred(b, op->getLoc(), op->getName().getStringRef(),
                                operands, op->getAttrDictionary().getValue());
  return succeeded(rebuilt) ? (*rebuilt)->getResult(0) : v;
}

} // namespace

std::optional<std::pair<Band, Value>> bandUnderPadding(OpBuilder &b, Value term,
                                                       int64_t sq, int64_t skv) {
  // Through the views that bring the mask to the scores' rank.
  Value v = term;
  while (isa_and_nonnull<ExpandOp, UnsqueezeOp, ReshapeOp, SliceOp>(v.getDefiningOp()) &&
         !isa<WhereOp>(v.getDefiningOp()))
    v = v.getDefiningOp()->getOperand(0);
  auto where = v.getDefiningOp<WhereOp>();
  if (!where || v != term) // (views of it: their bias would need rebuilding)
    return std::nullopt;
  std::optional<double> fx = scalarConstant(where.getX()), fy = scalarConstant(where.getY());
  bool fillIsX = fx && *fx <= -1e30;
  if (!fillIsX && !(fy && *fy <= -1e30))
    return std::nullopt;
  Value kept = fillIsX ? where.getY() : where.getX();
  llvm::DenseMap<Value, bool> constant;
  if (!fromConstants(kept, constant))
    return std::nullopt;
  std::optional<Band> band = constantBand(kept, sq, skv);
  if (!band)
    return std::nullopt;
  Value cond = zeroInBand(b, where.getCondition(), *band, sq, skv, constant);
  auto t = typeOf(term);
  Value zero = zeroOf(b, where.getLoc(), t.getElementType());
  Value fill = fillIsX ? where.getX() : where.getY();
  auto bias = createInferred(b, where.getLoc(), WhereOp::getOperationName(),
                             fillIsX ? ValueRange{cond, fill, zero}
                                     : ValueRange{cond, zero, fill});
  if (failed(bias))
    return std::nullopt;
  return std::pair{*band, (*bias)->getResult(0)};
}

} // namespace mlir::mpc::attention_patterns
