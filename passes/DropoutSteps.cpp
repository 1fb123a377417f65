//===- DropoutSteps.cpp - a train step's dropouts read the step number ----===//
//
// A dropout's mask is a pure function of its key and counter
// (runtime/Philox.h); the counter's step half must change from one train
// step to the next, or every step drops the same elements. The step's
// number is a per-step input, `mpc.rng.step`, fed by the runtime
// (runtime/TrainProtocol.h: randomScalars) as it feeds Adam's step size.
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
      SmallVector<DropoutOp> drawing;
      f.walk([&](DropoutOp d) {
        if (!d.getStep() && mayTrain(d))
          drawing.push_back(d);
      });
      if (drawing.empty() || f.isExternal())
        return;
      OpBuilder b(f.getContext());
      Block &body = f.getBody().front();
      f.insertArgument(f.getNumArguments(),
                       RankedTensorType::get({}, b.getI64Type()),
                       b.getDictionaryAttr(b.getNamedAttr(
                           "mpc.input", b.getStringAttr("mpc.rng.step"))),
                       f.getLoc());
      Value step = body.getArguments().back();
      for (DropoutOp d : drawing)
        d.getStepMutable().assign(step);
    });
  }
};

} // namespace
