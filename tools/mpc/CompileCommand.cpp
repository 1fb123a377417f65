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
#include "KernelBuild.h"
#include "Precision.h"
#include "TrainStep.h"

#include "passes/Passes.h"

#include "codegen/CudaEmitter.h"
#include "codegen/PlanBuilder.h"
#include "frontend/OnnxImporter.h"
#include "ir/MpcOps.h"
#include "runtime/PlanIO.h"
#include "runtime/cuda/CudaDevice.h"
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
#include <functional>
#include <filesystem>
#include <thread>

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
static cl::list<std::string> archs(
    "arch", cl::CommaSeparated,
    cl::desc("GPU architectures: sm_75 ... as the installed compiler "
             "supports, "
             "or native (this machine's GPU); PTX for the newest goes along "
             "(default sm_80,sm_90)"),
    cl::value_desc("sm_80,sm_90"), cl::sub(compileCommand));
static cl::opt<std::string> cacheDir(
    "cache-dir",
    cl::desc("Kernel cache (default $XDG_CACHE_HOME/mpc or ~/.cache/mpc)"),
    cl::value_desc("dir"), cl::sub(compileCommand));
static cl::opt<bool> noCache("no-cache",
                             cl::desc("Compile every kernel; use no cache"),
                             cl::sub(compileCommand));
static cl::opt<unsigned> jobs(
    "j", cl::desc("Translation units compiled at once (default: the core "
                  "count)"),
    cl::init(0), cl::sub(compileCommand));
static cl::opt<std::string> deviceCompiler(
    "device-compiler",
    cl::desc("Who compiles kernels.cu: auto (NVRTC in process where "
             "libnvrtc and libnvfatbin load, else nvcc; default) | nvrtc | "
             "nvcc"),
    cl::init("auto"), cl::sub(compileCommand));
static cl::list<std::string> freeze(
    "freeze",
    cl::desc("Replace graph input NAME by the constant in FILE.pb (inputs "
             "that must be constant: Resize scales, axes): --freeze NAME=FILE"),
    cl::sub(compileCommand));
static cl::opt<int64_t> batch("batch", cl::desc("Batch size"), cl::init(1),
                              cl::sub(compileCommand));
static cl::list<std::string>
    dims("dim",
         cl::desc("Bind a symbolic input dimension by its ONNX name "
                  "(dim_param), as an export's sequence length: --dim "
                  "NAME=SIZE (repeatable)"),
         cl::sub(compileCommand));
static cl::opt<std::string> weightsSpec(
    "weights",
    cl::desc("seed:N: draw every float parameter of 4096 or more elements "
             "from seed N with its own mean and std "
             "(runtime/SeededWeights.h), so the artifact holds three numbers "
             "instead of its bytes; mpc train --weights seed:N trains from "
             "the same values"),
    cl::value_desc("seed:N"), cl::sub(compileCommand));
static cl::opt<std::string> gemmChoice(
    "gemm",
    cl::desc("Who runs the GEMMs on the GPU: auto (per shape the faster of "
             "cuBLASLt and mpc's kernel, timed at the first session and kept "
             "in tuning.txt; mpc's kernels where cuBLASLt does not load; "
             "default) | cublaslt | mpc"),
    cl::init("auto"), cl::sub(compileCommand));
static cl::opt<std::string> attentionDq("attention-dq",
                                       cl::desc(kAttentionDqHelp),
                                       cl::init("auto"),
                                       cl::sub(compileCommand));
static cl::opt<int> attentionRows("attention-rows",
                                 cl::desc(kAttentionRowsHelp), cl::init(128),
                                 cl::sub(compileCommand));
static cl::opt<bool> allowTf32(
    "allow-tf32",
    cl::desc("Let FP32 GEMMs round their operands to TF32 on tensor cores "
             "(cuBLASLt; 10-bit mantissa, FP32 accumulation), as PyTorch's "
             "allow_tf32; default off"),
    cl::sub(compileCommand));
static cl::opt<std::string> convChoice(
    "conv",
    cl::desc("Who runs the convolutions on the GPU (forward without a fused "
             "Relu, and the gradients): auto (per "
             "shape the faster of cuDNN and mpc's kernel, timed at the first "
             "session and kept in tuning.txt; mpc's kernels where cuDNN does "
             "not load; default) | cudnn | mpc"),
    cl::init("auto"), cl::sub(compileCommand));
static cl::opt<bool> noNvcc("no-nvcc",
                            cl::desc("Emit kernels.cu without compiling it "
                                     "(by NVRTC or nvcc)"),
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
static cl::list<double> adamBetas(
    "adam-betas", cl::CommaSeparated,
    cl::desc("Adam/AdamW beta1,beta2 (default 0.9,0.999; DCGAN uses "
             "0.5,0.999)"),
    cl::value_desc("b1,b2"), cl::sub(compileCommand));
static cl::opt<bool> dataParallel(
    "data-parallel",
    cl::desc("--train: average the gradients over the ranks of a job "
             "(mpc-data-parallel; run as ranks with torchrun's environment)"),
    cl::sub(compileCommand));
static cl::opt<double> compileBucketMb(
    "bucket-mb", cl::desc("--data-parallel: gradient bucket size in MiB"),
    cl::init(25), cl::sub(compileCommand));
static cl::list<std::string> phaseFlags(
    "phase",
    cl::desc("--train: one phase of a GAN-style step, in order (as mpc "
             "train): loss=OUTPUT,params=REGEX[,optimizer=,lr=,momentum=,"
             "weight-decay=,betas=B1/B2,ema=DECAY,ema-warmup=]; DIR gets one "
             "train step per phase"),
    cl::sub(compileCommand));
static cl::opt<std::string> recipe(
    "recipe", cl::desc("--train: the phases from a JSON file (as mpc train)"),
    cl::value_desc("file"), cl::sub(compileCommand));
static cl::opt<std::string> lossScaler(
    "loss-scaler",
    cl::desc("Phases: per-phase (default) | shared (one dynamic scale)"),
    cl::init("per-phase"), cl::sub(compileCommand));
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


/// Runs the pipeline --train or --precision asks for; returns the function
/// to build the plan from (null with `error`).
static mlir::func::FuncOp runPipeline(mlir::ModuleOp module,
                                      std::string &error,
                                      const PhaseSpec *phase = nullptr) {
  if (dataParallel && !train)
    return (error = "--data-parallel needs --train", nullptr);
  if (std::string flag = compilePrecision.updateOnlyFlag();
      !flag.empty() && !train)
    return (error = flag + " needs --train", nullptr);
  if (train) {
    mlir::mpc::TrainPipelineOptions pipeline;
    compilePrecision.apply(pipeline);
    pipeline.optimizer = optimizer.getValue();
    pipeline.lr = lr.getValue();
    pipeline.momentum = momentum.getValue();
    pipeline.weightDecay = weightDecay.getValue();
    std::vector<double> betas(adamBetas.begin(), adamBetas.end());
    pipeline.adamBetas = betas;
    pipeline.dataParallel = dataParallel.getValue();
    pipeline.bucketMb = compileBucketMb.getValue();
    mlir::mpc::setTrainTarget(pipeline, target == "cuda");
    if (phase ? !phasePipeline(*phase, pipeline, error)
              : !mlir::mpc::validate(pipeline, error))
      return nullptr;
    return buildTrainStep(module, pipeline, error);
  }
  {
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
  KernelBuildResult build; // build.compiler empty: kernels.cu not compiled
  int64_t arena = 0;       // device memory plan bytes
};

/// --arch resolved: `native` is this machine's GPU; every name must be one
/// the installed nvcc supports (without nvcc, any sm_XY); bf16 needs sm_80.
static bool resolveArchs(std::vector<std::string> &arch, std::string &error) {
  if (arch.empty())
    arch = {"sm_80", "sm_90"};
  std::vector<std::string> supported = supportedArchs();
  for (std::string &a : arch) {
    if (a == "native") {
      rt::CudaInfo gpu = rt::probeCuda();
      if (!gpu.available)
        return (error = "--arch native: no CUDA GPU here (" + gpu.reason + ")",
                false);
      a = rt::deviceArch(gpu.devices[0]);
    }
    bool known = supported.empty()
                     ? StringRef(a).starts_with("sm_") && a.size() >= 5
                     : llvm::is_contained(supported, a);
    if (!known)
      return (error = "--arch " + a + " is not supported (" +
                      (supported.empty() ? std::string("names like sm_80")
                                         : llvm::join(supported, ", ")) +
                      ")",
              false);
    if (compilePrecision.precision == "bf16" && std::atoi(a.c_str() + 3) < 80)
      return (error = "--precision bf16 needs sm_80 or newer (" + a +
                      " has no bf16 tensor cores); use --precision fp16 there",
              false);
  }
  return true;
}

/// Writes one train step or forward pass into the existing directory `tmp`:
/// plan, weights, kernels.cu, kernels.fatbin, summary.json.
static bool writeArtifactFiles(const rt::Plan &plan,
                               const mlir::mpc::CudaModule &cuda,
                               ArtifactInfo &info, const std::string &tmp,
                               std::string &error) {
  std::vector<int64_t> offsets;
  info.arena = rt::planDeviceMemory(plan, offsets);
  bool ok = rt::savePlan(plan, tmp, error);
  if (ok && target == "cuda") {
    KernelBuildOptions build;
    build.arch = info.arch;
    build.cacheDir = noCache ? "" : cacheDir.empty() ? defaultKernelCacheDir()
                                                     : cacheDir.getValue();
    build.jobs = jobs ? jobs : std::max(1u, std::thread::hardware_concurrency());
    build.compiler = deviceCompiler;
    ok = rt::writeFileAtomically(tmp + "/kernels.cu", cuda.source, error) &&
         (noNvcc || buildKernels(cuda, tmp, build, info.build, error));
    for (const std::string &w : info.build.warnings)
      errs() << "mpc: warning: " << w << "\n";
  }
  std::vector<std::string> kernelNames;
  for (const mlir::mpc::CudaKernel &k : cuda.kernels)
    kernelNames.push_back(k.name);
  double flops = cuda.flops, tc = cuda.tensorCoreFlops;
  json::Object summary{
      {"model", std::string(model)},
      {"target", std::string(target)},
      {"precision", std::string(compilePrecision.precision)},
      {"batch", (int64_t)batch},
      {"train_step", (bool)train},
      {"arch", json::Array(info.arch)},
      {"steps", (int64_t)plan.steps.size()},
      {"launches", json::Array(cuda.launches)},
      {"launches_with_libraries", (int64_t)cuda.libraryLaunches},
      {"launches_micro_batch", (int64_t)cuda.microLaunches},
      {"kernels", json::Array(kernelNames)},
      {"tensor_core_gemm_kernels", json::Array(cuda.gemmKernels)},
      {"fp32_gemm_kernels", json::Array(cuda.fp32GemmKernels)},
      {"memory_plan_bytes", info.arena},
      {"flops", flops},
      {"tensor_core_flop_share", flops > 0 ? tc / flops : 0.0},
      {"device_compile",
       json::Object{{"compiler", info.build.compiler},
                    {"version", info.build.compilerVersion},
                    {"seconds", info.build.seconds},
                    {"kernels_compiled", (int64_t)info.build.compiled},
                    {"kernels_from_cache", (int64_t)info.build.cached},
                    {"translation_units", (int64_t)info.build.units},
                    {"modules", (int64_t)info.build.modules}}}};
  return ok && writeJsonFile(tmp + "/summary.json",
                             json::Value(std::move(summary)), error);
}

/// Runs `write(tmp)` on a fresh DIR.tmp and renames it over DIR, so DIR is
/// whole or untouched.
static bool writeAtomically(const std::function<bool(const std::string &)> &write,
                            std::string &error) {
  std::string tmp = outDir + ".tmp";
  std::error_code ec;
  fs::remove_all(tmp, ec);
  fs::create_directories(tmp, ec);
  if (ec)
    return (error = "cannot create " + tmp + ": " + ec.message(), false);
  bool ok = write(tmp);
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

/// What the summary line says of the device code.
static std::string deviceCodeText(const ArtifactInfo &info) {
  if (noNvcc)
    return "kernels.cu not compiled (--no-nvcc)";
  if (info.build.compiler.empty())
    return "kernels.cu not compiled (neither NVRTC nor nvcc found)";
  const KernelBuildResult &b = info.build;
  return formatv("device code for {0} ({1} compiled by {2} in {3} units, {4} "
                 "from the cache; {5:f1} s)",
                 llvm::join(info.arch, ","), b.compiled, b.compiler, b.units,
                 b.cached, b.seconds)
      .str();
}

int runCompile() {
  auto start = std::chrono::steady_clock::now();
  std::string error;
  if (target != "cuda" && target != "cpu")
    return reportError("--target must be cuda or cpu, got '" + target + "'");
  if (emit != "artifact" && emit != "mlir")
    return reportError("--emit must be artifact or mlir, got '" + emit + "'");
  if (deviceCompiler != "auto" && deviceCompiler != "nvrtc" &&
      deviceCompiler != "nvcc")
    return reportError("--device-compiler must be auto, nvrtc or nvcc, got '" +
                       deviceCompiler + "'");
  if (gemmChoice != "auto" && gemmChoice != "cublaslt" && gemmChoice != "mpc")
    return reportError("--gemm must be auto, cublaslt or mpc, got '" +
                       gemmChoice + "'");
  if (convChoice != "auto" && convChoice != "cudnn" && convChoice != "mpc")
    return reportError("--conv must be auto, cudnn or mpc, got '" +
                       convChoice + "'");
  if (int64_t splits; !rt::parseAttentionDq(attentionDq, splits))
    return reportError(kAttentionDqError + attentionDq + "'");
  if (attentionRows != 64 && attentionRows != 128)
    return reportError(kAttentionRowsError + std::to_string(attentionRows));
  if (!compilePrecision.validate(error, !phaseFlags.empty() || !recipe.empty()))
    return reportError(error);
  if (batch <= 0)
    return reportError("--batch must be positive");
  ArtifactInfo info;
  info.arch.assign(archs.begin(), archs.end());
  if (target == "cuda" && !resolveArchs(info.arch, error))
    return reportError(error);

  mlir::MLIRContext ctx;
  auto module = importWithBatch(ctx, model, batch, error, freeze, dims);
  if (!module || !seedWeights(*module, weightsSpec, error))
    return reportError(error);
  if (std::string why = unboundInputDim(*module); !why.empty())
    return reportError(model + ": " + why);
  PhaseList phases;
  if (!readPhaseList(phaseFlags, recipe, lossScaler,
                     lossScaler.getNumOccurrences() > 0, phases, error) ||
      !checkPhaseEmaWarmup(phases, compilePrecision.emaWarmup->getValue(),
                           error))
    return reportError(error);
  if (std::string flag = compilePrecision.notWithPhasesFlag();
      !phases.specs.empty() && !flag.empty())
    return reportError(flag + " does not combine with phases (--phase, "
                              "--recipe) yet");
  if (!phases.specs.empty() && (!train || emit == "mlir"))
    return reportError(train ? "--phase writes an artifact, not --emit mlir"
                             : "--phase and --recipe need --train");
  if (phases.specs.empty() && lossScaler.getNumOccurrences())
    return reportError("--loss-scaler is for phases (--phase or --recipe)");
  mlir::func::FuncOp single; // the step (or forward pass) without phases
  if (phases.specs.empty()) {
    mlir::func::FuncOp func = single = runPipeline(*module, error);
    if (!func)
      return reportError(model + ": " + error);
    if (emit == "mlir") // the IR the plan is built from
      return writeModule(*module, outDir, error) ? 0 : reportError(error);
  }
  // One train step per phase (or the one step / forward pass), each a
  // complete artifact: phased ones in DIR/phase<k>, with DIR/phases.txt
  // saying their order and scaler (what mpc-gpu-run reads).
  size_t units = std::max<size_t>(phases.specs.size(), 1);
  std::vector<rt::Plan> plans(units);
  std::vector<mlir::mpc::CudaModule> modules(units);
  std::vector<std::vector<std::string>> owned;
  for (size_t k = 0; k < units; ++k) {
    mlir::func::FuncOp func = single;
    mlir::OwningOpRef<mlir::ModuleOp> copy;
    if (!phases.specs.empty()) {
      copy = module->clone();
      func = runPipeline(*copy, error, &phases.specs[k]);
      if (!func)
        return reportError(model + ": phase " + phases.specs[k].loss + ": " +
                           error);
    }
    rt::Plan &plan = plans[k];
    if (!mlir::mpc::buildPlan(func, plan, error))
      return reportError(model + ": " + error);
    if (target == "cuda")
      plan.cudaArch = info.arch;
    plan.cudaGemm = gemmChoice;
    plan.cudaConv = convChoice;
    plan.cudaTf32 = allowTf32;
    plan.cudaAttentionDq = attentionDq;
    plan.cudaAttentionRows = attentionRows;
    if (target == "cuda" && !mlir::mpc::emitCuda(plan, modules[k], error, fuse))
      return reportError(model + ": " + error);
    if (phases.scaler == "shared" &&
        llvm::none_of(plan.steps, [](const rt::Step &st) {
          return st.op == rt::OpId::UpdateLossScale;
        }))
      return reportError(model + ": --loss-scaler shared needs dynamic loss "
                                 "scaling (--loss-scale dynamic, the fp16 "
                                 "default)");
    owned.emplace_back();
    if (plan.train)
      for (const auto &[index, param] : plan.train->gradients)
        owned.back().push_back(param);
  }
  if (!phases.specs.empty() && !checkPhaseOwners(phases, owned, error))
    return reportError(error);
  std::vector<ArtifactInfo> infos(units, info);
  bool ok = writeAtomically(
      [&](const std::string &tmp) {
        if (phases.specs.empty())
          return writeArtifactFiles(plans[0], modules[0], infos[0], tmp, error);
        std::string manifest = "loss-scaler " + phases.scaler + "\n";
        for (size_t k = 0; k < units; ++k) {
          std::string dir = tmp + "/phase" + std::to_string(k);
          std::error_code ec;
          fs::create_directories(dir, ec);
          if (ec)
            return (error = "cannot create " + dir + ": " + ec.message(), false);
          if (!writeArtifactFiles(plans[k], modules[k], infos[k], dir, error))
            return false;
          manifest += "phase phase" + std::to_string(k) + " " +
                      phases.specs[k].loss + "\n";
        }
        return rt::writeFileAtomically(tmp + "/phases.txt", manifest, error);
      },
      error);
  if (!ok)
    return reportError(error);

  double secs = std::chrono::duration<double>(
                    std::chrono::steady_clock::now() - start)
                    .count();
  outs() << "wrote " << outDir << ":";
  for (size_t k = 0; k < units; ++k) {
    const mlir::mpc::CudaModule &cuda = modules[k];
    double flops = cuda.flops, tc = cuda.tensorCoreFlops;
    if (!phases.specs.empty())
      outs() << (k ? ";" : "") << " phase " << phases.specs[k].loss << ":";
    outs() << formatv(" {0} steps", plans[k].steps.size());
    if (target == "cuda" && cuda.microLaunches != cuda.launches.size())
      outs() << formatv(", {0} kernel launches ({1} on a micro-batch that "
                        "does not end its group)",
                        cuda.launches.size(), cuda.microLaunches);
    else if (target == "cuda")
      outs() << formatv(", {0} kernel launches", cuda.launches.size());
    if (target == "cuda")
      outs() << formatv(", {0} distinct CUDA kernels ({1} "
                        "GEMM/conv on tensor cores, {2} in FP32), memory plan "
                        "{3:f2} MiB, {4:f1}% of FLOPs on tensor cores, {5}",
                        cuda.kernels.size(), cuda.gemmKernels.size(),
                        cuda.fp32GemmKernels.size(), infos[k].arena / 1048576.0,
                        flops > 0 ? 100 * tc / flops : 0.0,
                        deviceCodeText(infos[k]));
  }
  outs() << formatv(" ({0:f1} s)\n", secs);
  return 0;
}

} // namespace mpc
