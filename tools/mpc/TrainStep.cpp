//===- TrainStep.cpp - build the train step of an imported model ----------===//

#include "TrainStep.h"

#include "codegen/PlanBuilder.h"
#include "ir/MpcOps.h"
#include "passes/Passes.h"
#include "runtime/Executor.h"

#include "frontend/OnnxImporter.h"
#include "mlir/Pass/PassManager.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <set>
#include <sstream>
#include <utility>

namespace mpc {

/// Appends `kind` (cross_entropy: softmax cross-entropy on class axis 1
/// against i64 labels; mse: mean squared error against a tensor like the
/// output) on the entry function's first output, with a new graph input
/// `label`; the loss becomes the first result, named "loss".
bool appendLoss(mlir::func::FuncOp func, llvm::StringRef kind,
                llvm::StringRef label, std::string &error) {
  auto out = llvm::cast<mlir::RankedTensorType>(func.getResultTypes()[0]);
  mlir::OpBuilder b(func.getContext());
  mlir::Block &body = func.getBody().front();
  auto ret = llvm::cast<mlir::func::ReturnOp>(body.getTerminator());
  b.setInsertionPoint(ret);
  mlir::Location loc = mlir::NameLoc::get(b.getStringAttr("loss"));
  mlir::Type labelType;
  if (kind == "cross_entropy") {
    if (out.getRank() < 2) {
      error = "--loss cross_entropy needs an output with a class axis 1, "
              "got " + llvm::formatv("{0}", out).str();
      return false;
    }
    llvm::SmallVector<int64_t> shape(out.getShape());
    shape.erase(shape.begin() + 1);
    labelType = mlir::RankedTensorType::get(shape, b.getI64Type());
  } else if (kind == "mse") {
    labelType = out;
  } else {
    error = "unknown --loss '" + kind.str() + "' (cross_entropy, mse)";
    return false;
  }
  unsigned index = func.getNumArguments();
  func.insertArgument(index, labelType,
                      b.getDictionaryAttr(b.getNamedAttr(
                          "mpc.input", b.getStringAttr(label))),
                      loc);
  mlir::Value arg = body.getArgument(index);
  mlir::Value loss;
  if (kind == "cross_entropy") {
    loss = (*mlir::mpc::createInferred(
                b, loc, mlir::mpc::SoftmaxCrossEntropyLossOp::getOperationName(),
                {ret.getOperand(0), arg}))
               ->getResult(0);
  } else {
    mlir::Value d = (*mlir::mpc::createInferred(
                         b, loc, mlir::mpc::SubOp::getOperationName(),
                         {ret.getOperand(0), arg}))
                        ->getResult(0);
    mlir::Value sq = (*mlir::mpc::createInferred(
                          b, loc, mlir::mpc::MulOp::getOperationName(), {d, d}))
                         ->getResult(0);
    loss = (*mlir::mpc::createInferred(
                b, loc, mlir::mpc::ReduceMeanOp::getOperationName(), {sq},
                {b.getNamedAttr("keepdims", b.getBoolAttr(false))}))
               ->getResult(0);
  }
  llvm::SmallVector<mlir::Value> results{loss};
  llvm::append_range(results, ret.getOperands());
  llvm::SmallVector<mlir::DictionaryAttr> attrs{b.getDictionaryAttr(
      b.getNamedAttr("mpc.output", b.getStringAttr("loss")))};
  func.getAllResultAttrs(attrs);
  b.create<mlir::func::ReturnOp>(ret.getLoc(), results);
  ret.erase();
  func.setFunctionType(b.getFunctionType(body.getArgumentTypes(),
                                         mlir::ValueRange(results).getTypes()));
  func.setAllResultAttrs(attrs);
  return true;
}

/// The (initializer, result index) pairs of `f`'s binding attribute
/// `key` (initializer name -> output name).
static bool bindOutputs(mlir::func::FuncOp f, llvm::StringRef key,
                        std::vector<std::pair<std::string, size_t>> &out,
                        std::string &error) {
  auto dict = f->getAttrOfType<mlir::DictionaryAttr>(key);
  for (mlir::NamedAttribute b : dict) {
    auto output = llvm::cast<mlir::StringAttr>(b.getValue()).getValue();
    bool found = false;
    for (unsigned i = 0; i < f.getNumResults() && !found; ++i)
      if (auto n = f.getResultAttrOfType<mlir::StringAttr>(i, "mpc.output");
          n && n.getValue() == output) {
        out.emplace_back(b.getName().str(), i);
        found = true;
      }
    if (!found) {
      error = "binding of '" + b.getName().str() + "' names '" +
              output.str() + "', which the graph does not output";
      return false;
    }
  }
  return true;
}

/// A TrainingInfoProto algorithm: the outputs bound to initializers after
/// each step, the first f32 scalar inference output as the loss, and the
/// initialization graph run once into `params`.
bool setUpAlgorithm(mlir::ModuleOp module, mlir::func::FuncOp step,
                    std::map<std::string, rt::Tensor> &params,
                    rt::Trainer &trainer, std::string &error) {
  int64_t inferenceOutputs =
      step->getAttrOfType<mlir::IntegerAttr>("mpc.inference_outputs").getInt();
  int lossIndex = -1;
  for (unsigned i = step.getNumResults() - inferenceOutputs;
       i < step.getNumResults() && lossIndex < 0; ++i)
    if (auto t = llvm::dyn_cast<mlir::RankedTensorType>(step.getResultTypes()[i]);
        t && t.getRank() == 0 && t.getElementType().isF32())
      lossIndex = i;
  if (lossIndex < 0)
    return (error = "the inference graph has no f32 scalar output to report "
                    "as the loss",
            false);
  std::vector<std::pair<std::string, size_t>> bindings;
  if (!bindOutputs(step, "mpc.update_binding", bindings, error))
    return false;
  trainer.useBindings(std::move(bindings), lossIndex);
  for (auto init : module.getOps<mlir::func::FuncOp>()) {
    if (!init->hasAttr("mpc.initialization_binding"))
      continue;
    std::vector<std::pair<std::string, size_t>> initBindings;
    rt::Plan initPlan;
    std::vector<rt::Tensor> initOut;
    if (!bindOutputs(init, "mpc.initialization_binding", initBindings,
                     error) ||
        !mlir::mpc::buildPlan(init, initPlan, error) ||
        !rt::runPlan(initPlan, {}, initOut, error))
      return (error = "initialization graph: " + error, false);
    for (const auto &[name, index] : initBindings) {
      if (!params.count(name))
        return (error = "initialization binds '" + name +
                        "', which is not a float initializer",
                false);
      params[name] = initOut[index];
    }
  }
  return true;
}


bool runPasses(mlir::PassManager &pm, mlir::ModuleOp module,
               std::string &error) {
  mlir::ScopedDiagnosticHandler handler(
      module.getContext(), [&](mlir::Diagnostic &d) {
        if (error.empty()) {
          if (auto name = llvm::dyn_cast<mlir::NameLoc>(d.getLocation()))
            error = "node '" + name.getName().str() + "': ";
          error += d.str();
        }
        return mlir::success();
      });
  return mlir::succeeded(pm.run(module));
}

/// Whether nodes named as torch names one module's calls read a
/// parameter: the names equal but for one scope, "ln" in the first and
/// "ln_1", "ln_2"... in the others (ALBERT's layers, called once a layer,
/// share their parameters as the model means them to).
static bool oneModuleCalledAgain(const std::vector<std::string> &nodes) {
  llvm::SmallVector<llvm::StringRef> first;
  llvm::StringRef(nodes[0]).split(first, '/');
  for (size_t k = 1; k < nodes.size(); ++k) {
    llvm::SmallVector<llvm::StringRef> other;
    llvm::StringRef(nodes[k]).split(other, '/');
    if (other.size() != first.size())
      return false;
    int differing = 0;
    for (auto [a, b] : llvm::zip(first, other)) {
      if (a == b)
        continue;
      if (++differing > 1 || !b.consume_front(a) || !b.consume_front("_") ||
          b.empty() || !llvm::all_of(b, llvm::isDigit))
        return false;
    }
    if (differing != 1)
      return false;
  }
  return true;
}

/// Trainable parameters whose every element is one value, read by several
/// nodes of one op: what torch.onnx.export makes of a freshly initialised
/// model unless told `training=TrainingMode.TRAINING`, merging
/// initializers of equal value (every LayerNorm's gamma of ones, beta of
/// zeros): training then updates one tied parameter where PyTorch trains
/// one each. One warning line per such parameter, unless its readers are
/// one module called again.
static std::vector<std::string> tiedByValue(mlir::ModuleOp module) {
  std::vector<std::string> lines;
  mlir::func::FuncOp entry = mlir::mpc::entryFunction(module);
  // torch.export's signature says which are parameters; merges are refused.
  if (!entry || module->hasAttr("mpc.torch_signature"))
    return lines;
  std::string file;
  if (auto loc = llvm::dyn_cast<mlir::FileLineColLoc>(module.getLoc()))
    file = loc.getFilename().str() + ": ";
  llvm::DenseMap<mlir::Operation *, size_t> order;
  for (mlir::BlockArgument arg : entry.getArguments()) {
    auto sym = entry.getArgAttrOfType<mlir::FlatSymbolRefAttr>(
        arg.getArgNumber(), "mpc.param");
    auto param = sym ? module.lookupSymbol<mlir::mpc::ParamOp>(sym.getAttr())
                     : mlir::mpc::ParamOp();
    auto value = param ? llvm::dyn_cast<mlir::DenseElementsAttr>(param.getValue())
                       : mlir::DenseElementsAttr();
    if (!param || !param.getTrainable() || !value || !value.isSplat() ||
        value.getNumElements() < 2 ||
        !llvm::isa<mlir::FloatType>(value.getElementType()))
      continue;
    std::map<std::string, std::vector<mlir::Operation *>> readers; // by op
    for (mlir::Operation *user : arg.getUsers())
      readers[user->getName().stripDialect().str()].push_back(user);
    for (auto &[op, users] : readers) {
      if (users.size() < 2)
        continue;
      if (order.empty()) // program order, once (only for such a parameter)
        entry.walk([&](mlir::Operation *op) {
          size_t next = order.size();
          order[op] = next;
        });
      llvm::sort(users, [&](mlir::Operation *a, mlir::Operation *b) {
        return order[a] < order[b];
      });
      std::vector<std::string> nodes;
      for (mlir::Operation *u : users)
        nodes.push_back(mlir::mpc::displayNameOf(u));
      if (oneModuleCalledAgain(nodes))
        continue;
      std::ostringstream splat;
      splat << value.getSplatValue<llvm::APFloat>().convertToDouble();
      lines.push_back(llvm::formatv(
          "{0}parameter '{1}' (every element {2}) is read by {3} {4} nodes "
          "('{5}', '{6}'{7}): training updates them as one tied parameter; "
          "torch.onnx.export merges initializers of equal value unless given "
          "training=torch.onnx.TrainingMode.TRAINING",
          file, sym.getValue(), splat.str(), nodes.size(), op, nodes[0], nodes[1],
          nodes.size() > 2 ? ", ..." : ""));
    }
  }
  return lines;
}

bool computesInFp16(mlir::ModuleOp module) {
  bool found = false;
  module.walk([&](mlir::Operation *op) {
    for (mlir::Type t : op->getResultTypes())
      if (auto r = llvm::dyn_cast<mlir::RankedTensorType>(t);
          r && r.getElementType().isF16())
        found = true;
    return found ? mlir::WalkResult::interrupt() : mlir::WalkResult::advance();
  });
  return found;
}

mlir::func::FuncOp buildTrainStep(mlir::ModuleOp module,
                                  mlir::mpc::TrainPipelineOptions &o,
                                  std::string &error) {
  if (auto why = module->getAttrOfType<mlir::StringAttr>("mpc.untrainable"))
    return (error = why.str(), mlir::func::FuncOp());
  static std::set<std::string> warned; // once a process (phases share it)
  for (const std::string &line : tiedByValue(module))
    if (warned.insert(line).second)
      llvm::errs() << "mpc: warning: " << line << "\n";
  // A model computing in FP16 of its own gets --precision fp16's default,
  // dynamic loss scaling: its gradients would underflow as any FP16 step's.
  if (o.lossScale.empty() && o.precision != "fp16" && computesInFp16(module)) {
    o.lossScale = "dynamic";
    static bool noted = false;
    if (!std::exchange(noted, true))
      llvm::errs() << "mpc: note: the model computes in FP16 (its own casts): "
                      "dynamic loss scaling, as --precision fp16 has "
                      "(--loss-scale none turns it off)\n";
  }
  mlir::PassManager pm(module.getContext());
  mlir::mpc::buildTrainPipeline(pm, o);
  if (!runPasses(pm, module, error))
    return {};
  for (auto f : module.getOps<mlir::func::FuncOp>())
    if (f->hasAttr("mpc.train_step"))
      return f;
  return {};
}

bool phasePipeline(const PhaseSpec &ps, mlir::mpc::TrainPipelineOptions &p,
                   std::string &error) {
  p.loss = ps.loss;
  p.trainParams = ps.params;
  if (!ps.optimizer.empty())
    p.optimizer = ps.optimizer;
  if (ps.lr)
    p.lr = *ps.lr;
  if (ps.momentum)
    p.momentum = *ps.momentum;
  if (ps.weightDecay)
    p.weightDecay = *ps.weightDecay;
  if (!ps.betas.empty())
    p.adamBetas = ps.betas;
  if (ps.ema)
    p.ema = *ps.ema;
  // The phase's own warmup, else --ema-warmup's where it keeps an average.
  bool averages = ps.ema && *ps.ema != 0;
  if (!ps.emaWarmup.empty() && !averages)
    return (error = "ema-warmup= warms up the phase's moving average: it "
                    "needs ema=DECAY",
            false);
  mlir::mpc::EmaOptions parsed;
  if (!ps.emaWarmup.empty() &&
      !mlir::mpc::parseEmaWarmup(ps.emaWarmup, parsed, error, "ema-warmup="))
    return false;
  if (!ps.emaWarmup.empty())
    p.emaWarmup = ps.emaWarmup;
  else if (!averages)
    p.emaWarmup.clear();
  return mlir::mpc::validate(p, error);
}

mlir::func::FuncOp buildAlgorithmStep(mlir::ModuleOp module,
                                      std::string &error) {
  mlir::PassManager pm(module.getContext());
  pm.addPass(mlir::mpc::createInlineInference());
  pm.addPass(mlir::mpc::createLowerGradient());
  pm.addPass(mlir::mpc::createChainAlgorithms());
  if (!runPasses(pm, module, error))
    return {};
  for (auto f : module.getOps<mlir::func::FuncOp>())
    if (f->hasAttr("mpc.update_binding"))
      return f;
  error = "no training algorithm";
  return {};
}

} // namespace mpc
