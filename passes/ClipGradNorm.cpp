//===- ClipGradNorm.cpp - the gradients' global norm, clipped -------------===//
//
// torch.nn.utils.clip_grad_norm_(params, max_norm) as a mixed-precision
// step runs it, after GradScaler.unscale_: the L2 norm of each returned
// gradient (FP32: the unscaled one of an fp16 step), the L2 norm of those
// norms (torch's order: per-tensor norms, then the norm of their stack),
// and every gradient times min(max_norm / (norm + 1e-6), 1). In a step
// mpc-optimizer updated, the updates read the clipped gradients and the
// step still returns them as computed (the runtime reads them only to
// count a skipped step's inf/NaN elements; mpc-unscale-in-optimizer then
// keeps them scaled, in their own type); a step without updates (mpc grad)
// returns them clipped. The norm before clipping is a step output,
// `mpc.grad_norm` (mpc train writes it to --metrics and TensorBoard). A
// non-finite norm (an overflowing step, skipped anyway) makes the factor 0
// or NaN, as in torch.
//
// The norms are one mpc.global_norm (each tensor's as ReduceL2 computes
// it: FP64 sums, rounded once), which the CUDA backend runs as one
// multi-tensor launch per gradient type.
//
//===----------------------------------------------------------------------===//

#include "ir/MpcOps.h"
#include "passes/Passes.h"
#include "passes/StepResults.h"
#include "passes/RewriteBuilder.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/TypeUtilities.h"

#include <cmath>

namespace mlir::mpc {
#define GEN_PASS_DEF_CLIPGRADNORM
#include "passes/Passes.h.inc"
} // namespace mlir::mpc

using namespace mlir;
using namespace mlir::mpc;

namespace {

struct ClipGradNorm : public mpc::impl::ClipGradNormBase<ClipGradNorm> {
  using Base::Base;

  void runOnOperation() override {
    if (!(maxNorm > 0) || !std::isfinite(maxNorm)) {
      getOperation().emitError("clip-grad-norm: the largest norm must be a "
                               "positive finite number, got ")
          << maxNorm;
      return signalPassFailure();
    }
    for (auto f : getOperation().getOps<func::FuncOp>())
      if (f->hasAttr("mpc.train_step") && failed(clip(f)))
        return signalPassFailure();
  }

  LogicalResult clip(func::FuncOp f) {
    Block &body = f.getBody().front();
    Operation *ret = body.getTerminator();
    SmallVector<unsigned> gradIndex;
    for (unsigned i = 0; i < f.getNumResults(); ++i)
      if (f.getResultAttr(i, "mpc.gradient"))
        gradIndex.push_back(i);
    if (gradIndex.empty())
      return success();
    const bool updates = f->hasAttr("mpc.optimizer");
    // The norm goes before the first update that reads a gradient.
    SmallVector<Value> grads;
    for (unsigned i : gradIndex)
      grads.push_back(ret->getOperand(i));
    Operation *at = firstReader(body, grads);
    if (!at)
      at = ret;
    for (unsigned i : gradIndex)
      if (Operation *def = ret->getOperand(i).getDefiningOp();
          def && def->getBlock() == &body && at != ret &&
          !def->isBeforeInBlock(at))
        return at->emitError("clip-grad-norm: an update reads a gradient "
                             "before every gradient is computed");
    // (Built before the first update, at the return's location; an op
    // that cannot be built makes every later value null.)
    RewriteBuilder rw(at);
    rw.loc = ret->getLoc();
    OpBuilder &b = rw.b;
    auto f32 = b.getF32Type();
    auto scalar = [&](float v) -> Value {
      return b.create<ConstantOp>(
          rw.loc, DenseElementsAttr::get(RankedTensorType::get({}, f32),
                                         b.getF32FloatAttr(v)));
    };

    // Each gradient's norm in FP32, then the norm of the norms: one op
    // (mpc-unscale-in-optimizer gives it 1/scale for its factor).
    Value total =
        b.create<GlobalNormOp>(rw.loc, RankedTensorType::get({}, f32),
                               /*found_inf=*/Type(), scalar(1.0f), grads)
            .getNorm();
    // torch: clip_coef = max_norm / (total_norm + 1e-6), clamped to 1.
    Value coef = rw.make(
        MinOp::getOperationName(),
        {rw.make(DivOp::getOperationName(),
                 {scalar((float)maxNorm), rw.add(total, scalar(1e-6f))}),
         scalar(1.0f)});
    // The updates read g * coef (in g's type, as torch's g.mul_(coef));
    // without them the step returns it.
    SmallVector<Value> clipped;
    for (unsigned i : gradIndex) {
      Value g = ret->getOperand(i);
      Type element = getElementTypeOrSelf(g);
      Value factor = coef;
      if (coef && !element.isF32())
        factor =
            b.create<CastOp>(rw.loc, RankedTensorType::get({}, element), coef);
      clipped.push_back(rw.make(MulOp::getOperationName(), {g, factor}));
    }
    if (!rw.ok) {
      rw.giveUp();
      return f.emitError("clip-grad-norm: cannot build the norm of the "
                         "step's gradients");
    }
    for (auto [k, i] : llvm::enumerate(gradIndex)) {
      Value g = ret->getOperand(i);
      Operation *mul = clipped[k].getDefiningOp();
      if (updates)
        g.replaceUsesWithIf(clipped[k], [&](OpOperand &use) {
          Operation *o = use.getOwner();
          return o != ret && o != total.getDefiningOp() && o != mul;
        });
      else
        ret->setOperand(i, clipped[k]);
    }

    // The norm before clipping: an output.
    SmallVector<Value> results(ret->getOperands());
    SmallVector<DictionaryAttr> attrs;
    f.getAllResultAttrs(attrs);
    results.push_back(total);
    attrs.push_back(b.getDictionaryAttr(
        b.getNamedAttr("mpc.output", b.getStringAttr("mpc.grad_norm"))));
    setResults(f, results, attrs);
    return success();
  }
};

} // namespace
