//===- RunCommand.cpp - `mpc run`: execute a model on the CPU backend -----===//

#include "Commands.h"
#include "Precision.h"
#include "Prepare.h"
#include "TrainStep.h"

#include "codegen/PlanBuilder.h"
#include "frontend/ImporterImpl.h"
#include "frontend/ModelLoader.h"
#include "frontend/OnnxImporter.h"
#include "ir/MpcOps.h"
#include "mlir/Pass/PassManager.h"
#include "passes/Passes.h"
#include "runtime/AppliedOnly.h"
#include "runtime/Executor.h"
#include "runtime/Npy.h"
#include "runtime/Parallel.h"
#include "runtime/PlanIO.h"
#include "runtime/cuda/CudaDevice.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <chrono>
#include <set>

using namespace llvm;
namespace rt = ::mpc::rt;

namespace mpc {

cl::SubCommand runCommand("run",
                          "Run a model on the CPU reference backend and write "
                          "its outputs as .npy");

static cl::opt<std::string> modelPath(cl::Positional, cl::Required,
                                      cl::desc("<model.onnx>"),
                                      cl::sub(runCommand));
static cl::list<std::string>
    inputs("input",
           cl::desc("Feed graph input NAME from FILE (.npy or ONNX "
                    "TensorProto .pb): --input NAME=FILE"),
           cl::sub(runCommand));
static cl::list<std::string>
    freeze("freeze",
           cl::desc("Replace graph input NAME by the constant in FILE.pb: "
                    "--freeze NAME=FILE"),
           cl::sub(runCommand));
static cl::opt<int64_t> batch("batch",
                              cl::desc("Bind the batch dimension (else "
                                       "taken from the inputs)"),
                              cl::init(0), cl::sub(runCommand));
static cl::opt<std::string> outputDir("output-dir",
                                      cl::desc("Write <output>.npy files here"),
                                      cl::value_desc("dir"),
                                      cl::sub(runCommand));
static cl::opt<int> repeat("repeat",
                           cl::desc("Time N more runs after the first and "
                                    "print the median (benchmarks)"),
                           cl::init(0), cl::sub(runCommand));
static cl::opt<int> threads("threads", cl::desc("Worker threads (default: all)"),
                            cl::init(0), cl::sub(runCommand));
static PrecisionFlags runPrecision(runCommand, /*training=*/false);
static cl::opt<std::string> runWeights(
    "weights",
    cl::desc("seed:N: draw every float parameter of 4096 or more elements "
             "from seed N, as mpc compile and mpc train --weights seed:N "
             "do (an ONNX model; an artifact carries its own)"),
    cl::value_desc("seed:N"), cl::sub(runCommand));
static cl::opt<std::string> device("device",
                                   cl::desc("cpu | cuda (cuda runs an artifact "
                                            "directory from mpc compile)"),
                                   cl::init("cpu"), cl::sub(runCommand));


/// Reads FILE as .npy or as a serialized TensorProto.
static bool readInput(const std::string &path, mlir::MLIRContext &ctx,
                      rt::Tensor &tensor, std::string &error) {
  if (StringRef(path).ends_with(".npy"))
    return rt::readNpy(path, tensor, error);
  onnx::TensorProto proto;
  if (!mlir::mpc::loadTensor(path, proto, error))
    return false;
  // ONNX test data stores bfloat16 as UINT16 bit patterns (numpy has no
  // bfloat16); mpc has no uint16, so read those bits as bfloat16.
  if (proto.data_type() == onnx::TensorProto::UINT16)
    proto.set_data_type(onnx::TensorProto::BFLOAT16);
  auto attr = mlir::mpc::importer::readTensor(proto, &ctx, "", error);
  if (mlir::failed(attr))
    return false;
  tensor = mlir::mpc::toTensor(*attr);
  return true;
}

/// "loss  f32[]  min -0.1 max 2.3 mean 1.1"
static void printSummary(const std::string &name, const rt::Tensor &t) {
  double lo = 0, hi = 0, sum = 0;
  for (int64_t i = 0; i < t.size(); ++i) {
    double v = rt::isFloat(t.dtype()) ? t.getFloat(i) : (double)t.getInt(i);
    lo = i ? std::min(lo, v) : v;
    hi = i ? std::max(hi, v) : v;
    sum += v;
  }
  outs() << format("%-24s %-5s %-16s", name.c_str(), rt::dtypeName(t.dtype()),
                   rt::shapeString(t.shape()).c_str());
  if (t.size())
    outs() << format(" min %-12.6g max %-12.6g mean %.6g", lo, hi,
                     sum / t.size());
  outs() << "\n";
}

static bool hasDynamicType(mlir::ModuleOp module) {
  bool dynamic = false;
  module.walk([&](mlir::Operation *op) {
    for (mlir::Type t : op->getResultTypes())
      if (auto s = llvm::dyn_cast<mlir::ShapedType>(t); s && !s.hasStaticShape())
        dynamic = true;
  });
  return dynamic;
}

static std::string fileName(std::string name) {
  for (char &c : name)
    if (c == '/' || c == '\\' || c == ':')
      c = '_';
  return name + ".npy";
}

bool prepare(mlir::MLIRContext &ctx, const std::string &model,
                    const std::vector<std::string> &inputSpecs,
                    const std::vector<std::string> &freezeSpecs,
                    int64_t batchSize, Prepared &out) {
  ctx.loadDialect<mlir::mpc::MpcDialect, mlir::func::FuncDialect>();
  std::map<std::string, rt::Tensor> &feeds = out.feeds;
  mlir::mpc::ImportOptions options;
  options.modelPath = model;
  if (batchSize > 0)
    options.batch = batchSize;
  for (const std::string &spec : inputSpecs) {
    auto [name, file] = StringRef(spec).split('=');
    if (name.empty() || file.empty())
      return reportError("--input expects NAME=FILE, got '" + spec + "'"), false;
    std::string error;
    rt::Tensor t;
    if (!readInput(file.str(), ctx, t, error))
      return reportError("input '" + name + "': " + error), false;
    options.inputShapes[name.str()] = t.shape();
    feeds[name.str()] = std::move(t);
  }
  std::string error;
  if (!parseFreezeSpecs(freezeSpecs, options.frozenInputs, error))
    return reportError(error), false;
  auto module = mlir::mpc::importModelFile(ctx, options, error);
  if (!module)
    return reportError(error), false;
  // Shapes computed from input *values* (a Reshape target, Slice bounds, a
  // Range limit fed as graph inputs) need those values at compile time: a
  // single run may bake its small and integer inputs in as constants.
  if (hasDynamicType(*module)) {
    for (const auto &[name, t] : feeds)
      if (!rt::isFloat(t.dtype()) || t.size() <= 1)
        options.frozenValues[name] = mlir::mpc::toAttr(t, &ctx);
    module = mlir::mpc::importModelFile(ctx, options, error);
    if (!module)
      return reportError(error), false;
    for (const auto &[name, value] : options.frozenValues)
      feeds.erase(name);
  }
  // ONNX Gradient ops computed in the graph itself become reverse-mode IR.
  {
    mlir::PassManager pm(&ctx);
    pm.addPass(mlir::mpc::createLowerGradient());
    std::string diag;
    mlir::ScopedDiagnosticHandler handler(&ctx, [&](mlir::Diagnostic &d) {
      if (diag.empty())
        diag = d.str();
      return mlir::success();
    });
    if (mlir::failed(pm.run(*module)))
      return reportError(model + ": " + diag), false;
  }
  auto func = mlir::mpc::entryFunction(*module);
  // Every fed name must be a graph input (or a parameter to override).
  std::set<std::string> known;
  std::string listed;
  for (unsigned i = 0; i < func.getNumArguments(); ++i)
    if (auto n = func.getArgAttrOfType<mlir::StringAttr>(i, "mpc.input")) {
      known.insert(n.str());
      listed += (listed.empty() ? "" : ", ") + n.str();
    } else if (auto p = func.getArgAttrOfType<mlir::FlatSymbolRefAttr>(
                   i, "mpc.param")) {
      known.insert(p.getValue().str());
    }
  for (const auto &[name, t] : feeds)
    if (!known.count(name))
      return reportError("input '" + name + "' is not a graph input of " +
                         model + " (inputs: " + listed + ")"),
             false;
  for (unsigned i = 0; i < func.getNumArguments(); ++i)
    if (auto n = func.getArgAttrOfType<mlir::StringAttr>(i, "mpc.input"))
      if (!feeds.count(n.str()))
        return reportError(model + ": missing input '" + n.str() +
                           "' of type " +
                           llvm::formatv("{0}", func.getArgumentTypes()[i])
                               .str() +
                           "; give it with --input " + n.str() + "=FILE"),
               false;
  out.module = std::move(module);
  return true;
}

/// Builds and runs the plan of `func`; reports errors.
static bool execute(mlir::func::FuncOp func, const std::string &model,
                    const std::map<std::string, rt::Tensor> &feeds,
                    rt::Plan &plan, std::vector<rt::Tensor> &results) {
  std::string error;
  if (!mlir::mpc::buildPlan(func, plan, error))
    return reportError(model + ": " + error), false;
  if (!rt::runPlan(plan, feeds, results, error))
    return reportError(model + ": " + error), false;
  return true;
}

static bool writeOutputs(const std::string &dir, const rt::Plan &plan,
                         const std::vector<rt::Tensor> &results,
                         size_t begin, size_t end) {
  if (!dir.empty())
    if (std::error_code ec = sys::fs::create_directories(dir))
      return reportError("cannot create " + dir + ": " + ec.message()), false;
  std::vector<bool> updates = rt::appliedOnlyOutputs(plan);
  for (size_t i = begin; i < end; ++i) {
    const std::string &name = plan.outputs[i].name;
    if (updates[i] && results[i].size() == 0 &&
        rt::numElements(plan.values[plan.outputs[i].value].shape) > 0) {
      outs() << name
             << ": not computed (mpc.accum.apply is false: the "
                "group's update waits for its last micro-batch)\n";
      continue;
    }
    printSummary(name, results[i]);
    std::string error;
    if (!dir.empty() &&
        !rt::writeNpy(dir + "/" + fileName(name), results[i], error))
      return reportError(error), false;
  }
  return true;
}

/// `mpc run DIR`: an artifact from `mpc compile`, on the CPU backend or
/// (--device cuda) the GPU.
static int runArtifact(mlir::MLIRContext &ctx) {
  rt::Plan plan;
  std::string error;
  if (!rt::loadPlan(modelPath, plan, error))
    return reportError(error);
  std::map<std::string, rt::Tensor> feeds;
  for (const std::string &spec : inputs) {
    auto [name, file] = StringRef(spec).split('=');
    rt::Tensor t;
    if (name.empty() || file.empty())
      return reportError("--input expects NAME=FILE, got '" + spec + "'");
    if (!readInput(file.str(), ctx, t, error))
      return reportError("input '" + name + "': " + error);
    feeds[name.str()] = std::move(t);
  }
  if (device == "cuda")
    if (rt::CudaInfo gpu = rt::probeCuda(); !gpu.available)
      return reportError("no CUDA GPU here (" + gpu.reason +
                         "); run the artifact on the CPU backend with "
                         "--device cpu");
  std::vector<rt::Tensor> results;
  double ms = 0;
  std::string gemms;
  bool ok = device == "cuda"
                ? rt::runPlanCuda(plan, modelPath, feeds, results, error,
                                  repeat, repeat > 0 ? &ms : nullptr, &gemms)
                : rt::runPlan(plan, feeds, results, error);
  if (!ok)
    return reportError(modelPath + ": " + error);
  if (!gemms.empty())
    outs() << "libraries: " << gemms << "\n";
  if (repeat > 0 && device == "cuda")
    outs() << format("time: median %.3f ms over %d runs (cuda)\n", ms,
                     (int)repeat);
  return writeOutputs(outputDir, plan, results, 0, results.size()) ? 0 : 1;
}

int runRun() {
  mlir::MLIRContext ctx;
  if (threads > 0)
    rt::setNumThreads(threads);
  if (device != "cpu" && device != "cuda")
    return reportError("--device must be cpu or cuda, got '" + device + "'");
  if (sys::fs::is_directory(modelPath)) {
    if (!runWeights.empty())
      return reportError("--weights applies to an ONNX model; " + modelPath +
                         " is an artifact, whose plan records its weights");
    return runArtifact(ctx);
  }
  if (device == "cuda")
    return reportError("--device cuda runs an artifact: mpc compile " +
                       modelPath + " -o DIR, then mpc run DIR --device cuda");
  Prepared prep;
  std::string error;
  if (!runPrecision.validate(error))
    return reportError(error);
  if (!prepare(ctx, modelPath, inputs, freeze, batch, prep))
    return 1;
  if (!seedWeights(*prep.module, runWeights, error))
    return reportError(error);
  {
    mlir::PassManager pm(&ctx);
    mlir::mpc::PrecisionPipelineOptions precision;
    runPrecision.apply(precision);
    mlir::mpc::buildPrecisionPipeline(pm, precision);
    if (!runPasses(pm, *prep.module, error))
      return reportError(modelPath + ": " + error);
  }
  auto func = mlir::mpc::entryFunction(*prep.module);
  rt::Plan plan;
  std::vector<rt::Tensor> results;
  if (!execute(func, modelPath, prep.feeds, plan, results))
    return 1;
  if (repeat > 0) {
    std::vector<double> ms;
    for (int i = 0; i < repeat; ++i) {
      auto start = std::chrono::steady_clock::now();
      rt::runPlan(plan, prep.feeds, results, error);
      ms.push_back(std::chrono::duration<double, std::milli>(
                       std::chrono::steady_clock::now() - start)
                       .count());
    }
    std::sort(ms.begin(), ms.end());
    outs() << format("time: median %.3f ms, min %.3f ms over %d runs, %d "
                     "threads\n",
                     ms[ms.size() / 2], ms[0], (int)repeat, rt::numThreads());
  }
  return writeOutputs(outputDir, plan, results, 0, results.size()) ? 0 : 1;
}

//===----------------------------------------------------------------------===//
// mpc grad
//===----------------------------------------------------------------------===//

cl::SubCommand gradCommand("grad",
                           "One forward and backward pass: write d(loss)/d(p) "
                           "for every trainable parameter as <p>.npy");

static cl::opt<std::string> gradModel(cl::Positional, cl::Required,
                                      cl::desc("<model.onnx>"),
                                      cl::sub(gradCommand));
static cl::list<std::string>
    gradInputs("input",
               cl::desc("Feed graph input NAME from FILE (.npy or .pb)"),
               cl::sub(gradCommand));
static cl::opt<std::string>
    gradLoss("loss",
             cl::desc("Graph output to differentiate (default: the first f32 "
                      "scalar, else float scalar)"),
             cl::sub(gradCommand));
static cl::opt<std::string> gradDir("output-dir",
                                    cl::desc("Write <param>.npy files here"),
                                    cl::value_desc("dir"),
                                    cl::sub(gradCommand));
static PrecisionFlags gradPrecision(gradCommand, /*training=*/true);

int runGrad() {
  mlir::MLIRContext ctx;
  Prepared prep;
  std::string error;
  if (std::string flag = gradPrecision.updateOnlyFlag(); !flag.empty())
    return reportError(flag + " is for training (mpc train, mpc compile "
                              "--train); mpc grad returns one batch's "
                              "gradients");
  if (!gradPrecision.validate(error))
    return reportError(error);
  if (!prepare(ctx, gradModel, gradInputs, {}, 0, prep))
    return 1;
  mlir::mpc::TrainPipelineOptions pipeline;
  gradPrecision.apply(pipeline);
  pipeline.loss = gradLoss.getValue();
  pipeline.optimizer = "none";
  mlir::func::FuncOp step = buildTrainStep(*prep.module, pipeline, error);
  if (!step)
    return reportError(gradModel + ": " + error);
  // Dynamic scaling's state (by --loss-scale, or for a model computing in
  // FP16), at its initial scale.
  bool dynamicScale = false;
  for (unsigned i = 0; i < step.getNumArguments(); ++i)
    if (auto name = step.getArgAttrOfType<mlir::StringAttr>(i, "mpc.input"))
      dynamicScale |= name.getValue() == "mpc.loss_scale";
  if (auto init = step->getAttrOfType<mlir::FloatAttr>("mpc.loss_scale_init"))
    if (dynamicScale) {
      rt::Tensor s(rt::DType::F32, {}), n(rt::DType::I64, {});
      s.setFloat(0, (float)init.getValueAsDouble());
      n.setInt(0, 0);
      prep.feeds["mpc.loss_scale"] = s;
      prep.feeds["mpc.loss_scale_good_steps"] = n;
    }
  // Dropouts draw the masks of a first train step (mpc train's step 0).
  for (unsigned i = 0; i < step.getNumArguments(); ++i)
    if (auto name = step.getArgAttrOfType<mlir::StringAttr>(i, "mpc.input");
        name && name.getValue() == "mpc.rng.step") {
      rt::Tensor s(rt::DType::I64, {2});
      s.setInt(0, 0);
      s.setInt(1, 0);
      prep.feeds["mpc.rng.step"] = s;
    }
  rt::Plan plan;
  std::vector<rt::Tensor> results;
  if (!execute(step, gradModel, prep.feeds, plan, results))
    return 1;
  // Name the gradient outputs after their parameters.
  size_t forward = step.getNumResults(), end = 0;
  for (unsigned i = 0; i < step.getNumResults(); ++i)
    if (auto p = step.getResultAttrOfType<mlir::FlatSymbolRefAttr>(
            i, "mpc.gradient")) {
      plan.outputs[i].name = p.getValue().str();
      forward = std::min<size_t>(forward, i);
      end = i + 1;
    }
  for (size_t i = 0; i < plan.outputs.size(); ++i) {
    if (plan.outputs[i].name == "mpc.found_inf" && results[i].getInt(0))
      errs() << "mpc: warning: gradients overflowed (inf/NaN) at the loss "
                "scale; a training step would be skipped\n";
    if (plan.outputs[i].name == "mpc.grad_norm") {
      float norm = results[i].getFloat(0);
      double max = gradPrecision.clipGradNorm->getValue();
      outs() << formatv("gradient norm {0:g}{1}\n", norm,
                        norm > max ? formatv(", clipped to {0:g}", max).str()
                                   : std::string(" (not clipped)"));
    }
  }
  unsigned lossIndex =
      step->getAttrOfType<mlir::IntegerAttr>("mpc.loss_index").getInt();
  printSummary(plan.outputs[lossIndex].name, results[lossIndex]);
  return writeOutputs(gradDir, plan, results, forward, end) ? 0 : 1;
}

} // namespace mpc
