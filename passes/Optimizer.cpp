//===- Optimizer.cpp - the optimizer update inside the train step ---------===//
//
// Appends to the train step the update of every trainable parameter from
// its FP32 gradient, with torch.optim's semantics and arithmetic order (SGD
// with L2 weight decay, momentum, Nesterov, Adam, AdamW, Adagrad), as plain
// elementwise mpc ops on the FP32 masters: the optimizer becomes IR that
// codegen can fuse, and its state is explicit. State tensors are inputs and
// outputs under one name (`mpc.opt.m.<p>`, `mpc.opt.v.<p>`); new parameters
// are outputs `mpc.new.<p>`, as are batch norm's running statistics, which
// the forward updates. Per-step scalars come in as inputs:
// `mpc.opt.first` (i1, momentum: the buffer starts as the first gradient),
// `mpc.opt.step_size` = lr / (1 - beta1^t) and `mpc.opt.bc2_sqrt` =
// sqrt(1 - beta2^t) (Adam, computed in double by the host as torch does).
// With loss scaling, a step with `mpc.found_inf` keeps every old value.
// `no-decay` exempts the parameters it matches from weight decay (Hugging
// Face's no_decay parameter group).
//
//===----------------------------------------------------------------------===//

#include "ir/MpcOps.h"
#include "passes/Passes.h"
#include "passes/StepResults.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Regex.h"

namespace mlir::mpc {
#define GEN_PASS_DEF_OPTIMIZER
#include "passes/Passes.h.inc"
} // namespace mlir::mpc

using namespace mlir;
using namespace mlir::mpc;

namespace {

struct Optimizer : public mpc::impl::OptimizerBase<Optimizer> {
  using Base::Base;

  OpBuilder *b = nullptr;
  std::optional<Location> loc; // the return of the step being updated

  Value build(StringRef name, ValueRange operands) {
    return (*createInferred(*b, *loc, name, operands))->getResult(0);
  }
  Value add(Value x, Value y) { return build(AddOp::getOperationName(), {x, y}); }
  Value sub(Value x, Value y) { return build(SubOp::getOperationName(), {x, y}); }
  Value mul(Value x, Value y) { return build(MulOp::getOperationName(), {x, y}); }
  Value div(Value x, Value y) { return build(DivOp::getOperationName(), {x, y}); }
  Value sqrt(Value x) { return build(SqrtOp::getOperationName(), {x}); }
  Value where(Value c, Value x, Value y) {
    return build(WhereOp::getOperationName(), {c, x, y});
  }
  Value scalar(float v) {
    auto t = RankedTensorType::get({}, b->getF32Type());
    return b->create<ConstantOp>(*loc, DenseElementsAttr::get(t, b->getF32FloatAttr(v)));
  }

  void runOnOperation() override {
    static const StringRef kinds[] = {"sgd",  "momentum", "nesterov",
                                      "adam", "adamw",    "adagrad"};
    if (!llvm::is_contained(kinds, kind)) {
      getOperation().emitError("unknown optimizer '")
          << kind << "' (sgd, momentum, nesterov, adam, adamw, adagrad)";
      return signalPassFailure();
    }
    if (!noDecay.empty() && weightDecay == 0.0) {
      getOperation().emitError("--no-weight-decay exempts parameters from "
                               "--weight-decay, which is 0");
      return signalPassFailure();
    }
    bool any = false;
    for (auto f : getOperation().getOps<func::FuncOp>())
      if (f->hasAttr("mpc.train_step")) {
        any = true;
        if (failed(update(f)))
          return signalPassFailure();
      }
    if (!any) {
      getOperation().emitError("no train step to optimize (run mpc-autodiff "
                               "first)");
      signalPassFailure();
    }
  }

  LogicalResult update(func::FuncOp f) {
    OpBuilder builder(f.getContext());
    b = &builder;
    Block &body = f.getBody().front();
    Operation *ret = body.getTerminator();
    loc = ret->getLoc();
    b->setInsertionPoint(ret);
    auto named = [&](StringRef key, const Twine &value) {
      return b->getDictionaryAttr(
          b->getNamedAttr(key, b->getStringAttr(value)));
    };
    auto input = [&](Type t, const Twine &name) -> Value {
      f.insertArgument(f.getNumArguments(), t, named("mpc.input", name), *loc);
      return body.getArguments().back();
    };
    Value foundInf;
    for (unsigned i = 0; i < f.getNumResults(); ++i)
      if (auto n = f.getResultAttrOfType<StringAttr>(i, "mpc.output");
          n && n.getValue() == "mpc.found_inf")
        foundInf = ret->getOperand(i);
    auto scalarType = RankedTensorType::get({}, b->getF32Type());
    bool useMomentum = (kind == "momentum" || kind == "nesterov") && momentum != 0.0;
    bool adam = kind == "adam" || kind == "adamw";
    Value first, stepSize, bc2Sqrt;
    if (useMomentum)
      first = input(RankedTensorType::get({}, b->getI1Type()), "mpc.opt.first");
    if (adam) {
      stepSize = input(scalarType, "mpc.opt.step_size");
      bc2Sqrt = input(scalarType, "mpc.opt.bc2_sqrt");
    }
    // Under a schedule the rate is a per-step input (the host computes
    // it as torch's LambdaLR: runtime/LrSchedule.h), else a constant.
    const bool scheduled = !lrSchedule.empty();
    Value rate;
    if (scheduled && (!adam || (kind == "adamw" && weightDecay != 0.0)))
      rate = input(scalarType, "mpc.opt.lr");
    float lrF = lr, wdF = weightDecay, muF = momentum, b1 = beta1, b2 = beta2,
          epsF = eps;

    SmallVector<Value> results(ret->getOperands());
    SmallVector<DictionaryAttr> attrs;
    f.getAllResultAttrs(attrs);
    auto emit = [&](Value v, DictionaryAttr attr) {
      results.push_back(v);
      attrs.push_back(attr);
    };
    // Keep the old value on an overflowing step.
    auto guarded = [&](Value oldV, Value newV) {
      return foundInf ? where(foundInf, oldV, newV) : newV;
    };
    // Parameters exempt from weight decay (whole names, as --train-params).
    llvm::Regex exempt("^(" + noDecay + ")$");
    SmallVector<StringRef> decayed;
    bool anyExempt = false;
    for (unsigned i = 0; i < f.getNumResults(); ++i) {
      auto sym = f.getResultAttrOfType<FlatSymbolRefAttr>(i, "mpc.gradient");
      if (!sym)
        continue;
      Value g = ret->getOperand(i), p;
      for (BlockArgument a : body.getArguments())
        if (f.getArgAttr(a.getArgNumber(), "mpc.param") == sym)
          p = a;
      StringRef name = sym.getValue();
      // The update's arithmetic and state are FP32 (a half model's
      // parameters would lose updates below their spacing).
      if (!p || !getElementTypeOrSelf(p).isF32())
        return f.emitError("parameter ")
               << sym << " is " << (p ? p.getType() : Type())
               << "; the optimizer updates FP32 parameters "
                  "(mpc-promote-half-params makes them)";
      const bool noWd = !noDecay.empty() && exempt.match(name);
      const float wdP = noWd ? 0.0f : wdF;
      anyExempt |= noWd;
      if (!noWd)
        decayed.push_back(name);
      // State has its parameter's stored layout (mpc-channels-last's
      // KRSC filters), which checkpoints undo as they do the parameter's.
      auto perm = f.getArgAttr(llvm::cast<BlockArgument>(p).getArgNumber(),
                               "mpc.stored_perm");
      auto stateOf = [&](const char *which) {
        Value s = input(p.getType(), Twine("mpc.opt.") + which + "." + name);
        if (perm)
          f.setArgAttr(f.getNumArguments() - 1, "mpc.stored_perm", perm);
        return s;
      };
      auto emitState = [&](const char *which, Value oldV, Value newV) {
        emit(guarded(oldV, newV),
             named("mpc.output", Twine("mpc.opt.") + which + "." + name));
      };
      // d = g + wd * p (L2; AdamW decays the weights instead).
      Value d = g;
      if (wdP != 0.0f && kind != "adamw")
        d = add(g, mul(scalar(wdP), p));
      Value newP;
      if (kind == "sgd" || kind == "momentum" || kind == "nesterov") {
        if (useMomentum) {
          Value buf = stateOf("m");
          Value newBuf = where(first, d, add(mul(scalar(muF), buf), d));
          emitState("m", buf, newBuf);
          d = kind == "nesterov" ? add(d, mul(scalar(muF), newBuf)) : newBuf;
        }
        newP = sub(p, mul(rate ? rate : scalar(lrF), d));
      } else if (kind == "adagrad") {
        Value sum = stateOf("v");
        Value newSum = add(sum, mul(d, d));
        emitState("v", sum, newSum);
        newP = sub(p, div(mul(rate ? rate : scalar(lrF), d),
                          add(sqrt(newSum), scalar(1e-10f))));
      } else {
        Value p1 = p;
        if (kind == "adamw" && !noWd) // decoupled: p (1 - lr wd)
          p1 = mul(p, rate ? sub(scalar(1.0f), mul(rate, scalar(wdF)))
                           : scalar(1.0f - lrF * wdF));
        Value m = stateOf("m"), v = stateOf("v");
        Value newM = add(mul(scalar(b1), m), mul(scalar(1.0f - b1), d));
        Value newV = add(mul(scalar(b2), v), mul(mul(scalar(1.0f - b2), d), d));
        emitState("m", m, newM);
        emitState("v", v, newV);
        Value denom = add(div(sqrt(newV), bc2Sqrt), scalar(epsF));
        newP = sub(p1, div(mul(stepSize, newM), denom));
      }
      emit(guarded(p, newP), named("mpc.output", Twine("mpc.new.") + name));
    }
    // Batch norm's running statistics: state the forward updates, as
    // torch's does, beside any optimizer (a skipped step keeps them).
    llvm::SmallDenseSet<Attribute> updated;
    f.walk([&](BatchNormTrainOp bn) {
      for (auto [old, next] : {std::pair{bn.getInputMean(), bn.getRunningMean()},
                               std::pair{bn.getInputVar(), bn.getRunningVar()}}) {
        auto arg = llvm::dyn_cast<BlockArgument>(old);
        auto sym = arg && arg.getOwner() == &body
                       ? f.getArgAttrOfType<FlatSymbolRefAttr>(arg.getArgNumber(), "mpc.param")
                       : FlatSymbolRefAttr();
        if (sym && updated.insert(sym).second)
          emit(next, named("mpc.output", Twine("mpc.new.") + sym.getValue()));
      }
    });
    if (!noDecay.empty() && !anyExempt)
      return f.emitError("--no-weight-decay '")
             << noDecay << "' matches no trained parameter (they are: "
             << llvm::join(decayed, ", ") << ")";
    setResults(f, results, attrs);
    f->setAttr("mpc.optimizer", b->getStringAttr(kind));
    // The loop needs it for Adam's step size; an artifact carries it.
    f->setAttr("mpc.lr", b->getF32FloatAttr(lrF));
    if (scheduled)
      f->setAttr("mpc.lr_schedule", b->getStringAttr(lrSchedule));
    if (adam) // the host computes the bias corrections from these (FP32)
      f->setAttr("mpc.adam_betas",
                 b->getDenseF32ArrayAttr({(float)beta1, (float)beta2}));
    return success();
  }
};

} // namespace
