//===- TrainCommand.cpp - `mpc train`: train a model on the CPU backend ---===//
//
// Imports the model with the batch bound, builds the train step with
// mpc-autodiff, and loops: slice a batch (in file order with --no-shuffle),
// run the step, update the FP32 master weights with the optimizer.
//
//===----------------------------------------------------------------------===//

#include "Commands.h"
#include "Precision.h"
#include "TrainStep.h"

#include "codegen/CudaEmitter.h"
#include "codegen/PlanBuilder.h"
#include "frontend/ModelLoader.h"
#include "frontend/OnnxImporter.h"
#include "ir/MpcOps.h"
#include "passes/Passes.h"
#include "runtime/Executor.h"
#include "runtime/Npy.h"
#include "runtime/PlanIO.h"
#include "runtime/Checkpoint.h"
#include "runtime/TrainProtocol.h"
#include "runtime/cuda/CudaDevice.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <fstream>
#include <numeric>
#include <random>
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
static cl::opt<uint64_t> seed("seed", cl::desc("Shuffling seed"), cl::init(0),
                              cl::sub(trainCommand));
static cl::opt<bool> noShuffle("no-shuffle",
                               cl::desc("Take batches in file order"),
                               cl::sub(trainCommand));
static cl::opt<std::string> metrics("metrics",
                                    cl::desc("Write one JSON object per step"),
                                    cl::value_desc("file.jsonl"),
                                    cl::sub(trainCommand));
static cl::opt<std::string> outputModel("o",
                                        cl::desc("Write the model with the "
                                                 "trained FP32 weights"),
                                        cl::value_desc("trained.onnx"),
                                        cl::sub(trainCommand));
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
static cl::opt<std::string> trainDevice("device", cl::desc("cpu | cuda"),
                                        cl::init("cpu"), cl::sub(trainCommand));
static cl::opt<bool> cudaGraph(
    "cuda-graph",
    cl::desc("With --device cuda, launch each step as one captured CUDA "
             "graph (default on; =false launches kernel by kernel)"),
    cl::init(true), cl::sub(trainCommand));
static cl::opt<std::string> lossName("loss-output",
                                     cl::desc("Graph output to minimise "
                                              "(default: first f32 scalar)"),
                                     cl::sub(trainCommand));

/// Appends `kind` (cross_entropy: softmax cross-entropy on class axis 1
/// against i64 labels; mse: mean squared error against a tensor like the
/// output) on the entry function's first output, with a new graph input
/// `label`; the loss becomes the first result, named "loss".
static bool appendLoss(mlir::func::FuncOp func, StringRef kind,
                       StringRef label, std::string &error) {
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

/// Rows `rows` of `t` (axis 0) as a new tensor.
static rt::Tensor gatherRows(const rt::Tensor &t, const int64_t *rows,
                             int64_t n) {
  rt::Shape shape = t.shape();
  shape[0] = n;
  rt::Tensor out(t.dtype(), shape);
  size_t rowBytes = t.bytes() / std::max<int64_t>(t.dim(0), 1);
  for (int64_t i = 0; i < n; ++i)
    std::memcpy(static_cast<char *>(out.raw()) + i * rowBytes,
                static_cast<const char *>(t.raw()) + rows[i] * rowBytes,
                rowBytes);
  return out;
}

/// The (initializer, result index) pairs of `f`'s binding attribute
/// `key` (initializer name -> output name).
static bool bindOutputs(mlir::func::FuncOp f, StringRef key,
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
  if (std::string error; !precisionFlags.validate(error))
    return reportError(error);
  if (batch <= 0 || steps <= 0)
    return reportError("--batch and --steps must be positive");
  if (resume && checkpoint.empty())
    return reportError("--resume needs --checkpoint DIR");
  if (!StringRef(optimizer).equals_insensitive("sgd") &&
      optimizer != "momentum" && optimizer != "nesterov" &&
      optimizer != "adam" && optimizer != "adamw" && optimizer != "adagrad")
    return reportError("unknown --optimizer '" + optimizer +
                       "' (sgd, momentum, nesterov, adam, adamw, adagrad)");
  // Data: one array per graph input, all with the same number of samples.
  std::map<std::string, rt::Tensor> arrays;
  int64_t samples = -1;
  mlir::MLIRContext ctx;
  ctx.loadDialect<mlir::mpc::MpcDialect, mlir::func::FuncDialect>();
  mlir::mpc::ImportOptions options;
  options.modelPath = model;
  for (const std::string &spec : data) {
    auto [name, file] = StringRef(spec).split('=');
    if (name.empty() || file.empty())
      return reportError("--data expects NAME=FILE.npy, got '" + spec + "'");
    rt::Tensor t;
    std::string error;
    if (!rt::readNpy(file.str(), t, error))
      return reportError("data '" + name + "': " + error);
    if (t.rank() == 0)
      return reportError("data '" + name + "' must have a sample axis 0");
    if (samples >= 0 && t.dim(0) != samples)
      return reportError("data '" + name + "' has " +
                         std::to_string(t.dim(0)) + " samples, others " +
                         std::to_string(samples));
    samples = t.dim(0);
    rt::Shape shape = t.shape();
    shape[0] = batch;
    options.inputShapes[name.str()] = shape;
    arrays[name.str()] = std::move(t);
  }
  if (samples < batch)
    return reportError("need at least one full batch of " +
                       std::to_string(batch) + " samples in --data");
  options.batch = batch;

  std::string error;
  auto module = mlir::mpc::importModelFile(ctx, options, error);
  if (!module)
    return reportError(error);
  if (!lossKind.empty() &&
      !appendLoss(mlir::mpc::entryFunction(*module), lossKind, labelName,
                  error))
    return reportError(model + ": " + error);
  // A model with a TrainingInfoProto trains as its algorithm says, unless
  // an --optimizer is asked for.
  mlir::func::FuncOp step;
  for (auto f : module->getOps<mlir::func::FuncOp>())
    if (f->hasAttr("mpc.update_binding"))
      step = f;
  bool algorithm = step && !optimizer.getNumOccurrences() && lossKind.empty();
  if (algorithm && precisionFlags.isLow())
    return reportError(model + ": a TrainingInfoProto algorithm trains in "
                               "fp32 for now (drop --precision, or pass "
                               "--optimizer to train with mpc's own step)");
  // On the GPU the skip decision reads one flag instead of every gradient:
  // without scaling, an unscale by 1 (exact) provides it.
  precisionFlags.finiteCheck = trainDevice == "cuda";
  step = algorithm ? buildAlgorithmStep(*module, error)
                   : buildTrainStep(*module, lossName, &precisionFlags, error);
  if (!step)
    return reportError(model + ": " + error);
  // The optimizer update joins the train step (IR).
  if (!algorithm &&
      !addOptimizer(*module, optimizer, lr, momentum, weightDecay, error))
    return reportError(model + ": " + error);
  rt::Plan plan;
  if (!mlir::mpc::buildPlan(step, plan, error))
    return reportError(model + ": " + error);
  if (std::string op = rt::firstUnsupportedOp(plan); !op.empty())
    return reportError(model + ": op mpc." + op + " has no CPU kernel yet");
  // --device cuda: the same plan as CUDA kernels for this GPU's arch.
  std::string cudaDir;
  if (trainDevice == "cuda") {
    mlir::mpc::CudaModule cuda;
    if (!mlir::mpc::emitCuda(plan, cuda, error))
      return reportError(model + ": " + error);
    SmallString<128> dir;
    if (sys::fs::createUniqueDirectory("mpc-train-cuda", dir))
      return reportError("cannot create a directory for the CUDA kernels");
    cudaDir = dir.str().str();
    StringRef dev = gpu.devices[0];
    std::string arch = dev.substr(dev.rfind("(") + 1).drop_back().str();
    std::string nvccUsed;
    if (!rt::writeFileAtomically(cudaDir + "/kernels.cu", cuda.source, error) ||
        !buildFatbin(cudaDir, {arch}, nvccUsed, error))
      return reportError(error);
    if (nvccUsed.empty())
      return reportError("--device cuda needs nvcc to build the kernels");
    outs() << "training on " << dev << " (" << cuda.kernels.size()
           << " CUDA kernels in " << cudaDir << ")\n";
  }

  // Loss-scale state (dynamic scaling): inputs fed from, and outputs read
  // back into, `state`; saved with checkpoints.
  std::map<std::string, rt::Tensor> state;
  auto init = step->getAttrOfType<mlir::FloatAttr>("mpc.loss_scale_init");
  double scale = init ? init.getValueAsDouble() : 1.0;
  rt::TrainProtocol protocol(plan);
  for (const rt::Binding &in : plan.inputs) {
    if (in.name == "mpc.loss_scale") {
      state[in.name] = rt::Tensor(rt::DType::F32, {});
      state[in.name].setFloat(0, (float)scale);
    } else if (in.name == "mpc.loss_scale_good_steps") {
      state[in.name] = rt::Tensor(rt::DType::I64, {});
      state[in.name].setInt(0, 0);
    } else if (StringRef(in.name).starts_with("mpc.opt.")) {
      continue; // optimizer state (below) or per-step scalars
    } else if (!arrays.count(in.name)) {
      return reportError(model + ": no --data for graph input '" + in.name +
                         "'");
    }
  }
  for (const auto &[index, name] : protocol.optimizerState) {
    const rt::ValueInfo &v = plan.values[rt::valueOfName(plan, name)];
    state[name] = rt::Tensor(v.dtype, v.shape); // zeros
  }

  // FP32 master weights, owned here (the plan keeps the initial values).
  std::map<std::string, rt::Tensor> params;
  for (const rt::Parameter &p : plan.params) {
    rt::Tensor copy(p.init.dtype(), p.init.shape());
    std::memcpy(copy.raw(), p.init.raw(), p.init.bytes());
    params[p.name] = std::move(copy);
  }
  std::vector<std::pair<size_t, std::string>> gradOutputs;
  for (unsigned i = 0; i < step.getNumResults(); ++i)
    if (auto p = step.getResultAttrOfType<mlir::FlatSymbolRefAttr>(
            i, "mpc.gradient"))
      gradOutputs.emplace_back(i, p.getValue().str());
  int64_t lossIndex = -1;
  // Algorithm mode: outputs written back into the initializers they are
  // bound to after every step (and once from the initialization graph).
  std::vector<std::pair<std::string, size_t>> bindings;
  if (algorithm) {
    int64_t inferenceOutputs =
        step->getAttrOfType<mlir::IntegerAttr>("mpc.inference_outputs").getInt();
    for (unsigned i = step.getNumResults() - inferenceOutputs;
         i < step.getNumResults() && lossIndex < 0; ++i)
      if (auto t = llvm::dyn_cast<mlir::RankedTensorType>(
              step.getResultTypes()[i]);
          t && t.getRank() == 0 && t.getElementType().isF32())
        lossIndex = i;
    if (lossIndex < 0)
      return reportError(model + ": the inference graph has no f32 scalar "
                                 "output to report as the loss");
    if (!bindOutputs(step, "mpc.update_binding", bindings, error))
      return reportError(model + ": " + error);
    for (auto init : module->getOps<mlir::func::FuncOp>()) {
      if (!init->hasAttr("mpc.initialization_binding"))
        continue;
      std::vector<std::pair<std::string, size_t>> initBindings;
      rt::Plan initPlan;
      std::vector<rt::Tensor> initOut;
      if (!bindOutputs(init, "mpc.initialization_binding", initBindings,
                       error) ||
          !mlir::mpc::buildPlan(init, initPlan, error) ||
          !rt::runPlan(initPlan, {}, initOut, error))
        return reportError(model + ": initialization graph: " + error);
      for (const auto &[name, index] : initBindings) {
        if (!params.count(name))
          return reportError(model + ": initialization binds '" + name +
                             "', which is not a float initializer");
        params[name] = initOut[index];
      }
    }
  } else {
    lossIndex =
        step->getAttrOfType<mlir::IntegerAttr>("mpc.loss_index").getInt();
  }

  // Optimizer steps taken (skipped steps do not count, as in torch), for
  // the per-step scalars; saved with the state.
  state["mpc.opt.t"] = rt::Tensor(rt::DType::I64, {});
  int64_t perEpoch = samples / batch, first = 0;
  if (resume) {
    if (!rt::loadCheckpoint(checkpoint, first, params, state, error))
      return reportError("cannot resume from " + checkpoint + ": " + error);
    outs() << "resumed from " << checkpoint << " at step " << first << "\n";
  }
  // (--device cuda adds an all-finite check without scaling: not shown.)
  bool scaling = state.count("mpc.loss_scale") ||
                 (protocol.foundInf >= 0 && precisionFlags.lossScaleMode() != "none");
  if (state.count("mpc.loss_scale"))
    scale = state["mpc.loss_scale"].getFloat(0);
  double firstScale = scale;
  // Weights and state live in the session from here on (on the GPU for
  // --device cuda); `params` and `state` are read back for checkpoints and
  // the trained model.
  std::unique_ptr<rt::Session> session =
      cudaDir.empty() ? rt::openCpuSession(plan)
                      : rt::openCudaSession(plan, cudaDir, cudaGraph, error);
  if (!session)
    return reportError(model + ": " + error);
  auto toSession = [&](const std::map<std::string, rt::Tensor> &m) {
    for (const auto &[name, t] : m)
      if (rt::valueOfName(plan, name) >= 0 && !session->set(name, t, error))
        return false;
    return true;
  };
  auto fromSession = [&](std::map<std::string, rt::Tensor> &m) {
    for (auto &[name, t] : m)
      if (rt::valueOfName(plan, name) >= 0 && !session->get(name, t, error))
        return false;
    return true;
  };
  if (!toSession(params) || !toSession(state))
    return reportError(model + ": " + error);
  std::vector<int64_t> order(samples);
  std::string log;
  bool tty = isatty(STDOUT_FILENO);
  int64_t skipped = 0, skippedInARow = 0, underflowTotal = 0;
  auto start = std::chrono::steady_clock::now();
  for (int64_t s = first; s < steps; ++s) {
    int64_t epoch = s / perEpoch, k = s % perEpoch;
    // The batch order depends only on the step: resuming mid-epoch
    // rebuilds the same permutation.
    if (k == 0 || s == first) {
      std::iota(order.begin(), order.end(), 0);
      if (!noShuffle) {
        std::mt19937_64 rng(seed + epoch);
        std::shuffle(order.begin(), order.end(), rng);
      }
    }
    // Per-step inputs: the optimizer's scalars and the batch (weights and
    // state already live in the session).
    std::map<std::string, rt::Tensor> feeds;
    if (!algorithm) // this step's optimizer scalars
      feeds = rt::optimizerScalars(plan, state["mpc.opt.t"].getInt(0) + 1, lr);
    for (const auto &[name, t] : arrays)
      feeds[name] = gatherRows(t, order.data() + k * batch, batch);
    if (!toSession(feeds))
      return reportError(model + ": " + error);
    if (!session->run(error))
      return reportError(model + ": step " + std::to_string(s + 1) + ": " +
                         error);
    // Step health: the all-finite flag, and the non-finite gradient
    // elements (read from the device only when the flag is up); a step
    // with any is skipped, so inf/NaN never reaches the master weights.
    rt::Tensor lossT, flag;
    bool flagged = false;
    if (!session->output(lossIndex, lossT, error) ||
        (protocol.foundInf >= 0 && !session->output(protocol.foundInf, flag, error)))
      return reportError(model + ": " + error);
    flagged = protocol.foundInf >= 0 && flag.getInt(0);
    int64_t overflow = 0;
    if (protocol.foundInf < 0 || flagged)
      for (const auto &[index, name] : gradOutputs) {
        rt::Tensor g;
        if (!session->output(index, g, error))
          return reportError(model + ": " + error);
        for (int64_t i = 0; i < g.size(); ++i)
          overflow += !std::isfinite(g.getFloat(i));
      }
    bool skip = overflow > 0 || flagged;
    double stepScale = scale;
    // Loss-scale state always moves on (and is read back: two scalars);
    // weights and optimizer state only on a step that was taken.
    bool fed = true;
    if (algorithm) {
      for (const auto &[name, index] : bindings)
        fed = fed && session->feedBack(index, name, error);
    } else {
      fed = protocol.advance(*session, !skip, error);
      if (!skip)
        state["mpc.opt.t"].setInt(0, state["mpc.opt.t"].getInt(0) + 1);
    }
    for (const auto &[index, name] : protocol.scaleState)
      fed = fed && session->output(index, state[name], error);
    if (!fed)
      return reportError(model + ": " + error);
    if (state.count("mpc.loss_scale"))
      scale = state["mpc.loss_scale"].getFloat(0);
    skipped += skip;
    skippedInARow = skip ? skippedInARow + 1 : 0;
    int64_t underflow = session->underflow();
    underflowTotal += underflow;
    float loss = lossT.getFloat(0);
    log += formatv("{{\"step\": {0}, \"loss\": {1}, \"loss_scale\": {2}, "
                   "\"skipped\": {3}, \"grad_underflow\": {4}, "
                   "\"grad_overflow\": {5}}\n",
                   s + 1,
                   // JSON has no NaN or infinity: a non-finite loss is null.
                   std::isfinite(loss) ? formatv("{0}", llvm::format("%.9g", loss)).str()
                                       : std::string("null"),
                   llvm::format("%.9g", stepScale), skip ? "true" : "false",
                   underflow, overflow)
               .str();
    double secs = std::chrono::duration<double>(
                      std::chrono::steady_clock::now() - start)
                      .count();
    int64_t done = s + 1 - first;
    bool last = s + 1 == steps;
    if (tty || last || (s + 1) % 10 == 0 || s == 0) {
      std::string bar;
      if (tty) { // a drawn bar on a terminal, updated in place
        int filled = (int)(24 * (s + 1) / steps);
        bar = "\r[" + std::string(filled, '#') + std::string(24 - filled, '.') +
              "] ";
      }
      outs() << bar
             << format("step %lld/%lld  loss %.6f  %.0f samples/s",
                       (long long)(s + 1), (long long)steps, loss,
                       done * batch / std::max(secs, 1e-9));
      if (scaling)
        outs() << format("  scale %g%s", stepScale, skip ? " (skipped)" : "");
      outs() << (tty && !last ? "" : "\n");
      outs().flush();
    }
    if (!checkpoint.empty() &&
        ((s + 1) % checkpointEvery == 0 || s + 1 == steps) &&
        (!fromSession(params) || !fromSession(state) ||
         !rt::saveCheckpoint(checkpoint, s + 1, params, state, error)))
      return reportError(error);
    if (scaling && skippedInARow >= 20 && stepScale <= 1.0)
      return reportError(
          "gradients overflowed in 20 steps in a row with the loss scale at "
          "its minimum; the model overflows " + precisionFlags.precision +
          " by itself: try --precision bf16, or keep the overflowing ops in "
          "fp32 (--amp-deny, --amp-keep-fp32)");
    if (!scaling && !std::isfinite(loss))
      return reportError("loss is " + std::string(std::isnan(loss) ? "NaN"
                                                                    : "inf") +
                         " at step " + std::to_string(s + 1) +
                         "; lower --lr" +
                         (precisionFlags.isLow()
                              ? " or use --loss-scale dynamic"
                              : ""));
  }
  if (precisionFlags.isLow() || scaling || skipped)
    outs() << format("precision %s: %lld of %lld steps skipped for inf/NaN "
                     "gradients; loss scale %g -> %g; %lld gradient elements "
                     "flushed to zero\n",
                     precisionFlags.precision.c_str(), (long long)skipped,
                     (long long)(steps - first), firstScale, scale,
                     (long long)underflowTotal);
  if (!metrics.empty()) {
    std::string tmp = metrics + ".tmp";
    {
      std::ofstream out(tmp, std::ios::trunc);
      out << log;
      if (!out)
        return reportError("cannot write " + metrics);
    }
    if (std::rename(tmp.c_str(), metrics.c_str()) != 0)
      return reportError("cannot write " + metrics);
  }
  if (!outputModel.empty()) {
    if (!fromSession(params))
      return reportError(model + ": " + error);
    std::map<std::string, std::vector<float>> weights;
    for (const auto &[name, t] : params)
      weights[name] = std::vector<float>(t.data<float>(),
                                         t.data<float>() + t.size());
    if (!mlir::mpc::writeModelWithWeights(model, outputModel, weights, error))
      return reportError(error);
    outs() << "wrote " << outputModel << "\n";
  }
  return 0;
}

} // namespace mpc
