//===- TrainPasses.td - the passes that make a train step --*- tablegen -*-===//
//
// Included by Passes.td: autodiff, master weights, data parallelism, loss
// scaling and the optimizer, in the order mpc-train-pipeline runs them.
//
//===----------------------------------------------------------------------===//

def Lora : Pass<"mpc-lora", "::mlir::ModuleOp"> {
  let summary = "Low-rank adapters on linear weights; everything else frozen";
  let description = [{
    LoRA (Hu et al., 2021), as Hugging Face PEFT's LoraConfig(r, lora_alpha,
    target_modules) trains it: every trainable 2-D parameter whose whole
    name matches `targets` (empty: every one) and which only linear layers
    read as their weight (MatMul's right operand, Gemm's B, through casts
    and a 2-D transpose) gets two new trainable parameters, `<p>.lora_A`
    [in, r] (uniform in +-1/sqrt(in), PEFT's kaiming_uniform(a=sqrt(5)),
    drawn from the parameter's name) and `<p>.lora_B` [r, out] (zeros),
    and each such layer's result gains `(alpha / r) * ((x A) B)` (times
    the Gemm's alpha). Every other parameter is frozen (no longer
    `trainable`) unless its whole name matches `train`. `<p>.lora_A`
    records what a merge needs: `mpc.lora_base = @p`, `mpc.lora_b`,
    `mpc.lora_scale` and `mpc.lora_transposed` (p stored [out, in]).
    A named target read otherwise (an embedding's Gather, a tied head) is
    an error naming the node; targets that match nothing adaptable are an
    error.

    Before: `%y = mpc.matmul %x, %w` with `%w {mpc.param = @w}` [in, out].
    After: `%y2 = mpc.add %y, (mpc.mul (mpc.matmul (mpc.matmul %x, %a), %b), s)`
    with `%a {mpc.param = @"w.lora_A"}`, `%b {mpc.param = @"w.lora_B"}`.
  }];
  let options = [
    Option<"rank", "rank", "int64_t", /*default=*/"8", "Adapter rank r">,
    Option<"alpha", "alpha", "double", /*default=*/"0",
           "Scale numerator: the update is (alpha / r) B A (0: alpha = r)">,
    Option<"targets", "targets", "std::string", /*default=*/"\"\"",
           "Regular expression over whole parameter names (empty: every "
           "linear weight)">,
    Option<"train", "train", "std::string", /*default=*/"\"\"",
           "Regular expression: other parameters that stay trainable">
  ];
  let dependentDialects = ["::mlir::mpc::MpcDialect"];
}

def PromoteHalfParams : Pass<"mpc-promote-half-params", "::mlir::ModuleOp"> {
  let summary = "FP32 master copies of a half-precision model's trainable parameters";
  let description = [{
    A model stored in FP16 or BF16 (`model.half()` exported, `mpc convert`'s
    output) trains as apex's O2 and the mixed-precision paper do: every
    trainable `mpc.param` of a 16-bit float type becomes FP32 (its values
    widened exactly), and each function reading it gets one cast back to
    the stored type first in its body, so the forward computes with the
    same bits as before while the optimizer accumulates updates below
    FP16's spacing in the master. `mpc train -o` writes the trained weights
    in the initializers' own types (rounded to nearest even); checkpoints
    keep the FP32 masters. Frozen parameters and state stay as stored.

    Before:
    ```mlir
    mpc.param @w trainable : tensor<2x2xf16> = dense<...> : tensor<2x2xf16>
    func.func @f(%w: tensor<2x2xf16> {mpc.param = @w}) ...
    ```
    After:
    ```mlir
    mpc.param @w trainable : tensor<2x2xf32> = dense<...> : tensor<2x2xf32>
    func.func @f(%w: tensor<2x2xf32> {mpc.param = @w}) ... {
      %0 = mpc.cast %w : (tensor<2x2xf32>) -> tensor<2x2xf16>
    ```
  }];
  let dependentDialects = ["::mlir::mpc::MpcDialect"];
}

def Autodiff : Pass<"mpc-autodiff", "::mlir::ModuleOp"> {
  let summary = "Build a train-step function returning parameter gradients";
  let description = [{
    Clones the entry function (`mpc.entry`) into `@<name>_train_step`, which
    returns the forward results followed by d(loss)/d(param) for every
    trainable `mpc.param` argument (result attribute `mpc.gradient = @p`),
    by a reverse sweep with one gradient rule per op (passes/GradientRules).
    The loss is the result named by `loss`, else the first f32 scalar,
    else the first float scalar (a BF16 loss of a CPU autocast export);
    `params` (a regular expression matching whole names) limits the
    parameters differentiated, as a phase of a GAN step updates one
    network while backpropagating through the other.

    Before:
    ```mlir
    func.func @f(%x: tensor<4x3xf32> {mpc.input = "x"},
                 %w: tensor<2x3xf32> {mpc.param = @w}) -> tensor<f32>
    ```
    After, additionally:
    ```mlir
    func.func @f_train_step(...) -> (tensor<f32>,
                                     tensor<2x3xf32> {mpc.gradient = @w})
    ```
  }];
  let options = [
    Option<"loss", "loss", "std::string", /*default=*/"\"\"",
           "Name (mpc.output) of the loss result">,
    Option<"params", "params", "std::string", /*default=*/"\"\"",
           "Differentiate only the trainable parameters whose name matches "
           "this regular expression (whole name); the others stay fixed, "
           "gradients still flow through them">
  ];
  let dependentDialects = ["::mlir::mpc::MpcDialect"];
}

def MasterWeights : Pass<"mpc-master-weights", "::mlir::ModuleOp"> {
  let summary = "FP32 master parameters, one low-precision copy per step";
  let description = [{
    In the train step: every trainable parameter argument must be FP32 (the
    master copy); all its casts to a low-precision type become one cast per
    type at the top of the function, tagged `mpc.master_copy = @p`, shared
    by every user; every gradient result reaches the optimizer in the
    parameter's FP32 type (a cast is added where the sweep produced low
    precision).

    Before: two `mpc.cast %w : ... -> f16` in different places.
    After: one `%wh = mpc.cast %w {mpc.master_copy = @w}` first in the body.
  }];
  let dependentDialects = ["::mlir::mpc::MpcDialect"];
}

def DataParallel : Pass<"mpc-data-parallel", "::mlir::ModuleOp"> {
  let summary = "Average gradients over the ranks in buckets, as soon as ready";
  let description = [{
    For data-parallel training (PyTorch DDP's gradient buckets): the train
    step's gradient results, in the order the backward pass computes them,
    are grouped into buckets of about `bucket-mb` MiB; each bucket gets one
    `mpc.all_reduce` placed right after its last gradient is computed, so
    the runtime can start its communication while the rest of the backward
    pass runs. Runs after mpc-master-weights (gradients are FP32) and before
    mpc-loss-scaling, so the unscale and its all-finite check see the
    averaged gradients and every rank skips the same steps.

    On a step mpc-grad-accumulation rewrote (run after it), as DDP under
    `no_sync()`: the buckets average the group's sums (the accumulators'
    next values) where the updates read them, so only a group's last
    micro-batch sends them (runtime/AppliedOnly.h), and every micro-batch
    averages its all-finite flag with the loss in one f32 collective, the
    ranks' verdict (`mpc.greater` than 0) replacing the flag's readers.

    After (`bucket-mb=25`), for parameters @w and @b:
    ```mlir
    %db = mpc.reduce_sum ...
    %dw = mpc.matmul ...
    %r:2 = mpc.all_reduce %db, %dw {bucket = 0 : i64, wire = "f32"} : ...
    return ..., %r#1, %r#0 : ... {mpc.gradient = @w}, {mpc.gradient = @b}
    ```
  }];
  let options = [
    Option<"bucketMb", "bucket-mb", "double", /*default=*/"25.0",
           "Bucket size in MiB (FP32 bytes of the gradients)">,
    Option<"wire", "wire", "std::string", /*default=*/"\"f32\"",
           "Type the gradients travel in: f32, f16 or bf16">
  ];
  let dependentDialects = ["::mlir::mpc::MpcDialect"];
}

def LossScaling : Pass<"mpc-loss-scaling", "::mlir::ModuleOp"> {
  let summary = "Scale the loss, unscale gradients in FP32, update the scale";
  let description = [{
    In the train step (from `mpc-autodiff`): the backward sweep is seeded
    with the loss scale instead of 1; all gradients go through one
    `mpc.unscale_grads` (x 1/scale in FP32, one all-finite check) whose
    `found_inf` is returned (`mpc.found_inf`), so the optimizer skips the
    step when it is true (output `mpc.found_inf`). `mode=static` uses the
    constant `scale`; `mode=dynamic` adds the inputs `mpc.loss_scale` (f32)
    and `mpc.loss_scale_good_steps` (i64) and returns their updated values
    under the same names (`mpc.update_loss_scale`, GradScaler semantics,
    clamped to [min, max]); the function records `mpc.loss_scale_init`.
    `mode=none` leaves the function unchanged.

    After (`mode=dynamic`):
    ```mlir
    func.func @f_train_step(..., %scale: tensor<f32> {mpc.input = "mpc.loss_scale"}, %n: tensor<i64> {mpc.input = "mpc.loss_scale_good_steps"})
    %g, %inf = mpc.unscale_grads %dw, %scale : ...
    %s1, %n1 = mpc.update_loss_scale %scale, %n, %inf {...} : ...
    ```
  }];
  let options = [
    Option<"mode", "mode", "std::string", /*default=*/"\"dynamic\"",
           "none, static or dynamic">,
    Option<"scale", "scale", "double", /*default=*/"65536.0",
           "Static scale, or the initial dynamic scale">,
    Option<"growth", "growth", "double", /*default=*/"2.0",
           "Dynamic: factor after `interval` finite steps">,
    Option<"backoff", "backoff", "double", /*default=*/"0.5",
           "Dynamic: factor on overflow">,
    Option<"interval", "interval", "int64_t", /*default=*/"2000",
           "Dynamic: finite steps before growing">,
    Option<"minScale", "min", "double", /*default=*/"1.0",
           "Dynamic: smallest scale">,
    Option<"maxScale", "max", "double", /*default=*/"16777216.0",
           "Dynamic: largest scale">
  ];
  let dependentDialects = ["::mlir::mpc::MpcDialect"];
}

def Optimizer : Pass<"mpc-optimizer", "::mlir::ModuleOp"> {
  let summary = "Append the optimizer update of every parameter to the train step";
  let description = [{
    torch.optim semantics and arithmetic order (SGD with L2 weight decay,
    momentum, Nesterov, Adam, AdamW, Adagrad) as elementwise mpc ops on the
    FP32 masters. State is explicit: inputs and outputs named
    `mpc.opt.m.<p>` / `mpc.opt.v.<p>`; new parameters are outputs
    `mpc.new.<p>`; per-step scalars are inputs (`mpc.opt.first` for
    momentum, `mpc.opt.step_size` and `mpc.opt.bc2_sqrt` for Adam;
    `mpc.opt.lr` under a learning-rate schedule). With
    loss scaling, `mpc.found_inf` selects the old values (the step is
    skipped).

    After (`kind=sgd lr=0.1`), for a parameter @w with gradient %g:
    ```mlir
    %lr = mpc.constant dense<1.000000e-01> : tensor<f32>
    %s = mpc.mul %lr, %g : ...
    %w1 = mpc.sub %w, %s : ...
    return ..., %w1 : ... {mpc.output = "mpc.new.w"}
    ```
  }];
  let options = [
    Option<"kind", "kind", "std::string", /*default=*/"\"sgd\"",
           "sgd, momentum, nesterov, adam, adamw or adagrad">,
    Option<"lr", "lr", "double", /*default=*/"0.01", "Learning rate">,
    Option<"momentum", "momentum", "double", /*default=*/"0.9", "Momentum">,
    Option<"weightDecay", "weight-decay", "double", /*default=*/"0.0",
           "L2 weight decay (decoupled for AdamW)">,
    Option<"beta1", "beta1", "double", /*default=*/"0.9", "Adam beta1">,
    Option<"beta2", "beta2", "double", /*default=*/"0.999", "Adam beta2">,
    Option<"eps", "eps", "double", /*default=*/"1e-8", "Adam epsilon">,
    Option<"noDecay", "no-decay", "std::string", /*default=*/"\"\"",
           "A regular expression: the parameters whose whole name matches "
           "get no weight decay (Hugging Face's no_decay group: biases, "
           "norms); it must match one">,
    Option<"lrSchedule", "lr-schedule", "std::string", /*default=*/"\"\"",
           "A learning-rate schedule (runtime/LrSchedule.h): the rate is "
           "then the per-step input mpc.opt.lr (Adam's: inside "
           "mpc.opt.step_size), the spec recorded as mpc.lr_schedule">
  ];
  let dependentDialects = ["::mlir::mpc::MpcDialect"];
}

def ClipGradNorm : Pass<"mpc-clip-grad-norm", "::mlir::ModuleOp"> {
  let summary = "Clip the gradients' global L2 norm (clip_grad_norm_)";
  let description = [{
    torch.nn.utils.clip_grad_norm_ after GradScaler.unscale_: in a train
    step, the L2 norm of each returned gradient (FP32), the L2 norm of
    those norms, and every gradient times min(max-norm / (norm + 1e-6), 1),
    in the gradient's type. After mpc-optimizer: the updates read the
    clipped gradients and the step returns them as computed; a step
    without updates (mpc grad) returns them clipped. The norm before
    clipping is the output `mpc.grad_norm`.

    Before:
    ```mlir
    %nw = mpc.sub %w, (mpc.mul %lr, %g)
    return ..., %g, ..., %nw   // %g: {mpc.gradient = @w}
    ```
    After:
    ```mlir
    %n = mpc.reduce_l2 %g {keepdims = false}
    %c = mpc.min (mpc.div %max, (mpc.add %n, %eps)), %one
    %nw = mpc.sub %w, (mpc.mul %lr, (mpc.mul %g, %c))
    return ..., %g, ..., %nw, %n   // %n: {mpc.output = "mpc.grad_norm"}
    ```
  }];
  let options = [
    Option<"maxNorm", "max-norm", "double", /*default=*/"1.0",
           "The largest global L2 norm the gradients keep">
  ];
  let dependentDialects = ["::mlir::mpc::MpcDialect"];
}

def GradAccumulation : Pass<"mpc-grad-accumulation", "::mlir::ModuleOp"> {
  let summary = "Sum the gradients of several micro-batches before an update";
  let description = [{
    Gradient accumulation as torch users write it (loss / steps backward
    per micro-batch, optimizer.step and zero_grad every `steps` batches):
    in a train step mpc-optimizer updated, each trained parameter gets an
    FP32 accumulator, state `mpc.accum.<p>`, whose next value is
    t = acc + g / steps, and the updates (and mpc-clip-grad-norm's norm)
    read t. The per-step input `mpc.accum.first` (i1) says the micro-batch
    is a group's first, which reads the accumulator as zero; `mpc.accum.
    apply` that it is a group's last: only then do parameters, optimizer
    state and the loss scale move; before it every update output keeps its
    old value, and the runtime skips the steps only the updates need
    (runtime/AppliedOnly.h). Under loss scaling the all-finite flag is
    sticky over a group (state `mpc.accum.found_inf`): a group with any
    overflowing micro-batch is skipped, as GradScaler skips the summed
    gradients. The step still returns each micro-batch's own gradients;
    batch norm's running statistics move with every micro-batch whose
    gradients are finite, as in torch (the runtime feeds them back:
    TrainProtocol's `statistics`).

    Before (`steps=4`):
    ```mlir
    %nw = mpc.sub %w, (mpc.mul %lr, %g)
    return ..., %g, %nw   // {mpc.gradient = @w}, {mpc.output = "mpc.new.w"}
    ```
    After:
    ```mlir
    %t = mpc.add (mpc.where %first, 0, %acc), (mpc.mul %g, 0.25)
    %nw = mpc.where %skip, %w, (mpc.sub %w, (mpc.mul %lr, %t))
    return ..., %g, %nw, %t  // "mpc.accum.w"
    ```
  }];
  let options = [
    Option<"steps", "steps", "int64_t", /*default=*/"1",
           "Micro-batches a group (1: off)">
  ];
  let dependentDialects = ["::mlir::mpc::MpcDialect"];
}

def Ema : Pass<"mpc-ema", "::mlir::ModuleOp"> {
  let summary = "An exponential moving average of the weights, updated each step";
  let description = [{
    The averaged model timm's ModelEmaV2 and torch's AveragedModel
    (get_ema_multi_avg_fn, buffers averaged too) keep, and GAN and
    diffusion recipes evaluate: every parameter the step updates
    (`mpc.new.<p>`, batch norm's running statistics too) gets state
    `mpc.ema.<p>` (FP32, the parameter's stored layout), moved after the
    update as torch's lerp does, e + (1 - decay) (p' - e), in FP32. Like
    the recipes' loop, the average moves after a step the loss scaler
    skipped too, toward the weights kept (a statistic's old value where the
    step's `mpc.found_inf` is set: the runtime does not feed it back);
    under gradient accumulation only on a group's last micro-batch
    (`mpc.accum.apply`). Runs after the update passes; the runtime starts
    the average at the initial weights.

    With `warmup-power` (timm's ModelEmaV3 and diffusers' EMAModel warmup)
    the rate 1 - decay is the step's input `mpc.ema_rate`, which the
    runtime computes for update t as 1 - min(decay, 1 - (1 + (t - 1) /
    gamma)^-power), 1 at the first: the average starts at the trained
    weights and follows them closely while they move fast. With
    `warmup-num-updates` (TensorFlow's ExponentialMovingAverage with
    num_updates, diffusers' EMAModel by default) the decay is min(decay,
    t / (9 + t)) from the second update on.

    After (`decay=0.999`):
    ```mlir
    %e1 = mpc.add %e, (mpc.mul (mpc.sub %nw, %e), 1.0e-03)
    return ..., %nw, %e1   // "mpc.new.w", "mpc.ema.w"
    ```
  }];
  let options = [
    Option<"decay", "decay", "double", /*default=*/"0.999",
           "The weight of the old average each step, in [0, 1)">,
    Option<"warmupPower", "warmup-power", "double", /*default=*/"0.0",
           "Warm the decay up as 1 - (1 + t / gamma)^-power (0: off)">,
    Option<"warmupGamma", "warmup-gamma", "double", /*default=*/"1.0",
           "The warmup's gamma (timm's warmup_gamma)">,
    Option<"warmupNumUpdates", "warmup-num-updates", "bool",
           /*default=*/"false",
           "Warm the decay up as (1 + t) / (10 + t) (TensorFlow's "
           "num_updates, diffusers' EMAModel default)">
  ];
  let dependentDialects = ["::mlir::mpc::MpcDialect"];
}

def UnscaleInOptimizer : Pass<"mpc-unscale-in-optimizer", "::mlir::ModuleOp"> {
  let summary = "Updates unscale their gradients as they read them";
  let description = [{
    In a train step `mpc-optimizer` updated, `mpc.unscale_grads` becomes
    `mpc.check_grads` (1/scale and the all-finite flag; the gradients are
    only read) and each update reads `cast(g) * inv` in place of the
    unscaled gradient: the same FP32 values, which elementwise fusion
    computes inside the update's kernel, so no FP32 copy of a gradient is
    written and read back (as apex's and torch's fused Adam take the loss
    scale). The step returns the gradients as the backward made them
    (scaled): the runtime reads them only to count a skipped step's inf/NaN
    elements. Steps without an optimizer are left alone.

    Before:
    ```mlir
    %u, %inf = mpc.unscale_grads %dw, %scale : (tensor<4x3xf16>, tensor<f32>) -> (tensor<4x3xf32>, tensor<i1>)
    %step = mpc.mul %lr, %u : (tensor<f32>, tensor<4x3xf32>) -> tensor<4x3xf32>
    ```
    After:
    ```mlir
    %inv, %inf = mpc.check_grads %dw, %scale : (tensor<4x3xf16>, tensor<f32>) -> (tensor<f32>, tensor<i1>)
    %w = mpc.cast %dw : (tensor<4x3xf16>) -> tensor<4x3xf32>
    %u = mpc.mul %w, %inv : (tensor<4x3xf32>, tensor<f32>) -> tensor<4x3xf32>
    %step = mpc.mul %lr, %u : (tensor<f32>, tensor<4x3xf32>) -> tensor<4x3xf32>
    ```
  }];
  let dependentDialects = ["::mlir::mpc::MpcDialect"];
}

def HalfWeightsInOptimizer : Pass<"mpc-half-weights-in-optimizer", "::mlir::ModuleOp"> {
  let summary = "Updates write the step's fp16/bf16 weight copies";
  let description = [{
    mpc-master-weights casts each FP32 master to fp16/bf16 at the start of
    every step (read 4 bytes, write 2 a parameter). In a train step
    `mpc-optimizer` updated, that copy becomes step state, input
    `mpc.half.<p>`, and the step returns `cast(new <p>)` under the same name:
    elementwise fusion computes it inside the update's kernel, which writes
    2 bytes a parameter more, as apex's FP16 optimizer keeps its model
    copy. On a skipped step the copy is the cast of the unchanged master.
    The runtime derives the copy from the master whenever the master is set
    from outside (initial weights, checkpoints, another phase's update), so
    checkpoints hold only the FP32 masters.

    Before:
    ```mlir
    %h = mpc.cast %w {mpc.master_copy = @w} : (tensor<4x3xf32>) -> tensor<4x3xf16>
    ...
    return ..., %w1 : ..., tensor<4x3xf32>   // {mpc.output = "mpc.new.w"}
    ```
    After:
    ```mlir
    // %h: tensor<4x3xf16> {mpc.input = "mpc.half.w"}
    %h1 = mpc.cast %w1 : (tensor<4x3xf32>) -> tensor<4x3xf16>
    return ..., %w1, %h1 : ...   // {mpc.output = "mpc.half.w"}
    ```
  }];
  let dependentDialects = ["::mlir::mpc::MpcDialect"];
}

def CheckpointBlocks : Pass<"mpc-checkpoint-blocks", "::mlir::ModuleOp"> {
  let summary = "Recompute each block's activations in the backward (activation checkpointing)";
  let description = [{
    torch.utils.checkpoint over the blocks a model repeats: the forward
    ops whose ONNX node name (their location) contains a match of
    `pattern` form one block per matched text ("blocks\.[0-9]+" makes
    /blocks.3/attn/MatMul part of block "blocks.3"; `auto` takes the path
    component NAME.<index> that the forward's node names number with the
    most indices: blocks.N, h.N, layers.N). What the backward
    reads of a block - every value a block computes that only its own
    forward ops and the backward read - is computed again from the
    block's inputs right before the backward first reads it, and the
    backward reads the copy: the step holds each block's inputs (and what
    other blocks read) from the forward to the backward, not its
    activations, for one more forward of each block. The same ops on the
    same values (dropout draws the same mask from the same key and
    counter): the same numbers.

    With `save=products` (torch's selective activation checkpointing,
    saving matmuls and attention), the tensor-core ops (matmul, GEMM,
    convolution, attention) of a block are not recomputed: their results
    are held from the forward, and only the ops after them are computed
    again (norms, activations, residual sums, dropouts): less memory saved
    for a few elementwise launches instead of a forward's FLOPs.

    A pattern that matches no forward op, or `auto` without repeated
    blocks, is refused, naming the pattern.
  }];
  let options = [
    Option<"pattern", "pattern", "std::string", /*default=*/"",
           "Regular expression whose first match in an op's node name "
           "names its block">,
    Option<"save", "save", "std::string", /*default=*/"\"all\"",
           "all: recompute every op of a block; products: hold the "
           "tensor-core ops' results and recompute the rest">
  ];
  let dependentDialects = ["::mlir::mpc::MpcDialect"];
}

def RecomputeColumns : Pass<"mpc-recompute-columns", "::mlir::ModuleOp"> {
  let summary = "Rebuild copied convolution columns before the filter gradient";
  let description = [{
    In a train step, a conv_grad_weight whose X is computed by data
    movement alone (reshape, transpose, slice, pad, concat, unsqueeze,
    squeeze, flatten, cast, gather at constant indices; at most 64 ops) from one value smaller than it
    that the step holds there anyway (an argument, or a value read there or
    later, as a ReLU's result) - the depth taps mpc-conv3d-as-2d stacks -
    reads a copy of that chain rebuilt just before it, so the forward's
    copy is not held from the forward to the backward. The same ops on the
    same values: the same numbers. A step rebuilds only where the columns
    it holds add up to more than `ratio` times the largest rebuild's own
    copies (a deep 3-D network; a shallow one's backward peak would rise).
  }];
  let options = [
    Option<"ratio", "ratio", "double", /*default=*/"2.0",
           "Rebuild where the held columns exceed this many times the "
           "largest rebuild's copies">
  ];
  let dependentDialects = ["::mlir::mpc::MpcDialect"];
}

def EvalMode : Pass<"mpc-eval-mode", "::mlir::ModuleOp"> {
  let summary = "The forward graph as torch's model.eval() runs it";
  let description = [{
    A model exported for training (torch's TrainingMode.TRAINING) drops
    activations and normalizes with the batch's statistics; evaluating it
    (`mpc train --eval-data`) must not. Every dropout becomes the identity
    (its mask, where read, all true), fused attention loses its dropout,
    and batch norm in training mode normalizes with the running statistics
    it reads, which it returns unchanged. Random draws of other kinds
    (mpc.random: stochastic depth's RandomUniformLike) are what the export
    recorded and stay; `mpc train` names them.

    Before:
    ```mlir
    %y, %m = mpc.dropout %x ratio %r training %t step %s {stream = 7 : i64} : ...
    %z, %rm, %rv = mpc.batch_norm_train %y, %g, %b, %mean, %var {epsilon = 1.0e-05 : f32, momentum = 0.9 : f32} : ...
    ```
    After:
    ```mlir
    %z = mpc.batch_norm %x, %g, %b, %mean, %var {epsilon = 1.0e-05 : f32} : ...
    // %rm, %rv replaced by %mean, %var
    ```
  }];
  let dependentDialects = ["::mlir::mpc::MpcDialect"];
}

def DropoutSteps : Pass<"mpc-dropout-steps", "::mlir::ModuleOp"> {
  let summary = "A train step's dropouts draw new masks each step";
  let description = [{
    A dropout's mask is Philox's pure function of its key (seed, stream)
    and counter (step, element): without a step every run draws the mask
    of step 0. In a train step, each dropout in training mode reads a new
    input `mpc.rng.step`, which the runtime feeds each step with [the
    step's number (0-based, counting every step the data loop takes: a
    skipped one draws a new mask when retried, as torch's generator moves
    on), the data-parallel rank (rank r numbers its elements after the r
    ranks' before it, as one process over the global batch)], so each step
    draws a new mask, the same on every backend, on a resumed run and
    over any number of ranks. Fused attention with dropout (mpc.attention, and
    mpc.attention_grad, which redraws the forward's mask) reads it too.
    Dropouts already given a step, and those whose `training` operand is a
    constant false, are left alone.

    Before:
    ```mlir
    %y, %m = mpc.dropout %x ratio %r training %t {stream = 7 : i64} : ...
    ```
    After:
    ```mlir
    // %s: tensor<2xi64> {mpc.input = "mpc.rng.step"}
    %y, %m = mpc.dropout %x ratio %r training %t step %s {stream = 7 : i64} : ...
    ```
  }];
  let dependentDialects = ["::mlir::mpc::MpcDialect"];
}
