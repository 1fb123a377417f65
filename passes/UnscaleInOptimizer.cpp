//===- UnscaleInOptimizer.cpp - updates unscale gradients as they read ----===//
//
// mpc-loss-scaling unscales every gradient into FP32 in one step
// (mpc.unscale_grads), and mpc-optimizer's updates read those FP32 copies:
// each gradient is written once more in FP32 and read back. In a step the
// optimizer updates, the unscale becomes mpc.check_grads (the factor
// 1/scale and the all-finite flag; the gradients only read) and each
// update reads cast(g) * inv where it read the unscaled gradient: the same
// FP32 values (the widening is exact, the product the one unscale_grads
// rounds), which elementwise fusion then computes inside the update's
// kernel, as apex's and torch's fused Adam take the scale.
//
//   %u0, %u1, %inf = mpc.unscale_grads %g0, %g1, %s
//   ... updates of %u0, %u1 ...
// becomes
//   %inv, %inf = mpc.check_grads %g0, %g1, %s
//   %u0 = mpc.mul (mpc.cast %g0 to f32), %inv     (before its first reader)
//   ... updates of %u0, %u1 ...
//
// The step then returns the gradients as the backward made them (scaled,
// in their own type): the runtime reads them only to count a skipped
// step's inf/NaN elements, which the scale does not change (the check
// reads the same operands). Steps without an optimizer (mpc grad) return
// unscaled gradients and are left alone.
//
//===----------------------------------------------------------------------===//

#include "ir/MpcOps.h"
#include "passes/Passes.h"
#include "passes/StepResults.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/TypeUtilities.h"

namespace mlir::mpc {
#define GEN_PASS_DEF_UNSCALEINOPTIMIZER
#include "passes/Passes.h.inc"
} // namespace mlir::mpc

using namespace mlir;
using namespace mlir::mpc;

namespace {

void readUnscaled(UnscaleGradsOp unscale) {
  OpBuilder b(unscale);
  Location loc = unscale.getLoc();
  auto f32 = RankedTensorType::get({}, b.getF32Type());
  auto i1 = RankedTensorType::get({}, b.getI1Type());
  auto check = b.create<CheckGradsOp>(loc, f32, i1, unscale.getGrads(),
                                      unscale.getScale());
  unscale.getFoundInf().replaceAllUsesWith(check.getFoundInf());
  for (auto [g, u] : llvm::zip(unscale.getGrads(), unscale.getUnscaled())) {
    auto unscaled = [&, g = g, u = u](Operation *before) {
      b.setInsertionPoint(before);
      Value wide = g;
      if (g.getType() != u.getType())
        wide = b.create<CastOp>(loc, u.getType(), g);
      return b.create<MulOp>(loc, u.getType(), wide, check.getInvScale());
    };
    // mpc-clip-grad-norm's norm reads its own product, so that it folds
    // into the reduction's kernel (a value read twice would be stored).
    for (OpOperand &use : llvm::make_early_inc_range(u.getUses()))
      if (isa<ReduceL2Op>(use.getOwner()))
        use.set(unscaled(use.getOwner()));
    if (Operation *first = firstReader(*unscale->getBlock(), ValueRange(u))) {
      Value read = unscaled(first);
      u.replaceUsesWithIf(read, [](OpOperand &use) {
        return !isa<func::ReturnOp>(use.getOwner());
      });
    }
    u.replaceAllUsesWith(g); // the returned gradient: as the backward made it
  }
  unscale.erase();
}

struct UnscaleInOptimizer
    : public mpc::impl::UnscaleInOptimizerBase<UnscaleInOptimizer> {
  void runOnOperation() override {
    for (auto f : getOperation().getOps<func::FuncOp>()) {
      if (!f->hasAttr("mpc.optimizer"))
        continue;
      for (auto unscale :
           llvm::make_early_inc_range(f.getOps<UnscaleGradsOp>()))
        readUnscaled(unscale);
      Operation *ret = f.getBody().front().getTerminator();
      f.setFunctionType(FunctionType::get(f.getContext(),
                                          f.getArgumentTypes(),
                                          ret->getOperandTypes()));
    }
  }
};

} // namespace
