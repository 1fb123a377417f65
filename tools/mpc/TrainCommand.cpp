//===- TrainCommand.cpp - `mpc train`: train a model on the CPU backend ---===//
//
// Imports the model with the batch bound, builds the train step with
// mpc-autodiff, and loops: slice a batch (in file order with --no-shuffle),
// run the step, update the FP32 master weights with the optimizer.
//
//===----------------------------------------------------------------------===//

#include "Commands.h"
#include "Evaluation.h"
#include "KernelBuild.h"
#include "PhaseSpecs.h"
#include "Precision.h"
#include "Samples.h"
#include "TensorBoard.h"
#include "TrainRanks.h"
#include "TrainStep.h"
#include "TrainedModel.h"

#include "codegen/CudaEmitter.h"
#include "codegen/PlanBuilder.h"
#include "frontend/ModelLoader.h"
#include "frontend/OnnxImporter.h"
#include "ir/MpcOps.h"
#include "passes/Passes.h"
#include "runtime/Npy.h"
#include "runtime/PlanIO.h"
#include "runtime/Checkpoint.h"
#include "runtime/Trainer.h"
#include "runtime/cuda/CudaDevice.h"
#include "runtime/dist/ProcessGroup.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <fstream>
#include <functional>
#include <numeric>
#include <optional>
#include <random>
#include <thread>
#include <unistd.h>

using namespace llvm;
namespace rt = ::mpc::rt;

namespace mpc {

cl::SubCommand trainCommand("train",
                            "Train a model (with its loss) on the CPU backend");

static cl::opt<std::string> model(cl::Positional, cl::Required,
                                  cl::desc("<model.onnx>"), cl::sub(trainCommand));
static cl::list<std::string>
    data("data",
         cl::desc("Training data for graph input NAME, batched along axis 0: "
                  "--data NAME=FILE.npy"),
         cl::sub(trainCommand));
static cl::opt<int64_t> steps("steps", cl::desc("Training steps"),
                              cl::init(100), cl::sub(trainCommand));
static cl::opt<std::string> weightsSpec(
    "weights",
    cl::desc("seed:N: train from the parameters mpc compile --weights "
             "seed:N draws (every float parameter of 4096 or more elements, "
             "from seed N with its own mean and std)"),
    cl::value_desc("seed:N"), cl::sub(trainCommand));
static cl::opt<int64_t> batch("batch", cl::desc("Batch size"), cl::init(32),
                              cl::sub(trainCommand));
static cl::opt<std::string>
    optimizer("optimizer",
              cl::desc("sgd | momentum | nesterov | adam | adamw | adagrad"),
              cl::init("sgd"), cl::sub(trainCommand));
static cl::opt<float> lr("lr", cl::desc("Learning rate"), cl::init(0.01f),
                         cl::sub(trainCommand));
static cl::opt<float> momentum("momentum", cl::desc("Momentum"),
                               cl::init(0.9f), cl::sub(trainCommand));
static cl::opt<float> weightDecay("weight-decay", cl::desc("Weight decay"),
                                  cl::init(0.0f), cl::sub(trainCommand));
static cl::list<double> adamBetas(
    "adam-betas", cl::CommaSeparated,
    cl::desc("Adam/AdamW beta1,beta2 (default 0.9,0.999; DCGAN uses "
             "0.5,0.999)"),
    cl::value_desc("b1,b2"), cl::sub(trainCommand));
static cl::opt<uint64_t> seed("seed", cl::desc("Shuffling seed"), cl::init(0),
                              cl::sub(trainCommand));
static cl::opt<bool> noShuffle("no-shuffle",
                               cl::desc("Take batches in file order"),
                               cl::sub(trainCommand));
static cl::opt<std::string> metrics("metrics",
                                    cl::desc("Write one JSON object per step"),
                                    cl::value_desc("file.jsonl"),
                                    cl::sub(trainCommand));
static cl::opt<std::string> tensorboardDir(
    "tensorboard",
    cl::desc("Write TensorBoard event files here: loss, loss scale, skipped "
             "steps, gradient underflow/overflow, learning rate, samples/s "
             "(and the gradient norm with --clip-grad-norm)"),
    cl::value_desc("dir"), cl::sub(trainCommand));
static cl::opt<std::string> outputModel("o",
                                        cl::desc("Write the model with the "
                                                 "trained FP32 weights"),
                                        cl::value_desc("trained.onnx"),
                                        cl::sub(trainCommand));
static cl::opt<std::string> emaOutput(
    "ema-output",
    cl::desc("Write the model with the weights' moving average (--ema)"),
    cl::value_desc("average.onnx"), cl::sub(trainCommand));
static cl::opt<std::string>
    checkpoint("checkpoint",
               cl::desc("Save parameters, optimizer state and step here "
                        "(atomically) every --checkpoint-every steps and at "
                        "the end"),
               cl::value_desc("dir"), cl::sub(trainCommand));
static cl::opt<int64_t> checkpointEvery("checkpoint-every",
                                        cl::desc("Steps between checkpoints"),
                                        cl::init(100), cl::sub(trainCommand));
static cl::opt<bool> resume("resume",
                            cl::desc("Continue from --checkpoint (bit-exact)"),
                            cl::sub(trainCommand));
static cl::opt<std::string>
    lossKind("loss",
             cl::desc("For a model without a loss: append cross_entropy or mse "
                      "on its first output, against --label"),
             cl::sub(trainCommand));
static cl::opt<std::string>
    labelName("label",
              cl::desc("Name of the label input the appended loss reads (fed "
                       "by --data NAME=...)"),
              cl::init("label"), cl::sub(trainCommand));
static PrecisionFlags precisionFlags(trainCommand, /*training=*/true);
static RankFlags rankFlags(trainCommand);
static SampleFlags sampleFlags(trainCommand);
static EvalFlags evalFlags(trainCommand);
static cl::opt<std::string> trainDevice("device", cl::desc("cpu | cuda"),
                                        cl::init("cpu"), cl::sub(trainCommand));
static cl::opt<bool> cudaGraph(
    "cuda-graph",
    cl::desc("With --device cuda, launch each step as one captured CUDA "
             "graph (default on; =false launches kernel by kernel)"),
    cl::init(true), cl::sub(trainCommand));
static cl::opt<std::string> trainGemm(
    "gemm",
    cl::desc("With --device cuda, who runs the GEMMs: auto (per shape the "
             "faster of cuBLASLt and mpc's kernel, timed when the session "
             "opens; mpc's kernels where cuBLASLt does not load; default) | "
             "cublaslt | mpc"),
    cl::init("auto"), cl::sub(trainCommand));
static cl::opt<std::string> trainConv(
    "conv",
    cl::desc("With --device cuda, who runs the convolutions: auto "
             "(per shape the faster of cuDNN and mpc's kernel, timed when the "
             "session opens; mpc's kernels where cuDNN does not load; "
             "default) | cudnn | mpc"),
    cl::init("auto"), cl::sub(trainCommand));
static cl::opt<std::string> trainAttentionDq("attention-dq",
                                            cl::desc(kAttentionDqHelp),
                                            cl::init("auto"),
                                            cl::sub(trainCommand));
static cl::opt<int> trainAttentionRows("attention-rows",
                                      cl::desc(kAttentionRowsHelp),
                                      cl::init(128), cl::sub(trainCommand));
static cl::opt<bool> trainTf32(
    "allow-tf32",
    cl::desc("With --device cuda, let FP32 GEMMs round their operands to "
             "TF32 on tensor cores (cuBLASLt); default off"),
    cl::sub(trainCommand));
static cl::list<std::string> phaseSpecs(
    "phase",
    cl::desc("A phase of each step, in order: loss=OUTPUT,params=REGEX "
             "(a GAN: the discriminator's loss and parameters, then the "
             "generator's); later phases see the parameters earlier ones "
             "updated; also optimizer=, lr=, momentum=, weight-decay=, "
             "betas=B1/B2, ema=DECAY (this phase's weights' moving average, "
             "a generator's G_ema: --ema-output), ema-warmup= (its warmup, "
             "as --ema-warmup; default --ema-warmup's)"),
    cl::value_desc("loss=NAME,params=REGEX"), cl::sub(trainCommand));
static cl::opt<std::string> recipe(
    "recipe",
    cl::desc("The phases as a JSON file: {\"phases\": [{\"loss\": ..., "
             "\"params\": ..., \"optimizer\": ..., \"lr\": ..., \"betas\": "
             "[b1, b2], \"ema\": ..., \"ema_warmup\": \"0.75\"}, ...], "
             "\"loss_scaler\": \"shared\"} (instead of --phase)"),
    cl::value_desc("recipe.json"), cl::sub(trainCommand));
static cl::opt<std::string> lossScaler(
    "loss-scaler",
    cl::desc("Phases: per-phase (a dynamic loss scale each; default) | "
             "shared (one, as PyTorch's multi-model AMP recipe's one "
             "GradScaler)"),
    cl::init("per-phase"), cl::sub(trainCommand));
static cl::opt<std::string>
    lossName("loss-output",
             cl::desc("Graph output to minimise (default: the first f32 "
                      "scalar, else float scalar)"),
             cl::sub(trainCommand));

/// Reads the --data arrays (one per graph input, samples along axis 0)
/// and records their batch shapes for the import.
static bool readData(std::map<std::string, rt::Tensor> &arrays,
                     mlir::mpc::ImportOptions &options, std::string &error) {
  if (!readSampleArrays(data, "--data", "data", arrays, error))
    return false;
  for (const auto &[name, t] : arrays) {
    rt::Shape shape = t.shape();
    shape[0] = batch;
    options.inputShapes[name] = shape;
  }
  if (arrays.empty() || arrays.begin()->second.dim(0) < batch)
    return (error = "need at least one full batch of " +
                    std::to_string(batch) + " samples in --data",
            false);
  return true;
}

/// The train step as mpc-train-pipeline builds it, in the form for the
/// device it trains on (setTrainTarget).
static void pipelineOptions(mlir::mpc::TrainPipelineOptions &pipeline) {
  precisionFlags.apply(pipeline);
  pipeline.loss = lossName.getValue();
  mlir::mpc::setTrainTarget(pipeline, trainDevice == "cuda");
  pipeline.optimizer = optimizer.getValue();
  pipeline.lr = lr.getValue();
  pipeline.momentum = momentum.getValue();
  pipeline.weightDecay = weightDecay.getValue();
  std::vector<double> betas(adamBetas.begin(), adamBetas.end());
  pipeline.adamBetas = betas;
  rankFlags.apply(pipeline);
}

/// A session for `plan` on --device (its device code built for CUDA), or
/// null with `error`.
static std::unique_ptr<rt::Session> openSession(rt::Plan &plan,
                                                const rt::CudaInfo &gpu,
                                                std::string &error,
                                                bool evaluation = false) {
  plan.cudaGemm = trainGemm;
  plan.cudaConv = trainConv;
  plan.cudaTf32 = trainTf32;
  plan.cudaAttentionDq = trainAttentionDq;
  plan.cudaAttentionRows = trainAttentionRows;
  if (trainDevice != "cuda")
    return rt::openCpuSession(plan);
  std::string cudaDir;
  if (!buildDeviceCode(plan, gpu, cudaDir, error, evaluation))
    return nullptr;
  return rt::openCudaSession(plan, cudaDir, cudaGraph, error);
}

/// The loop's options; `module` (the model) names the precision it
/// computes in, its own FP16 where --precision leaves it FP32.
static rt::TrainerOptions trainerOptions(mlir::ModuleOp module) {
  rt::TrainerOptions o;
  o.steps = steps;
  o.batch = batch;
  o.shuffle = !noShuffle;
  o.seed = seed;
  o.lr = lr;
  o.metricsPath = metrics;
  o.checkpointDir = checkpoint;
  o.checkpointEvery = checkpointEvery;
  o.resume = resume;
  o.precision = precisionFlags.precision;
  if (o.precision == "fp32" && computesInFp16(module))
    o.precision = "fp16";
  o.lossScaleMode = precisionFlags.lossScaleMode();
  o.print = [](const std::string &text) {
    outs() << text;
    outs().flush();
  };
  return o;
}

namespace {

/// After training: the TensorBoard file flushed first (what a failed run
/// logged stays readable), then the training error, then `-o`.
int finishTraining(bool trained, const std::string &error,
                   TensorBoardWriter &tb, std::string &tbError,
                   const std::map<std::string, rt::Tensor> &params,
                   const rt::StoredLayouts &layouts,
                   const std::map<std::string, rt::Tensor> &average = {},
                   const std::vector<LoraPair> &lora = {}) {
  if ((!tensorboardDir.empty() && tbError.empty() && !tb.flush(tbError)) ||
      !tbError.empty())
    return reportError(tbError);
  if (!trained)
    return reportError(model + ": " + error);
  if (!tensorboardDir.empty())
    outs() << "tensorboard: wrote " << tb.path() << "\n";
  // The moving average (in ONNX's layout already) for --ema-output, a
  // frozen weight's average being the weight.
  auto write = [&](const std::string &path,
                   const std::map<std::string, rt::Tensor> &held,
                   const rt::StoredLayouts &stored) {
    std::string writeError;
    if (!writeTrainedModel(model, path, held, stored, lora, params, writeError))
      return reportError(writeError);
    outs() << "wrote " << path << "\n";
    return 0;
  };
  if (!outputModel.empty() && write(outputModel, params, layouts) != 0)
    return 1;
  if (!emaOutput.empty() && write(emaOutput, average, {}) != 0)
    return 1;
  return 0;
}

/// `mpc train --phase ...`: one train step per phase (its loss, the
/// parameters it updates, the shared optimizer flags), run in order each
/// step over shared parameters.
int trainPhases(mlir::ModuleOp module, const rt::CudaInfo &gpu,
                std::map<std::string, rt::Tensor> &arrays,
                rt::dist::ProcessGroup *group) {
  bool lead = !group || group->rank() == 0;
  if (!lead) { // rank 0 writes what the job produces
    tensorboardDir.setValue("");
    outputModel.setValue("");
    emaOutput.setValue("");
  }
  std::string error;
  PhaseList list;
  if (!readPhaseList(phaseSpecs, recipe, lossScaler,
                     lossScaler.getNumOccurrences() > 0, list, error) ||
      !checkPhaseEmaWarmup(list, precisionFlags.emaWarmup->getValue(), error))
    return reportError(error);
  const std::vector<PhaseSpec> &specs = list.specs;
  if (!emaOutput.empty() &&
      llvm::none_of(specs, [](const PhaseSpec &s) { return s.ema; }))
    return reportError("--ema-output writes the weights' moving average: "
                       "with phases it needs a phase's ema=DECAY");
  TensorBoardWriter tensorboard;
  std::string tensorboardError;
  if (!tensorboardDir.empty() && !tensorboard.open(tensorboardDir, error))
    return reportError(error);
  std::vector<rt::Plan> plans(specs.size());
  std::vector<std::unique_ptr<rt::Session>> sessions;
  std::vector<std::unique_ptr<rt::Trainer>> trainers;
  std::vector<rt::Trainer *> phases;
  std::vector<std::string> names;
  for (size_t k = 0; k < specs.size(); ++k) {
    mlir::OwningOpRef<mlir::ModuleOp> copy = module.clone();
    mlir::mpc::TrainPipelineOptions pipeline;
    pipelineOptions(pipeline);
    pipeline.dataParallel = group != nullptr;
    const PhaseSpec &ps = specs[k];
    if (!phasePipeline(ps, pipeline, error))
      return reportError(list.spelled[k] + ": " + error);
    mlir::func::FuncOp step = buildTrainStep(*copy, pipeline, error);
    if (!step || !mlir::mpc::buildPlan(step, plans[k], error))
      return reportError(model + ": phase " + specs[k].loss + ": " + error);
    sessions.push_back(openSession(plans[k], gpu, error));
    if (!sessions.back())
      return reportError(model + ": " + error);
    rt::TrainerOptions options = trainerOptions(*copy);
    options.group = group;
    options.sharedLossScale = list.scaler == "shared";
    if (!lead) {
      options.progress = false;
      options.metricsPath.clear();
    }
    if (ps.lr)
      options.lr = (float)*ps.lr;
    if (!tensorboardDir.empty())
      options.onStep = trainScalars(tensorboard, ps.loss + "/", options.lr,
                                    tensorboardError);
    // The last phase's forward pass gives the samples of a step.
    if (k + 1 == specs.size() && lead &&
        !sampleFlags.setUp(plans[k],
                           tensorboardDir.empty() ? nullptr : &tensorboard,
                           options, error))
      return reportError(model + ": " + error);
    trainers.push_back(std::make_unique<rt::Trainer>(plans[k], *sessions.back(),
                                                     options));
    phases.push_back(trainers.back().get());
    names.push_back(specs[k].loss);
  }
  std::vector<std::vector<std::string>> owned;
  for (const rt::Plan &plan : plans) {
    owned.emplace_back();
    for (const auto &[index, param] : plan.train->gradients)
      owned.back().push_back(param);
  }
  if (!checkPhaseOwners(list, owned, error))
    return reportError(error);
  std::map<std::string, rt::Tensor> params;
  for (const rt::Plan &plan : plans)
    addInitialParams(plan, params);
  bool trained = rt::Trainer::trainPhases(phases, names, arrays, params, error);
  std::vector<const rt::Plan *> planList;
  for (const rt::Plan &plan : plans)
    planList.push_back(&plan);
  rt::StoredLayouts layouts; // the parameters' by name, as trainPhases found
  if (trained && !rt::Trainer::phaseLayouts(planList, layouts, error))
    trained = false;
  std::map<std::string, rt::Tensor> average; // the phases' with ema=
  for (rt::Trainer *t : phases)
    trained = trained && (emaOutput.empty() || t->readAverage(average, error));
  int rc = finishTraining(trained, error, tensorboard, tensorboardError, params,
                          layouts, average);
  if (group && rc == 0 && !group->finish(error))
    return reportError(error);
  return rc;
}

} // namespace

int runTrain() {
  rt::CudaInfo gpu;
  if (trainDevice == "cuda") {
    gpu = rt::probeCuda();
    if (!gpu.available)
      return reportError("no CUDA GPU here (" + gpu.reason +
                         "); train on the CPU backend with --device cpu");
  }
  if (trainDevice != "cpu" && trainDevice != "cuda")
    return reportError("--device must be cpu or cuda, got '" + trainDevice +
                       "'");
  mlir::mpc::TrainPipelineOptions pipeline;
  pipelineOptions(pipeline);
  std::string error;
  bool phased = !phaseSpecs.empty() || !recipe.empty();
  if (!mlir::mpc::validate(pipeline, error, phased) ||
      !evalFlags.validate(error))
    return reportError(error);
  if (batch <= 0 || steps <= 0)
    return reportError("--batch and --steps must be positive");
  if (resume && checkpoint.empty())
    return reportError("--resume needs --checkpoint DIR");
  if (!emaOutput.empty() && pipeline.ema == 0 && !phased)
    return reportError("--ema-output writes the weights' moving average: it "
                       "needs --ema DECAY");
  if (trainGemm != "auto" && trainGemm != "cublaslt" && trainGemm != "mpc")
    return reportError("--gemm must be auto, cublaslt or mpc, got '" +
                       trainGemm + "'");
  if (trainConv != "auto" && trainConv != "cudnn" && trainConv != "mpc")
    return reportError("--conv must be auto, cudnn or mpc, got '" +
                       trainConv + "'");
  if (int64_t splits; !rt::parseAttentionDq(trainAttentionDq, splits))
    return reportError(kAttentionDqError + trainAttentionDq + "'");
  if (trainAttentionRows != 64 && trainAttentionRows != 128)
    return reportError(kAttentionRowsError +
                       std::to_string(trainAttentionRows));
  // One rank of a data-parallel job (torchrun's or mpirun's environment):
  // meet the others first, so a rank that fails later is named by them.
  rt::dist::JobEnv job;
  std::unique_ptr<rt::dist::ProcessGroup> group;
  if (!rankFlags.joinJob(trainDevice == "cuda", job, group, error))
    return reportError(error);
  if (group)
    pipeline.dataParallel = true;
  bool lead = job.rank == 0; // writes metrics, checkpoints, outputs
  std::map<std::string, rt::Tensor> arrays;
  mlir::mpc::ImportOptions options;
  options.modelPath = model;
  options.batch = batch;
  if (!readData(arrays, options, error))
    return reportError(error);

  mlir::MLIRContext ctx;
  ctx.loadDialect<mlir::mpc::MpcDialect, mlir::func::FuncDialect>();
  auto module = mlir::mpc::importModelFile(ctx, options, error);
  if (!module || !seedWeights(*module, weightsSpec, error))
    return reportError(error);
  if (!lossKind.empty() &&
      !appendLoss(mlir::mpc::entryFunction(*module), lossKind, labelName,
                  error))
    return reportError(model + ": " + error);
  if (lossScaler != "per-phase" && lossScaler != "shared")
    return reportError("--loss-scaler must be per-phase or shared, got '" +
                       lossScaler + "'");
  if (lossScaler.getNumOccurrences() && !phased)
    return reportError("--loss-scaler is for phases (--phase or --recipe)");
  if (phased) {
    std::string flag = evalFlags.enabled() ? "--eval-data"
                                           : precisionFlags.notWithPhasesFlag();
    if (!flag.empty())
      return reportError(flag + " does not combine with phases (--phase, "
                                "--recipe) yet");
    if (!lossName.empty() || !lossKind.empty())
      return reportError("--phase names each phase's loss; --loss-output "
                         "and --loss do not combine with it");
    return trainPhases(*module, gpu, arrays, group.get());
  }
  // A model with a TrainingInfoProto trains as its algorithm says, unless
  // an --optimizer is asked for.
  mlir::func::FuncOp step;
  for (auto f : module->getOps<mlir::func::FuncOp>())
    if (f->hasAttr("mpc.update_binding"))
      step = f;
  bool algorithm = step && !optimizer.getNumOccurrences() && lossKind.empty();
  if (algorithm && (evalFlags.enabled() || pipeline.ema > 0))
    return reportError(
        model + ": " +
        (evalFlags.enabled() ? "--eval-data evaluates" : "--ema averages") +
        " mpc's own train step (pass --optimizer), not a "
        "TrainingInfoProto algorithm");
  // The evaluation imports the model again at its own batch sizes, as the
  // step's was (weights seeded, loss appended).
  EvalBuild eval;
  eval.import = [&](const std::map<std::string, rt::Shape> &shapes,
                    std::string &e) {
    mlir::mpc::ImportOptions o = options;
    o.inputShapes = shapes;
    o.batch = shapes.begin()->second[0];
    auto m = mlir::mpc::importModelFile(ctx, o, e);
    if (m && (!seedWeights(*m, weightsSpec, e) ||
              (!lossKind.empty() && !appendLoss(mlir::mpc::entryFunction(*m),
                                                lossKind, labelName, e))))
      m = nullptr;
    return m;
  };
  precisionFlags.apply(eval.precision);
  eval.train = &pipeline;
  eval.lossOutput = lossName;
  eval.open = [&](rt::Plan &p, std::string &e) {
    return openSession(p, gpu, e, /*evaluation=*/true);
  };
  eval.rank = job.rank;
  eval.ranks = group ? group->size() : 1;
  if (algorithm && group)
    return reportError(model + ": a TrainingInfoProto algorithm trains in one "
                               "process for now (pass --optimizer to train "
                               "with mpc's own step on several ranks)");
  if (algorithm && precisionFlags.isLow())
    return reportError(model + ": a TrainingInfoProto algorithm trains in "
                               "fp32 for now (drop --precision, or pass "
                               "--optimizer to train with mpc's own step)");
  step = algorithm ? buildAlgorithmStep(*module, error)
                   : buildTrainStep(*module, pipeline, error);
  rt::Plan plan;
  if (!step || !mlir::mpc::buildPlan(step, plan, error))
    return reportError(model + ": " + error);
  std::unique_ptr<rt::Session> session = openSession(plan, gpu, error);
  if (!session)
    return reportError(model + ": " + error);
  if (!session->describe().empty() && lead)
    outs() << "libraries: " << session->describe() << "\n";

  rt::TrainerOptions trainOptions = trainerOptions(*module);
  TensorBoardWriter tensorboard;
  std::string tensorboardError;
  if (group) {
    trainOptions.group = group.get();
    if (!lead) {
      trainOptions.progress = false;
      trainOptions.metricsPath.clear();
      tensorboardDir.setValue("");
      outputModel.setValue("");
      emaOutput.setValue("");
    } else {
      outs() << rankFlags.describe(*group, plan, batch) << "\n";
    }
  }
  if (!tensorboardDir.empty()) {
    if (!tensorboard.open(tensorboardDir, error))
      return reportError(error);
    trainOptions.onStep =
        trainScalars(tensorboard, "", lr.getValue(), tensorboardError);
  }
  if (lead &&
      !sampleFlags.setUp(plan, tensorboardDir.empty() ? nullptr : &tensorboard,
                         trainOptions, error))
    return reportError(model + ": " + error);
  eval.trainPlan = &plan;
  if (!evalFlags.setUp(eval, batch, trainOptions, error))
    return reportError(model + ": " + error);
  rt::Trainer trainer(plan, *session, trainOptions);
  // FP32 master weights, from the model's initializers (or a checkpoint).
  std::map<std::string, rt::Tensor> params;
  addInitialParams(plan, params);
  if (algorithm && !setUpAlgorithm(*module, step, params, trainer, error))
    return reportError(model + ": " + error);
  std::map<std::string, rt::Tensor> average; // --ema's
  bool trained = trainer.train(arrays, params, error) &&
                 (outputModel.empty() || trainer.readWeights(params, error)) &&
                 (emaOutput.empty() || trainer.readAverage(average, error));
  int rc = finishTraining(trained, error, tensorboard, tensorboardError, params,
                          plan.layouts, average, loraPairs(*module));
  // Rank 0 serves the job's store: it leaves after the others.
  if (group && rc == 0 && !group->finish(error))
    return reportError(error);
  return rc;
}

} // namespace mpc
