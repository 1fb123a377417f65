//===- SpecializeShapes.cpp - bind batch, fold shapes, refine types -------===//

#include "ir/MpcOps.h"
#include "passes/DeadOps.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

namespace mlir::mpc {
#define GEN_PASS_DEF_SPECIALIZESHAPES
#include "passes/Passes.h.inc"
} // namespace mlir::mpc

using namespace mlir;
using namespace mlir::mpc;

namespace {

/// Re-runs result type inference on `op` and adopts strictly more static
/// types. Returns failure when inference itself fails.
LogicalResult refineResultTypes(Operation *op) {
  auto infer = dyn_cast<InferTypeOpInterface>(op);
  if (!infer)
    return success();
  SmallVector<Type> types;
  if (failed(infer.inferReturnTypes(
          op->getContext(), op->getLoc(), op->getOperands(),
          op->getAttrDictionary(), op->getPropertiesStorage(),
          op->getRegions(), types)))
    return failure();
  for (auto [result, type] : llvm::zip(op->getResults(), types))
    if (result.getType() != type && areCompatibleTypes(result.getType(), type))
      result.setType(type);
  return success();
}

struct SpecializeShapes
    : public mpc::impl::SpecializeShapesBase<SpecializeShapes> {
  using Base::Base;

  void runOnOperation() override {
    for (auto func : getOperation().getOps<func::FuncOp>())
      if (failed(specialize(func)))
        return signalPassFailure();
  }

  LogicalResult specialize(func::FuncOp func) {
    if (func.isExternal())
      return success();
    Block &body = func.getBody().front();
    if (batch > 0)
      for (BlockArgument arg : body.getArguments()) {
        auto t = llvm::dyn_cast<RankedTensorType>(arg.getType());
        if (t && t.getRank() > 0 && t.isDynamicDim(0) &&
            func.getArgAttr(arg.getArgNumber(), "mpc.input")) {
          SmallVector<int64_t> shape(t.getShape());
          shape[0] = batch;
          arg.setType(t.clone(shape));
        }
      }
    OpBuilder b(func.getContext());
    for (Operation &op : llvm::make_early_inc_range(body)) {
      if (failed(refineResultTypes(&op)))
        return failure();
      b.setInsertionPoint(&op);
      if (auto values = foldToValues(b, &op)) {
        op.replaceAllUsesWith(*values);
        op.erase();
      }
    }
    // Shape arithmetic folded away leaves dead constants behind.
    eraseDeadOps(body);
    func.setFunctionType(FunctionType::get(
        func.getContext(), body.getArgumentTypes(),
        body.getTerminator()->getOperandTypes()));
    return success();
  }
};

} // namespace
