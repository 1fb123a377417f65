//===- Evaluation.cpp - the held-out loss while training ------------------===//

#include "Evaluation.h"
#include "TrainStep.h"

#include "codegen/PlanBuilder.h"
#include "frontend/OnnxImporter.h"
#include "ir/MpcOps.h"
#include "passes/Passes.h"
#include "runtime/Npy.h"
#include "runtime/StoredLayouts.h"

#include "mlir/Pass/PassManager.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <cstring>
#include <optional>

using namespace llvm;
namespace rt = ::mpc::rt;

namespace mpc {

/// Rows [start, start + n) of `t` (axis 0).
static rt::Tensor rowsOf(const rt::Tensor &t, int64_t start, int64_t n) {
  rt::Shape shape = t.shape();
  shape[0] = n;
  rt::Tensor out(t.dtype(), shape);
  size_t row = t.bytes() / t.dim(0);
  std::memcpy(out.raw(), static_cast<const char *>(t.raw()) + start * row,
              n * row);
  return out;
}

/// One forward plan over batches of `rows` rows, its session, and the
/// batches it runs (this rank's held-out rows, cut once).
struct EvalPart {
  std::unique_ptr<rt::Plan> plan;
  std::unique_ptr<rt::Session> session;
  int64_t rows = 0;
  size_t lossIndex = 0;
  std::vector<std::map<std::string, rt::Tensor>> batches;
  /// --eval-accuracy: the output holding the loss's scores (-1: none),
  /// the graph input of its labels, and the label it ignores.
  int scoresIndex = -1;
  std::string labels;
  std::optional<int64_t> ignoreIndex;
};

/// Adds to `sums` the positions of `labels` (N x D1..Dk) counted (not the
/// ignored label), those whose label `scores` (N x C x D1..Dk) ranks first
/// and, with `topK`, those it ranks among the first topK. The ranking is
/// argmax's: NaN above numbers, the first of equal scores first.
static void countCorrect(const rt::Tensor &scores, const rt::Tensor &labels,
                         std::optional<int64_t> ignore, int64_t topK,
                         rt::TrainerOptions::EvalSums &sums) {
  int64_t n = scores.dim(0), classes = scores.dim(1);
  int64_t inner = scores.size() / std::max<int64_t>(n * classes, 1);
  auto score = [&](int64_t i, int64_t c, int64_t j) {
    return scores.getFloat((i * classes + c) * inner + j);
  };
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < inner; ++j) {
      int64_t label = labels.getInt(i * inner + j);
      if (ignore && label == *ignore)
        continue;
      sums.counted += 1;
      if (label < 0 || label >= classes)
        continue; // ranked by no score
      const float mine = score(i, label, j);
      int64_t ahead = 0; // the classes ranked before the label
      for (int64_t c = 0; c < classes; ++c) {
        const float v = score(i, c, j);
        ahead += std::isnan(mine) ? std::isnan(v) && c < label
                 : std::isnan(v)  ? true
                                  : v > mine || (v == mine && c < label);
      }
      sums.correct += ahead == 0;
      sums.correctTopK += topK > 0 && ahead < topK;
    }
}

class Evaluator {
public:
  std::vector<EvalPart> parts;
  const rt::Plan *trainPlan = nullptr;
  int64_t topK = 0; // --eval-top-k (0: top-1 alone)

  /// The train session's weights (each parameter p from `prefix` + p where
  /// it holds that: the moving average) into each part's session, then the
  /// sum of the loss times the rows over every batch.
  bool evaluate(rt::Session &train, const std::string &prefix,
                rt::TrainerOptions::EvalSums &sums, std::string &error) {
    sums.topK = topK;
    for (EvalPart &part : parts) {
      if (!copyWeights(train, prefix, part, error))
        return false;
      for (const auto &batch : part.batches) {
        for (const rt::Binding &in : part.plan->inputs)
          if (!part.session->set(in.name, batch.at(in.name), error))
            return false;
        rt::Tensor loss, scores;
        if (!part.session->run(error) ||
            !part.session->output(part.lossIndex, loss, error) ||
            (part.scoresIndex >= 0 &&
             !part.session->output(part.scoresIndex, scores, error)))
          return false;
        sums.lossSum += (double)loss.getFloat(0) * part.rows;
        sums.rows += part.rows;
        if (part.scoresIndex >= 0)
          countCorrect(scores, batch.at(part.labels), part.ignoreIndex, topK,
                       sums);
      }
    }
    return true;
  }

private:
  /// Every parameter the train step holds, from `prefix` + its name where
  /// the step holds that (the moving average; a frozen parameter has
  /// none); one both hold alike is copied session to session, one held in
  /// another layout (--layout nhwc's KRSC filters) through ONNX's.
  bool copyWeights(rt::Session &train, const std::string &prefix,
                   EvalPart &part, std::string &error) {
    for (const rt::Parameter &p : part.plan->params) {
      std::string from = prefix + p.name;
      if (rt::valueOfName(*trainPlan, from) < 0)
        from = p.name;
      if (rt::valueOfName(*trainPlan, from) < 0)
        continue; // a constant of the model: as imported
      auto layout = [](const rt::Plan &plan, const std::string &name) {
        auto it = plan.layouts.find(name);
        return it == plan.layouts.end() ? std::vector<int64_t>() : it->second;
      };
      if (layout(*trainPlan, from) == layout(*part.plan, p.name)) {
        if (!part.session->setFrom(train, from, p.name, error))
          return false;
        continue;
      }
      rt::Tensor held;
      if (!train.get(from, held, error) ||
          !part.session->set(
              p.name,
              rt::toStoredLayout(
                  part.plan->layouts, p.name,
                  rt::toOnnxLayout(trainPlan->layouts, from, held)),
              error))
        return false;
    }
    return true;
  }
};

EvalFlags::EvalFlags(cl::SubCommand &sub)
    : data("eval-data",
           cl::desc("Held-out data for graph input NAME (as --data): "
                    "--eval-data NAME=FILE.npy; the loss over all of it, "
                    "as model.eval() computes it (no dropout, batch norm on "
                    "its running statistics), after every --eval-every "
                    "steps and the last (eval_loss in --metrics and "
                    "TensorBoard)"),
           cl::sub(sub)),
      every("eval-every",
            cl::desc("Steps between evaluations of --eval-data (default: "
                     "after the last step only)"),
            cl::init(0), cl::sub(sub)),
      batch("eval-batch",
            cl::desc("Rows a batch of the evaluation (default: --batch); "
                     "the rows left over run as one smaller batch"),
            cl::init(0), cl::sub(sub)),
      accuracy("eval-accuracy",
               cl::desc("With --eval-data: also the share of held-out "
                        "labels the model ranks first (its loss's "
                        "cross-entropy scores against the loss's labels; "
                        "eval_accuracy in --metrics and TensorBoard)"),
               cl::sub(sub)),
      topK("eval-top-k",
           cl::desc("With --eval-data: also the share of held-out labels "
                    "among the K highest scores, as top-5 accuracy counts "
                    "(eval_top<K>_accuracy in --metrics and TensorBoard); "
                    "implies --eval-accuracy"),
           cl::value_desc("K"), cl::init(0), cl::sub(sub)) {}

bool EvalFlags::validate(std::string &error) const {
  if (!enabled() && (every.getNumOccurrences() || batch.getNumOccurrences() ||
                     accuracy || topK.getNumOccurrences()))
    return (error = "--eval-every, --eval-batch, --eval-accuracy and "
                    "--eval-top-k need --eval-data",
            false);
  if (topK.getNumOccurrences() && topK < 2)
    return (error = "--eval-top-k must be at least 2 (top-1 is "
                    "--eval-accuracy), got " +
                    std::to_string(topK),
            false);
  if (every < 0 || (batch.getNumOccurrences() && batch <= 0))
    return (error = "--eval-every must be >= 0 and --eval-batch positive",
            false);
  return true;
}

bool readSampleArrays(const cl::list<std::string> &specs, StringRef flag,
                      StringRef what, std::map<std::string, rt::Tensor> &arrays,
                      std::string &error) {
  int64_t samples = -1;
  for (const std::string &spec : specs) {
    auto [name, file] = StringRef(spec).split('=');
    std::string label = (what + " '" + name + "'").str();
    rt::Tensor t;
    if (name.empty() || file.empty())
      return (error =
                  (flag + " expects NAME=FILE.npy, got '" + spec + "'").str(),
              false);
    if (!rt::readNpy(file.str(), t, error))
      return (error = label + ": " + error, false);
    if (t.rank() == 0)
      return (error = label + " must have a sample axis 0", false);
    if (samples >= 0 && t.dim(0) != samples)
      return (error = label + " has " + std::to_string(t.dim(0)) +
                      " samples, others " + std::to_string(samples),
              false);
    samples = t.dim(0);
    arrays[name.str()] = std::move(t);
  }
  return true;
}

namespace {

/// The output the train step minimises: `name`, or the first f32 scalar,
/// or the first float scalar (as mpc-autodiff picks it).
bool lossIndex(const rt::Plan &plan, const std::string &name, size_t &index,
               std::string &error) {
  for (bool f32Only : {true, false})
    for (size_t i = 0; i < plan.outputs.size(); ++i) {
      const rt::ValueInfo &v = plan.values[plan.outputs[i].value];
      bool wanted = f32Only ? v.dtype == rt::DType::F32 : rt::isFloat(v.dtype);
      if (name.empty() ? wanted && v.shape.empty()
                       : plan.outputs[i].name == name)
        return (index = i, true);
    }
  return (error = name.empty() ? "the model has no float scalar output"
                               : "no output '" + name + "'",
          false);
}

/// --eval-accuracy: returns the scores of the loss's cross-entropy as one
/// more result (`mpc.eval.scores`) and records its labels' graph input.
bool addScoresOutput(mlir::func::FuncOp f, const std::string &lossName,
                     EvalPart &part, std::string &error) {
  mlir::Operation *ret = f.getBody().front().getTerminator();
  mlir::Value loss;
  for (unsigned i = 0; i < f.getNumResults() && !loss; ++i) {
    auto name = f.getResultAttrOfType<mlir::StringAttr>(i, "mpc.output");
    auto type = mlir::dyn_cast<mlir::RankedTensorType>(f.getResultTypes()[i]);
    if (lossName.empty()
            ? type && type.getRank() == 0 && type.getElementType().isF32()
            : name && name.getValue() == lossName)
      loss = ret->getOperand(i);
  }
  mlir::Operation *op = loss ? loss.getDefiningOp() : nullptr;
  mlir::Value scores, labels;
  std::optional<uint64_t> ignore;
  if (auto ce =
          mlir::dyn_cast_or_null<mlir::mpc::SoftmaxCrossEntropyLossOp>(op))
    scores = ce.getScores(), labels = ce.getLabels(),
    ignore = ce.getIgnoreIndex();
  else if (auto nll =
               mlir::dyn_cast_or_null<mlir::mpc::NegativeLogLikelihoodLossOp>(
                   op))
    scores = nll.getInput(), labels = nll.getTarget(),
    ignore = nll.getIgnoreIndex();
  else
    return (error =
                "--eval-accuracy: the loss is not a SoftmaxCrossEntropyLoss "
                "or NegativeLogLikelihoodLoss of the model's scores",
            false);
  auto arg = mlir::dyn_cast<mlir::BlockArgument>(labels);
  auto input = arg ? f.getArgAttrOfType<mlir::StringAttr>(arg.getArgNumber(),
                                                          "mpc.input")
                   : mlir::StringAttr();
  if (!input)
    return (error = "--eval-accuracy: node '" + mlir::mpc::displayNameOf(op) +
                    "' computes its labels in the graph; accuracy needs them "
                    "as a graph input",
            false);
  mlir::Builder b(f.getContext());
  f.insertResult(f.getNumResults(), scores.getType(),
                 b.getDictionaryAttr(b.getNamedAttr(
                     "mpc.output", b.getStringAttr("mpc.eval.scores"))));
  ret->insertOperands(ret->getNumOperands(), {scores});
  part.labels = input.str();
  if (ignore)
    part.ignoreIndex = (int64_t)*ignore;
  return true;
}

/// The evaluation's forward plan for batches of `rows` rows; `draws` set
/// where it keeps random draws the export recorded.
bool buildPart(const EvalBuild &build,
               const std::map<std::string, rt::Tensor> &arrays, int64_t rows,
               bool accuracy, int64_t topK, EvalPart &part, std::string &draws,
               std::string &error) {
  std::map<std::string, rt::Shape> shapes;
  for (const auto &[name, t] : arrays) {
    shapes[name] = t.shape();
    shapes[name][0] = rows;
  }
  mlir::OwningOpRef<mlir::ModuleOp> module = build.import(shapes, error);
  if (!module)
    return false;
  // The model as the train step has it: its adapters (first, as there),
  // and a half model's FP32 masters read through the same rounding cast.
  mlir::PassManager pm(module->getContext());
  if (build.train)
    mlir::mpc::addLoraPass(pm, *build.train);
  pm.addPass(mlir::mpc::createEvalMode());
  mlir::mpc::buildPrecisionPipeline(pm, build.precision);
  pm.addPass(mlir::mpc::createPromoteHalfParams());
  if (!runPasses(pm, *module, error))
    return false;
  module->walk([&](mlir::mpc::RandomOp r) {
    if (draws.empty())
      draws = mlir::mpc::displayNameOf(r);
  });
  part.plan = std::make_unique<rt::Plan>();
  part.rows = rows;
  mlir::func::FuncOp f = mlir::mpc::entryFunction(*module);
  if ((accuracy && !addScoresOutput(f, build.lossOutput, part, error)) ||
      !mlir::mpc::buildPlan(f, *part.plan, error) ||
      !lossIndex(*part.plan, build.lossOutput, part.lossIndex, error))
    return false;
  if (accuracy) {
    part.scoresIndex = (int)part.plan->outputs.size() - 1;
    const rt::Shape &scores =
        part.plan->values[part.plan->outputs[part.scoresIndex].value].shape;
    if (topK >= scores[1])
      return (error = "--eval-top-k " + std::to_string(topK) +
                      ": the loss's "
                      "scores rank " +
                      std::to_string(scores[1]) +
                      " classes; every label would be among the first " +
                      std::to_string(topK),
              false);
  }
  for (const rt::Binding &in : part.plan->inputs)
    if (!arrays.count(in.name))
      return (error = "no --eval-data for graph input '" + in.name + "'",
              false);
  part.session = build.open(*part.plan, error);
  return part.session != nullptr;
}

} // namespace

bool EvalFlags::setUp(const EvalBuild &build, int64_t trainBatch,
                      rt::TrainerOptions &options, std::string &error) const {
  if (!enabled())
    return true;
  // Owned by the evaluate hook: gone with the trainer's options, before
  // the train session and the device.
  auto ev = std::make_shared<Evaluator>();
  ev->trainPlan = build.trainPlan;
  ev->topK = topK;
  std::map<std::string, rt::Tensor> all;
  if (!readSampleArrays(data, "--eval-data", "eval data", all, error))
    return false;
  // Rank r evaluates rows [r N / R, (r + 1) N / R): batches of b rows from
  // `first`, and one of the rows left over.
  int64_t n = all.begin()->second.dim(0);
  if (n < build.ranks)
    return (error = "--eval-data has " + std::to_string(n) +
                    " samples, fewer than the " + std::to_string(build.ranks) +
                    " ranks sharing them",
            false);
  int64_t first = n * build.rank / build.ranks,
          last = n * (build.rank + 1) / build.ranks;
  int64_t rows = last - first;
  int64_t b = std::min<int64_t>(batch ? batch : trainBatch, rows);
  std::string draws;
  for (int64_t size : {b, rows % b}) {
    if (size == 0)
      continue;
    EvalPart part;
    if (!buildPart(build, all, size, accuracy || topK > 0, topK, part, draws,
                   error))
      return (error = "--eval-data (batches of " + std::to_string(size) +
                      " rows): " + error,
              false);
    int64_t start = first + (size == b ? 0 : rows - rows % b);
    for (int64_t k = 0; k < (size == b ? rows / b : 1); ++k) {
      part.batches.emplace_back();
      for (const auto &[name, t] : all)
        part.batches.back()[name] = rowsOf(t, start + k * size, size);
    }
    ev->parts.push_back(std::move(part));
  }
  if (!draws.empty())
    errs() << "mpc: warning: node '" << draws
           << "' draws random numbers in evaluation too, as the export "
              "recorded them; model.eval() would not (stochastic depth): "
              "the held-out loss varies with the draws\n";
  options.evalEvery = every;
  options.evaluate = [ev](rt::Session &train, const std::string &prefix,
                          rt::TrainerOptions::EvalSums &sums,
                          std::string &err) {
    return ev->evaluate(train, prefix, sums, err);
  };
  return true;
}

} // namespace mpc
