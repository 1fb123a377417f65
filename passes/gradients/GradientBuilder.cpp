//===- GradientBuilder.cpp - helpers the gradient rules share -------------===//

#include "passes/gradients/GradientBuilder.h"

namespace mlir::mpc::grad {

RankedTensorType typeOf(Value v) {
  return llvm::cast<RankedTensorType>(v.getType());
}

Value scalar(OpBuilder &b, Location loc, Type elem, double value) {
  auto type = RankedTensorType::get({}, elem);
  Attribute v = llvm::isa<FloatType>(elem)
                    ? (Attribute)b.getFloatAttr(elem, value)
                    : (Attribute)b.getIntegerAttr(elem, (int64_t)value);
  return b.create<ConstantOp>(loc, DenseElementsAttr::get(type, v));
}

Value ints(OpBuilder &b, Location loc, ArrayRef<int64_t> values) {
  return b.create<ConstantOp>(
      loc, DenseElementsAttr::get(
               RankedTensorType::get({(int64_t)values.size()},
                                     b.getI64Type()),
               values));
}

Operation *makeOp(OpBuilder &b, Location loc, StringRef name,
                  ValueRange operands, ArrayRef<NamedAttribute> attrs) {
  std::string diag;
  auto op = createInferred(b, loc, name, operands, attrs, &diag);
  if (failed(op)) // an internal invariant: rules build well-typed ops
    llvm::report_fatal_error(llvm::Twine("mpc-autodiff built an ill-typed ") +
                             name + ": " + diag);
  return *op;
}

Value reshapeTo(OpBuilder &b, Location loc, Value v, RankedTensorType type) {
  if (v.getType() == type)
    return v;
  return b.create<ReshapeOp>(loc, type, v, ints(b, loc, type.getShape()),
                             b.getBoolAttr(true));
}

RankedTensorType keptType(RankedTensorType in,
                          std::optional<ArrayRef<int64_t>> axes) {
  SmallVector<int64_t> kept(in.getShape());
  for (int64_t i = 0; i < in.getRank(); ++i) {
    bool reduced = !axes || axes->empty();
    if (axes)
      for (int64_t a : *axes)
        reduced |= (a < 0 ? a + in.getRank() : a) == i;
    if (reduced)
      kept[i] = 1;
  }
  return in.clone(kept);
}

Context::Context(OpBuilder &b, Operation *op, ArrayRef<Value> resultGrads,
                 ArrayRef<bool> wanted, SmallVectorImpl<Value> &grads)
    : b(b), op(op), loc(op->getLoc()), resultGrads(resultGrads), wanted(wanted),
      grads(grads) {
  g = resultGrads.empty() ? Value() : resultGrads[0];
  y = op->getNumResults() ? op->getResult(0) : Value();
  elem = y ? typeOf(y).getElementType() : Type();
}

} // namespace mlir::mpc::grad
