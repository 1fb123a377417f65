//===- LossScaling.cpp - scaled loss, FP32 unscale, dynamic scale update --===//

#include "ir/MpcOps.h"
#include "passes/Passes.h"
#include "passes/StepResults.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/TypeUtilities.h"

namespace mlir::mpc {
#define GEN_PASS_DEF_LOSSSCALING
#include "passes/Passes.h.inc"
} // namespace mlir::mpc

using namespace mlir;
using namespace mlir::mpc;

namespace {

struct LossScaling : public mpc::impl::LossScalingBase<LossScaling> {
  using Base::Base;

  void runOnOperation() override {
    if (mode == "none")
      return;
    if (mode != "static" && mode != "dynamic") {
      getOperation().emitError("loss-scaling mode must be none, static or "
                               "dynamic, got '")
          << mode << "'";
      return signalPassFailure();
    }
    if (!(scale > 0) || !(minScale > 0) || minScale > maxScale ||
        !(growth >= 1) || !(backoff > 0 && backoff < 1) || interval < 1) {
      getOperation().emitError(
          "invalid loss-scale settings: need scale > 0, 0 < min <= max, "
          "growth >= 1, 0 < backoff < 1, interval >= 1");
      return signalPassFailure();
    }
    bool any = false;
    for (auto f : getOperation().getOps<func::FuncOp>())
      if (f->hasAttr("mpc.train_step")) {
        any = true;
        if (failed(scaleStep(f)))
          return signalPassFailure();
      }
    if (!any) {
      getOperation().emitError("no train step to scale (run mpc-autodiff "
                               "first)");
      signalPassFailure();
    }
  }

  LogicalResult scaleStep(func::FuncOp f) {
    Block &body = f.getBody().front();
    ConstantOp seed;
    for (auto c : body.getOps<ConstantOp>())
      if (c->hasAttr("mpc.grad_seed"))
        seed = c;
    if (!seed)
      return f.emitError("train step has no backward seed (mpc.grad_seed)");
    auto seedType = llvm::cast<RankedTensorType>(seed.getType());
    if (seedType.getRank() != 0)
      return seed.emitError("loss scaling needs a scalar loss, got ")
             << seedType;
    OpBuilder b(f.getContext());
    Location loc = seed.getLoc();
    // State is bound by name: inputs and outputs named mpc.loss_scale...
    auto named = [&](StringRef key, StringRef value) {
      return b.getDictionaryAttr(
          b.getNamedAttr(key, b.getStringAttr(value)));
    };
    auto f32 = RankedTensorType::get({}, b.getF32Type());
    auto i64 = RankedTensorType::get({}, b.getI64Type());
    auto i1 = RankedTensorType::get({}, b.getI1Type());

    // The scale: a constant, or train-step state.
    Value s, goodSteps;
    if (mode == "static") {
      b.setInsertionPoint(seed);
      s = b.create<ConstantOp>(
          loc, DenseElementsAttr::get(f32, b.getF32FloatAttr(scale)));
    } else {
      unsigned n = f.getNumArguments();
      f.insertArgument(n, f32, named("mpc.input", "mpc.loss_scale"), loc);
      f.insertArgument(n + 1, i64,
                       named("mpc.input", "mpc.loss_scale_good_steps"), loc);
      s = body.getArgument(n);
      goodSteps = body.getArgument(n + 1);
      b.setInsertionPoint(seed);
    }
    // Seed the sweep with the scale: every gradient comes out scaled.
    Value scaledSeed = s;
    if (seedType.getElementType() != b.getF32Type())
      scaledSeed = b.create<CastOp>(loc, seedType, s);
    seed.replaceAllUsesWith(scaledSeed);
    seed.erase();

    // One unscale and all-finite check over every gradient.
    Operation *ret = body.getTerminator();
    b.setInsertionPoint(ret);
    SmallVector<unsigned> gradIndex;
    SmallVector<Value> grads;
    for (unsigned i = 0; i < f.getNumResults(); ++i)
      if (f.getResultAttr(i, "mpc.gradient")) {
        gradIndex.push_back(i);
        grads.push_back(ret->getOperand(i));
      }
    // A low-precision gradient widened by a cast read nowhere else (a
    // weight gradient going to its FP32 master) is unscaled from the low
    // type directly: the widening is exact, so the values are the same,
    // and the FP32 copy is neither written nor read again.
    SmallVector<Value> operands;
    SmallVector<CastOp> widened;
    for (Value g : grads) {
      auto cast = g.getDefiningOp<CastOp>();
      Type from = cast ? getElementTypeOrSelf(cast.getX()) : Type();
      if (cast && cast->hasOneUse() && getElementTypeOrSelf(g).isF32() &&
          (from.isF16() || from.isBF16())) {
        operands.push_back(cast.getX());
        widened.push_back(cast);
      } else {
        operands.push_back(g);
      }
    }
    operands.push_back(s);
    SmallVector<Type> types(ValueRange(grads).getTypes());
    types.push_back(i1);
    auto unscale = b.create<UnscaleGradsOp>(ret->getLoc(), types, operands);
    for (auto [k, i] : llvm::enumerate(gradIndex))
      ret->setOperand(i, unscale.getUnscaled()[k]);
    for (CastOp cast : widened)
      cast.erase();
    Value foundInf = unscale.getFoundInf();

    SmallVector<Value> results(ret->getOperands());
    SmallVector<DictionaryAttr> attrs;
    f.getAllResultAttrs(attrs);
    results.push_back(foundInf);
    attrs.push_back(named("mpc.output", "mpc.found_inf"));
    if (mode == "dynamic") {
      auto update = b.create<UpdateLossScaleOp>(
          ret->getLoc(), f32, i64, s, goodSteps, foundInf, /*apply=*/Value(),
          b.getF64FloatAttr(growth), b.getF64FloatAttr(backoff),
          b.getI64IntegerAttr(interval), b.getF64FloatAttr(minScale),
          b.getF64FloatAttr(maxScale));
      results.push_back(update.getNewScale());
      attrs.push_back(named("mpc.output", "mpc.loss_scale"));
      results.push_back(update.getNewGoodSteps());
      attrs.push_back(named("mpc.output", "mpc.loss_scale_good_steps"));
    }
    setResults(f, results, attrs);
    f->setAttr("mpc.loss_scale_mode", b.getStringAttr(mode));
    f->setAttr("mpc.loss_scale_init", b.getF64FloatAttr(scale));
    return success();
  }
};

} // namespace
