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
#include "mlir/IR/Matchers.h"
#include "mlir/IR/TypeUtilities.h"

namespace mlir::mpc {
#define GEN_PASS_DEF_UNSCALEINOPTIMIZER
#include "passes/Passes.h.inc"
} // namespace mlir::mpc

using namespace mlir;
using namespace mlir::mpc;

namespace {

/// mpc-clip-grad-norm's norm of these unscaled gradients reads the
/// gradients themselves with 1/scale for its factor (its kernel multiplies
/// as it reads: no FP32 copy). A norm that also reads other values, or
/// already has a factor, keeps reading the products.
void unscaleInNorms(UnscaleGradsOp unscale, Value inv) {
  SmallVector<GlobalNormOp> norms;
  for (Value u : unscale.getUnscaled())
    for (Operation *user : u.getUsers())
      if (auto n = dyn_cast<GlobalNormOp>(user);
          n && !llvm::is_contained(norms, n))
        norms.push_back(n);
  for (GlobalNormOp n : norms) {
    DenseElementsAttr one;
    if (!matchPattern(n.getFactor(), m_Constant(&one)) || !one.isSplat() ||
        one.getSplatValue<float>() != 1.0f ||
        !llvm::all_of(n.getTensors(), [&](Value t) {
          return t.getDefiningOp() == unscale.getOperation();
        }))
      continue;
    n.getFactorMutable().assign(inv);
    for (OpOperand &t : n.getTensorsMutable())
      t.set(unscale.getGrads()[cast<OpResult>(t.get()).getResultNumber()]);
  }
}

void readUnscaled(UnscaleGradsOp unscale) {
  OpBuilder b(unscale);
  Location loc = unscale.getLoc();
  auto f32 = RankedTensorType::get({}, b.getF32Type());
  auto i1 = RankedTensorType::get({}, b.getI1Type());
  auto check = b.create<CheckGradsOp>(loc, f32, i1, unscale.getGrads(),
                                      unscale.getScale());
  unscale.getFoundInf().replaceAllUsesWith(check.getFoundInf());
  unscaleInNorms(unscale, check.getInvScale());
  for (auto [g, u] : llvm::zip(unscale.getGrads(), unscale.getUnscaled())) {
    auto unscaled = [&, g = g, u = u](Operation *before) {
      b.setInsertionPoint(before);
      Value wide = g;
      if (g.getType() != u.getType())
        wide = b.create<CastOp>(loc, u.getType(), g);
      return b.create<MulOp>(loc, u.getType(), wide, check.getInvScale());
    };
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
