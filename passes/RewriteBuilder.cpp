//===- RewriteBuilder.cpp - build a rewrite before an op, or undo it ------===//

#include "passes/RewriteBuilder.h"
#include "ir/MpcOps.h"

using namespace mlir;
using namespace mlir::mpc;

bool RewriteBuilder::giveUp() {
  while (op->getPrevNode() != before) // readers first
    op->getPrevNode()->erase();
  return false;
}

bool RewriteBuilder::replace(Value y) {
  if (!ok || !y || y.getType() != op->getResult(0).getType())
    return giveUp();
  op->getResult(0).replaceAllUsesWith(y);
  op->erase();
  return true;
}

Value RewriteBuilder::make(StringRef name, ValueRange operands,
                           ArrayRef<NamedAttribute> attrs) {
  if (!ok || llvm::any_of(operands, [](Value v) { return !v; }))
    return fail();
  auto made = createInferred(b, loc, name, operands, attrs);
  return succeeded(made) ? (*made)->getResult(0) : fail();
}

Value RewriteBuilder::fail() {
  ok = false;
  return {};
}

Value RewriteBuilder::reshape(Value v, ArrayRef<int64_t> shape) {
  return ok && v ? reshapeTo(b, loc, v, shape) : fail();
}

Value RewriteBuilder::transpose(Value v, ArrayRef<int64_t> perm) {
  return make(TransposeOp::getOperationName(), {v},
              {b.getNamedAttr("perm", b.getDenseI64ArrayAttr(perm))});
}

Value RewriteBuilder::unsqueeze(Value v, int64_t axis) {
  return make(UnsqueezeOp::getOperationName(), {v},
              {b.getNamedAttr("axes", b.getDenseI64ArrayAttr({axis}))});
}

Value RewriteBuilder::add(Value x, Value y) {
  return x ? make(AddOp::getOperationName(), {x, y}) : y;
}

int64_t RewriteBuilder::dim(Value v, int64_t axis) {
  return llvm::cast<RankedTensorType>(v.getType()).getDimSize(axis);
}

Value RewriteBuilder::slice(Value v, int64_t axis, int64_t start, int64_t end,
                            int64_t step) {
  if (!ok || !v)
    return fail();
  if (start == 0 && end == dim(v, axis) && step == 1)
    return v;
  return make(SliceOp::getOperationName(),
              {v, i64Constant(b, loc, {start}), i64Constant(b, loc, {end}),
               i64Constant(b, loc, {axis}), i64Constant(b, loc, {step})},
              {b.getNamedAttr("operandSegmentSizes",
                              b.getDenseI32ArrayAttr({1, 1, 1, 1, 1}))});
}

Value RewriteBuilder::pad(Value v, int64_t axis, int64_t before,
                          int64_t after) {
  if (!ok || !v)
    return fail();
  v = slice(v, axis, std::max<int64_t>(0, -before),
            dim(v, axis) - std::max<int64_t>(0, -after));
  before = std::max<int64_t>(0, before);
  after = std::max<int64_t>(0, after);
  if (!v || (before == 0 && after == 0))
    return v;
  auto t = llvm::cast<RankedTensorType>(v.getType());
  SmallVector<int64_t> pads(2 * t.getRank(), 0);
  pads[axis] = before;
  pads[t.getRank() + axis] = after;
  auto scalar = RankedTensorType::get({}, t.getElementType());
  Value zero = b.create<ConstantOp>(
      loc,
      DenseElementsAttr::get(scalar, b.getFloatAttr(t.getElementType(), 0.0)));
  return make(PadOp::getOperationName(), {v, zero},
              {b.getNamedAttr("pads", b.getDenseI64ArrayAttr(pads))});
}
