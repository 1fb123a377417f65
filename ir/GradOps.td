//===- GradOps.td - backward ops emitted by mpc-autodiff ---*- tablegen -*-===//
//
// Gradients that are not a short pattern of forward ops. Each takes the
// incoming gradient first and returns the gradient of one forward operand.
//
//===----------------------------------------------------------------------===//

#ifndef MPC_GRAD_OPS_TD
#define MPC_GRAD_OPS_TD

include "ir/MpcDialect.td"

def Mpc_SoftmaxCrossEntropyLossGradOp
    : Mpc_Op<"softmax_cross_entropy_loss_grad",
             [Pure, Mpc_InferByRule<"typeOfSecond">]> {
  let summary = "gradient of softmax_cross_entropy_loss w.r.t. the scores";
  let description = [{
    `(softmax(scores) - onehot(labels)) * weight[label] * dloss / denom`,
    computed from the forward op's log-probabilities; ignored labels get 0.
    `denom` is the summed weight for "mean", 1 otherwise.

    Example:
    ```mlir
    %ds = mpc.softmax_cross_entropy_loss_grad %dloss, %logp, %labels {reduction = "mean"} : (tensor<f32>, tensor<64x10xf32>, tensor<64xi64>) -> tensor<64x10xf32>
    ```
  }];
  let arguments = (ins Mpc_FloatTensor:$grad, Mpc_FloatTensor:$log_prob,
                   Mpc_IntTensor:$labels, Optional<Mpc_FloatTensor>:$weights,
                   DefaultValuedStrAttr<StrAttr, "mean">:$reduction,
                   OptionalAttr<I64Attr>:$ignore_index);
  let results = (outs Mpc_FloatTensor:$scores_grad);
}

def Mpc_NegativeLogLikelihoodLossGradOp
    : Mpc_Op<"nll_loss_grad", [Pure, Mpc_InferByRule<"typeOfSecond">]> {
  let summary = "gradient of nll_loss w.r.t. its input";
  let description = [{
    `-weight[target] * dloss / denom` at each target position, 0 elsewhere.

    Example:
    ```mlir
    %dx = mpc.nll_loss_grad %dloss, %logp, %labels {reduction = "mean"} : (tensor<f32>, tensor<64x10xf32>, tensor<64xi64>) -> tensor<64x10xf32>
    ```
  }];
  let arguments = (ins Mpc_FloatTensor:$grad, Mpc_FloatTensor:$input,
                   Mpc_IntTensor:$target, Optional<Mpc_FloatTensor>:$weight,
                   DefaultValuedStrAttr<StrAttr, "mean">:$reduction,
                   OptionalAttr<I64Attr>:$ignore_index);
  let results = (outs Mpc_FloatTensor:$input_grad);
}

def Mpc_AttentionGradOp : Mpc_Op<"attention_grad", [Pure, Mpc_InferCustom,
                                                     AttrSizedOperandSegments]> {
  let summary = "gradients of mpc.attention w.r.t. q, k and v";
  let description = [{
    Recomputes each probability from the saved log-sum-exp,
    `p = exp(scale * q k^T + bias - lse)`, and returns
    `dv = pd^T dy`, `ds = p * (z * (dy v^T) - rowsum(dy * y))`,
    `dq = scale ds k`, `dk = scale ds^T q` (with `softcap` c, ds times
    1 - tanh^2(s / c) of the scaled score s), accumulated in FP32, each in its
    operand's type; p = 0 in a row whose lse is -inf (a fully masked row).
    Without dropout z = 1 and pd = p; with it z is the forward's mask times
    1/(1-dropout), redrawn from the same key and counter, and pd = z p.
    With `with_scores_grad` a fourth result is `dS = p * (z * (dy v^T) -
    rowsum(dy * y))` itself, the gradient w.r.t. the biased score (before a
    softcap's slope; 0 where the band hides the key), [..., Sq, Skv] in q's
    type: the gradient rule sums it to a trained bias's shape, so Q and K
    have no reader outside the attention kernels.

    Example:
    ```mlir
    %dq, %dk, %dv = mpc.attention_grad %dy, %q, %k, %v, %y, %lse {scale = 1.250000e-01 : f32, causal = true} : (tensor<2x4x16x8xf16>, tensor<2x4x16x8xf16>, tensor<2x4x16x8xf16>, tensor<2x4x16x8xf16>, tensor<2x4x16x8xf16>, tensor<2x4x16xf32>) -> (tensor<2x4x16x8xf16>, tensor<2x4x16x8xf16>, tensor<2x4x16x8xf16>)
    ```
  }];
  let arguments = (ins Mpc_FloatTensor:$grad, Mpc_FloatTensor:$q,
                   Mpc_FloatTensor:$k, Mpc_FloatTensor:$v,
                   Mpc_FloatTensor:$y, Mpc_FloatTensor:$lse,
                   Optional<Mpc_FloatTensor>:$bias,
                   Optional<Mpc_I64Tensor>:$step, F32Attr:$scale,
                   DefaultValuedAttr<BoolAttr, "false">:$causal,
                   OptionalAttr<I64Attr>:$causal_offset,
                   OptionalAttr<I64Attr>:$window_left,
                   OptionalAttr<I64Attr>:$window_right,
                   DefaultValuedAttr<F32Attr, "0.0f">:$softcap,
                   DefaultValuedAttr<F32Attr, "0.0f">:$dropout,
                   OptionalAttr<I64Attr>:$seed,
                   OptionalAttr<I64Attr>:$stream,
                   UnitAttr:$with_scores_grad);
  let results = (outs Mpc_FloatTensor:$q_grad, Mpc_FloatTensor:$k_grad,
                 Mpc_FloatTensor:$v_grad,
                 Optional<Mpc_FloatTensor>:$scores_grad);
  let assemblyFormat = [{
    $grad `,` $q `,` $k `,` $v `,` $y `,` $lse (`,` $bias^)? (`step` $step^)?
    attr-dict `:` functional-type(operands, results)
  }];
}

def Mpc_GatherGradOp : Mpc_Op<"gather_grad", [Pure]> {
  let summary = "gradient of gather w.r.t. its data (scatter-add)";
  let description = [{
    Adds each slice of `grad` into the row of the result selected by
    `indices` along `axis` (repeated indices accumulate); the result has
    the forward data's type, given explicitly.

    Example:
    ```mlir
    %dtable = mpc.gather_grad %g, %ids {axis = 0 : i64} : (tensor<4x16x64xf32>, tensor<4x16xi64>) -> tensor<100x64xf32>
    ```
  }];
  let arguments = (ins Mpc_FloatTensor:$grad, Mpc_IntTensor:$indices,
                   DefaultValuedAttr<I64Attr, "0">:$axis);
  let results = (outs Mpc_FloatTensor:$data_grad);
  let hasVerifier = 1;
}

/// Window attributes of the forward conv/pool, copied onto its grad ops.
defvar Mpc_GradWindowAttrs = (ins
  DefaultValuedStrAttr<StrAttr, "NOTSET">:$auto_pad,
  OptionalAttr<DenseI64ArrayAttr>:$kernel_shape,
  OptionalAttr<DenseI64ArrayAttr>:$strides,
  OptionalAttr<DenseI64ArrayAttr>:$pads,
  OptionalAttr<DenseI64ArrayAttr>:$dilations);

def Mpc_ConvGradInputOp : Mpc_Op<"conv_grad_input", [Pure]> {
  let summary = "gradient of conv w.r.t. its input";
  let description = [{
    `W^T * dY` scattered back through the windows (col2im); the result has
    the forward input's type, given explicitly. `channels_last` as conv's.

    Example:
    ```mlir
    %dx = mpc.conv_grad_input %dy, %w {pads = array<i64: 1, 1, 1, 1>} : (tensor<8x16x32x32xf32>, tensor<16x3x3x3xf32>) -> tensor<8x3x32x32xf32>
    ```
  }];
  let arguments = !con((ins Mpc_FloatTensor:$grad, Mpc_FloatTensor:$w,
                            DefaultValuedAttr<I64Attr, "1">:$group,
                            DefaultValuedAttr<BoolAttr, "false">:$channels_last),
                       Mpc_GradWindowAttrs);
  let results = (outs Mpc_FloatTensor:$x_grad);
}

def Mpc_ConvGradWeightOp : Mpc_Op<"conv_grad_weight", [Pure]> {
  let summary = "gradient of conv w.r.t. its weight";
  let description = [{
    `dY * im2col(X)^T` per group; the result has the weight's type.
    `channels_last` as conv's.

    Example:
    ```mlir
    %dw = mpc.conv_grad_weight %dy, %x {pads = array<i64: 1, 1, 1, 1>} : (tensor<8x16x32x32xf32>, tensor<8x3x32x32xf32>) -> tensor<16x3x3x3xf32>
    ```
  }];
  let arguments = !con((ins Mpc_FloatTensor:$grad, Mpc_FloatTensor:$x,
                            DefaultValuedAttr<I64Attr, "1">:$group,
                            DefaultValuedAttr<BoolAttr, "false">:$channels_last),
                       Mpc_GradWindowAttrs);
  let results = (outs Mpc_FloatTensor:$w_grad);
}

def Mpc_GatherElementsGradOp : Mpc_Op<"gather_elements_grad", [Pure]> {
  let summary = "gradient of gather_elements w.r.t. its data (scatter-add)";
  let description = [{
    grad and indices have the gathered shape; each grad element is added
    at its own coordinates with the `axis` coordinate replaced by its index
    (repeated indices accumulate, in index order); elements no index
    reaches get 0. The result has the forward data's type, given
    explicitly.

    Example:
    ```mlir
    %dx = mpc.gather_elements_grad %g, %idx {axis = 1 : i64} : (tensor<2x3xf32>, tensor<2x3xi64>) -> tensor<2x5xf32>
    ```
  }];
  let arguments = (ins Mpc_FloatTensor:$grad, Mpc_IntTensor:$indices,
                   DefaultValuedAttr<I64Attr, "0">:$axis);
  let results = (outs Mpc_FloatTensor:$data_grad);
  let hasVerifier = 1;
}

def Mpc_GeluGradOp
    : Mpc_Op<"gelu_grad", [Pure, Mpc_InferByRule<"sameAsFirst">]> {
  let summary = "input gradient of gelu, one elementwise op";
  let description = [{
    `grad * gelu'(x)` in FP32 and rounded once, with gelu' the derivative of
    the erf form (`approximate = "none"`: Phi(x) + x phi(x)) or of the tanh
    approximation (`"tanh"`, GPT-2's gelu_new). One op rather than a chain of
    forward ops, so the CPU and CUDA backends share one formula
    (runtime/Formulas.h) and a GEMM's cuBLASLt DGELU epilogue can take it.

    Example:
    ```mlir
    %dx = mpc.gelu_grad %g, %x {approximate = "tanh"} : (tensor<4x256xf16>, tensor<4x256xf16>) -> tensor<4x256xf16>
    ```
  }];
  let arguments = (ins Mpc_FloatTensor:$grad, Mpc_FloatTensor:$x,
                   DefaultValuedStrAttr<StrAttr, "none">:$approximate);
  let results = (outs Mpc_FloatTensor:$x_grad);
  let hasVerifier = 1;
}

def Mpc_CumProdGradOp
    : Mpc_Op<"cum_prod_grad", [Pure, Mpc_InferByRule<"sameAsFirst">]> {
  let summary = "input gradient of mpc.cum_prod, exact where inputs are 0";
  let description = [{
    With e the exclusive product before element j along the line (in
    cum_prod's direction) and the elements after it x_{j+1}, x_{j+2}...:
    dx_j = e_j * r_j, where r_j = g_j + x_{j+1} * r_{j+1} (inclusive
    cum_prod) or r_j = g_{j+1} + x_{j+1} * r_{j+1} (exclusive), walked
    from the line's end: dx_j is the sum over the outputs y_i that
    multiply x_j of g_i times the other factors of y_i, with no division
    by x_j (torch's cumprod_backward divides where no input is 0). Both
    walks in FP64; r_j is kept, rounded, in dx_j between them (the CPU
    and CUDA kernels alike).

    Example:
    ```mlir
    %dx = mpc.cum_prod_grad %x, %g {axis = 0 : i64, exclusive = false, reverse = false} : (tensor<5xf32>, tensor<5xf32>) -> tensor<5xf32>
    ```
  }];
  let arguments = (ins Mpc_FloatTensor:$x, Mpc_FloatTensor:$grad,
                   I64Attr:$axis,
                   DefaultValuedAttr<BoolAttr, "false">:$exclusive,
                   DefaultValuedAttr<BoolAttr, "false">:$reverse);
  let results = (outs Mpc_FloatTensor:$x_grad);
}

def Mpc_ReluGradOp
    : Mpc_Op<"relu_grad", [Pure, Mpc_InferByRule<"sameAsFirst">]> {
  let summary = "input gradient of relu, read from relu's result";
  let description = [{
    `y > 0 ? grad : 0`, with `y` relu's result (as torch's
    threshold_backward): y > 0 exactly where relu's input is, so the
    gradient no longer keeps the input alive, a GEMM's Relu becomes its
    epilogue in training too, and the GEMM that computes `grad` can apply
    it through cuBLASLt's DRELU epilogue.

    Example:
    ```mlir
    %dx = mpc.relu_grad %g, %y : (tensor<4x256xf16>, tensor<4x256xf16>) -> tensor<4x256xf16>
    ```
  }];
  let arguments = (ins Mpc_FloatTensor:$grad, Mpc_FloatTensor:$y);
  let results = (outs Mpc_FloatTensor:$y_grad);
  let hasVerifier = 1;
}

def Mpc_BatchNormGradOp
    : Mpc_Op<"batch_norm_grad", [Pure, Mpc_InferByRule<"batchNormGrad">]> {
  let summary = "gradients of batch_norm_train, one kernel per channel";
  let description = [{
    x is [N, C, ...] ([N, ..., C] with `channels_last`); per channel, over
    its M = N x spatial elements: the
    batch statistics as batch_norm_train computes them (sums in double,
    mean and population variance rounded to FP32, inv = 1 / sqrt(var +
    epsilon)), xhat = (x - mean) inv, then dbias = sum(grad), dscale =
    sum(grad xhat) and dx = scale inv (grad - dbias / M - xhat dscale / M),
    accumulated in double and rounded once. One op rather than the ten
    elementwise and reduction ops of the formula (four passes over the
    channel each): the CUDA backend runs it as one block per channel, as
    cuDNN's batch-norm backward does. grad, x and dx share x's type (low
    under mixed precision); scale and its gradients are FP32. With
    `relu_out`, grad is the gradient of that Relu's result and the op takes
    it where relu_out > 0 (relu_grad folded in: the CUDA backend's fusion
    makes this form, so a Relu after a batch norm costs no kernel).

    Example:
    ```mlir
    %dx, %ds, %db = mpc.batch_norm_grad %g, %x, %s {epsilon = 1.0e-05 : f32} : (tensor<8x64x4x4xf32>, tensor<8x64x4x4xf32>, tensor<64xf32>) -> (tensor<8x64x4x4xf32>, tensor<64xf32>, tensor<64xf32>)
    ```
  }];
  let arguments = (ins Mpc_FloatTensor:$grad, Mpc_FloatTensor:$x,
                   Mpc_FloatTensor:$scale,
                   Optional<Mpc_FloatTensor>:$relu_out,
                   DefaultValuedAttr<F32Attr, "1e-5f">:$epsilon,
                   DefaultValuedAttr<BoolAttr, "false">:$channels_last);
  let results = (outs Mpc_FloatTensor:$x_grad, Mpc_FloatTensor:$scale_grad,
                 Mpc_FloatTensor:$bias_grad);
  let hasVerifier = 1;
}

def Mpc_NormGradOp : Mpc_Op<"norm_grad", [Pure, Mpc_InferByRule<"typeOfSecond">]> {
  let summary = "input gradient of layer_norm or rms_norm, one pass per row";
  let description = [{
    Rows are x's elements from `axis` on (n of them). With `mean` (layer
    norm): xhat = (x - mean) * inv, else (RMS norm) xhat = x * inv; dxhat =
    grad * scale (scale repeats along the row); then
    dx = inv * (dxhat - sum(dxhat)/n - xhat * sum(dxhat * xhat)/n), the
    sum(dxhat) term only with `mean`. Both row sums come from one pass (a
    warp per row on the GPU) instead of a chain of elementwise and
    reduction kernels; the scale and bias gradients stay column sums.

    Example:
    ```mlir
    %dx = mpc.norm_grad %g, %x, %scale, %inv, %mean {axis = 2 : i64} : (tensor<4x16x64xf32>, tensor<4x16x64xf32>, tensor<64xf32>, tensor<4x16x1xf32>, tensor<4x16x1xf32>) -> tensor<4x16x64xf32>
    ```
  }];
  let arguments = (ins Mpc_FloatTensor:$grad, Mpc_FloatTensor:$x,
                   Mpc_FloatTensor:$scale, Mpc_FloatTensor:$inv_std_dev,
                   Optional<Mpc_FloatTensor>:$mean, I64Attr:$axis);
  let results = (outs Mpc_FloatTensor:$x_grad);
}

def Mpc_MaxPoolGradOp : Mpc_Op<"max_pool_grad", [Pure]> {
  let summary = "gradient of max_pool: route dY to the argmax indices";
  // The forward op's window, when given, bounds the outputs whose argmax
  // an input element can be (the CUDA kernel gathers over those only).
  let description = [{
    Example:
    ```mlir
    %dx = mpc.max_pool_grad %dy, %idx : (tensor<8x6x14x14xf32>, tensor<8x6x14x14xi64>) -> tensor<8x6x28x28xf32>
    ```
  }];
  let arguments = !con((ins Mpc_FloatTensor:$grad, Mpc_I64Tensor:$indices,
                            DefaultValuedAttr<BoolAttr, "false">:$channels_last),
                       Mpc_GradWindowAttrs);
  let results = (outs Mpc_FloatTensor:$x_grad);
}

def Mpc_AveragePoolGradOp : Mpc_Op<"average_pool_grad", [Pure]> {
  let summary = "gradient of average_pool: spread dY over each window";
  let description = [{
    Example:
    ```mlir
    %dx = mpc.average_pool_grad %dy {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<8x16x5x5xf32>) -> tensor<8x16x10x10xf32>
    ```
  }];
  let arguments = !con((ins Mpc_FloatTensor:$grad,
                            DefaultValuedAttr<BoolAttr, "false">:$ceil_mode,
                            DefaultValuedAttr<BoolAttr, "false">:$count_include_pad),
                       Mpc_GradWindowAttrs);
  let results = (outs Mpc_FloatTensor:$x_grad);
}

#endif // MPC_GRAD_OPS_TD
