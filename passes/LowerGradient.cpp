//===- LowerGradient.cpp - ONNX Gradient ops -> reverse-mode IR -----------===//

#include "ir/MpcOps.h"
#include "passes/GradientRules.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/TypeUtilities.h"

namespace mlir::mpc {
#define GEN_PASS_DEF_LOWERGRADIENT
#include "passes/Passes.h.inc"
} // namespace mlir::mpc

using namespace mlir;
using namespace mlir::mpc;

namespace {

struct LowerGradient : public mpc::impl::LowerGradientBase<LowerGradient> {
  void getDependentDialects(DialectRegistry &registry) const override {
    Base::getDependentDialects(registry);
    registerGradientInterfaces(registry); // the rules
  }

  void runOnOperation() override {
    SmallVector<GradientOp> grads;
    getOperation().walk([&](GradientOp g) {
      if (g.getTarget())
        grads.push_back(g);
    });
    for (GradientOp g : grads)
      if (failed(lower(g)))
        return signalPassFailure();
  }

  LogicalResult lower(GradientOp g) {
    // Everything computed before the Gradient op in its block can lie on
    // the path from xs to y.
    SmallVector<Operation *> ops;
    for (Operation &op : *g->getBlock()) {
      if (&op == g.getOperation())
        break;
      ops.push_back(&op);
    }
    OpBuilder b(g);
    SmallVector<Value> wrt(g.getInputs().take_front(g.getXs().size()));
    SmallVector<Value> result;
    if (failed(reverseSweep(b, ops, g.getTarget(), wrt, result)))
      return failure();
    for (auto [i, v] : llvm::enumerate(result))
      if (!v) // y does not depend on this x
        result[i] = b.create<ConstantOp>(
            g.getLoc(),
            DenseElementsAttr::get(
                llvm::cast<RankedTensorType>(wrt[i].getType()),
                b.getFloatAttr(getElementTypeOrSelf(wrt[i].getType()), 0.0)));
    g->replaceAllUsesWith(result);
    g->erase();
    return success();
  }
};

} // namespace
