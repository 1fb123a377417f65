//===- Pipelines.h - the named pass pipelines the mpc commands run -*- C++ -*-===//
//
// `mpc compile`, `mpc train`, `mpc grad`, `mpc run` and `mpc explain` build
// their pass managers here, and mpc-opt runs the same pipelines by name,
// so a lit test can run exactly what a command runs:
//
//   mpc-opt --mpc-precision-pipeline="precision=fp16"          (forward)
//   mpc-opt --mpc-train-pipeline="precision=fp16 loss-scale=dynamic optimizer=adam"
//
//===----------------------------------------------------------------------===//

#ifndef MPC_PASSES_PIPELINES_H
#define MPC_PASSES_PIPELINES_H

#include "passes/Passes.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"

#include <string>

namespace mlir::mpc {

/// The mixed-precision choices every pipeline shares.
template <typename Derived>
struct PrecisionOptions : public PassPipelineOptions<Derived> {
  using Self = PassPipelineOptions<Derived>;
  typename Self::template Option<std::string> precision{
      *this, "precision",
      llvm::cl::desc("fp32 | fp16 | bf16: low-precision compute with FP32 "
                     "accumulation and FP32 master weights"),
      llvm::cl::init("fp32")};
  typename Self::template ListOption<std::string> ampAllow{
      *this, "amp-allow",
      llvm::cl::desc("ONNX op types to run in low precision")};
  typename Self::template ListOption<std::string> ampDeny{
      *this, "amp-deny", llvm::cl::desc("ONNX op types to keep in FP32")};
  typename Self::template ListOption<std::string> ampKeepFp32{
      *this, "amp-keep-fp32", llvm::cl::desc("Node names to keep in FP32")};
  typename Self::template Option<std::string> ampConfig{
      *this, "amp-config",
      llvm::cl::desc("File of 'allow = Op,..', 'deny = Op,..', "
                     "'keep-fp32 = node,..' lines")};

  typename Self::template Option<bool> fuseAttention{
      *this, "fuse-attention",
      llvm::cl::desc("Run mpc-fuse-attention first"), llvm::cl::init(true)};
  typename Self::template Option<bool> foldConstants{
      *this, "fold-constants",
      llvm::cl::desc("Run mpc-fold-constants last: compute what constants "
                     "alone compute once, at compile time"),
      llvm::cl::init(true)};
  typename Self::template Option<std::string> layout{
      *this, "layout",
      llvm::cl::desc("nchw | nhwc: the layout convolution regions run in "
                     "(nhwc: mpc-channels-last)"),
      llvm::cl::init("nchw")};

  bool isLow() const { return precision != "fp32"; }
};

/// mpc-precision-pipeline: a forward graph in fp16/bf16 (nothing in fp32).
struct PrecisionPipelineOptions
    : public PrecisionOptions<PrecisionPipelineOptions> {};

/// mpc-train-pipeline: forward + loss -> a whole train step.
struct TrainPipelineOptions : public PrecisionOptions<TrainPipelineOptions> {
  Option<std::string> loss{
      *this, "loss",
      llvm::cl::desc("Name of the loss output (default: first f32 scalar, "
                     "else first float scalar)")};
  Option<std::string> trainParams{
      *this, "params",
      llvm::cl::desc("Regular expression: train only the parameters whose "
                     "whole name matches")};
  Option<int64_t> loraRank{
      *this, "lora-rank",
      llvm::cl::desc("Train low-rank adapters of this rank on the linear "
                     "weights, the model frozen (mpc-lora; 0: off)"),
      llvm::cl::init(0)};
  Option<double> loraAlpha{
      *this, "lora-alpha",
      llvm::cl::desc("The adapters' scale numerator: (alpha / rank) B A "
                     "(0: alpha = rank)"),
      llvm::cl::init(0.0)};
  Option<std::string> loraTargets{
      *this, "lora-targets",
      llvm::cl::desc("Regular expression over whole parameter names: the "
                     "weights mpc-lora adapts (empty: every linear weight)")};
  Option<std::string> lossScale{
      *this, "loss-scale",
      llvm::cl::desc("none | static:S | dynamic[:init=65536,growth=2,"
                     "backoff=0.5,interval=2000,min=1,max=16777216] "
                     "(default: dynamic for fp16, none otherwise)")};
  Option<bool> recomputeColumns{
      *this, "recompute-columns",
      llvm::cl::desc("Rebuild copied convolution columns (3-D convolutions' "
                     "depth taps) before their filter gradients instead of "
                     "holding them from the forward (mpc-recompute-columns)"),
      llvm::cl::init(true)};
  Option<std::string> checkpointBlocks{
      *this, "checkpoint-blocks",
      llvm::cl::desc("Regular expression naming the blocks whose "
                     "activations the backward recomputes "
                     "(mpc-checkpoint-blocks; empty: none)")};
  Option<std::string> checkpointSave{
      *this, "checkpoint-save",
      llvm::cl::desc("What checkpointed blocks hold from the forward: all "
                     "(nothing but their inputs: every op recomputed) or "
                     "products (the tensor-core ops' results too)"),
      llvm::cl::init("all")};
  Option<std::string> lrSchedule{
      *this, "lr-schedule",
      llvm::cl::desc("A learning-rate schedule (runtime/LrSchedule.h): "
                     "constant, linear or cosine [,warmup=N][,total=N]"
                     "[,min=F], or step,every=N[,gamma=G][,warmup=N]")};
  Option<double> clipGradNorm{
      *this, "clip-grad-norm",
      llvm::cl::desc("Clip the gradients' global L2 norm to this before the "
                     "updates (mpc-clip-grad-norm; 0: off)"),
      llvm::cl::init(0.0)};
  Option<std::string> noWeightDecay{
      *this, "no-weight-decay",
      llvm::cl::desc("Regular expression: the parameters whose whole name "
                     "matches get no weight decay (mpc-optimizer's no-decay)")};
  Option<int64_t> gradAccumulation{
      *this, "grad-accumulation",
      llvm::cl::desc("Micro-batches whose gradients are summed before each "
                     "update (mpc-grad-accumulation; 1: off)"),
      llvm::cl::init(1)};
  Option<double> ema{
      *this, "ema",
      llvm::cl::desc("Decay of an exponential moving average of the weights "
                     "kept as step state (mpc-ema; 0: none)"),
      llvm::cl::init(0.0)};
  Option<std::string> emaWarmup{
      *this, "ema-warmup",
      llvm::cl::desc("POWER[,GAMMA]: warm the --ema decay up as "
                     "1 - (1 + t / GAMMA)^-POWER (mpc-ema's warmup-power, "
                     "warmup-gamma; GAMMA defaults to 1); num-updates: as "
                     "(1 + t) / (10 + t) (warmup-num-updates)")};
  Option<bool> finiteCheck{
      *this, "finite-check",
      llvm::cl::desc("Without loss scaling, still unscale by 1 (exact) for "
                     "the all-finite flag (the GPU's skip decision)"),
      llvm::cl::init(false)};
  Option<bool> unscaleInOptimizer{
      *this, "unscale-in-optimizer",
      llvm::cl::desc("Updates unscale their gradients as they read them "
                     "(mpc-unscale-in-optimizer: no FP32 gradient copies on "
                     "the GPU; the CPU backend runs the unfused form faster)"),
      llvm::cl::init(true)};
  Option<bool> halfWeightsInOptimizer{
      *this, "half-weights-in-optimizer",
      llvm::cl::desc("Updates write the fp16/bf16 weight copies the next "
                     "step computes with (mpc-half-weights-in-optimizer; "
                     "the CPU backend casts at the step's start instead)"),
      llvm::cl::init(true)};
  Option<std::string> optimizer{
      *this, "optimizer",
      llvm::cl::desc("sgd | momentum | nesterov | adam | adamw | adagrad | "
                     "none (gradients only)"),
      llvm::cl::init("sgd")};
  Option<double> lr{*this, "lr", llvm::cl::desc("Learning rate"),
                    llvm::cl::init(0.01)};
  Option<double> momentum{*this, "momentum", llvm::cl::desc("Momentum"),
                          llvm::cl::init(0.9)};
  Option<double> weightDecay{*this, "weight-decay",
                             llvm::cl::desc("Weight decay"),
                             llvm::cl::init(0.0)};
  ListOption<double> adamBetas{
      *this, "adam-betas",
      llvm::cl::desc("Adam/AdamW beta1,beta2 (default 0.9,0.999)")};
  Option<bool> dataParallel{
      *this, "data-parallel",
      llvm::cl::desc("Average the gradients over the ranks of a job "
                     "(mpc-data-parallel)"),
      llvm::cl::init(false)};
  Option<double> bucketMb{*this, "bucket-mb",
                          llvm::cl::desc("Gradient bucket size in MiB"),
                          llvm::cl::init(25.0)};
  Option<std::string> gradWire{
      *this, "grad-wire",
      llvm::cl::desc("Type gradients travel in: f32, f16 or bf16"),
      llvm::cl::init("f32")};
};

/// A --loss-scale value resolved for a precision.
struct LossScaleSpec {
  std::string mode; // none, static or dynamic
  LossScalingOptions options;
};

/// Parses --loss-scale (empty: dynamic for fp16, none otherwise); false
/// with a one-line `error`.
bool parseLossScale(StringRef spec, StringRef precision, LossScaleSpec &out,
                    std::string &error);

/// Parses --ema-warmup ("POWER[,GAMMA]" or "num-updates") into mpc-ema's
/// options; false with a one-line `error` naming `flag` (a phase's key
/// spells it `ema-warmup=`).
bool parseEmaWarmup(StringRef spec, EmaOptions &out, std::string &error,
                    StringRef flag = "--ema-warmup");

/// Checks option values; false with a one-line `error`.
template <typename Derived>
bool validate(const PrecisionOptions<Derived> &o, std::string &error);
/// `phased`: the options shared by phases (--phase, --recipe), where
/// --ema-warmup warms up the phases' ema= averages.
bool validate(const TrainPipelineOptions &o, std::string &error,
              bool phased = false);

/// mpc-amp-classify alone (what `mpc explain` paints with).
template <typename Derived>
void addClassifyPass(OpPassManager &pm, const PrecisionOptions<Derived> &o);

/// mpc-amp-classify + mpc-insert-casts for fp16/bf16; nothing for fp32.
void buildPrecisionPipeline(OpPassManager &pm,
                            const PrecisionPipelineOptions &o);

/// mpc-lora as `o` asks for it (--lora-rank), or nothing.
void addLoraPass(OpPassManager &pm, const TrainPipelineOptions &o);

/// mpc-lora (with --lora-rank), the precision passes, mpc-autodiff, then for
/// fp16/bf16 mpc-master-weights, mpc-loss-scaling as --loss-scale says (an
/// exact unscale by 1 for finite-check), and mpc-optimizer unless `none`,
/// followed by mpc-unscale-in-optimizer and mpc-half-weights-in-optimizer
/// unless turned off.
void buildTrainPipeline(OpPassManager &pm, const TrainPipelineOptions &o);

/// The step's form for where it runs, one decision for every command:
/// on the GPU the all-finite flag even without loss scaling (the runtime
/// reads one byte a step, not every gradient), updates that unscale as
/// they read and write the fp16/bf16 weight copies; the CPU backend runs
/// the unfused forms faster, to the same bits.
void setTrainTarget(TrainPipelineOptions &o, bool cuda);

/// Registers mpc-precision-pipeline and mpc-train-pipeline (mpc-opt).
void registerMpcPipelines();

} // namespace mlir::mpc

#endif // MPC_PASSES_PIPELINES_H
