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
// The reductions are mpc's (FP64 sums, rounded once), so every backend
// computes them as it computes ReduceL2.
//
//===----------------------------------------------------------------------===//

#include "ir/MpcOps.h"
#include "passes/Passes.h"

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
    Operation *at = ret;
    for (unsigned i : gradIndex)
      for (Operation *user : ret->getOperand(i).getUsers())
        if (user != ret && user->getBlock() == &body &&
            user->isBeforeInBlock(at))
          at = user;
    for (unsigned i : gradIndex)
      if (Operation *def = ret->getOperand(i).getDefiningOp();
          def && def->getBlock() == &body && at != ret &&
          !def->isBeforeInBlock(at))
        return at->emitError("clip-grad-norm: an update reads a gradient "
                             "before every gradient is computed");
    OpBuilder b(at);
    Location loc = ret->getLoc();
    auto f32 = b.getF32Type();
    auto scalarType = RankedTensorType::get({}, f32);
    auto build = [&](StringRef name, ValueRange operands,
                     ArrayRef<NamedAttribute> attrs = {}) -> FailureOr<Value> {
      std::string why;
      FailureOr<Operation *> op =
          createInferred(b, loc, name, operands, attrs, &why);
      if (failed(op))
        return f.emitError("clip-grad-norm: ") << why, failure();
      return (*op)->getResult(0);
    };
    auto scalar = [&](float v) -> Value {
      return b.create<ConstantOp>(
          loc, DenseElementsAttr::get(scalarType, b.getF32FloatAttr(v)));
    };
    const NamedAttribute allAxes =
        b.getNamedAttr("keepdims", b.getBoolAttr(false));

    // Each gradient's norm in FP32, then the norm of the norms.
    SmallVector<Value> norms;
    SmallVector<Operation *> normReaders;
    for (unsigned i : gradIndex) {
      Value g = ret->getOperand(i);
      Value wide = g;
      if (!getElementTypeOrSelf(g).isF32()) {
        auto t = llvm::cast<RankedTensorType>(g.getType());
        wide = b.create<CastOp>(loc, t.clone(f32), g);
      }
      FailureOr<Value> n =
          build(ReduceL2Op::getOperationName(), {wide}, {allAxes});
      if (failed(n))
        return failure();
      normReaders.push_back(wide.getDefiningOp() && wide != g
                                ? wide.getDefiningOp()
                                : n->getDefiningOp());
      norms.push_back(*n);
    }
    Value total = norms.front();
    if (norms.size() > 1) {
      SmallVector<Value> rows;
      for (Value n : norms)
        rows.push_back(reshapeTo(b, loc, n, {1}));
      FailureOr<Value> stacked =
          build(ConcatOp::getOperationName(), rows,
                {b.getNamedAttr("axis", b.getI64IntegerAttr(0))});
      if (failed(stacked))
        return failure();
      FailureOr<Value> n =
          build(ReduceL2Op::getOperationName(), {*stacked}, {allAxes});
      if (failed(n))
        return failure();
      total = *n;
    }
    // torch: clip_coef = max_norm / (total_norm + 1e-6), clamped to 1.
    FailureOr<Value> shifted =
        build(AddOp::getOperationName(), {total, scalar(1e-6f)});
    if (failed(shifted))
      return failure();
    FailureOr<Value> ratio =
        build(DivOp::getOperationName(), {scalar((float)maxNorm), *shifted});
    if (failed(ratio))
      return failure();
    FailureOr<Value> coef =
        build(MinOp::getOperationName(), {*ratio, scalar(1.0f)});
    if (failed(coef))
      return failure();

    // The updates read g * coef (in g's type, as torch's g.mul_(coef));
    // without them the step returns it.
    for (auto [k, i] : llvm::enumerate(gradIndex)) {
      Value g = ret->getOperand(i);
      Value factor = *coef;
      Type element = getElementTypeOrSelf(g);
      if (!element.isF32())
        factor =
            b.create<CastOp>(loc, RankedTensorType::get({}, element), factor);
      FailureOr<Value> clipped = build(MulOp::getOperationName(), {g, factor});
      if (failed(clipped))
        return failure();
      Operation *norm = normReaders[k], *mul = clipped->getDefiningOp();
      if (updates)
        g.replaceUsesWithIf(*clipped, [&](OpOperand &use) {
          Operation *o = use.getOwner();
          return o != ret && o != norm && o != mul;
        });
      else
        ret->setOperand(i, *clipped);
    }

    // The norm before clipping: an output.
    SmallVector<Value> results(ret->getOperands());
    SmallVector<DictionaryAttr> attrs;
    f.getAllResultAttrs(attrs);
    results.push_back(total);
    attrs.push_back(b.getDictionaryAttr(
        b.getNamedAttr("mpc.output", b.getStringAttr("mpc.grad_norm"))));
    b.setInsertionPoint(ret);
    b.create<func::ReturnOp>(ret->getLoc(), results);
    ret->erase();
    f.setFunctionType(b.getFunctionType(body.getArgumentTypes(),
                                        ValueRange(results).getTypes()));
    f.setAllResultAttrs(attrs);
    return success();
  }
};

} // namespace
