//===- Precision.cpp - --precision and the mixed-precision flags ----------===//

#include "Precision.h"

using namespace llvm;

namespace mpc {

PrecisionFlags::PrecisionFlags(cl::SubCommand &sub, bool training)
    : precision("precision",
                cl::desc("fp32 | fp16 | bf16: low-precision compute with FP32 "
                         "accumulation and FP32 master weights"),
                cl::init("fp32"), cl::sub(sub)),
      ampAllow("amp-allow", cl::CommaSeparated,
               cl::desc("ONNX op types to run in low precision"),
               cl::value_desc("Op,.."), cl::sub(sub)),
      ampDeny("amp-deny", cl::CommaSeparated,
              cl::desc("ONNX op types to keep in FP32"),
              cl::value_desc("Op,.."), cl::sub(sub)),
      ampKeepFp32("amp-keep-fp32", cl::CommaSeparated,
                  cl::desc("Node names to keep in FP32"),
                  cl::value_desc("node,.."), cl::sub(sub)),
      ampConfig("amp-config",
                cl::desc("File of 'allow = Op,..', 'deny = Op,..', "
                         "'keep-fp32 = node,..' lines"),
                cl::value_desc("file"), cl::sub(sub)),
      fuseAttention("fuse-attention",
                    cl::desc("Rewrite softmax(Q K^T) V subgraphs to the fused, "
                             "memory-linear attention op (default on; "
                             "=false keeps them as written)"),
                    cl::init(true), cl::sub(sub)),
      foldConstants("fold-constants",
                    cl::desc("Compute once, at compile time, what the graph "
                             "computes from constants alone (masks, rotary "
                             "tables; default on; =false computes them each "
                             "run)"),
                    cl::init(true), cl::sub(sub)),
      layout("layout",
             cl::desc("nchw | nhwc: the layout convolution regions run in. "
                      "nhwc runs them channels last (NHWC data, KRSC "
                      "filters), as cuDNN's tensor-core kernels read them; "
                      "parameters and checkpoints keep ONNX's layout "
                      "(default nchw)"),
             cl::init("nchw"), cl::sub(sub)) {
  if (training) {
    lossScale = std::make_unique<cl::opt<std::string>>(
        "loss-scale",
        cl::desc("none | static:S | dynamic[:init=65536,growth=2,backoff=0.5,"
                 "interval=2000,min=1,max=16777216] (default: dynamic for "
                 "fp16 and for a model computing in FP16 itself, none "
                 "otherwise)"),
        cl::sub(sub));
    trainParams = std::make_unique<cl::opt<std::string>>(
        "train-params",
        cl::desc("Train only the parameters whose whole name matches this "
                 "regular expression; the others stay fixed (gradients "
                 "still flow through them)"),
        cl::value_desc("regex"), cl::sub(sub));
    recomputeColumns = std::make_unique<cl::opt<bool>>(
        "recompute-columns",
        cl::desc("Rebuild the columns a 3-D convolution reads (its depth "
                 "taps, kd copies of its input) before its filter gradient "
                 "instead of holding them from the forward: activation "
                 "memory near a native 3-D convolution's, for one more copy "
                 "a layer (default on; =false holds them)"),
        cl::init(true), cl::sub(sub));
    checkpointBlocks = std::make_unique<cl::opt<std::string>>(
        "checkpoint-blocks",
        cl::desc("Activation checkpointing, as torch.utils.checkpoint over "
                 "each block: the forward ops whose node name contains a "
                 "match of this regular expression form one block per "
                 "matched text (e.g. 'blocks\\.[0-9]+', Hugging Face GPT-2's "
                 "'h\\.[0-9]+'; auto: the module list the node names number "
                 "most, as blocks.N, h.N, layers.N), computed again before "
                 "the block's backward instead of holding its activations "
                 "from the forward (the same numbers; one more forward)"),
        cl::value_desc("regex"), cl::sub(sub));
    checkpointSave = std::make_unique<cl::opt<std::string>>(
        "checkpoint-save",
        cl::desc("What --checkpoint-blocks' blocks hold from the forward: "
                 "all (only their inputs; every op recomputed; default) or "
                 "products (the matmul, GEMM, convolution and attention "
                 "results too, as torch's selective checkpointing saving "
                 "matmuls: only the norms, activations and sums after them "
                 "recomputed, less memory saved for no recomputed FLOPs)"),
        cl::value_desc("all|products"), cl::init("all"), cl::sub(sub));
    clipGradNorm = std::make_unique<cl::opt<double>>(
        "clip-grad-norm",
        cl::desc("Clip the gradients' global L2 norm to MAX before each "
                 "update, as torch.nn.utils.clip_grad_norm_ after "
                 "GradScaler.unscale_ (the norm before clipping is the step "
                 "output mpc.grad_norm; 0: no clipping, default)"),
        cl::value_desc("MAX"), cl::init(0.0), cl::sub(sub));
    noWeightDecay = std::make_unique<cl::opt<std::string>>(
        "no-weight-decay",
        cl::desc("Parameters whose whole name matches this regular "
                 "expression get no --weight-decay, as Hugging Face's "
                 "no_decay group (e.g. '.*(bias|LayerNorm\\.weight)')"),
        cl::value_desc("regex"), cl::sub(sub));
    gradAccumulation = std::make_unique<cl::opt<int64_t>>(
        "grad-accumulation",
        cl::desc("Sum the gradients of N micro-batches of --batch rows "
                 "before each update, as (loss / N).backward() on each and "
                 "one optimizer step (a batch N times larger in the memory "
                 "of one; --steps counts updates; default 1)"),
        cl::value_desc("N"), cl::init(1), cl::sub(sub));
    ema = std::make_unique<cl::opt<double>>(
        "ema",
        cl::desc("Keep an exponential moving average of the weights (and "
                 "batch norm's running statistics), e = lerp(e, w, 1 - "
                 "DECAY) after each update, as timm's ModelEmaV2 and torch's "
                 "AveragedModel: evaluated beside the model (eval_loss_ema) "
                 "and written by --ema-output (0: none, default)"),
        cl::value_desc("DECAY"), cl::init(0.0), cl::sub(sub));
    emaWarmup = std::make_unique<cl::opt<std::string>>(
        "ema-warmup",
        cl::desc("Warm the --ema decay up: POWER[,GAMMA] as timm's "
                 "ModelEmaV3 and diffusers' EMAModel with use_ema_warmup, "
                 "at update t min(DECAY, 1 - (1 + (t - 1) / GAMMA)^-POWER) "
                 "(GAMMA 1 unless given; timm suggests POWER 2/3 for runs "
                 "of a million steps, 3/4 for shorter ones); num-updates as "
                 "TensorFlow's num_updates and EMAModel's default, min(DECAY, "
                 "t / (9 + t)); 0 at the first update; the decay in "
                 "--metrics and TensorBoard (ema_decay); with phases, every "
                 "phase's ema= average without an ema-warmup= of its own"),
        cl::value_desc("POWER[,GAMMA]|num-updates"), cl::sub(sub));
    loraRank = std::make_unique<cl::opt<int64_t>>(
        "lora-rank",
        cl::desc("Fine-tune low-rank adapters, as PEFT's LoRA: each linear "
                 "weight W (--lora-targets) gets A [in, r] (uniform in "
                 "+-1/sqrt(in)) and B [r, out] (zeros), its layer's result "
                 "gains (alpha / r) x A B, and only the adapters (and "
                 "--train-params) train, the model frozen; -o writes the "
                 "model with W + (alpha / r) (A B) merged in, checkpoints "
                 "hold the adapters (0: off, default)"),
        cl::value_desc("r"), cl::init(0), cl::sub(sub));
    loraAlpha = std::make_unique<cl::opt<double>>(
        "lora-alpha",
        cl::desc("LoRA's alpha: the adapters' update is scaled by alpha / r "
                 "(default: r, a scale of 1)"),
        cl::value_desc("alpha"), cl::init(0.0), cl::sub(sub));
    loraTargets = std::make_unique<cl::opt<std::string>>(
        "lora-targets",
        cl::desc("Regular expression over whole parameter names: the "
                 "weights --lora-rank adapts (e.g. '.*(q_proj|v_proj)"
                 "\\.weight'; default: every weight read only by linear "
                 "layers)"),
        cl::value_desc("regex"), cl::sub(sub));
    lrSchedule = std::make_unique<cl::opt<std::string>>(
        "lr-schedule",
        cl::desc("The learning rate over the optimizer steps, as Hugging "
                 "Face's get_*_schedule_with_warmup and torch's StepLR: "
                 "constant | linear | cosine [,warmup=N][,total=N (default: "
                 "the run's steps)][,min=F (cosine's floor, a fraction of "
                 "--lr)] | step,every=N[,gamma=G][,warmup=N]; each step's "
                 "rate in --metrics (lr) and TensorBoard"),
        cl::value_desc("spec"), cl::sub(sub));
  }
}

template <typename Derived>
static void applyShared(const PrecisionFlags &f,
                        mlir::mpc::PrecisionOptions<Derived> &o) {
  o.precision = f.precision.getValue();
  o.ampAllow = ArrayRef<std::string>(f.ampAllow);
  o.ampDeny = ArrayRef<std::string>(f.ampDeny);
  o.ampKeepFp32 = ArrayRef<std::string>(f.ampKeepFp32);
  o.ampConfig = f.ampConfig.getValue();
  o.fuseAttention = f.fuseAttention.getValue();
  o.foldConstants = f.foldConstants.getValue();
  o.layout = f.layout.getValue();
}

void PrecisionFlags::apply(mlir::mpc::PrecisionPipelineOptions &o) const {
  applyShared(*this, o);
}

void PrecisionFlags::apply(mlir::mpc::TrainPipelineOptions &o) const {
  applyShared(*this, o);
  if (lossScale)
    o.lossScale = lossScale->getValue();
  if (recomputeColumns)
    o.recomputeColumns = recomputeColumns->getValue();
  if (checkpointBlocks)
    o.checkpointBlocks = checkpointBlocks->getValue();
  if (checkpointSave)
    o.checkpointSave = checkpointSave->getValue();
  if (clipGradNorm)
    o.clipGradNorm = clipGradNorm->getValue();
  if (lrSchedule)
    o.lrSchedule = lrSchedule->getValue();
  if (gradAccumulation)
    o.gradAccumulation = gradAccumulation->getValue();
  if (noWeightDecay)
    o.noWeightDecay = noWeightDecay->getValue();
  if (ema)
    o.ema = ema->getValue();
  if (emaWarmup)
    o.emaWarmup = emaWarmup->getValue();
  if (trainParams)
    o.trainParams = trainParams->getValue();
  if (loraRank)
    o.loraRank = loraRank->getValue();
  if (loraAlpha)
    o.loraAlpha = loraAlpha->getValue();
  if (loraTargets)
    o.loraTargets = loraTargets->getValue();
}

std::string PrecisionFlags::updateOnlyFlag() const {
  if (gradAccumulation && gradAccumulation->getValue() != 1)
    return "--grad-accumulation";
  if (noWeightDecay && !noWeightDecay->getValue().empty())
    return "--no-weight-decay";
  if (ema && ema->getValue() != 0)
    return "--ema";
  return "";
}

std::string PrecisionFlags::notWithPhasesFlag() const {
  if (gradAccumulation && gradAccumulation->getValue() > 1)
    return "--grad-accumulation";
  if (ema && ema->getValue() != 0)
    return "--ema";
  if (loraRank && loraRank->getValue() != 0)
    return "--lora-rank";
  return "";
}

bool PrecisionFlags::validate(std::string &error, bool phased) const {
  mlir::mpc::TrainPipelineOptions o;
  apply(o);
  return mlir::mpc::validate(o, error, phased);
}

std::string PrecisionFlags::lossScaleMode() const {
  mlir::mpc::LossScaleSpec spec;
  std::string error;
  if (!lossScale || !parseLossScale(*lossScale, precision, spec, error))
    return "none";
  return spec.mode;
}

} // namespace mpc
