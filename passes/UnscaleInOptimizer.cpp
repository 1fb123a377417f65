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
// Where mpc-clip-grad-norm's norm reads the very gradients the check
// reads, the norm's kernel gives the flag as well and the check reads
// nothing: 1/scale becomes a division (in FP32 it rounds as the double
// reciprocal rounded to FP32 does: 53 >= 2 * 24 + 2 bits make the double
// rounding of a quotient innocuous), one read of every gradient saved.
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
#include "llvm/ADT/DenseSet.h"

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

/// A norm, 1/scale its factor, over exactly the check's gradients gives
/// the flag; the check becomes 1 / scale.
void flagFromNorm(CheckGradsOp check) {
  Value inv = check.getInvScale();
  llvm::SmallDenseSet<Value> grads(check.getGrads().begin(),
                                   check.getGrads().end());
  for (Operation *user : inv.getUsers()) {
    auto n = dyn_cast<GlobalNormOp>(user);
    if (!n || n.getFactor() != inv || n.getFoundInf())
      continue;
    llvm::SmallDenseSet<Value> read(n.getTensors().begin(),
                                    n.getTensors().end());
    if (read.size() != grads.size() ||
        !llvm::all_of(read, [&](Value t) { return grads.contains(t); }))
      continue;
    OpBuilder b(check);
    auto f32 = RankedTensorType::get({}, b.getF32Type());
    Value one = b.create<ConstantOp>(
        check.getLoc(), DenseElementsAttr::get(f32, b.getF32FloatAttr(1.0f)));
    Value div = b.create<DivOp>(check.getLoc(), f32, one, check.getScale());
    // Right after it: the norm's operands are defined before the check,
    // and every reader of the flag after it.
    auto flagged = b.create<GlobalNormOp>(
        n.getLoc(), f32, check.getFoundInf().getType(), div, n.getTensors());
    n.getNorm().replaceAllUsesWith(flagged.getNorm());
    check.getFoundInf().replaceAllUsesWith(flagged.getFoundInf());
    inv.replaceAllUsesWith(div);
    n.erase();
    check.erase();
    return;
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
  flagFromNorm(check);
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
