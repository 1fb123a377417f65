//===- GradAccumulation.cpp - micro-batch gradients summed, then updated --===//
//
// Gradient accumulation as torch users write it: (loss / steps).backward()
// on each micro-batch, the FP32 .grad summing them, and optimizer.step(),
// scaler.update() and zero_grad() once every `steps` micro-batches. In a
// train step mpc-optimizer updated, every trained parameter gets an
// accumulator (state `mpc.accum.<p>`, the gradient's type: FP32 for a
// master), t = acc + g / steps, returned as the accumulator's next value
// and read by whatever read the gradient (the updates, mpc-clip-grad-norm's
// norms). The per-step input `mpc.accum.first` marks a group's first
// micro-batch, which reads the accumulator as zero (a select, so whatever
// the last group left there, inf and NaN too, is gone: zero_grad), and
// `mpc.accum.apply` its last: there the updates, the optimizer state and
// the dynamic loss scale move; on the others every update output keeps its
// old value (as an overflowing step does; mpc.update_loss_scale reads
// `apply` too). The outputs that then keep their old value are all the
// runtime skips on such a micro-batch (runtime/AppliedOnly.h): the
// accumulator is t itself, so the updates read it from where the
// accumulation's kernel wrote it and nothing they compute is needed
// before the group's last micro-batch. The all-finite flag is sticky over
// a group (state `mpc.accum.found_inf`): GradScaler checks the summed
// gradients, which one overflowing micro-batch makes non-finite. g / steps
// rather than a seed of scale / steps: the backward is the one a plain
// step runs, and a power-of-two `steps` divides exactly.
//
// The step still returns each micro-batch's own gradients (the runtime
// counts a skipped group's inf/NaN elements in them), and batch norm's
// running statistics move with every micro-batch, as torch's forward moves
// them (the runtime feeds them back after each run whose gradients are
// finite: TrainProtocol's `statistics`).
//
//===----------------------------------------------------------------------===//

#include "ir/MpcOps.h"
#include "passes/Passes.h"
#include "passes/StepResults.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/TypeUtilities.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/StringSet.h"

namespace mlir::mpc {
#define GEN_PASS_DEF_GRADACCUMULATION
#include "passes/Passes.h.inc"
} // namespace mlir::mpc

using namespace mlir;
using namespace mlir::mpc;

namespace {

struct GradAccumulation
    : public mpc::impl::GradAccumulationBase<GradAccumulation> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (steps < 1) {
      module.emitError("grad-accumulation: steps must be at least 1, got ")
          << (int64_t)steps;
      return signalPassFailure();
    }
    if (steps == 1)
      return;
    bool any = false;
    for (auto f : module.getOps<func::FuncOp>()) {
      if (!f->hasAttr("mpc.train_step"))
        continue;
      if (!f->hasAttr("mpc.optimizer")) {
        f.emitError("grad-accumulation: the train step has no optimizer "
                    "updates to accumulate for (run mpc-optimizer first)");
        return signalPassFailure();
      }
      any = true;
      accumulate(f);
    }
    if (!any) {
      module.emitError("grad-accumulation: no train step (run mpc-autodiff "
                       "and mpc-optimizer first)");
      signalPassFailure();
    }
  }

  void accumulate(func::FuncOp f) {
    Block &body = f.getBody().front();
    Operation *ret = body.getTerminator();
    Location loc = ret->getLoc();
    OpBuilder b(f.getContext());
    auto build = [&](StringRef name, ValueRange operands) {
      return (*createInferred(b, loc, name, operands))->getResult(0);
    };
    auto named = [&](const Twine &value) {
      return b.getDictionaryAttr(
          b.getNamedAttr("mpc.output", b.getStringAttr(value)));
    };
    auto input = [&](Type t, const Twine &name) -> Value {
      f.insertArgument(f.getNumArguments(), t,
                       b.getDictionaryAttr(
                           b.getNamedAttr("mpc.input", b.getStringAttr(name))),
                       loc);
      return body.getArguments().back();
    };
    auto inputNamed = [&](StringRef name) {
      return argumentNamed(f, "mpc.input", name);
    };
    auto paramArg = [&](StringRef sym) {
      return argumentNamed(f, "mpc.param", sym);
    };
    auto i1 = RankedTensorType::get({}, b.getI1Type());
    auto scalarOf = [&](Type element, double v) -> Value {
      auto t = RankedTensorType::get({}, element);
      return b.create<ConstantOp>(
          loc, DenseElementsAttr::get(t, b.getFloatAttr(element, v)));
    };

    b.setInsertionPointToStart(&body);
    Value apply = input(i1, "mpc.accum.apply");
    Value first = input(i1, "mpc.accum.first");
    Value notApply = build(NotOp::getOperationName(), {apply});

    SmallVector<Value> results(ret->getOperands());
    SmallVector<DictionaryAttr> attrs;
    f.getAllResultAttrs(attrs);
    auto outputName = [&](unsigned i) {
      auto n = attrs[i].getAs<StringAttr>("mpc.output");
      return n ? n.getValue() : StringRef();
    };

    // Each distinct gradient: acc + g / steps where it was read.
    llvm::MapVector<Value, StringRef> grads;
    llvm::StringSet<> trained;
    for (unsigned i = 0; i < f.getNumResults(); ++i)
      if (auto sym =
              f.getResultAttrOfType<FlatSymbolRefAttr>(i, "mpc.gradient")) {
        grads.insert({ret->getOperand(i), sym.getValue()});
        trained.insert(sym.getValue());
      }
    // All together before the first reader of any gradient, where every
    // gradient is known: the accumulations launch as one multi-tensor
    // kernel on the GPU, apart from the updates (which then skip whole).
    Operation *firstReader =
        mpc::firstReader(body, llvm::make_first_range(grads));
    bool together = firstReader && llvm::all_of(grads, [&](const auto &entry) {
                      Operation *def = entry.first.getDefiningOp();
                      return !def || def->isBeforeInBlock(firstReader);
                    });
    for (auto [g, sym] : grads) {
      if (together)
        b.setInsertionPoint(firstReader);
      else if (Operation *def = g.getDefiningOp())
        b.setInsertionPointAfter(def);
      else
        b.setInsertionPointToStart(&body);
      Value acc = input(g.getType(), "mpc.accum." + sym);
      if (Value p = paramArg(sym)) // the gradient's stored layout
        if (auto perm = f.getArgAttr(
                llvm::cast<BlockArgument>(p).getArgNumber(), "mpc.stored_perm"))
          f.setArgAttr(f.getNumArguments() - 1, "mpc.stored_perm", perm);
      Type element = getElementTypeOrSelf(g);
      Value part = build(MulOp::getOperationName(),
                         {g, scalarOf(element, 1.0 / (double)steps)});
      Value start = build(WhereOp::getOperationName(),
                          {first, scalarOf(element, 0.0), acc});
      Value total = build(AddOp::getOperationName(), {start, part});
      g.replaceUsesWithIf(total, [&](OpOperand &use) {
        return use.getOwner() != ret && use.getOwner() != part.getDefiningOp();
      });
      results.push_back(total);
      attrs.push_back(named("mpc.accum." + sym));
    }

    // Skip the update unless this is the group's last micro-batch and no
    // micro-batch of the group overflowed.
    Value foundInf, effective, skip = notApply;
    for (unsigned i = 0; i < results.size(); ++i)
      if (outputName(i) == "mpc.found_inf")
        foundInf = results[i];
    if (foundInf) {
      if (Operation *def = foundInf.getDefiningOp())
        b.setInsertionPointAfter(def);
      else
        b.setInsertionPointToStart(&body);
      Value sticky = input(i1, "mpc.accum.found_inf");
      effective = build(OrOp::getOperationName(), {sticky, foundInf});
      skip = build(OrOp::getOperationName(), {effective, notApply});
      for (OpOperand &use : llvm::make_early_inc_range(foundInf.getUses())) {
        Operation *user = use.getOwner();
        if (user == effective.getDefiningOp() || user == ret)
          continue;
        // mpc-optimizer's guards select the old value on a skipped step;
        // the loss scale's update reads the group's flag.
        use.set(isa<WhereOp>(user) && use.getOperandNumber() == 0 ? skip
                                                                  : effective);
      }
      results.push_back(
          build(AndOp::getOperationName(), {effective, notApply}));
      attrs.push_back(named("mpc.accum.found_inf"));
    }

    b.setInsertionPoint(ret);
    for (unsigned i = 0; i < f.getNumResults(); ++i) {
      StringRef name = outputName(i);
      if (name == "mpc.found_inf") {
        results[i] = effective;
        continue;
      }
      Value old;
      if (name.starts_with("mpc.opt."))
        old = inputNamed(name);
      else if (name.consume_front("mpc.new.") && trained.contains(name))
        old = paramArg(name);
      if (!old)
        continue; // not an update: the loss, running statistics, the norm
      auto guard = results[i].getDefiningOp<WhereOp>();
      if (guard && guard.getOperand(0) == skip && guard.getOperand(1) == old)
        continue; // mpc-optimizer's overflow guard, now on `skip`
      results[i] = build(WhereOp::getOperationName(), {skip, old, results[i]});
    }
    // The loss scale moves once a group, on its last micro-batch.
    f.walk([&](UpdateLossScaleOp update) {
      update.getApplyMutable().assign(apply);
    });
    setResults(f, results, attrs);
    f->setAttr("mpc.grad_accumulation", b.getI64IntegerAttr(steps));
  }
};

} // namespace
