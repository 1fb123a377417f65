//===- Passes.td - mpc pass declarations -------------------*- tablegen -*-===//

#ifndef MPC_PASSES_TD
#define MPC_PASSES_TD

include "mlir/Pass/PassBase.td"

def SpecializeShapes : Pass<"mpc-specialize-shapes", "::mlir::ModuleOp"> {
  let summary = "Bind the batch dimension, fold ONNX shape arithmetic, refine types";
  let description = [{
    Optionally binds the dynamic leading dimension of every function argument
    that is a graph input (`mpc.input`) to `batch`, then walks each function
    in order folding constant shape arithmetic (Shape -> Gather -> Concat ->
    Reshape chains, ConstantOfShape, Range...) and re-inferring result types,
    and finally updates function result types. With all input shapes bound,
    every type becomes static.

    Before (`batch=4`):
    ```mlir
    func.func @f(%x: tensor<?x8xf32> {mpc.input = "x"}) -> tensor<?x2x4xf32> {
      %s = mpc.shape %x : (tensor<?x8xf32>) -> tensor<2xi64>
      ...
    ```
    After: `%x: tensor<4x8xf32>`, `%s` is an `mpc.constant`, and the result
    is `tensor<4x2x4xf32>`.
  }];
  let options = [
    Option<"batch", "batch", "int64_t", /*default=*/"0",
           "Bind dynamic leading input dimensions to this size (0: keep)">
  ];
  let dependentDialects = ["::mlir::mpc::MpcDialect"];
}

def LowerGradient : Pass<"mpc-lower-gradient", "::mlir::ModuleOp"> {
  let summary = "Replace ONNX Gradient ops by their reverse-mode computation";
  let description = [{
    An `mpc.gradient` whose `y` is computed in the same function (it has a
    `target` operand) becomes the reverse sweep from the target to its `xs`
    operands, built with the same rules as `mpc-autodiff`; gradients of xs
    that y does not depend on are zeros.

    Before:
    ```mlir
    %c = mpc.add %a, %b : ...
    %da, %db = mpc.gradient %a, %b target %c {xs = ["a", "b"], y = "c", zs = []} : ...
    ```
    After: `%da` and `%db` are the ones-seeded gradients of `%c`.
  }];
  let dependentDialects = ["::mlir::mpc::MpcDialect"];
}

def FuseAttention : Pass<"mpc-fuse-attention", "::mlir::ModuleOp"> {
  let summary = "Rewrite softmax(scale * Q K^T + mask) V to mpc.attention";
  let description = [{
    Recognizes the attention subgraph of torch 1.13/2.x exports (BERT,
    GPT-2, ViT, nn.TransformerEncoder) and of imported ONNX Attention:
    matmul(Q, K^T), scalar scales on Q, K^T or the scores, additive masks
    and where() masks filled with -inf (or below -1e30), softmax on the
    last axis, an optional dropout (constant ratio and training flag, its
    mask unread: the op draws the same mask), matmul with V; each
    intermediate used once. A constant causal mask becomes `causal = true`.

    Before:
    ```mlir
    %kt = mpc.transpose %k {perm = array<i64: 0, 1, 3, 2>} : ...
    %s = mpc.matmul %q, %kt : ...
    %d = mpc.div %s, %c8 : ...
    %p = mpc.softmax %d : ...
    %y = mpc.matmul %p, %v : ...
    ```
    After:
    ```mlir
    %y, %lse = mpc.attention %q, %k, %v {causal = false, scale = 1.250000e-01 : f32} : ...
    ```
  }];
  let dependentDialects = ["::mlir::mpc::MpcDialect"];
}

def FuseDecomposed : Pass<"mpc-fuse-decomposed", "::mlir::ModuleOp"> {
  let summary = "Rewrite decomposed layer and RMS norms, GELU (Erf or tanh) and rotary embeddings to their ops";
  let description = [{
    Exports below opset 17 spell LayerNormalization out as ReduceMean, Sub,
    Pow, ReduceMean, Add, Sqrt, Div (then Mul and Add by the affine
    parameters), and below opset 20 Gelu as Div, Erf, Add, Mul, Mul; this
    pass rebuilds `mpc.layer_norm` (FP32 statistics, one kernel, the deny
    class) and `mpc.gelu`, also from GPT-2's tanh approximation (gelu_new,
    `{approximate = "tanh"}`), `mpc.rms_norm` (x / sqrt(mean(x^2) + eps),
    also x * rsqrt as torch's exporters write it), and `mpc.rotary` from
    Hugging Face's `q * cos + rotate_half(q) * sin` where the cos and sin
    tables' halves are equal (`cat(freqs, freqs)`). Intermediates used
    outside the pattern keep it as written.

    Before:
    ```mlir
    %m = mpc.reduce_mean %x {axes = array<i64: -1>} : ...
    %d = mpc.sub %x, %m : ...
    %p = mpc.pow %d, %two : ...
    %v = mpc.reduce_mean %p {axes = array<i64: -1>} : ...
    %e = mpc.add %v, %eps : ...
    %s = mpc.sqrt %e : ...
    %n = mpc.div %d, %s : ...
    ```
    After:
    ```mlir
    %n, %mean, %rstd = mpc.layer_norm %x, %ones {axis = 1 : i64, epsilon = 9.99999974E-6 : f32} : ...
    ```
  }];
  let dependentDialects = ["::mlir::mpc::MpcDialect"];
}

def Window1dAs2d : Pass<"mpc-window1d-as-2d", "::mlir::ModuleOp"> {
  let summary = "Run 1-D convolutions and pools as 2-D ones of height 1";
  let description = [{
    A Conv over [N, C, L] (Whisper's and wav2vec2's Conv1d) becomes an
    Unsqueeze of X and W at axis 2, a Conv over [N, C, 1, L] with a window
    of height 1 (kernel_shape, strides, dilations 1 and pads 0 on it), and
    a Squeeze; a ConvTranspose over [N, C, L] (HiFi-GAN's upsampling) the
    same, output_padding 0 in height; a MaxPool or AveragePool over [N, C, L] (AvgPool1d,
    MaxPool1d, LpPool's sums) the same with X alone, each result squeezed
    (a max pool's flat indices are the same numbers). The same products,
    the same memory; the CUDA backend's window kernels and cuDNN's are
    2-D. Channels-last ops and other ranks stay as written.
  }];
}

def Pool3dAs2d : Pass<"mpc-pool3d-as-2d", "::mlir::ModuleOp"> {
  let summary = "Run 3-D max and average pools as two 2-D ones";
  let description = [{
    A box window is separable, so a MaxPool or AveragePool over
    [N, C, D, H, W] (static, no auto_pad) becomes a 2-D pool of X viewed
    [N, C D, H, W] over (H, W), a 2-D pool of that viewed [N, C, D, H' W']
    over D (width 1), and a view [N, C, D', H', W']: the same maxima, and
    the same averages (the valid count of a box is the product of the
    axes' counts); the CUDA backend's pooling kernels are 2-D. A max pool
    whose indices are read is left as written.
  }];
}

def Conv3dAs2d : Pass<"mpc-conv3d-as-2d", "::mlir::ModuleOp"> {
  let summary = "Run 3-D convolutions and transposed convolutions as 2-D ones";
  let description = [{
    A Conv over [N, C, D, H, W] (static shapes, channels first) becomes a
    2-D one over (H, W) whose channels carry the depth taps: X viewed
    [N, D, C, H, W], padded in depth, one gather of its rows into columns
    [N OD, kd C, H, W], convolved by W with its taps moved before its
    channels, [M, kd C, kh, kw], the result viewed back; a grouped one
    stacks kd strided depth slices as [N OD, C kd, H, W] (each group's
    channels together) for W viewed [M, C/g kd, kh, kw]. A ConvTranspose becomes the 2-D one of X viewed
    [N D, C, H, W] by W viewed [C, M/g kd, kh, kw], whose kd taps per input
    depth are placed along the output depth: a reshape where they tile it
    (kernel == stride), else spread by the stride, shifted and summed; the
    depth pads crop, output_padding appends. The CUDA backend's
    convolutions are 2-D.
  }];
}

def SlicesToSplit : Pass<"mpc-slices-to-split", "::mlir::ModuleOp"> {
  let summary = "Rewrite slices that tile one axis of a tensor to one Split";
  let description = [{
    torch exports nn.MultiheadAttention's fused input projection as one
    GEMM cut into Q, K and V by three Slices: three copies forward, and
    backward three zero Pads to the whole width added together. Slices of
    one value with constant bounds and step 1 that cut the same single
    axis into ranges tiling it become one `mpc.split` (results in range
    order), whose gradient is one Concat and whose parts the CUDA backend
    leaves in place when only attention reads them. Overlapping slices,
    gaps, other axes and dynamic shapes stay as written; the values are
    the same.

    Before:
    ```mlir
    %q = mpc.slice %x, %c0, %c64 axes %c2 : (tensor<16x4x192xf32>, ...) -> tensor<16x4x64xf32>
    %k = mpc.slice %x, %c64, %c128 axes %c2 : ...
    %v = mpc.slice %x, %c128, %cmax axes %c2 : ...
    ```
    After:
    ```mlir
    %q, %k, %v = mpc.split %x {axis = 2 : i64, num_outputs = 3 : i64, split = array<i64: 64, 64, 64>} : ...
    ```
  }];
  let dependentDialects = ["::mlir::mpc::MpcDialect"];
}

def MergeSiblingLinears : Pass<"mpc-merge-sibling-linears", "::mlir::ModuleOp"> {
  let summary = "Merge linears of one input (separate Q, K, V projections) into one GEMM";
  let description = [{
    BERT's and ViT's self-attention project the same hidden states by
    separate query, key and value Linears: three GEMMs forward, six and two
    adds backward, where GPT-2's one [d, 3d] weight takes one each way.
    MatMuls of one input by static 2-D weights (function arguments or
    constants) of the same height, each read only by an Add of a vector
    bias of its width (or none of them biased), become one MatMul by the
    weights concatenated along N, one Add of the concatenated biases, and a
    Split back into the parts along the last axis. The weights stay
    separate parameters. Each output element is the same dot product.

    Before:
    ```mlir
    %q = mpc.matmul %x, %wq : (tensor<2x16x64xf32>, tensor<64x64xf32>) -> tensor<2x16x64xf32>
    %qb = mpc.add %q, %bq : (tensor<2x16x64xf32>, tensor<64xf32>) -> tensor<2x16x64xf32>
    %k = mpc.matmul %x, %wk : ...
    %kb = mpc.add %k, %bk : ...
    ```
    After:
    ```mlir
    %w = mpc.concat %wq, %wk {axis = 1 : i64} : (...) -> tensor<64x128xf32>
    %m = mpc.matmul %x, %w : (tensor<2x16x64xf32>, tensor<64x128xf32>) -> tensor<2x16x128xf32>
    %b = mpc.concat %bq, %bk {axis = 0 : i64} : (...) -> tensor<128xf32>
    %y = mpc.add %m, %b : ...
    %qb, %kb = mpc.split %y {axis = 2 : i64, num_outputs = 2 : i64, split = array<i64: 64, 64>} : ...
    ```
  }];
  let dependentDialects = ["::mlir::mpc::MpcDialect"];
}

def TransposesToAttention : Pass<"mpc-transposes-to-attention", "::mlir::ModuleOp"> {
  let summary = "Move layout transposes across row-wise projections to attention";
  let description = [{
    nn.MultiheadAttention(batch_first=True) exports transpose the input
    sequence-first before the input projection and back after the output
    projection. Both projections work row by row, so a transpose keeping
    the last dim commutes with them: this pass moves the input's after the
    projection's split (one per part) and the output's before its GEMM,
    next to the head reshapes and transposes that the CUDA attention reads
    and writes in place. Only where the other side is attention's alone
    (parts read only as Q, K, V; an attention result through reshapes and
    transposes) and the bias is the same for every row; the values are
    the same.

    Before:
    ```mlir
    %t = mpc.transpose %x {perm = array<i64: 1, 0, 2>} : (tensor<4x16x64xf32>) -> tensor<16x4x64xf32>
    %m = mpc.matmul %t, %w : (tensor<16x4x64xf32>, tensor<64x192xf32>) -> tensor<16x4x192xf32>
    %q, %k, %v = mpc.split %m {axis = 2 : i64, num_outputs = 3 : i64} : ...
    ```
    After:
    ```mlir
    %m = mpc.matmul %x, %w : (tensor<4x16x64xf32>, tensor<64x192xf32>) -> tensor<4x16x192xf32>
    %p:3 = mpc.split %m {axis = 2 : i64, num_outputs = 3 : i64} : ...
    %q = mpc.transpose %p#0 {perm = array<i64: 1, 0, 2>} : (tensor<4x16x64xf32>) -> tensor<16x4x64xf32>
    ```
  }];
  let dependentDialects = ["::mlir::mpc::MpcDialect"];
}

def ChannelsLast : Pass<"mpc-channels-last", "::mlir::ModuleOp"> {
  let options = [
    Option<"storedFilters", "stored-filters", "bool", /*default=*/"false",
           "Keep filter parameters KRSC (mpc.stored_perm) instead of "
           "transposing them each step">,
  ];
  let summary = "Run convolution regions channels last (NHWC), as cuDNN's tensor cores want";
  let description = [{
    cuDNN's tensor-core convolutions read and write NHWC with KRSC filters;
    given NCHW they transpose on the way in and out. Each 2-D convolution
    becomes a `channels_last` one between transposes (x and its filter to
    channels last, the result back); then, in program order, a transpose
    back to channels first moves past the ops that work per channel in
    either layout (batch norm and max pooling in their `channels_last`
    forms, elementwise ops, binary ops whose other operands are channels
    last already or per-channel broadcasts) and cancels against the next
    convolution's. Transposes remain at the region's edges (global
    pooling, flatten). The values are the same.

    A filter parameter that only convolutions read gets its transposes
    each step with `stored-filters=false`; with `stored-filters` (what a
    train step with an optimizer runs) it is kept KRSC instead: its
    argument takes that type and `mpc.stored_perm = array<i64: 0, 2, 3, 1>`
    (stored = transpose(ONNX value, perm)), which the plan carries to the
    runtime, so its gradient, master weights and optimizer state are KRSC
    too and only the model written out and checkpoints are transposed.

    Before:
    ```mlir
    %y = mpc.conv %x, %w : (tensor<8x3x32x32xf32>, tensor<16x3x3x3xf32>) -> tensor<8x16x30x30xf32>
    %r = mpc.relu %y : (tensor<8x16x30x30xf32>) -> tensor<8x16x30x30xf32>
    ```
    After:
    ```mlir
    %xl = mpc.transpose %x {perm = array<i64: 0, 2, 3, 1>} : ...
    %wl = mpc.transpose %w {perm = array<i64: 0, 2, 3, 1>} : ...
    %yl = mpc.conv %xl, %wl {channels_last = true} : (tensor<8x32x32x3xf32>, tensor<16x3x3x3xf32>) -> tensor<8x30x30x16xf32>
    %rl = mpc.relu %yl : (tensor<8x30x30x16xf32>) -> tensor<8x30x30x16xf32>
    %r = mpc.transpose %rl {perm = array<i64: 0, 3, 1, 2>} : ...
    ```
  }];
  let dependentDialects = ["::mlir::mpc::MpcDialect"];
}

def FoldLinearBias : Pass<"mpc-fold-linear-bias", "::mlir::ModuleOp"> {
  let summary = "Fold MatMul + bias Add (a linear over a sequence) into one Gemm";
  let description = [{
    torch exports nn.Linear on [batch, tokens, features] as MatMul then Add
    of the bias; its eager step runs one addmm. This pass rewrites the pair
    to a Gemm of the flattened rows with the bias as C (reshapes around
    it), so the bias rides in the GEMM's epilogue and is rounded once, as
    torch's is. Runs after the precision passes: the three operands must
    share one float type; a MatMul read elsewhere, a bias that is not a
    vector of N, or dynamic shapes stay as written.

    Before:
    ```mlir
    %m = mpc.matmul %x, %w : (tensor<2x16x64xf16>, tensor<64x256xf16>) -> tensor<2x16x256xf16>
    %y = mpc.add %m, %b : (tensor<2x16x256xf16>, tensor<256xf16>) -> tensor<2x16x256xf16>
    ```
    After:
    ```mlir
    %x2 = mpc.reshape %x, %c : (tensor<2x16x64xf16>, tensor<2xi64>) -> tensor<32x64xf16>
    %g = mpc.gemm %x2, %w, %b : (tensor<32x64xf16>, tensor<64x256xf16>, tensor<256xf16>) -> tensor<32x256xf16>
    %y = mpc.reshape %g, %c2 : (tensor<32x256xf16>, tensor<3xi64>) -> tensor<2x16x256xf16>
    ```
  }];
  let dependentDialects = ["::mlir::mpc::MpcDialect"];
}

def FoldConstants : Pass<"mpc-fold-constants", "::mlir::ModuleOp"> {
  let summary = "Compute once, at compile time, what the graph computes from "
                "constants alone";
  let description = [{
    Exporters leave computations on constants that every step would run
    again: Swin's shifted-window mask (ScatterND slice assignments, Sub,
    Equal, Where), rotary tables (cos and sin of positions times inv_freq),
    casts and transposes of index tables. This pass evaluates them with
    the CPU backend's kernels - the numerics contract's reference, so the
    bits are those the CPU backend computes each step - and the values the
    rest of the graph reads become `mpc.constant`s at the locations of the
    ops that computed them. Only ops whose result the contract fixes are
    evaluated: elementwise ops, casts, comparisons, Where, data movement
    (shape ops, gathers, scatters, Pad, Expand, Tile), Trilu, Range,
    OneHot, ArgMax/ArgMin, ReduceMax/ReduceMin; never GEMMs, convolutions,
    attention, norms, softmax, float sums, random draws or training ops. No
    value over `max-bytes` is computed (not even on the way to a small
    one), and a broadcast (Expand, Tile) that enlarges at the edge stays
    computed, its input folded.

    Before:
    ```mlir
    %f = mpc.constant dense<[1.0, 0.5]> : tensor<2xf32>
    %c = mpc.cos %f : (tensor<2xf32>) -> tensor<2xf32>
    %y = mpc.mul %x, %c : (tensor<4x2xf32>, tensor<2xf32>) -> tensor<4x2xf32>
    ```
    After:
    ```mlir
    %c = mpc.constant dense<[0.540302277, 0.87758255]> : tensor<2xf32>
    %y = mpc.mul %x, %c : (tensor<4x2xf32>, tensor<2xf32>) -> tensor<4x2xf32>
    ```
  }];
  let options = [
    Option<"maxBytes", "max-bytes", "int64_t", /*default=*/"16 << 20",
           "The largest value computed at compile time; larger ones stay computed each run">,
  ];
  let dependentDialects = ["::mlir::mpc::MpcDialect",
                           "::mlir::func::FuncDialect"];
}

def StableLogs : Pass<"mpc-stable-logs", "::mlir::ModuleOp"> {
  let summary = "Rewrite log(sigmoid), log(1 - sigmoid) and log(softmax) to "
                "forms that stay finite";
  let description = [{
    torch exports BCE-with-logits as Log(Sigmoid(x)) and Log(1 - Sigmoid(x));
    once the sigmoid rounds to 1 (logits above about 7.6 in fp16) the loss
    is NaN. This pass rewrites them to log-sigmoid forms, -softplus(-x) and
    -softplus(x), with the softplus marked `mpc.amp_fp32` so that
    mpc-amp-classify keeps it in FP32, and log(softmax) to log_softmax.

    Before:
    ```mlir
    %s = mpc.sigmoid %x : (tensor<8x1xf32>) -> tensor<8x1xf32>
    %l = mpc.log %s : (tensor<8x1xf32>) -> tensor<8x1xf32>
    ```
    After:
    ```mlir
    %n = mpc.neg %x : (tensor<8x1xf32>) -> tensor<8x1xf32>
    %p = mpc.softplus %n {mpc.amp_fp32 = "a log-sigmoid (mpc-stable-logs)"} : (tensor<8x1xf32>) -> tensor<8x1xf32>
    %l = mpc.neg %p : (tensor<8x1xf32>) -> tensor<8x1xf32>
    ```
  }];
  let dependentDialects = ["::mlir::mpc::MpcDialect"];
}

def FuseCrossEntropy : Pass<"mpc-fuse-cross-entropy", "::mlir::ModuleOp"> {
  let summary = "Fuse a log-softmax and its NLL loss into softmax cross-entropy";
  let description = [{
    torch exports F.cross_entropy as LogSoftmax then
    NegativeLogLikelihoodLoss (hand-written losses as x - logsumexp(x)).
    ONNX defines SoftmaxCrossEntropyLoss as that composition, so where the
    log-probabilities over the class axis (1) are read by the NLL alone
    (or also returned: its log_prob output is returned instead), the pair
    becomes one softmax_cross_entropy_loss with the NLL's labels,
    weights, reduction and ignore_index: one row kernel forward and one
    backward (softmax - one-hot), where the NLL gradient wrote an N x C
    tensor of mostly zeros. Log-probabilities read elsewhere too (label
    smoothing) stay as written: the loss's gradient does not flow through
    its log_prob output.

    Before:
    ```mlir
    %p = mpc.log_softmax %x {axis = 1 : i64} : (tensor<8x10xf32>) -> tensor<8x10xf32>
    %l = mpc.nll_loss %p, %t : (tensor<8x10xf32>, tensor<8xi64>) -> tensor<f32>
    ```
    After:
    ```mlir
    %l, %lp = mpc.softmax_cross_entropy_loss %x, %t : (tensor<8x10xf32>, tensor<8xi64>) -> (tensor<f32>, tensor<8x10xf32>)
    ```
  }];
  let dependentDialects = ["::mlir::mpc::MpcDialect"];
}

def InlineInference : Pass<"mpc-inline-inference", "::mlir::ModuleOp"> {
  let summary = "Clone the inference graph into TrainingInfoProto algorithms";
  let description = [{
    For each function tagged `mpc.inference_graph = @f` (a training
    algorithm): clones `@f`'s body in front of its ops, sharing parameter
    arguments (`mpc.param`) and adding `@f`'s graph inputs as arguments;
    every `mpc.gradient` whose `y` is an output of `@f` gets that value as
    its `target` (then `mpc-lower-gradient` lowers it); `@f`'s outputs are
    appended to the results (`mpc.inference_outputs` counts them).

    Before:
    ```mlir
    func.func @training_algorithm_0(%w: tensor<2x2xf32> {mpc.param = @W}) -> ... attributes {mpc.inference_graph = @inference}
      %g = mpc.gradient %w {xs = ["W"], y = "Loss", zs = []} : ...
    ```
    After: `%x` (the inference input) is an argument, the MatMul and
    ReduceSum computing Loss come first, and
    `%g = mpc.gradient %w target %loss {...}`.
  }];
  let dependentDialects = ["::mlir::mpc::MpcDialect"];
}

def ChainAlgorithms : Pass<"mpc-chain-algorithms", "::mlir::ModuleOp"> {
  let summary = "Run several TrainingInfoProto algorithms as one step, in order";
  let description = [{
    ONNX defines one training iteration as running every TrainingInfoProto
    algorithm in order, each one's update bindings assigned before the next
    runs. With more than one function tagged `mpc.update_binding` (after
    `mpc-inline-inference` and `mpc-lower-gradient`), this pass clones them
    in order into one function `@training_algorithms`: an algorithm reads
    the values earlier ones bound (not the step's inputs), results are the
    last value bound to each initializer (outputs `mpc.updated.<name>`,
    the merged `mpc.update_binding`) followed by the first algorithm's
    inference outputs (the loss). The originals are erased. One algorithm:
    no change.

    After, for algorithm 0 binding W and algorithm 1 binding T:
    ```mlir
    func.func @training_algorithms(%w: tensor<2xf32> {mpc.param = @W}, %t: tensor<i64> {mpc.param = @T}, ...)
        -> (tensor<2xf32> {mpc.output = "mpc.updated.W"}, tensor<i64> {mpc.output = "mpc.updated.T"}, tensor<f32> {mpc.output = "Loss"})
        attributes {mpc.inference_outputs = 1 : i64, mpc.update_binding = {T = "mpc.updated.T", W = "mpc.updated.W"}}
    ```
  }];
  let dependentDialects = ["::mlir::mpc::MpcDialect"];
}

def AmpClassify : Pass<"mpc-amp-classify", "::mlir::ModuleOp"> {
  let summary = "Paint every op low precision or FP32, recording why";
  let description = [{
    Gives every op that computes on floats an `mpc.precision` (the low
    type or f32) and an `mpc.amp` reason, from the allow / infer / clear /
    deny lists (passes/AmpLists.cpp): allow ops run in low precision, deny
    ops in FP32; infer and clear ops follow their float inputs (FP32 if any
    input is computed in FP32, low if any is low, else FP32); then clear
    ops whose users are all low become low too (they are exact, so moving
    the cast above them changes no value). Batch norm (infer, with FP32
    parameters) follows its data input alone: fed low precision, it reads
    and writes the low type while its scale, bias and statistics stay FP32,
    as cuDNN's batch norm under autocast (`mixed-type-ops=false` keeps it
    FP32: `mpc convert`, since ONNX gives BatchNormalization one type
    before opset 15). Types are not changed here; see
    `mpc-insert-casts`. Overrides: `allow` and `deny` take ONNX op types,
    `keep-fp32` node names, `config` a file with `allow = ...`,
    `deny = ...`, `keep-fp32 = ...` lines.

    Example (`precision=f16`):
    ```mlir
    %y = mpc.matmul %x, %w {mpc.amp = "allow: MatMul runs on tensor cores with FP32 accumulation", mpc.precision = f16} : ...
    %p = mpc.softmax %y {mpc.amp = "deny: Softmax: exponentials and a normalising sum need FP32", mpc.precision = f32, axis = 1 : i64} : ...
    ```
  }];
  let options = [
    Option<"precision", "precision", "std::string", /*default=*/"\"f16\"",
           "Low-precision type: f16 or bf16">,
    ListOption<"allow", "allow", "std::string",
               "ONNX op types to run in low precision">,
    ListOption<"deny", "deny", "std::string",
               "ONNX op types to keep in FP32">,
    ListOption<"keepFp32", "keep-fp32", "std::string",
               "Node names to keep in FP32">,
    Option<"config", "config", "std::string", /*default=*/"\"\"",
           "File with allow/deny/keep-fp32 lines">,
    Option<"mixedTypeOps", "mixed-type-ops", "bool", /*default=*/"true",
           "Let ops with FP32 parameters (batch norm) take low-precision data">
  ];
  let dependentDialects = ["::mlir::mpc::MpcDialect"];
}

def InsertCasts : Pass<"mpc-insert-casts", "::mlir::ModuleOp"> {
  let summary = "Retype painted ops and cast only where precisions meet";
  let description = [{
    Gives each op painted by `mpc-amp-classify` its precision: float
    operands of another type get a cast, float results take the op's type.
    One cast per (value, type), placed after the value's definition and
    shared by all users; casts of constants fold into constants (values
    beyond the target's range saturate to its largest finite value, and
    the constant records how many); a cast of an exact widening cast folds
    (f16 -> f32 -> f16 is the f16 value). Function results keep their
    declared types.

    Before:
    ```mlir
    %y = mpc.matmul %x, %w {mpc.precision = f16, ...} : (tensor<4x8xf32>, tensor<8x2xf32>) -> tensor<4x2xf32>
    ```
    After:
    ```mlir
    %xh = mpc.cast %x : (tensor<4x8xf32>) -> tensor<4x8xf16>
    %wh = mpc.cast %w : (tensor<8x2xf32>) -> tensor<8x2xf16>
    %y = mpc.matmul %xh, %wh {...} : (tensor<4x8xf16>, tensor<8x2xf16>) -> tensor<4x2xf16>
    ```
  }];
  let dependentDialects = ["::mlir::mpc::MpcDialect"];
}

include "passes/TrainPasses.td"

#endif // MPC_PASSES_TD
