//===- Autodiff.cpp - forward + loss -> train step with gradients ---------===//

#include "ir/MpcOps.h"
#include "passes/GradientRules.h"
#include "passes/DeadOps.h"
#include "passes/Passes.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Regex.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseSet.h"

namespace mlir::mpc {
#define GEN_PASS_DEF_AUTODIFF
#include "passes/Passes.h.inc"
} // namespace mlir::mpc

using namespace mlir;
using namespace mlir::mpc;

namespace {

/// The loss result: the one named `name`, else the first f32 scalar, else
/// the first float scalar (a loss computed under torch.autocast on the CPU
/// is BF16), as mpc train's evaluation picks it (tools/mpc/Evaluation.cpp).
std::optional<unsigned> findLoss(func::FuncOp f, StringRef name) {
  auto scalarOf = [&](unsigned i) {
    auto t = llvm::dyn_cast<RankedTensorType>(f.getResultTypes()[i]);
    return t && t.getRank() == 0 && llvm::isa<FloatType>(t.getElementType())
               ? t.getElementType()
               : Type();
  };
  std::optional<unsigned> half;
  for (unsigned i = 0; i < f.getNumResults(); ++i) {
    auto n = f.getResultAttrOfType<StringAttr>(i, "mpc.output");
    if (!name.empty()) {
      if (n && n.getValue() == name)
        return i;
    } else if (Type t = scalarOf(i); t && t.isF32()) {
      return i;
    } else if (t && !half) {
      half = i;
    }
  }
  return name.empty() ? half : std::nullopt;
}

struct Autodiff : public mpc::impl::AutodiffBase<Autodiff> {
  using Base::Base;

  void getDependentDialects(DialectRegistry &registry) const override {
    Base::getDependentDialects(registry);
    registerGradientInterfaces(registry); // the rules
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    func::FuncOp entry;
    for (auto f : module.getOps<func::FuncOp>())
      if (f->hasAttr("mpc.entry"))
        entry = f;
    if (!entry) {
      module.emitError("no function tagged mpc.entry to differentiate");
      return signalPassFailure();
    }
    if (failed(differentiate(module, entry)))
      signalPassFailure();
  }

  LogicalResult differentiate(ModuleOp module, func::FuncOp entry) {
    auto lossIndex = findLoss(entry, loss);
    if (!lossIndex)
      return entry.emitError(loss.empty()
                                 ? "no float scalar result to use as the loss"
                                 : "no result named '" + loss + "'");
    // A named loss must be a float scalar too: the backward is seeded with
    // d(loss)/d(loss) = 1.
    auto lossType =
        llvm::dyn_cast<RankedTensorType>(entry.getResultTypes()[*lossIndex]);
    if (!lossType || lossType.getRank() != 0 ||
        !llvm::isa<FloatType>(lossType.getElementType()))
      return entry.emitError("loss '")
             << loss << "' is " << entry.getResultTypes()[*lossIndex]
             << ", not a float scalar";
    OpBuilder b(entry);
    b.setInsertionPointAfter(entry);
    auto step = cast<func::FuncOp>(b.clone(*entry));
    step.setSymName((entry.getSymName() + "_train_step").str());
    step->removeAttr("mpc.entry");
    step->setAttr("mpc.train_step", b.getUnitAttr());

    Block &body = step.getBody().front();
    auto ret = cast<func::ReturnOp>(body.getTerminator());
    Value lossValue = ret.getOperand(*lossIndex);

    // Trainable parameters (those `params` matches, when given).
    std::string only = this->params;
    llvm::Regex pattern("^(" + only + ")$");
    SmallVector<BlockArgument> params;
    SmallVector<StringRef> fixed;
    for (BlockArgument arg : body.getArguments())
      if (auto sym = step.getArgAttrOfType<FlatSymbolRefAttr>(
              arg.getArgNumber(), "mpc.param"))
        if (module.lookupSymbol<ParamOp>(sym).getTrainable()) {
          if (only.empty() || pattern.match(sym.getValue()))
            params.push_back(arg);
          else
            fixed.push_back(sym.getValue());
        }
    if (params.empty() && !only.empty()) {
      step.erase();
      return emitError(UnknownLoc::get(module.getContext()), "--train-params '")
             << only << "' matches no trainable parameter (they are: "
             << llvm::join(fixed, ", ") << ")";
    }

    // Reverse sweep, accumulating gradients before the return.
    b.setInsertionPoint(ret);
    SmallVector<Operation *> ops;
    for (Operation &op : body.without_terminator())
      ops.push_back(&op);
    SmallVector<Value> wrt(params.begin(), params.end()), paramGrads;
    if (failed(reverseSweep(b, ops, lossValue, wrt, paramGrads)))
      return failure();

    // Results: the forward results, then d(loss)/d(param) per parameter.
    SmallVector<Value> results(ret.getOperands());
    SmallVector<DictionaryAttr> resultAttrs;
    step.getAllResultAttrs(resultAttrs);
    for (auto [p, g] : llvm::zip(params, paramGrads)) {
      if (!g) // no path to the loss: zero gradient
        g = b.create<ConstantOp>(
            ret.getLoc(),
            DenseElementsAttr::get(
                llvm::cast<RankedTensorType>(p.getType()),
                b.getFloatAttr(getElementTypeOrSelf(p.getType()), 0.0)));
      results.push_back(g);
      resultAttrs.push_back(b.getDictionaryAttr(b.getNamedAttr(
          "mpc.gradient", step.getArgAttr(p.getArgNumber(), "mpc.param"))));
    }
    b.create<func::ReturnOp>(ret.getLoc(), results);
    ret.erase();
    // Rules compute every operand's gradient; drop those nothing uses
    // (e.g. d(loss)/d(input)).
    eraseDeadOps(body);
    step.setFunctionType(b.getFunctionType(body.getArgumentTypes(),
                                           ValueRange(results).getTypes()));
    step.setAllResultAttrs(resultAttrs);
    step->setAttr("mpc.loss_index", b.getI64IntegerAttr(*lossIndex));
    return success();
  }
};

} // namespace
