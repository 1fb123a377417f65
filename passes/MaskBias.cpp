//===- MaskBias.cpp - the bias terms fuse-attention builds from masks -----===//
//
// mpc.attention takes its masks as one additive bias over [b, h, sq, skv]
// scores: a where() mask becomes where(cond, 0, fill), scales scalar
// constants, a mask of multi-query scores viewed [b, sq, h, skv] one of
// heads, and a mask over a constant condition that stays the bias (no
// band took it) a constant.
//
//===----------------------------------------------------------------------===//

#include "passes/AttentionPatterns.h"

namespace mlir::mpc::attention_patterns {

Value scalarValue(OpBuilder &b, Location loc, Type elem, double value) {
  APFloat v(value);
  bool lost;
  v.convert(llvm::cast<FloatType>(elem).getFloatSemantics(),
            APFloat::rmNearestTiesToEven, &lost);
  return b.create<ConstantOp>(loc,
                              DenseElementsAttr::get(RankedTensorType::get({}, elem), {v}));
}

Value maskBias(OpBuilder &b, Location loc, Value cond, Type elem, double fill,
               bool fillWhereTrue) {
  Value z = scalarValue(b, loc, elem, 0.0), fv = scalarValue(b, loc, elem, fill);
  std::string diag;
  return (*createInferred(b, loc, WhereOp::getOperationName(),
                          fillWhereTrue ? ValueRange{cond, fv, z} : ValueRange{cond, z, fv},
                          {}, &diag))
      ->getResult(0);
}

Value rowsToHeads(OpBuilder &b, Location loc, Value x, ArrayRef<int64_t> rows) {
  auto t = typeOf(x);
  if (rows.empty() || t.getRank() > 4)
    return x;
  SmallVector<int64_t> shape(4 - t.getRank(), 1);
  shape.append(t.getShape().begin(), t.getShape().end());
  if (shape[2] == 1)
    return reshapeTo(b, loc, x, {shape[0], 1, shape[1], shape[3]});
  std::string diag;
  return (*createInferred(b, loc, TransposeOp::getOperationName(),
                          {reshapeTo(b, loc, x, shape)},
                          {b.getNamedAttr("perm", b.getDenseI64ArrayAttr({0, 2, 1, 3}))},
                          &diag))
      ->getResult(0);
}

Value constantMaskBias(OpBuilder &b, Value bias) {
  auto w = bias.getDefiningOp<WhereOp>();
  auto c = w ? boolConstant(w.getCondition()) : std::nullopt;
  std::optional<double> x = c ? scalarConstant(w.getX()) : std::nullopt,
                        y = c ? scalarConstant(w.getY()) : std::nullopt;
  if (!x || !y)
    return bias;
  const llvm::fltSemantics &sem =
      llvm::cast<FloatType>(typeOf(bias).getElementType()).getFloatSemantics();
  auto value = [&](double d) {
    APFloat f(d);
    bool lost;
    f.convert(sem, APFloat::rmNearestTiesToEven, &lost);
    return f;
  };
  APFloat fx = value(*x), fy = value(*y);
  SmallVector<APFloat> values;
  for (bool bit : *c)
    values.push_back(bit ? fx : fy);
  b.setInsertionPoint(w);
  Value folded = b.create<ConstantOp>(
      w.getLoc(),
      DenseElementsAttr::get(typeOf(w.getCondition()).clone(typeOf(bias).getElementType()),
                             values));
  w.getResult().replaceAllUsesWith(folded);
  w.erase();
  return folded;
}

} // namespace mlir::mpc::attention_patterns
