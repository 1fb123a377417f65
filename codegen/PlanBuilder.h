//===- PlanBuilder.h - mpc IR -> runtime execution plan -----------*- C++ -*-===//

#ifndef MPC_CODEGEN_PLANBUILDER_H
#define MPC_CODEGEN_PLANBUILDER_H

#include "runtime/Plan.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinAttributes.h"

#include <string>

namespace mlir::mpc {

namespace rt = ::mpc::rt;

/// Lowers a function of static-shaped mpc ops into a plan: arguments become
/// inputs or parameters (initial values from their mpc.param), mpc.constant
/// becomes plan constants, every other op one step. On failure returns
/// false with a one-line error naming the op.
bool buildPlan(func::FuncOp func, rt::Plan &plan, std::string &error);

/// The plan's element type for an MLIR one (f32, f16, bf16, i64, i32,
/// i1), or none.
std::optional<rt::DType> dtypeOf(Type t);

/// Elements attribute <-> runtime tensor (static shape, supported types).
rt::Tensor toTensor(ElementsAttr attr);
DenseElementsAttr toAttr(const rt::Tensor &tensor, MLIRContext *ctx);

} // namespace mlir::mpc

#endif // MPC_CODEGEN_PLANBUILDER_H
