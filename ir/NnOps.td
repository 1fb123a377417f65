//===- NnOps.td - normalization, softmax, losses, reductions -*- tablegen -*-===//

#ifndef MPC_NN_OPS_TD
#define MPC_NN_OPS_TD

include "ir/MpcDialect.td"

//===----------------------------------------------------------------------===//
// Normalization
//===----------------------------------------------------------------------===//

def Mpc_BatchNormOp : Mpc_Op<"batch_norm", [Mpc_InferBatchNorm, Mpc_Fp32Parameters, Pure, Mpc_InferByRule<"sameAsFirst">]> {
  let onnxName = "BatchNormalization";
  let summary = "batch normalization with running statistics (ONNX BatchNormalization, inference)";
  let description = [{
    `y = scale * (x - mean) / sqrt(var + epsilon) + bias` per channel (axis 1,
    or the last with `channels_last`, which mpc-channels-last sets),
    computed in FP32. Under mixed precision x and y may be fp16/bf16 while
    scale, bias, mean and var stay FP32 (as cuDNN's batch norm under
    autocast).

    Example:
    ```mlir
    %y = mpc.batch_norm %x, %s, %b, %m, %v {epsilon = 1.0e-05 : f32} : (tensor<8x64x56x56xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<8x64x56x56xf32>
    ```
  }];
  let arguments = (ins Mpc_FloatTensor:$x, Mpc_FloatTensor:$scale,
                   Mpc_FloatTensor:$bias, Mpc_FloatTensor:$mean,
                   Mpc_FloatTensor:$var,
                   DefaultValuedAttr<F32Attr, "1e-5f">:$epsilon,
                   DefaultValuedAttr<BoolAttr, "false">:$channels_last);
  let results = (outs Mpc_FloatTensor:$y);
  let hasVerifier = 1;
}

def Mpc_BatchNormTrainOp
    : Mpc_Op<"batch_norm_train", [Mpc_InferBatchNorm, Mpc_Fp32Parameters, Pure, Mpc_InferByRule<"batchNormTrain">]> {
  let onnxName = "BatchNormalization";
  let summary = "batch normalization with batch statistics (ONNX BatchNormalization, training_mode=1)";
  let description = [{
    Normalizes with the statistics of the batch and returns the updated
    running statistics `running = momentum * running + (1 - momentum) * batch`
    (population variance throughout, as ONNX specifies; with
    `unbiased_running_var`, PyTorch's rule, the running variance takes the
    batch's unbiased one, n / (n - 1) times it: torch 2 exports, whose FX
    node says torch ran it). Statistics are summed in double and
    kept FP32; x and y may be fp16/bf16 with FP32 parameters, as in
    batch_norm.

    Example:
    ```mlir
    %y, %rm, %rv = mpc.batch_norm_train %x, %s, %b, %m, %v {epsilon = 1.0e-05 : f32, momentum = 0.9 : f32} : (tensor<8x64x4x4xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>) -> (tensor<8x64x4x4xf32>, tensor<64xf32>, tensor<64xf32>)
    ```
  }];
  let arguments = (ins Mpc_FloatTensor:$x, Mpc_FloatTensor:$scale,
                   Mpc_FloatTensor:$bias, Mpc_FloatTensor:$input_mean,
                   Mpc_FloatTensor:$input_var,
                   DefaultValuedAttr<F32Attr, "1e-5f">:$epsilon,
                   DefaultValuedAttr<F32Attr, "0.9f">:$momentum,
                   DefaultValuedAttr<BoolAttr, "false">:$channels_last,
                   DefaultValuedAttr<BoolAttr, "false">:$unbiased_running_var);
  let results = (outs Mpc_FloatTensor:$y, Mpc_FloatTensor:$running_mean,
                 Mpc_FloatTensor:$running_var);
  let hasVerifier = 1;
}

def Mpc_LayerNormOp : Mpc_Op<"layer_norm", [Mpc_DenyNorm, Pure, Mpc_InferCustom]> {
  let onnxName = "LayerNormalization";
  let summary = "layer normalization (ONNX LayerNormalization)";
  let description = [{
    Normalizes over the dimensions from `axis` on; also returns the mean and
    inverse standard deviation (reduced dimensions kept as 1), which the
    backward pass reuses. Statistics are always FP32-stashed.

    Example:
    ```mlir
    %y, %mean, %rstd = mpc.layer_norm %x, %g, %b {axis = -1 : i64, epsilon = 1.0e-05 : f32} : (tensor<4x16x64xf32>, tensor<64xf32>, tensor<64xf32>) -> (tensor<4x16x64xf32>, tensor<4x16x1xf32>, tensor<4x16x1xf32>)
    ```
  }];
  let arguments = (ins Mpc_FloatTensor:$x, Mpc_FloatTensor:$scale,
                   Optional<Mpc_FloatTensor>:$bias,
                   DefaultValuedAttr<I64Attr, "-1">:$axis,
                   DefaultValuedAttr<F32Attr, "1e-5f">:$epsilon);
  let results = (outs Mpc_FloatTensor:$y, Mpc_FloatTensor:$mean,
                 Mpc_FloatTensor:$inv_std_dev);
}

def Mpc_RmsNormOp : Mpc_Op<"rms_norm", [Mpc_DenyNorm, Pure, Mpc_InferCustom]> {
  let onnxName = "RMSNormalization";
  let summary = "RMS normalization (ONNX RMSNormalization)";
  let description = [{
    `y = x / sqrt(mean(x^2) + epsilon) * scale` over the dimensions from
    `axis` on, in FP32 (the mean summed in index order); also returns the
    inverse RMS (reduced dimensions kept as 1) for the backward pass.
    `scale` has the normalized dimensions' trailing shape.

    Example:
    ```mlir
    %y, %inv = mpc.rms_norm %x, %g {axis = -1 : i64, epsilon = 1.0e-06 : f32} : (tensor<4x16x64xf32>, tensor<64xf32>) -> (tensor<4x16x64xf32>, tensor<4x16x1xf32>)
    ```
  }];
  let arguments = (ins Mpc_FloatTensor:$x, Mpc_FloatTensor:$scale,
                   DefaultValuedAttr<I64Attr, "-1">:$axis,
                   DefaultValuedAttr<F32Attr, "1e-5f">:$epsilon);
  let results = (outs Mpc_FloatTensor:$y, Mpc_FloatTensor:$inv_rms);
}

//===----------------------------------------------------------------------===//
// Attention
//===----------------------------------------------------------------------===//

def Mpc_AttentionOp : Mpc_Op<"attention", [Mpc_AllowTensorCore, Pure, Mpc_InferCustom,
                                           AttrSizedOperandSegments]> {
  let onnxName = "Attention";
  let summary = "fused scaled dot-product attention (mpc-fuse-attention)";
  let description = [{
    `y = dropout(softmax(scale * q k^T + bias)) v` over the last two
    dimensions (`q`: ... x Hq x Sq x D, `k`: ... x Hkv x Skv x D, `v`: ... x
    Hkv x Skv x Dv, the leading dimensions equal but for the heads: Hkv
    divides Hq, and q head h reads k and v head h / (Hq / Hkv), grouped-query
    attention with no copy of K and V; `bias` broadcasts to ... x Hq x Sq
    x Skv). With
    `causal`, query i attends keys j <= i + `causal_offset` only (by
    default Skv - Sq: the diagonal through the last query and key; 0 is
    ONNX Attention's alignment to the first ones without a past). Sliding
    windows (ONNX Attention's left_window_size and right_window_size) are
    counted from the same diagonal: `window_left` L keeps keys j >= i +
    offset - L, `window_right` R keys j <= i + offset + R
    (runtime/AttentionBand.h); the kernels visit only the keys a query
    sees. With `softcap` c > 0 (ONNX Attention's, Gemma 2's) the scaled
    scores are capped to c tanh(s / c) before the bias. Scores,
    softmax statistics and the products accumulate in FP32 whatever the operands'
    type, and no Sq x Skv tensor is materialized: `lse`, the log-sum-exp of
    each query's scores (FP32), is all the backward pass
    (mpc.attention_grad) keeps, as FlashAttention does. A row with no
    attendable key (every score -inf) gives NaN, as the softmax it replaces
    would, or, with `zero_masked_rows` (ONNX Attention's rule), y = 0 and
    lse = -inf.

    With `dropout` > 0 each probability is dropped with that probability
    and the kept ones scaled by 1/(1-dropout), drawn as mpc.dropout draws
    them (runtime/Philox.h: key (`seed`, `stream`), counter (`step`, the
    probability's index in the ... x Sq x Skv scores)): the mask the
    unfused softmax -> dropout would draw, recomputed by the backward
    instead of stored. The softmax's sum runs over the undropped
    probabilities.

    Example:
    ```mlir
    %y, %lse = mpc.attention %q, %k, %v {scale = 1.250000e-01 : f32, causal = true} : (tensor<2x12x128x64xf16>, tensor<2x12x128x64xf16>, tensor<2x12x128x64xf16>) -> (tensor<2x12x128x64xf16>, tensor<2x12x128xf32>)
    %y2, %lse2 = mpc.attention %q, %k, %v step %s {scale = 1.250000e-01 : f32, dropout = 1.000000e-01 : f32, stream = 7 : i64} : (tensor<2x12x128x64xf16>, tensor<2x12x128x64xf16>, tensor<2x12x128x64xf16>, tensor<i64>) -> (tensor<2x12x128x64xf16>, tensor<2x12x128xf32>)
    ```
  }];
  let arguments = (ins Mpc_FloatTensor:$q, Mpc_FloatTensor:$k,
                   Mpc_FloatTensor:$v, Optional<Mpc_FloatTensor>:$bias,
                   Optional<Mpc_I64Tensor>:$step,
                   F32Attr:$scale,
                   DefaultValuedAttr<BoolAttr, "false">:$causal,
                   OptionalAttr<I64Attr>:$causal_offset,
                   OptionalAttr<I64Attr>:$window_left,
                   OptionalAttr<I64Attr>:$window_right,
                   DefaultValuedAttr<F32Attr, "0.0f">:$softcap,
                   DefaultValuedAttr<BoolAttr, "false">:$zero_masked_rows,
                   DefaultValuedAttr<F32Attr, "0.0f">:$dropout,
                   OptionalAttr<I64Attr>:$seed,
                   OptionalAttr<I64Attr>:$stream);
  let results = (outs Mpc_FloatTensor:$y, Mpc_FloatTensor:$lse);
  let assemblyFormat = [{
    $q `,` $k `,` $v (`,` $bias^)? (`step` $step^)? attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Softmax, dropout, losses
//===----------------------------------------------------------------------===//

def Mpc_SoftmaxOp : Mpc_Op<"softmax", [Mpc_DenySoftmax, Pure, Mpc_InferByRule<"sameAsFirstAxis">]> {
  let onnxName = "Softmax";
  let summary = "softmax along one axis (ONNX Softmax, opset >= 13 semantics)";
  let description = [{
    Example:
    ```mlir
    %p = mpc.softmax %x {axis = -1 : i64} : (tensor<4x8x8xf32>) -> tensor<4x8x8xf32>
    ```
  }];
  let arguments = (ins Mpc_FloatTensor:$x, DefaultValuedAttr<I64Attr, "-1">:$axis);
  let results = (outs Mpc_FloatTensor:$y);
}

def Mpc_LogSoftmaxOp
    : Mpc_Op<"log_softmax", [Mpc_DenySoftmax, Pure, Mpc_InferByRule<"sameAsFirstAxis">]> {
  let onnxName = "LogSoftmax";
  let summary = "log-softmax along one axis (ONNX LogSoftmax, opset >= 13 semantics)";
  let description = [{
    Example:
    ```mlir
    %p = mpc.log_softmax %x {axis = 1 : i64} : (tensor<64x10xf32>) -> tensor<64x10xf32>
    ```
  }];
  let arguments = (ins Mpc_FloatTensor:$x, DefaultValuedAttr<I64Attr, "-1">:$axis);
  let results = (outs Mpc_FloatTensor:$y);
}

def Mpc_DropoutOp : Mpc_Op<"dropout", [Mpc_Clear, AttrSizedOperandSegments,
                                       Mpc_InferByRule<"dropout">]> {
  let onnxName = "Dropout";
  let summary = "dropout (ONNX Dropout)";
  let description = [{
    In training mode zeroes each element with probability `ratio` and scales
    the rest by 1/(1-ratio); otherwise the identity. Also returns the keep
    mask (the gradient of a dropout with a constant ratio is the dropout of
    the incoming gradient with the same key, which draws the mask again, so
    the mask is usually left unread and the CUDA backend never stores it).
    Not `Pure`: it draws random numbers.
    The ratio keeps its own type under mixed precision (ONNX's T1: the
    user's ratio, not its fp16 rounding).

    The draws are Philox4x32-10 (runtime/Philox.h), a pure function of the
    key (`seed`, `stream`) and the counter (`step`, the element's index):
    the CPU and CUDA backends draw the same mask, and a train step whose
    `step` is its number (mpc-dropout-steps) a fresh one each step.
    `stream` tells the dropouts of one graph apart (the importer sets it
    from the node's output name); `step` absent is step 0. The step
    operand mpc-dropout-steps gives is [step, rank]: data-parallel rank r
    numbers its n elements from r n, as one process over the global batch
    (a scalar step is rank 0).

    Example:
    ```mlir
    %y, %mask = mpc.dropout %x ratio %r training %t step %s {stream = 7 : i64} : (tensor<4x64xf32>, tensor<f32>, tensor<i1>, tensor<2xi64>) -> (tensor<4x64xf32>, tensor<4x64xi1>)
    ```
  }];
  let arguments = (ins Mpc_FloatTensor:$x, Optional<Mpc_FloatTensor>:$ratio,
                   Optional<Mpc_BoolTensor>:$training_mode,
                   Optional<Mpc_I64Tensor>:$step,
                   OptionalAttr<I64Attr>:$seed,
                   OptionalAttr<I64Attr>:$stream);
  let results = (outs Mpc_FloatTensor:$y, Mpc_BoolTensor:$mask);
  let assemblyFormat = [{
    $x (`ratio` $ratio^)? (`training` $training_mode^)? (`step` $step^)?
    attr-dict `:` functional-type(operands, results)
  }];
}

def Mpc_RandomOp : Mpc_Op<"random", [AttrSizedOperandSegments, Mpc_InferCustom]> {
  let onnxName = "RandomUniformLike";
  let summary = "random numbers (ONNX RandomUniform(Like), RandomNormal(Like))";
  let description = [{
    Uniform numbers in [a, b) (`distribution` "uniform") or normal ones of
    mean a and standard deviation b ("normal"), of `like`'s shape (whose
    values are not read) or of `shape`, of the element type `dtype`. What
    torch's exporter writes for bernoulli (stochastic depth, as torchvision
    and timm train), rand_like and randn_like.

    Drawn from Philox4x32-10 as Dropout's masks are (runtime/Philox.h): a
    pure function of the key (`seed`, `stream`) and the counter (`step`,
    the element's index), the same on the CPU and CUDA backends, a fresh
    draw each train step (mpc-dropout-steps gives `step`). A uniform number
    is the word's top 24 bits times 2^-24, a normal one Box-Muller over two
    words. Not `Pure`: it draws. No gradient flows to `like`.

    Example:
    ```mlir
    %r = mpc.random like %x step %s {a = 0.0 : f32, b = 1.0 : f32, distribution = "uniform", dtype = f32, stream = 7 : i64} : (tensor<4x1x1xf32>, tensor<2xi64>) -> tensor<4x1x1xf32>
    ```
  }];
  let arguments = (ins Optional<Mpc_AnyTensor>:$like, Optional<Mpc_I64Tensor>:$step,
                   StrAttr:$distribution, F32Attr:$a, F32Attr:$b,
                   TypeAttr:$dtype,
                   OptionalAttr<DenseI64ArrayAttr>:$shape,
                   OptionalAttr<I64Attr>:$seed,
                   OptionalAttr<I64Attr>:$stream);
  let results = (outs Mpc_FloatTensor:$y);
  let assemblyFormat = [{
    (`like` $like^)? (`step` $step^)? attr-dict `:` functional-type(operands, results)
  }];
}

def Mpc_SoftmaxCrossEntropyLossOp
    : Mpc_Op<"softmax_cross_entropy_loss", [Mpc_DenyLoss, Pure, Mpc_InferCustom]> {
  let onnxName = "SoftmaxCrossEntropyLoss";
  let summary = "softmax cross-entropy loss (ONNX SoftmaxCrossEntropyLoss)";
  let description = [{
    Scores are N x C (x D1..Dk), labels N (x D1..Dk) integer class indices;
    `reduction` is "mean", "sum" or "none". Also returns the log-probabilities.

    Example:
    ```mlir
    %loss, %logp = mpc.softmax_cross_entropy_loss %scores, %labels {reduction = "mean"} : (tensor<64x10xf32>, tensor<64xi64>) -> (tensor<f32>, tensor<64x10xf32>)
    ```
  }];
  let arguments = (ins Mpc_FloatTensor:$scores, Mpc_IntTensor:$labels,
                   Optional<Mpc_FloatTensor>:$weights,
                   DefaultValuedStrAttr<StrAttr, "mean">:$reduction,
                   OptionalAttr<I64Attr>:$ignore_index);
  let results = (outs Mpc_FloatTensor:$loss, Mpc_FloatTensor:$log_prob);
}

def Mpc_NegativeLogLikelihoodLossOp
    : Mpc_Op<"nll_loss", [Mpc_DenyLoss, Pure, Mpc_InferCustom]> {
  let onnxName = "NegativeLogLikelihoodLoss";
  let summary = "negative log-likelihood loss (ONNX NegativeLogLikelihoodLoss)";
  let description = [{
    Example:
    ```mlir
    %loss = mpc.nll_loss %logp, %labels {reduction = "mean"} : (tensor<64x10xf32>, tensor<64xi64>) -> tensor<f32>
    ```
  }];
  let arguments = (ins Mpc_FloatTensor:$input, Mpc_IntTensor:$target,
                   Optional<Mpc_FloatTensor>:$weight,
                   DefaultValuedStrAttr<StrAttr, "mean">:$reduction,
                   OptionalAttr<I64Attr>:$ignore_index);
  let results = (outs Mpc_FloatTensor:$loss);
}

//===----------------------------------------------------------------------===//
// Index and scan ops
//===----------------------------------------------------------------------===//

class Mpc_ArgOp<string mnemonic, string onnx>
    : Mpc_Op<mnemonic, [Pure, Mpc_Clear, Mpc_InferByRule<"argReduce">]> {
  let onnxName = onnx;
  let summary = "index of the " # onnx # " (ONNX " # onnx # ")";
  let description = "Example:\n```mlir\n%i = mpc." # mnemonic
    # " %x {axis = 1 : i64, keepdims = false} : (tensor<64x10xf32>) -> tensor<64xi64>\n```";
  let arguments = (ins Mpc_NumericTensor:$x, DefaultValuedAttr<I64Attr, "0">:$axis,
                   DefaultValuedAttr<BoolAttr, "true">:$keepdims,
                   DefaultValuedAttr<BoolAttr, "false">:$select_last_index);
  let results = (outs Mpc_I64Tensor:$y);
}
def Mpc_ArgMaxOp : Mpc_ArgOp<"arg_max", "ArgMax">;
def Mpc_ArgMinOp : Mpc_ArgOp<"arg_min", "ArgMin">;

def Mpc_TopKOp : Mpc_Op<"top_k", [Pure, Mpc_Clear, Mpc_InferCustom]> {
  let onnxName = "TopK";
  let summary = "indices of the k largest or smallest elements along an axis "
                "(ONNX TopK)";
  let description = [{
    ONNX TopK's Indices output, sorted: the k largest (smallest with
    `largest = false`) along `axis`, the lower index first among equal
    values, NaN above every number (torch.topk's order). The import takes
    TopK's Values as `mpc.gather_elements` of these indices, whose gradient
    rule scatters the values' gradient back.

    Example:
    ```mlir
    %i = mpc.top_k %x {axis = 1 : i64, k = 2 : i64, largest = true} : (tensor<16x8xf32>) -> tensor<16x2xi64>
    ```
  }];
  let arguments = (ins Mpc_NumericTensor:$x, I64Attr:$k,
                   DefaultValuedAttr<I64Attr, "-1">:$axis,
                   DefaultValuedAttr<BoolAttr, "true">:$largest);
  let results = (outs Mpc_I64Tensor:$indices);
}

def Mpc_CumSumOp : Mpc_Op<"cum_sum", [Mpc_DenyReduction, Pure, Mpc_InferByRule<"sameAsFirstAxis">]> {
  let onnxName = "CumSum";
  let summary = "cumulative sum (ONNX CumSum; the axis input becomes an attribute)";
  let description = [{
    Example:
    ```mlir
    %y = mpc.cum_sum %x {axis = 0 : i64, exclusive = false, reverse = false} : (tensor<5xf32>) -> tensor<5xf32>
    ```
  }];
  let arguments = (ins Mpc_NumericTensor:$x, I64Attr:$axis,
                   DefaultValuedAttr<BoolAttr, "false">:$exclusive,
                   DefaultValuedAttr<BoolAttr, "false">:$reverse);
  let results = (outs Mpc_NumericTensor:$y);
}

def Mpc_CumProdOp : Mpc_Op<"cum_prod", [Mpc_DenyReduction, Pure, Mpc_InferByRule<"sameAsFirstAxis">]> {
  let onnxName = "CumProd";
  let summary = "cumulative product (ONNX CumProd, opset 26; the axis input becomes an attribute)";
  let description = [{
    Floats multiplied in FP64 along the line and each product rounded
    once, as mpc.cum_sum sums (integers exactly, wrapping).

    Example:
    ```mlir
    %y = mpc.cum_prod %x {axis = 1 : i64, exclusive = false, reverse = true} : (tensor<2x5xf32>) -> tensor<2x5xf32>
    ```
  }];
  let arguments = (ins Mpc_NumericTensor:$x, I64Attr:$axis,
                   DefaultValuedAttr<BoolAttr, "false">:$exclusive,
                   DefaultValuedAttr<BoolAttr, "false">:$reverse);
  let results = (outs Mpc_NumericTensor:$y);
}

def Mpc_TriluOp : Mpc_Op<"trilu", [Mpc_Clear, Pure, Mpc_InferByRule<"sameAsFirst">]> {
  let onnxName = "Trilu";
  let summary = "upper/lower triangle (ONNX Trilu; k becomes an attribute)";
  let description = [{
    Keeps the elements on and above (`upper`) or on and below diagonal `k` of
    the last two dimensions; zeroes the rest. Used for causal masks.

    Example:
    ```mlir
    %m = mpc.trilu %x {k = 1 : i64, upper = true} : (tensor<16x16xf32>) -> tensor<16x16xf32>
    ```
  }];
  let arguments = (ins Mpc_AnyTensor:$x, DefaultValuedAttr<I64Attr, "0">:$k,
                   DefaultValuedAttr<BoolAttr, "true">:$upper);
  let results = (outs Mpc_AnyTensor:$y);
}

def Mpc_OneHotOp : Mpc_Op<"one_hot", [Pure, Mpc_InferCustom]> {
  let onnxName = "OneHot";
  let summary = "one-hot encoding (ONNX OneHot; depth becomes an attribute)";
  let description = [{
    `values` is [off_value, on_value]; a new axis of size `depth` is inserted
    at `axis`.

    Example:
    ```mlir
    %y = mpc.one_hot %labels, %values {axis = -1 : i64, depth = 10 : i64} : (tensor<64xi64>, tensor<2xf32>) -> tensor<64x10xf32>
    ```
  }];
  let arguments = (ins Mpc_NumericTensor:$indices, Mpc_AnyTensor:$values,
                   I64Attr:$depth, DefaultValuedAttr<I64Attr, "-1">:$axis);
  let results = (outs Mpc_AnyTensor:$y);
}

//===----------------------------------------------------------------------===//
// Position encodings
//===----------------------------------------------------------------------===//

def Mpc_RotaryOp : Mpc_Op<"rotary", [Mpc_Infer, Mpc_Fp32Parameters, Pure, Mpc_InferCustom]> {
  let onnxName = "RotaryEmbedding";
  let summary = "rotary position embedding in one pass (ONNX RotaryEmbedding)";
  let description = [{
    x is (batch, sequence, heads, head) with `seq_axis` 1, or (batch,
    heads, sequence, head) with `seq_axis` 2; cos and sin are (batch or 1,
    sequence, rotary_dim / 2). The first `rotary_dim` elements of each
    head rotate in pairs - (i, i + rotary_dim/2), or (2i, 2i + 1) when
    `interleaved` - by the angle of their position: (a, b) -> (a cos - b
    sin, a sin + b cos); the rest pass through. Computed in FP32, rounded
    once; no transposes, slices or concatenations around it. In mixed
    precision x takes fp16/bf16 and the tables stay FP32. Its gradient
    w.r.t. x is the same op with -sin.

    Example:
    ```mlir
    %y = mpc.rotary %x, %cos, %sin {interleaved = false, rotary_dim = 64 : i64, seq_axis = 2 : i64} : (tensor<2x8x16x64xf32>, tensor<2x16x32xf32>, tensor<2x16x32xf32>) -> tensor<2x8x16x64xf32>
    ```
  }];
  let arguments = (ins Mpc_FloatTensor:$x, Mpc_FloatTensor:$cos,
                   Mpc_FloatTensor:$sin, I64Attr:$seq_axis, I64Attr:$rotary_dim,
                   DefaultValuedAttr<BoolAttr, "false">:$interleaved);
  let results = (outs Mpc_FloatTensor:$y);
}

//===----------------------------------------------------------------------===//
// Resampling
//===----------------------------------------------------------------------===//

def Mpc_ResizeAxisOp : Mpc_Op<"resize_axis", [Mpc_Infer, Pure, Mpc_InferCustom]> {
  let onnxName = "Resize";
  let summary = "resample one axis by a table of taps (ONNX Resize, Upsample)";
  let description = [{
    The output has `size` positions along `axis`, each with T taps
    (T = |indices| / size): position `o` is `sum_t weights[o*T+t] *
    x[.., indices[o*T+t], ..] + fill[o]` in FP32, rounded once; taps with
    weight 0 are skipped, so a position given by `fill` alone (Resize's
    extrapolation value) never reads `x`. The importer builds the table from
    Resize's modes (nearest, linear, cubic, antialias, every coordinate
    transformation, roi) as onnx's reference computes it, one op per resized
    axis. The gradient is the same op along the same axis with the
    transposed table.

    Example (nearest, 2x):
    ```mlir
    %y = mpc.resize_axis %x {axis = 2 : i64, size = 4 : i64, indices = array<i64: 0, 0, 1, 1>, weights = array<f32: 1.0, 1.0, 1.0, 1.0>} : (tensor<1x3x2x2xf32>) -> tensor<1x3x4x2xf32>
    ```
  }];
  let arguments = (ins Mpc_FloatTensor:$x, I64Attr:$axis, I64Attr:$size,
                   DenseI64ArrayAttr:$indices, DenseF32ArrayAttr:$weights,
                   OptionalAttr<DenseF32ArrayAttr>:$fill);
  let results = (outs Mpc_FloatTensor:$y);
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

def Mpc_ReduceSumOp : Mpc_ReduceOp<"reduce_sum", "ReduceSum", Mpc_NumericTensor, [Mpc_DenyReduction]> {
  let hasFolder = 1; // integer constants: a shape's numel (Shape -> ReduceProd)
}
def Mpc_ReduceMeanOp : Mpc_ReduceOp<"reduce_mean", "ReduceMean", Mpc_NumericTensor, [Mpc_DenyReduction]>;
def Mpc_ReduceMaxOp : Mpc_ReduceOp<"reduce_max", "ReduceMax", Mpc_NumericTensor, [Mpc_Clear]> {
  let hasFolder = 1; // integer constants: a shape's numel (Shape -> ReduceProd)
}
def Mpc_ReduceMinOp : Mpc_ReduceOp<"reduce_min", "ReduceMin", Mpc_NumericTensor, [Mpc_Clear]> {
  let hasFolder = 1; // integer constants: a shape's numel (Shape -> ReduceProd)
}
def Mpc_ReduceProdOp : Mpc_ReduceOp<"reduce_prod", "ReduceProd", Mpc_NumericTensor, [Mpc_DenyReduction]> {
  let hasFolder = 1; // integer constants: a shape's numel (Shape -> ReduceProd)
}
def Mpc_ReduceL1Op : Mpc_ReduceOp<"reduce_l1", "ReduceL1", Mpc_NumericTensor, [Mpc_DenyReduction]>;
def Mpc_ReduceL2Op : Mpc_ReduceOp<"reduce_l2", "ReduceL2", Mpc_FloatTensor, [Mpc_DenyReduction]>;
def Mpc_ReduceSumSquareOp
    : Mpc_ReduceOp<"reduce_sum_square", "ReduceSumSquare", Mpc_NumericTensor, [Mpc_DenyReduction]>;
def Mpc_ReduceLogSumOp : Mpc_ReduceOp<"reduce_log_sum", "ReduceLogSum", Mpc_FloatTensor, [Mpc_DenyReduction]>;
def Mpc_ReduceLogSumExpOp
    : Mpc_ReduceOp<"reduce_log_sum_exp", "ReduceLogSumExp", Mpc_FloatTensor, [Mpc_DenyReduction]>;

#endif // MPC_NN_OPS_TD
