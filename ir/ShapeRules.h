//===- ShapeRules.h - result type rules shared by op families ----*- C++ -*-===//
//
// ONNX shape arithmetic on MLIR shapes (ShapedType::kDynamic = unknown), and
// the result type rules named by `Mpc_InferByRule<"rule">` in ODS.
//
//===----------------------------------------------------------------------===//

#ifndef MPC_IR_SHAPERULES_H
#define MPC_IR_SHAPERULES_H

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/TypeUtilities.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Value.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include <optional>

namespace mlir::mpc {

constexpr int64_t kDyn = ShapedType::kDynamic;

/// Emits a shape error at `loc` when there is one; always returns failure.
template <typename... Args>
LogicalResult shapeError(std::optional<Location> loc, Args &&...args) {
  return emitOptionalError(loc, std::forward<Args>(args)...);
}

/// Largest non-splat result the folds materialize; shape arithmetic is
/// tiny.
inline constexpr int64_t kMaxFoldElements = 4096;
/// ONNX multidirectional broadcast of two shapes.
FailureOr<SmallVector<int64_t>> broadcastShapes(ArrayRef<int64_t> a,
                                                ArrayRef<int64_t> b);
/// Broadcasts all operand shapes; the first error names both shapes.
LogicalResult broadcastAll(std::optional<Location> loc, ValueRange values,
                           SmallVectorImpl<int64_t> &shape);
/// Axis in [-rank, rank) to [0, rank); nullopt when out of range.
std::optional<int64_t> normalizeAxis(int64_t axis, int64_t rank);
/// Values of a constant integer tensor operand (from mpc.constant / folds).
bool getConstantInts(Value value, SmallVectorImpl<int64_t> &out);
/// The one value of a constant operand, as a double (a bool as 0 or 1).
std::optional<double> getConstantScalar(Value value);
RankedTensorType rankedOf(Value value);
/// ONNX Slice's first index on an axis of `dim`: from the end where
/// negative, clamped to [0, dim] forward and [0, dim - 1] backward.
int64_t sliceStart(int64_t start, int64_t dim, int64_t step);
/// The values of a small FP32 expression over constants (Add, Sub, Mul,
/// Div of equal sizes or one number, Neg, Ceil, Floor, integer Casts, and
/// 1-D Concat, Slice, Gather), computed in FP32 as the CPU backend would:
/// shapes computed in floats (MobileViT's ceil(h / patch) * patch,
/// Funnel's positions), read only where they are cast to integers.
/// (FloatValues.cpp)
std::optional<SmallVector<float>> floatValues(Value v, int depth = 0);
/// Element-wise knowledge of a 1-D integer shape operand: constants where
/// known, kDyn elsewhere. Looks through concat, unsqueeze, gather and shape,
/// so `concat(unsqueeze(gather(shape(x), 0)), [-1, 8])` gives [?, -1, 8].
/// Returns false when not even the length is known.
bool getPartialInts(Value value, SmallVectorImpl<int64_t> &out);

namespace rules {
LogicalResult sameAsFirst(std::optional<Location>, ValueRange,
                          SmallVectorImpl<Type> &);
LogicalResult sameShapeBool(std::optional<Location>, ValueRange,
                            SmallVectorImpl<Type> &);
LogicalResult broadcast(std::optional<Location>, ValueRange,
                        SmallVectorImpl<Type> &);
LogicalResult broadcastAsFirst(std::optional<Location>, ValueRange,
                               SmallVectorImpl<Type> &);
LogicalResult broadcastToBool(std::optional<Location>, ValueRange,
                              SmallVectorImpl<Type> &);
LogicalResult where(std::optional<Location>, ValueRange,
                    SmallVectorImpl<Type> &);
LogicalResult globalPool(std::optional<Location>, ValueRange,
                         SmallVectorImpl<Type> &);
LogicalResult batchNormTrain(std::optional<Location>, ValueRange,
                             SmallVectorImpl<Type> &);
LogicalResult batchNormGrad(std::optional<Location>, ValueRange,
                            SmallVectorImpl<Type> &);
LogicalResult dropout(std::optional<Location>, ValueRange,
                      SmallVectorImpl<Type> &);
LogicalResult scalarI64(std::optional<Location>, ValueRange,
                        SmallVectorImpl<Type> &);
LogicalResult typeOfSecond(std::optional<Location>, ValueRange,
                           SmallVectorImpl<Type> &);
LogicalResult constantValue(std::optional<Location>, Attribute value,
                            SmallVectorImpl<Type> &);
LogicalResult sameAsFirstAxis(std::optional<Location>, ValueRange, int64_t axis,
                              SmallVectorImpl<Type> &);
LogicalResult argReduce(std::optional<Location>, ValueRange, int64_t axis,
                        bool keepdims, SmallVectorImpl<Type> &);
LogicalResult reduce(std::optional<Location>, ValueRange,
                     std::optional<ArrayRef<int64_t>> axes, bool keepdims,
                     bool noopWithEmptyAxes, SmallVectorImpl<Type> &);
LogicalResult shapeOf(std::optional<Location>, ValueRange,
                      std::optional<int64_t> start, std::optional<int64_t> end,
                      SmallVectorImpl<Type> &);
/// Optimizer ops: operands are (R, T) then `groups` groups of n tensors
/// (X, G, state...); results are the new X and the new state, i.e. every
/// group but the gradients.
LogicalResult optimizer(std::optional<Location>, ValueRange, unsigned groups,
                        SmallVectorImpl<Type> &);
LogicalResult gradient(std::optional<Location>, ValueRange, size_t numXs,
                       SmallVectorImpl<Type> &);

// Adaptor forms named in ODS; they pick out what each rule needs.
#define MPC_OPERAND_RULE(name)                                                 \
  template <typename Adaptor>                                                  \
  LogicalResult name(std::optional<Location> loc, Adaptor a,                   \
                     SmallVectorImpl<Type> &types) {                           \
    return name(loc, a.getOperands(), types);                                  \
  }
MPC_OPERAND_RULE(sameAsFirst)
MPC_OPERAND_RULE(sameShapeBool)
MPC_OPERAND_RULE(broadcast)
MPC_OPERAND_RULE(broadcastAsFirst)
MPC_OPERAND_RULE(broadcastToBool)
MPC_OPERAND_RULE(where)
MPC_OPERAND_RULE(globalPool)
MPC_OPERAND_RULE(batchNormTrain)
MPC_OPERAND_RULE(batchNormGrad)
MPC_OPERAND_RULE(dropout)
MPC_OPERAND_RULE(scalarI64)
MPC_OPERAND_RULE(typeOfSecond)
#undef MPC_OPERAND_RULE

template <typename A, typename = decltype(std::declval<A>().getValueAttr())>
LogicalResult constantValue(std::optional<Location> loc, A a,
                            SmallVectorImpl<Type> &types) {
  return constantValue(loc, Attribute(a.getValueAttr()), types);
}
template <typename A>
LogicalResult sameAsFirstAxis(std::optional<Location> loc, A a,
                              SmallVectorImpl<Type> &types) {
  return sameAsFirstAxis(loc, a.getOperands(), a.getAxis(), types);
}
template <typename A>
LogicalResult argReduce(std::optional<Location> loc, A a,
                        SmallVectorImpl<Type> &types) {
  return argReduce(loc, a.getOperands(), a.getAxis(), a.getKeepdims(), types);
}
template <typename A>
LogicalResult reduce(std::optional<Location> loc, A a,
                     SmallVectorImpl<Type> &types) {
  return reduce(loc, a.getOperands(), a.getAxes(), a.getKeepdims(),
                a.getNoopWithEmptyAxes(), types);
}
template <typename A>
LogicalResult shapeOf(std::optional<Location> loc, A a,
                      SmallVectorImpl<Type> &types) {
  return shapeOf(loc, a.getOperands(), a.getStart(), a.getEnd(), types);
}
template <typename A>
LogicalResult gradient(std::optional<Location> loc, A a,
                       SmallVectorImpl<Type> &types) {
  return gradient(loc, a.getInputs(), a.getXs().size(), types);
}
template <typename A>
LogicalResult momentum(std::optional<Location> loc, A a,
                       SmallVectorImpl<Type> &types) {
  return optimizer(loc, a.getOperands(), 3, types); // X, G, V -> X', V'
}
template <typename A>
LogicalResult adagrad(std::optional<Location> loc, A a,
                      SmallVectorImpl<Type> &types) {
  return optimizer(loc, a.getOperands(), 3, types); // X, G, H -> X', H'
}
template <typename A>
LogicalResult adam(std::optional<Location> loc, A a,
                   SmallVectorImpl<Type> &types) {
  return optimizer(loc, a.getOperands(), 4, types); // X,G,V,H -> X',V',H'
}
} // namespace rules
} // namespace mlir::mpc

#endif // MPC_IR_SHAPERULES_H
