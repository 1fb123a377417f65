//===- Ema.cpp - an exponential moving average of the weights -------------===//
//
// timm's ModelEmaV2 and torch's AveragedModel keep e = lerp(e, p, 1 - decay)
// of every parameter and buffer after each optimizer step; GAN (G_ema) and
// diffusion recipes evaluate and ship that average. Here it is state of
// the train step, `mpc.ema.<p>` for each `mpc.new.<p>` output, computed in
// FP32 from the updated weight, so on the GPU it joins the update's
// elementwise work and is written over its input. With a warmup (timm's
// ModelEmaV3, diffusers' EMAModel) the rate changes every update: it is
// the step's input `mpc.ema_rate`, which the host computes
// (runtime/TrainProtocol.h).
//
//===----------------------------------------------------------------------===//

#include "ir/MpcOps.h"
#include "passes/Passes.h"
#include "passes/StepResults.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/TypeUtilities.h"
#include "llvm/ADT/StringSet.h"

namespace mlir::mpc {
#define GEN_PASS_DEF_EMA
#include "passes/Passes.h.inc"
} // namespace mlir::mpc

using namespace mlir;
using namespace mlir::mpc;

namespace {

struct Ema : public mpc::impl::EmaBase<Ema> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (!(decay >= 0.0 && decay < 1.0)) {
      module.emitError("ema: decay must be in [0, 1), got ") << decay;
      return signalPassFailure();
    }
    if (!(warmupPower >= 0.0 && warmupPower < 1e6 && warmupGamma > 0.0 &&
          warmupGamma < 1e300)) {
      module.emitError("ema: the warmup's power must be >= 0 and its gamma "
                       "> 0, got ")
          << warmupPower << " and " << warmupGamma;
      return signalPassFailure();
    }
    if (warmupPower > 0.0 && warmupNumUpdates) {
      module.emitError("ema: one warmup: warmup-power or warmup-num-updates");
      return signalPassFailure();
    }
    bool any = false;
    for (auto f : module.getOps<func::FuncOp>())
      if (f->hasAttr("mpc.train_step") && f->hasAttr("mpc.optimizer")) {
        any = true;
        average(f);
      }
    if (!any) {
      module.emitError("ema: no train step with updates (run mpc-autodiff "
                       "and mpc-optimizer first)");
      signalPassFailure();
    }
  }

  void average(func::FuncOp f) {
    Block &body = f.getBody().front();
    Operation *ret = body.getTerminator();
    Location loc = ret->getLoc();
    OpBuilder b(ret);
    auto build = [&](StringRef name, ValueRange operands) {
      return (*createInferred(b, loc, name, operands))->getResult(0);
    };
    SmallVector<Value> results(ret->getOperands());
    SmallVector<DictionaryAttr> attrs;
    f.getAllResultAttrs(attrs);
    Value apply = argumentNamed(f, "mpc.input", "mpc.accum.apply");
    // Under a warmup one per-step input (FP32, as the average) for all.
    Value rateInput;
    if (warmupPower > 0.0 || warmupNumUpdates) {
      f.insertArgument(f.getNumArguments(),
                       RankedTensorType::get({}, b.getF32Type()),
                       b.getDictionaryAttr(b.getNamedAttr(
                           "mpc.input", b.getStringAttr("mpc.ema_rate"))),
                       loc);
      rateInput = body.getArguments().back();
    }
    // A trained weight's update keeps the old value on a skipped step; a
    // statistic the forward moved (batch norm's) the runtime keeps then.
    Value foundInf;
    llvm::StringSet<> trained;
    for (unsigned i = 0; i < results.size(); ++i) {
      auto out = attrs[i] ? attrs[i].getAs<StringAttr>("mpc.output") : nullptr;
      if (out && out.getValue() == "mpc.found_inf")
        foundInf = results[i];
      if (auto g = f.getResultAttrOfType<FlatSymbolRefAttr>(i, "mpc.gradient"))
        trained.insert(g.getValue());
    }
    for (unsigned i = 0, n = results.size(); i < n; ++i) {
      auto out = attrs[i] ? attrs[i].getAs<StringAttr>("mpc.output") : nullptr;
      StringRef name = out ? out.getValue() : StringRef();
      if (!name.consume_front("mpc.new."))
        continue;
      auto p = llvm::dyn_cast_or_null<BlockArgument>(
          argumentNamed(f, "mpc.param", name));
      if (!p)
        continue;
      NamedAttrList argAttrs;
      argAttrs.append("mpc.input", b.getStringAttr("mpc.ema." + name));
      if (Attribute perm = f.getArgAttr(p.getArgNumber(), "mpc.stored_perm"))
        argAttrs.append("mpc.stored_perm", perm);
      f.insertArgument(f.getNumArguments(), p.getType(),
                       argAttrs.getDictionary(f.getContext()), p.getLoc());
      Value e = body.getArguments().back();
      Type element = getElementTypeOrSelf(e);
      auto scalar = RankedTensorType::get({}, element);
      Value rate = rateInput;
      if (rate && element != b.getF32Type()) {
        f.emitError("ema: the warmup's rate is FP32; parameter '")
            << name << "' is " << element;
        return signalPassFailure();
      }
      if (!rate)
        rate = b.create<ConstantOp>(
            loc, DenseElementsAttr::get(
                     scalar, b.getFloatAttr(element, 1.0 - (double)decay)));
      Value kept = results[i];
      if (foundInf && !trained.contains(name))
        kept = build(WhereOp::getOperationName(), {foundInf, p, kept});
      Value next = build(
          AddOp::getOperationName(),
          {e, build(MulOp::getOperationName(),
                    {build(SubOp::getOperationName(), {kept, e}), rate})});
      if (apply) // a group's last micro-batch alone
        next = build(WhereOp::getOperationName(), {apply, next, e});
      results.push_back(next);
      attrs.push_back(b.getDictionaryAttr(
          b.getNamedAttr("mpc.output", b.getStringAttr("mpc.ema." + name))));
    }
    setResults(f, results, attrs);
    f->setAttr("mpc.ema", b.getF32FloatAttr((float)decay));
    // The host's recipe for mpc.ema_rate: the decay alone for num_updates'.
    if (rateInput)
      f->setAttr("mpc.ema_warmup",
                 warmupNumUpdates ? b.getDenseF64ArrayAttr({decay})
                                  : b.getDenseF64ArrayAttr(
                                        {decay, warmupPower, warmupGamma}));
  }
};

} // namespace
