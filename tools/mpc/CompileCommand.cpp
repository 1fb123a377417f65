//===- CompileCommand.cpp - `mpc compile`: an artifact directory ----------===//
//
// Imports the model with the batch bound, runs the precision passes, builds
// the execution plan and writes DIR: plan.txt + weights.bin (runnable by
// the CPU backend, `mpc run DIR`), and for --target cuda kernels.cu (one
// kernel per step) compiled by nvcc into kernels.fatbin for --arch, plus
// summary.json. DIR is written whole or not at all (temp dir + rename).
//
//===----------------------------------------------------------------------===//

#include "Commands.h"
#include "Precision.h"
#include "TrainStep.h"

#include "passes/Passes.h"

#include "codegen/CudaEmitter.h"
#include "codegen/PlanBuilder.h"
#include "frontend/OnnxImporter.h"
#include "ir/MpcOps.h"
#include "runtime/PlanIO.h"
#include "runtime/cuda/MemoryPlan.h"

#include "mlir/IR/MLIRContext.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <filesystem>

using namespace llvm;
namespace rt = ::mpc::rt;
namespace fs = std::filesystem;

namespace mpc {

cl::SubCommand compileCommand("compile",
                              "Compile a model into an artifact directory "
                              "(execution plan, weights, CUDA kernels)");

static cl::opt<std::string> model(cl::Positional, cl::Required,
                                  cl::desc("<model.onnx>"),
                                  cl::sub(compileCommand));
static cl::opt<std::string> outDir("o", cl::Required,
                                   cl::desc("Artifact directory (with "
                                            "--emit mlir: the IR file)"),
                                   cl::value_desc("dir"),
                                   cl::sub(compileCommand));
static cl::opt<std::string>
    emit("emit",
         cl::desc("artifact (default) | mlir: stop after the pass pipeline "
                  "and write the IR the plan would be built from"),
         cl::init("artifact"), cl::sub(compileCommand));
static cl::opt<std::string> target("target", cl::desc("cuda | cpu"),
                                   cl::init("cuda"), cl::sub(compileCommand));
static cl::list<std::string> archs("arch", cl::CommaSeparated,
                                   cl::desc("GPU architectures (default "
                                            "sm_80,sm_90)"),
                                   cl::value_desc("sm_80,sm_90"),
                                   cl::sub(compileCommand));
static cl::opt<int64_t> batch("batch", cl::desc("Batch size"), cl::init(1),
                              cl::sub(compileCommand));
static cl::opt<bool> noNvcc("no-nvcc",
                            cl::desc("Emit kernels.cu without compiling it"),
                            cl::sub(compileCommand));
static cl::opt<bool> fuse(
    "fuse",
    cl::desc("Fuse Relus into GEMM epilogues and elementwise chains into one "
             "kernel (default on; =false: one kernel per step)"),
    cl::init(true), cl::sub(compileCommand));
static cl::opt<bool> train("train",
                           cl::desc("Compile the train step (forward, "
                                    "backward, loss scaling, optimizer) "
                                    "instead of the forward"),
                           cl::sub(compileCommand));
static cl::opt<std::string> optimizer("optimizer",
                                      cl::desc("--train: sgd | momentum | "
                                               "nesterov | adam | adamw | "
                                               "adagrad"),
                                      cl::init("sgd"), cl::sub(compileCommand));
static cl::opt<float> lr("lr", cl::desc("--train: learning rate"),
                         cl::init(0.01f), cl::sub(compileCommand));
static cl::opt<float> momentum("momentum", cl::desc("--train: momentum"),
                               cl::init(0.9f), cl::sub(compileCommand));
static cl::opt<float> weightDecay("weight-decay",
                                  cl::desc("--train: weight decay"),
                                  cl::init(0.0f), cl::sub(compileCommand));
static PrecisionFlags compilePrecision(compileCommand, /*training=*/true);

std::string findCudaTool(StringRef name) {
  std::vector<StringRef> paths;
  std::string home = sys::Process::GetEnv("CUDA_HOME").value_or("");
  std::string homeBin = home.empty() ? "" : home + "/bin";
  if (!homeBin.empty())
    paths.push_back(homeBin);
  paths.push_back("/usr/local/cuda/bin");
  if (auto p = sys::findProgramByName(name))
    return *p;
  if (auto p = sys::findProgramByName(name, paths))
    return *p;
  return "";
}

bool buildFatbin(const std::string &dir, const std::vector<std::string> &arch,
                 std::string &nvccUsed, std::string &error) {
  std::string nvcc = findCudaTool("nvcc");
  if (nvcc.empty())
    return true; // kernels.cu stays uncompiled
  std::vector<std::string> args = {nvcc, "-fatbin", "-O3", "-std=c++17",
                                   "-o", dir + "/kernels.fatbin"};
  for (const std::string &a : arch)
    args.push_back("-gencode=arch=compute_" + a.substr(3) + ",code=" + a);
  args.push_back(dir + "/kernels.cu");
  std::vector<StringRef> argv(args.begin(), args.end());
  std::string log = dir + "/nvcc.log";
  std::optional<StringRef> redirects[] = {std::nullopt, StringRef(log),
                                          StringRef(log)};
  std::string msg;
  if (sys::ExecuteAndWait(nvcc, argv, std::nullopt, redirects, 0, 0, &msg)) {
    // The first error line (nvcc prints warnings first).
    auto text = MemoryBuffer::getFile(log);
    std::string first = msg;
    if (text) {
      SmallVector<StringRef> lines;
      (*text)->getBuffer().split(lines, '\n');
      for (StringRef l : lines)
        if (l.contains("error")) {
          first = l.trim().str();
          break;
        }
    }
    error = "nvcc failed on the emitted kernels.cu (" + first + ")";
    return false;
  }
  nvccUsed = nvcc;
  sys::fs::remove(log); // empty unless nvcc warned
  return true;
}

/// Runs the pipeline --train or --precision asks for; returns the function
/// to build the plan from (null with `error`).
static mlir::func::FuncOp runPipeline(mlir::ModuleOp module,
                                      std::string &error) {
  if (train) {
    mlir::mpc::TrainPipelineOptions pipeline;
    compilePrecision.apply(pipeline);
    pipeline.optimizer = optimizer.getValue();
    pipeline.lr = lr.getValue();
    pipeline.momentum = momentum.getValue();
    pipeline.weightDecay = weightDecay.getValue();
    return buildTrainStep(module, pipeline, error);
  }
  if (compilePrecision.isLow()) {
    mlir::PassManager pm(module.getContext());
    mlir::mpc::PrecisionPipelineOptions precision;
    compilePrecision.apply(precision);
    mlir::mpc::buildPrecisionPipeline(pm, precision);
    if (!runPasses(pm, module, error))
      return {};
  }
  return mlir::mpc::entryFunction(module);
}

/// What an artifact holds besides the plan, for its summary.
struct ArtifactInfo {
  std::vector<std::string> arch;
  std::string nvccUsed; // empty: kernels.cu not compiled
  int64_t arena = 0;    // device memory plan bytes
};

/// Writes DIR.tmp (plan, weights, kernels.cu, kernels.fatbin,
/// summary.json) and renames it over DIR, so DIR is whole or untouched.
static bool writeArtifact(const rt::Plan &plan,
                          const mlir::mpc::CudaModule &cuda,
                          ArtifactInfo &info, std::string &error) {
  std::string tmp = outDir + ".tmp";
  std::error_code ec;
  fs::remove_all(tmp, ec);
  fs::create_directories(tmp, ec);
  if (ec)
    return (error = "cannot create " + tmp + ": " + ec.message(), false);
  std::vector<int64_t> offsets;
  info.arena = rt::planDeviceMemory(plan, offsets);
  bool ok = rt::savePlan(plan, tmp, error);
  if (ok && target == "cuda")
    ok = rt::writeFileAtomically(tmp + "/kernels.cu", cuda.source, error) &&
         (noNvcc || buildFatbin(tmp, info.arch, info.nvccUsed, error));
  double flops = cuda.flops, tc = cuda.tensorCoreFlops;
  json::Object summary{
      {"model", std::string(model)},
      {"target", std::string(target)},
      {"precision", std::string(compilePrecision.precision)},
      {"batch", (int64_t)batch},
      {"train_step", (bool)train},
      {"arch", json::Array(info.arch)},
      {"steps", (int64_t)plan.steps.size()},
      {"kernels", json::Array(cuda.kernels)},
      {"tensor_core_gemm_kernels", json::Array(cuda.gemmKernels)},
      {"fp32_gemm_kernels", json::Array(cuda.fp32GemmKernels)},
      {"memory_plan_bytes", info.arena},
      {"flops", flops},
      {"tensor_core_flop_share", flops > 0 ? tc / flops : 0.0},
      {"nvcc", info.nvccUsed}};
  ok = ok && writeJsonFile(tmp + "/summary.json",
                           json::Value(std::move(summary)), error);
  if (ok) {
    fs::remove_all(outDir.getValue(), ec);
    fs::rename(tmp, outDir.getValue(), ec);
    if (ec)
      ok = (error = "cannot write " + outDir + ": " + ec.message(), false);
  }
  if (!ok)
    fs::remove_all(tmp, ec);
  return ok;
}

int runCompile() {
  auto start = std::chrono::steady_clock::now();
  std::string error;
  if (target != "cuda" && target != "cpu")
    return reportError("--target must be cuda or cpu, got '" + target + "'");
  if (emit != "artifact" && emit != "mlir")
    return reportError("--emit must be artifact or mlir, got '" + emit + "'");
  if (!compilePrecision.validate(error))
    return reportError(error);
  if (batch <= 0)
    return reportError("--batch must be positive");
  ArtifactInfo info;
  info.arch.assign(archs.begin(), archs.end());
  if (info.arch.empty())
    info.arch = {"sm_80", "sm_90"};
  for (const std::string &a : info.arch)
    if (!StringRef(a).starts_with("sm_") || a.size() < 5)
      return reportError("--arch expects names like sm_80, got '" + a + "'");

  mlir::MLIRContext ctx;
  ctx.loadDialect<mlir::mpc::MpcDialect, mlir::func::FuncDialect>();
  mlir::mpc::ImportOptions options;
  options.modelPath = model;
  options.batch = batch;
  auto module = mlir::mpc::importModelFile(ctx, options, error);
  if (!module)
    return reportError(error);
  mlir::func::FuncOp func = runPipeline(*module, error);
  if (!func)
    return reportError(model + ": " + error);
  if (emit == "mlir") // the IR the plan is built from
    return writeModule(*module, outDir, error) ? 0 : reportError(error);
  rt::Plan plan;
  if (!mlir::mpc::buildPlan(func, plan, error))
    return reportError(model + ": " + error);
  mlir::mpc::CudaModule cuda;
  if (target == "cuda" && !mlir::mpc::emitCuda(plan, cuda, error, fuse))
    return reportError(model + ": " + error);
  if (!writeArtifact(plan, cuda, info, error))
    return reportError(error);

  double secs = std::chrono::duration<double>(
                    std::chrono::steady_clock::now() - start)
                    .count();
  double flops = cuda.flops, tc = cuda.tensorCoreFlops;
  outs() << formatv("wrote {0}: {1} steps", outDir, plan.steps.size());
  if (target == "cuda")
    outs() << formatv(", {0} CUDA kernels ({1} GEMM/conv on tensor cores, {2} "
                      "in FP32), memory plan {3:f2} MiB, {4:f1}% of FLOPs on "
                      "tensor cores, {5}",
                      cuda.kernels.size(), cuda.gemmKernels.size(),
                      cuda.fp32GemmKernels.size(), info.arena / 1048576.0,
                      flops > 0 ? 100 * tc / flops : 0.0,
                      info.nvccUsed.empty()
                          ? std::string("kernels.cu not compiled (no nvcc)")
                          : "kernels.fatbin for " + llvm::join(info.arch, ","));
  outs() << formatv(" ({0:f1} s)\n", secs);
  return 0;
}

} // namespace mpc
