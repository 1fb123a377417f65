//===- Composer.h - build an ONNX op's definition op by op ---*- C++ -*-===//
//
// For importers that write an ONNX op as several mpc ops
// (CompositeImporters.cpp, NormImporters.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef MPC_FRONTEND_COMPOSER_H
#define MPC_FRONTEND_COMPOSER_H

#include "frontend/ImporterImpl.h"

#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/APFloat.h"

namespace mlir::mpc::importer {

/// Builds a definition op by op; after the first error every call returns
/// null and the node's error says what failed.
struct Composer {
  NodeContext &c;

  Value op(StringRef name, ValueRange operands,
           ArrayRef<NamedAttribute> attrs = {},
           ArrayRef<int32_t> segments = {}) {
    if (c.failed() || llvm::any_of(operands, [](Value v) { return !v; }))
      return {};
    auto results = c.build(name, operands, attrs, segments);
    return failed(results) ? Value() : (*results)[0];
  }
  Value constant(DenseElementsAttr value) {
    return c.failed() ? Value() : c.constant(value);
  }
  Value i64s(ArrayRef<int64_t> values, ArrayRef<int64_t> shape) {
    return constant(DenseElementsAttr::get(
        RankedTensorType::get(shape, c.b.getI64Type()), values));
  }
  Value i64s(ArrayRef<int64_t> values) {
    return i64s(values, {(int64_t)values.size()});
  }
  Value f32s(ArrayRef<float> values, ArrayRef<int64_t> shape) {
    return constant(DenseElementsAttr::get(
        RankedTensorType::get(shape, c.b.getF32Type()), values));
  }
  /// A tensor of `shape` whose elements are `value` or, where `minusInf`
  /// says so, -inf, in float type `type`.
  Value floats(Type type, ArrayRef<int64_t> shape, double value,
               ArrayRef<bool> minusInf = {}) {
    const llvm::fltSemantics &sem = llvm::cast<FloatType>(type).getFloatSemantics();
    APFloat v(value);
    bool lost;
    v.convert(sem, APFloat::rmNearestTiesToEven, &lost);
    APFloat inf = APFloat::getInf(sem, /*Negative=*/true);
    int64_t n = 1;
    for (int64_t d : shape)
      n *= d;
    SmallVector<APFloat> values;
    for (int64_t i = 0; i < n; ++i)
      values.push_back(!minusInf.empty() && minusInf[i] ? inf : v);
    return constant(
        DenseElementsAttr::get(RankedTensorType::get(shape, type), values));
  }
  Value scalar(Type type, double value) { return floats(type, {}, value); }
  /// `value` rounded to float type `type`.
  static APFloat rounded(Type type, double value) {
    APFloat v(value);
    bool lost;
    v.convert(llvm::cast<FloatType>(type).getFloatSemantics(),
              APFloat::rmNearestTiesToEven, &lost);
    return v;
  }
  /// A constant of float type `type` and `shape` holding `values`.
  Value floatValues(Type type, ArrayRef<int64_t> shape,
                    ArrayRef<double> values) {
    auto list = llvm::map_to_vector(
        values, [&](double v) { return rounded(type, v); });
    return constant(
        DenseElementsAttr::get(RankedTensorType::get(shape, type), list));
  }
  /// `value` everywhere in `shape`, stored once (a splat).
  Value splat(Type type, ArrayRef<int64_t> shape, double value) {
    return constant(DenseElementsAttr::get(RankedTensorType::get(shape, type),
                                           rounded(type, value)));
  }
  Value cast(Value x, Type element) {
    if (!x || c.failed())
      return {};
    auto t = llvm::cast<RankedTensorType>(x.getType());
    return t.getElementType() == element ? x : c.buildCast(x, element);
  }
  Value reshape(Value x, ArrayRef<int64_t> shape) {
    return op("mpc.reshape", {x, i64s(shape)});
  }
  Value transpose(Value x, ArrayRef<int64_t> perm) {
    return op("mpc.transpose", {x},
              {c.named("perm", c.b.getDenseI64ArrayAttr(perm))});
  }
  Value concat(ValueRange xs, int64_t axis) {
    return op("mpc.concat", xs, {c.named("axis", c.b.getI64IntegerAttr(axis))});
  }
  Value bin(StringRef name, Value a, Value b) { return op(name, {a, b}); }
  Value where(Value cond, Value a, Value b) {
    return op("mpc.where", {cond, a, b});
  }
  Value unsqueeze(Value x, ArrayRef<int64_t> axes) {
    return op("mpc.unsqueeze", {x},
              {c.named("axes", c.b.getDenseI64ArrayAttr(axes))});
  }
  /// Index `i` of `x` along `axis`, that axis dropped (a recurrence's
  /// step, a direction, a chunk).
  Value sliceAt(Value x, int64_t axis, int64_t i) {
    return op("mpc.squeeze", {slice(x, axis, i, i + 1)},
              {c.named("axes", c.b.getDenseI64ArrayAttr({axis}))});
  }
  Value slice(Value x, int64_t axis, int64_t start, int64_t end,
              int64_t step = 1) {
    return op("mpc.slice",
              {x, i64s({start}), i64s({end}), i64s({axis}), i64s({step})}, {},
              {1, 1, 1, 1, 1});
  }
};

/// The ops an importer builds from its construction on, which `keep`
/// marks (the constants aside) to stay FP32 under mixed precision
/// (mpc.amp_fp32), saying why: sampling coordinates, which lose their
/// fraction in fp16.
class Fp32Region {
public:
  explicit Fp32Region(NodeContext &c)
      : c(c), block(c.b.getInsertionBlock()),
        last(block->empty() ? nullptr : &block->back()) {}
  void keep(StringRef why) {
    for (Operation *op = last ? last->getNextNode() : &block->front(); op;
         op = op->getNextNode())
      if (op->getName().getStringRef() != "mpc.constant")
        op->setAttr("mpc.amp_fp32", c.b.getStringAttr(why));
  }

private:
  NodeContext &c;
  Block *block;
  Operation *last;
};

/// An axis attribute `name` in [-rank, rank), made non-negative.
inline FailureOr<int64_t> axisIn(NodeContext &c, StringRef name, int64_t axis,
                                 int64_t rank) {
  if (axis < -rank || axis >= rank)
    return c.fail(name + " " + Twine(axis) + " is out of range for rank " +
                  Twine(rank));
  return axis < 0 ? axis + rank : axis;
}

} // namespace mlir::mpc::importer

#endif // MPC_FRONTEND_COMPOSER_H
