//===- GradientRules.h - reverse-mode differentiation -------------*- C++ -*-===//
//
// The rules themselves are GradientOpInterface external models, one file
// per op family in passes/gradients/.
//
//===----------------------------------------------------------------------===//

#ifndef MPC_PASSES_GRADIENTRULES_H
#define MPC_PASSES_GRADIENTRULES_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/Operation.h"

namespace mlir::mpc {

/// Attaches every op's gradient rule (GradientOpInterface) when the mpc
/// dialect loads. mpc-autodiff and mpc-lower-gradient add it themselves;
/// tools add it to list which ops have a rule.
void registerGradientInterfaces(DialectRegistry &registry);

/// Given the gradients of `op`'s results (null where a result has none),
/// builds at `b`'s insertion point the gradients of its operands (null
/// where none flows, e.g. integer labels) with the op's rule; `wanted`
/// (per operand) says which are needed. Fails for ops without one.
LogicalResult buildOperandGradients(OpBuilder &b, Operation *op,
                                    ArrayRef<Value> resultGrads,
                                    ArrayRef<bool> wanted,
                                    SmallVectorImpl<Value> &operandGrads);

/// Reverse-mode sweep over `ops` (in program order, all before `b`'s
/// insertion point): seeds d(target)/d(target) = 1 and returns in `grads`
/// d(target)/d(w) for each of `wrt` (null where no path exists).
LogicalResult reverseSweep(OpBuilder &b, ArrayRef<Operation *> ops,
                           Value target, ArrayRef<Value> wrt,
                           SmallVectorImpl<Value> &grads);

/// `grad` summed over the dimensions `type` was broadcast along, so it
/// has `type` (numpy broadcasting in reverse).
Value unbroadcast(OpBuilder &b, Location loc, Value grad, Type type);

} // namespace mlir::mpc

#endif // MPC_PASSES_GRADIENTRULES_H
