//===- Pipelines.cpp - the named pass pipelines the mpc commands run ------===//
//
// The order of the train pipeline matters: the backward pass is derived
// from the mixed forward, so each backward op inherits its forward op's
// precision; master weights and loss scaling then rewrite the train step.
//
//===----------------------------------------------------------------------===//

#include "passes/Pipelines.h"
#include "runtime/LrSchedule.h"

#include "mlir/Pass/PassRegistry.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Regex.h"

#include <cmath>

namespace mlir::mpc {

bool parseLossScale(StringRef spec, StringRef precision, LossScaleSpec &out,
                    std::string &error) {
  if (spec.empty())
    spec = precision == "fp16" ? "dynamic" : "none";
  auto [mode, rest] = spec.split(':');
  out.mode = mode.str();
  out.options.mode = mode.str();
  if (mode == "none")
    return rest.empty() ||
           (error = "--loss-scale none takes no value", false);
  if (mode == "static") {
    double s;
    if (rest.getAsDouble(s) || !(s > 0)) {
      error = "--loss-scale static:S needs a positive scale, got '" +
              spec.str() + "'";
      return false;
    }
    out.options.scale = s;
    return true;
  }
  if (mode != "dynamic") {
    error = "--loss-scale must be none, static:S or dynamic[:k=v,...], got '" +
            spec.str() + "'";
    return false;
  }
  SmallVector<StringRef> items;
  rest.split(items, ',', -1, false);
  for (StringRef item : items) {
    auto [key, value] = item.split('=');
    double v;
    if (value.getAsDouble(v)) {
      error = "--loss-scale dynamic: '" + item.str() + "' is not key=number";
      return false;
    }
    if (key == "init")
      out.options.scale = v;
    else if (key == "growth")
      out.options.growth = v;
    else if (key == "backoff")
      out.options.backoff = v;
    else if (key == "interval")
      out.options.interval = (int64_t)v;
    else if (key == "min")
      out.options.minScale = v;
    else if (key == "max")
      out.options.maxScale = v;
    else {
      error = "--loss-scale dynamic: unknown setting '" + key.str() +
              "' (init, growth, backoff, interval, min, max)";
      return false;
    }
  }
  auto &o = out.options;
  if (!(o.scale > 0) || !(o.minScale > 0) || o.minScale > o.maxScale ||
      !(o.growth >= 1) || !(o.backoff > 0 && o.backoff < 1) ||
      o.interval < 1) {
    error = "--loss-scale dynamic: need init > 0, 0 < min <= max, growth >= "
            "1, 0 < backoff < 1, interval >= 1";
    return false;
  }
  return true;
}

template <typename Derived>
bool validate(const PrecisionOptions<Derived> &o, std::string &error) {
  if (o.precision != "fp32" && o.precision != "fp16" && o.precision != "bf16") {
    error = "--precision must be fp32, fp16 or bf16, got '" + o.precision + "'";
    return false;
  }
  if (o.layout != "nchw" && o.layout != "nhwc") {
    error = "--layout must be nchw or nhwc, got '" + o.layout + "'";
    return false;
  }
  if (!o.isLow() && (!o.ampAllow.empty() || !o.ampDeny.empty() ||
                     !o.ampKeepFp32.empty() || !o.ampConfig.empty())) {
    error = "--amp-* flags need --precision fp16 or bf16";
    return false;
  }
  return true;
}

bool parseEmaWarmup(StringRef spec, EmaOptions &out, std::string &error,
                    StringRef flag) {
  if (spec == "num-updates") {
    out.warmupNumUpdates = true;
    return true;
  }
  SmallVector<StringRef> parts;
  spec.split(parts, ',');
  double power = 0, gamma = 1;
  if (parts.size() > 2 || parts[0].trim().getAsDouble(power) ||
      !(power > 0 && power < 1e6) ||
      (parts.size() == 2 &&
       (parts[1].trim().getAsDouble(gamma) || !(gamma > 0 && gamma < 1e300)))) {
    error = flag.str() +
            " takes POWER[,GAMMA], both positive, such as 0.75 (timm's "
            "warmup_power, warmup_gamma 1), or num-updates, got '" +
            spec.str() + "'";
    return false;
  }
  out.warmupPower = power;
  out.warmupGamma = gamma;
  return true;
}

bool validate(const TrainPipelineOptions &o, std::string &error, bool phased) {
  LossScaleSpec spec;
  StringRef kind = o.optimizer;
  if (std::string why; !o.trainParams.empty() &&
                       !llvm::Regex(o.trainParams).isValid(why)) {
    error = "--train-params '" + o.trainParams + "' is not a regular "
            "expression: " + why;
    return false;
  }
  if (o.loraRank < 0 || o.loraAlpha < 0) {
    error = "--lora-rank and --lora-alpha must not be negative";
    return false;
  }
  if (o.loraRank == 0 && (o.loraAlpha != 0 || !o.loraTargets.empty())) {
    error = "--lora-alpha and --lora-targets shape the adapters: they need "
            "--lora-rank";
    return false;
  }
  if (std::string why;
      !o.loraTargets.empty() && !llvm::Regex(o.loraTargets).isValid(why)) {
    error = "--lora-targets '" + o.loraTargets +
            "' is not a regular expression: " + why;
    return false;
  }
  if (o.checkpointSave != "all" && o.checkpointSave != "products") {
    error = "--checkpoint-save must be all or products, got '" +
            o.checkpointSave + "'";
    return false;
  }
  if (o.checkpointSave != "all" && o.checkpointBlocks.empty()) {
    error = "--checkpoint-save " + o.checkpointSave +
            " says what checkpointed blocks hold: it needs --checkpoint-blocks";
    return false;
  }
  if (std::string why; !o.checkpointBlocks.empty() &&
                       !llvm::Regex(o.checkpointBlocks).isValid(why)) {
    error = "--checkpoint-blocks '" + o.checkpointBlocks +
            "' is not a "
            "regular expression: " +
            why;
    return false;
  }
  if (!validate<TrainPipelineOptions>(o, error) ||
      !parseLossScale(o.lossScale, o.precision, spec, error))
    return false;
  if (!llvm::is_contained({"f32", "f16", "bf16"}, StringRef(o.gradWire))) {
    error = "--grad-wire must be fp32, fp16 or bf16";
    return false;
  }
  if (!(o.bucketMb > 0)) {
    error = "--bucket-mb must be positive";
    return false;
  }
  if (::mpc::rt::LrSchedule s;
      !o.lrSchedule.empty() &&
      !::mpc::rt::parseLrSchedule(o.lrSchedule, s, error))
    return false;
  if (!(o.clipGradNorm >= 0) || !std::isfinite(o.clipGradNorm)) {
    error = "--clip-grad-norm must be a positive number (0: no clipping)";
    return false;
  }
  if (std::string why; !o.noWeightDecay.empty() &&
                       !llvm::Regex(o.noWeightDecay).isValid(why)) {
    error = "--no-weight-decay '" + o.noWeightDecay +
            "' is not a regular expression: " + why;
    return false;
  }
  if (o.gradAccumulation < 1) {
    error = "--grad-accumulation must be at least 1 (1: off)";
    return false;
  }
  if (o.gradAccumulation > 1 && kind.lower() == "none") {
    error = "--grad-accumulation sums gradients for an optimizer's update; "
            "it needs --optimizer";
    return false;
  }
  if (!(o.ema >= 0 && o.ema < 1)) {
    error = "--ema must be a decay in [0, 1), such as 0.999 (0: none)";
    return false;
  }
  if (!o.emaWarmup.empty()) {
    EmaOptions parsed;
    if (!parseEmaWarmup(o.emaWarmup, parsed, error))
      return false;
    if (o.ema == 0 && !phased) {
      error = "--ema-warmup warms up the moving average's decay: it needs "
              "--ema DECAY";
      return false;
    }
  }
  if (!o.adamBetas.empty() &&
      (o.adamBetas.size() != 2 ||
       llvm::any_of(o.adamBetas, [](double b) { return !(b >= 0 && b < 1); }))) {
    error = "--adam-betas takes beta1,beta2, each in [0, 1)";
    return false;
  }
  if (!llvm::is_contained({"sgd", "momentum", "nesterov", "adam", "adamw",
                           "adagrad", "none"},
                          kind.lower())) {
    error = "unknown --optimizer '" + o.optimizer +
            "' (sgd, momentum, nesterov, adam, adamw, adagrad)";
    return false;
  }
  return true;
}

template <typename Derived>
void addClassifyPass(OpPassManager &pm, const PrecisionOptions<Derived> &o) {
  AmpClassifyOptions options;
  options.precision = o.precision == "fp16" ? "f16" : "bf16";
  // The options hold ArrayRefs; the pass copies them when created.
  std::vector<std::string> allow(o.ampAllow.begin(), o.ampAllow.end()),
      deny(o.ampDeny.begin(), o.ampDeny.end()),
      keep(o.ampKeepFp32.begin(), o.ampKeepFp32.end());
  options.allow = allow;
  options.deny = deny;
  options.keepFp32 = keep;
  options.config = o.ampConfig;
  pm.addPass(createAmpClassify(options));
}

template bool validate(const PrecisionOptions<PrecisionPipelineOptions> &,
                       std::string &);
template void addClassifyPass(OpPassManager &,
                              const PrecisionOptions<PrecisionPipelineOptions> &);
template void addClassifyPass(OpPassManager &,
                              const PrecisionOptions<TrainPipelineOptions> &);

namespace {

template <typename Derived>
void addForwardPasses(OpPassManager &pm, const PrecisionOptions<Derived> &o,
                      bool optimizes = false) {
  pm.addPass(createFuseDecomposed());
  pm.addPass(createWindow1dAs2d());
  pm.addPass(createPool3dAs2d());
  pm.addPass(createConv3dAs2d());
  pm.addPass(createSlicesToSplit());
  pm.addPass(createMergeSiblingLinears());
  pm.addPass(createStableLogs());
  pm.addPass(createFuseCrossEntropy()); // after log(softmax) -> log_softmax
  if (o.fuseAttention) {
    pm.addPass(createFuseAttention());
    pm.addPass(createTransposesToAttention());
  }
  if (o.layout == "nhwc") {
    // A step that updates its filters keeps them KRSC between steps; a
    // forward or gradient-only run hands them out as ONNX lays them out.
    ChannelsLastOptions layout;
    layout.storedFilters = optimizes;
    pm.addPass(createChannelsLast(layout));
  }
  if (o.isLow()) {
    addClassifyPass(pm, o);
    pm.addPass(createInsertCasts());
  }
  pm.addPass(createFoldLinearBias()); // once the types are decided
  if (o.foldConstants)
    pm.addPass(createFoldConstants()); // after the fusions read the masks
}

/// A pipeline that can refuse its options: PassPipelineRegistration's
/// builder cannot fail, so an invalid precision or loss scale would only
/// show when a pass trips over it.
template <typename Options>
void registerPipeline(StringRef arg, StringRef description,
                      void (*build)(OpPassManager &, const Options &)) {
  registerPassPipeline(
      arg, description,
      [build](OpPassManager &pm, StringRef text,
              function_ref<LogicalResult(const Twine &)> errorHandler) {
        Options options;
        if (failed(options.parseFromString(text)))
          return failure();
        std::string error;
        if (!validate(options, error))
          return errorHandler(error);
        build(pm, options);
        return success();
      },
      [](function_ref<void(const detail::PassOptions &)> optHandler) {
        optHandler(Options());
      });
}

/// Data-parallel ranks accumulating gradients average each group's sums
/// once (mpc-data-parallel after mpc-grad-accumulation), as DDP's
/// no_sync() does; without accumulation, each gradient as it is ready.
bool accumulatesAcrossRanks(const TrainPipelineOptions &o) {
  return o.dataParallel && o.gradAccumulation > 1 &&
         StringRef(o.optimizer).lower() != "none";
}

DataParallelOptions dataParallelOptions(const TrainPipelineOptions &o) {
  DataParallelOptions dp;
  dp.bucketMb = o.bucketMb;
  dp.wire = o.gradWire;
  return dp;
}

void addOptimizerPasses(OpPassManager &pm, const TrainPipelineOptions &o) {
  OptimizerOptions opt;
  opt.kind = StringRef(o.optimizer).lower();
  opt.lr = o.lr;
  opt.momentum = o.momentum;
  opt.weightDecay = o.weightDecay;
  opt.noDecay = o.noWeightDecay;
  if (o.adamBetas.size() == 2) {
    opt.beta1 = o.adamBetas[0];
    opt.beta2 = o.adamBetas[1];
  }
  ::mpc::rt::LrSchedule schedule;
  std::string error; // validated before
  if (!o.lrSchedule.empty() &&
      ::mpc::rt::parseLrSchedule(o.lrSchedule, schedule, error) &&
      schedule.scheduled())
    opt.lrSchedule = o.lrSchedule;
  pm.addPass(createOptimizer(opt));
  if (o.clipGradNorm > 0)
    pm.addPass(createClipGradNorm(ClipGradNormOptions{o.clipGradNorm}));
  if (o.gradAccumulation > 1)
    pm.addPass(createGradAccumulation(
        GradAccumulationOptions{o.gradAccumulation}));
  if (accumulatesAcrossRanks(o))
    pm.addPass(createDataParallel(dataParallelOptions(o)));
  if (o.unscaleInOptimizer)
    pm.addPass(createUnscaleInOptimizer());
  if (o.halfWeightsInOptimizer && o.isLow())
    pm.addPass(createHalfWeightsInOptimizer());
  if (o.ema > 0) {
    EmaOptions ema{o.ema};
    std::string error; // validated
    if (!o.emaWarmup.empty())
      parseEmaWarmup(o.emaWarmup, ema, error);
    pm.addPass(createEma(ema));
  }
}

} // namespace

void buildPrecisionPipeline(OpPassManager &pm,
                            const PrecisionPipelineOptions &o) {
  addForwardPasses(pm, o);
}

void addLoraPass(OpPassManager &pm, const TrainPipelineOptions &o) {
  if (o.loraRank <= 0)
    return;
  LoraOptions lora;
  lora.rank = o.loraRank;
  lora.alpha = o.loraAlpha;
  lora.targets = o.loraTargets;
  lora.train = o.trainParams;
  pm.addPass(createLora(lora));
}

void buildTrainPipeline(OpPassManager &pm, const TrainPipelineOptions &o) {
  const bool optimizes = StringRef(o.optimizer).lower() != "none";
  addLoraPass(pm, o); // on the graph as imported
  addForwardPasses(pm, o, optimizes);
  if (optimizes) // after the forward's rewrites, which read parameters
    pm.addPass(createPromoteHalfParams());
  AutodiffOptions autodiff;
  autodiff.loss = o.loss;
  // With adapters, mpc-lora froze what --train-params does not name.
  if (o.loraRank == 0)
    autodiff.params = o.trainParams;
  pm.addPass(createAutodiff(autodiff));
  pm.addPass(createDropoutSteps());
  if (!o.checkpointBlocks.empty())
    pm.addPass(createCheckpointBlocks(
        CheckpointBlocksOptions{o.checkpointBlocks, o.checkpointSave}));
  if (o.recomputeColumns)
    pm.addPass(createRecomputeColumns());
  if (o.isLow())
    pm.addPass(createMasterWeights());
  if (o.dataParallel && !accumulatesAcrossRanks(o))
    pm.addPass(createDataParallel(dataParallelOptions(o)));
  LossScaleSpec spec;
  std::string error; // validated before
  if (parseLossScale(o.lossScale, o.precision, spec, error)) {
    // (Ranks accumulating apart agree on skips through the flag.)
    if (spec.mode == "none" && (o.finiteCheck || accumulatesAcrossRanks(o))) {
      spec.options.mode = "static";
      spec.options.scale = 1.0;
    }
    if (spec.options.mode != "none")
      pm.addPass(createLossScaling(spec.options));
  }
  if (StringRef(o.optimizer).lower() != "none")
    addOptimizerPasses(pm, o);
  else if (o.clipGradNorm > 0) // gradients only: returned clipped
    pm.addPass(createClipGradNorm(ClipGradNormOptions{o.clipGradNorm}));
  if (o.foldConstants)
    pm.addPass(createFoldConstants()); // what gradient rules built on them
}

void setTrainTarget(TrainPipelineOptions &o, bool cuda) {
  o.finiteCheck = cuda;
  o.unscaleInOptimizer = cuda;
  o.halfWeightsInOptimizer = cuda;
}

void registerMpcPipelines() {
  registerPipeline<PrecisionPipelineOptions>(
      "mpc-precision-pipeline",
      "What `mpc compile`/`mpc run` run on a forward graph: mpc-amp-classify "
      "and mpc-insert-casts for fp16/bf16",
      buildPrecisionPipeline);
  registerPipeline<TrainPipelineOptions>(
      "mpc-train-pipeline",
      "What `mpc compile --train` and `mpc train` run: mpc-lora (with "
      "lora-rank), precision passes, mpc-promote-half-params, mpc-autodiff, "
      "mpc-master-weights, mpc-loss-scaling, mpc-optimizer",
      buildTrainPipeline);
}

} // namespace mlir::mpc
