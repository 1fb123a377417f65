//===- DropoutSteps.cpp - a train step's dropouts read the step number ----===//
//
// A dropout's mask is a pure function of its key and counter
// (runtime/Philox.h); the counter's step half must change from one train
// step to the next, or every step drops the same elements. The step's
// number is a per-step input, `mpc.rng.step`, fed by the runtime
// (runtime/TrainProtocol.h: randomScalars) as it feeds Adam's step size:
// [step, rank], the data-parallel rank offsetting the element counter so
// that ranks draw what one process over the global batch would.
// Fused attention with dropout (mpc.attention and its gradient, which
// redraws the forward's mask) and mpc.random (stochastic depth's draws)
// read it too.
//
//===----------------------------------------------------------------------===//

#include "ir/MpcOps.h"
#include "ir/ShapeRules.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

namespace mlir::mpc {
#define GEN_PASS_DEF_DROPOUTSTEPS
#include "passes/Passes.h.inc"
} // namespace mlir::mpc

using namespace mlir;
using namespace mlir::mpc;

namespace {

/// Whether `d` may run in training mode: its flag is given and not a
/// constant false.
bool mayTrain(DropoutOp d) {
  Value t = d.getTrainingMode();
  return t && getConstantScalar(t) != 0.0;
}

struct DropoutSteps : public mpc::impl::DropoutStepsBase<DropoutSteps> {
  void runOnOperation() override {
    getOperation().walk([&](func::FuncOp f) {
      // The ops that draw and have no step yet.
      SmallVector<Operation *> owners;
      f.walk([&](Operation *op) {
        auto drawsWithout = [&](auto x) {
          return !x.getStep() && x.getDropout().convertToFloat() > 0.0f;
        };
        bool draws = false;
        if (auto d = dyn_cast<DropoutOp>(op))
          draws = !d.getStep() && mayTrain(d);
        else if (auto a = dyn_cast<AttentionOp>(op))
          draws = drawsWithout(a);
        else if (auto g = dyn_cast<AttentionGradOp>(op))
          draws = drawsWithout(g);
        else if (auto r = dyn_cast<RandomOp>(op))
          draws = !r.getStep();
        if (draws)
          owners.push_back(op);
      });
      if (owners.empty() || f.isExternal())
        return;
      OpBuilder b(f.getContext());
      Block &body = f.getBody().front();
      f.insertArgument(f.getNumArguments(),
                       RankedTensorType::get({2}, b.getI64Type()),
                       b.getDictionaryAttr(b.getNamedAttr(
                           "mpc.input", b.getStringAttr("mpc.rng.step"))),
                       f.getLoc());
      Value step = body.getArguments().back();
      for (Operation *op : owners) {
        if (auto d = dyn_cast<DropoutOp>(op))
          d.getStepMutable().assign(step);
        else if (auto a = dyn_cast<AttentionOp>(op))
          a.getStepMutable().assign(step);
        else if (auto r = dyn_cast<RandomOp>(op))
          r.getStepMutable().assign(step);
        else
          cast<AttentionGradOp>(op).getStepMutable().assign(step);
      }
    });
  }
};

} // namespace
