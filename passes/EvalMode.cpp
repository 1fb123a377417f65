//===- EvalMode.cpp - the forward graph as model.eval() runs it -----------===//
//
// A model exported for training drops activations and normalizes with the
// batch's statistics. Its evaluation (`mpc train --eval-data`) runs it as
// torch's model.eval() would: dropouts are the identity and batch norm
// reads its running statistics, which it leaves as they are.
//
//===----------------------------------------------------------------------===//

#include "ir/MpcOps.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

namespace mlir::mpc {
#define GEN_PASS_DEF_EVALMODE
#include "passes/Passes.h.inc"
} // namespace mlir::mpc

using namespace mlir;
using namespace mlir::mpc;

namespace {

void dropNothing(DropoutOp d) {
  if (!d.getMask().use_empty()) { // all kept
    OpBuilder b(d);
    auto maskType = llvm::cast<RankedTensorType>(d.getMask().getType());
    d.getMask().replaceAllUsesWith(b.create<ConstantOp>(
        d.getLoc(), DenseElementsAttr::get(maskType, true)));
  }
  d.getY().replaceAllUsesWith(d.getX());
  d.erase();
}

/// Batch norm with the running statistics it reads, returned unchanged.
void normalizeWithRunningStats(BatchNormTrainOp bn) {
  OpBuilder b(bn);
  auto inference = b.create<BatchNormOp>(
      bn.getLoc(), bn.getY().getType(), bn.getX(), bn.getScale(), bn.getBias(),
      bn.getInputMean(), bn.getInputVar(), bn.getEpsilonAttr(),
      bn.getChannelsLastAttr());
  bn.getY().replaceAllUsesWith(inference.getY());
  bn.getRunningMean().replaceAllUsesWith(bn.getInputMean());
  bn.getRunningVar().replaceAllUsesWith(bn.getInputVar());
  bn.erase();
}

struct EvalMode : public mpc::impl::EvalModeBase<EvalMode> {
  void runOnOperation() override {
    getOperation().walk([](Operation *op) {
      if (auto d = dyn_cast<DropoutOp>(op))
        dropNothing(d);
      else if (auto bn = dyn_cast<BatchNormTrainOp>(op))
        normalizeWithRunningStats(bn);
      else if (auto a = dyn_cast<AttentionOp>(op)) {
        a.setDropout(APFloat(0.0f));
        a.getStepMutable().clear();
        a.removeStreamAttr();
      }
    });
  }
};

} // namespace
