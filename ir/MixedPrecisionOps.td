//===- MixedPrecisionOps.td - loss-scaling ops -------------*- tablegen -*-===//
//
// The train-step state ops of dynamic loss scaling (mpc-loss-scaling), with
// torch.amp.GradScaler semantics. They read and return their state
// explicitly, so the scale and its counter are visible in the IR and saved
// with checkpoints.
//
//===----------------------------------------------------------------------===//

#ifndef MPC_MIXED_PRECISION_OPS_TD
#define MPC_MIXED_PRECISION_OPS_TD

include "ir/MpcDialect.td"

def Mpc_F32Scalar : 0DTensorOf<[F32]>;
def Mpc_I64Scalar : 0DTensorOf<[I64]>;
def Mpc_I1Scalar : 0DTensorOf<[I1]>;

def Mpc_UnscaleGradsOp : Mpc_Op<"unscale_grads", [Pure]> {
  let summary = "divide gradients by the loss scale; one all-finite check";
  let description = [{
    Multiplies every gradient by `1/scale` (the reciprocal taken in double
    and rounded to FP32, as GradScaler does) in FP32 and returns them with
    their own types or, for a fp16/bf16 gradient, in FP32 (the widening
    cast to an FP32 master folded in), followed by `found_inf`: true when
    any element of any gradient is inf or NaN (before or after unscaling).

    Example:
    ```mlir
    %g0, %g1, %inf = mpc.unscale_grads %dw, %db, %scale : (tensor<4x3xf32>, tensor<4xf32>, tensor<f32>) -> (tensor<4x3xf32>, tensor<4xf32>, tensor<i1>)
    ```
  }];
  let arguments = (ins Variadic<Mpc_FloatTensor>:$grads, Mpc_F32Scalar:$scale);
  let results = (outs Variadic<Mpc_FloatTensor>:$unscaled,
                 Mpc_I1Scalar:$found_inf);
  let hasVerifier = 1;
}

def Mpc_CheckGradsOp : Mpc_Op<"check_grads", [Pure]> {
  let summary = "the unscale factor, and one all-finite check of the gradients";
  let description = [{
    What an update that unscales its gradient as it reads it needs (as
    torch's fused optimizers take `grad_scale` and `found_inf`):
    `inv_scale`, `1/scale` taken in double and rounded to FP32 as
    `mpc.unscale_grads` takes it, and `found_inf`, true when any element of
    any gradient is inf or NaN. The gradients are only read
    (mpc-unscale-in-optimizer).

    Example:
    ```mlir
    %inv, %inf = mpc.check_grads %dw, %db, %scale : (tensor<4x3xf16>, tensor<4xf32>, tensor<f32>) -> (tensor<f32>, tensor<i1>)
    ```
  }];
  let arguments = (ins Variadic<Mpc_FloatTensor>:$grads, Mpc_F32Scalar:$scale);
  let results = (outs Mpc_F32Scalar:$inv_scale, Mpc_I1Scalar:$found_inf);
}

def Mpc_GlobalNormOp : Mpc_Op<"global_norm", [Pure]> {
  let summary = "the L2 norm of the tensors' L2 norms, in one multi-tensor step";
  let description = [{
    torch.nn.utils.clip_grad_norm_'s total norm (mpc-clip-grad-norm): each
    tensor's elements widened to FP32 and multiplied by `factor` in FP32
    (1/scale where the step unscales as it reads, else 1), their squares
    summed in double and the square root rounded to FP32 (a tensor's norm,
    as `mpc.reduce_l2` computes it); then the same over those norms, in
    operand order. One op, so the CUDA backend reads every tensor in one
    multi-tensor launch per element type instead of a reduction each.
    With a second result, `found_inf` as `mpc.check_grads` computes it
    (any element, before the factor, inf or NaN): a step that clips the
    gradients it checks reads them once (mpc-unscale-in-optimizer).

    Example:
    ```mlir
    %n = mpc.global_norm %one, %dw, %db : (tensor<f32>, tensor<4x3xf16>, tensor<4xf32>) -> tensor<f32>
    %m, %inf = mpc.global_norm %inv, %dw : (tensor<f32>, tensor<4x3xf16>) -> (tensor<f32>, tensor<i1>)
    ```
  }];
  let arguments = (ins Mpc_F32Scalar:$factor,
                   Variadic<Mpc_FloatTensor>:$tensors);
  let results = (outs Mpc_F32Scalar:$norm, Optional<Mpc_I1Scalar>:$found_inf);
  let hasVerifier = 1;
}

def Mpc_UpdateLossScaleOp : Mpc_Op<"update_loss_scale", [Pure]> {
  let summary = "dynamic loss-scale update (GradScaler.update, clamped)";
  let description = [{
    When `found_inf`: `scale * backoff` and the good-step counter restarts
    at 0. Otherwise the counter grows by one, and on reaching `interval`
    the scale is multiplied by `growth` and the counter restarts. The new
    scale is clamped to [`min_scale`, `max_scale`] (Apex and ONNX Runtime
    bound it; an unbounded scale can collapse to 0). With `apply` false
    (gradient accumulation: not a group's last micro-batch) both pass
    through unchanged.

    Example:
    ```mlir
    %s1, %n1 = mpc.update_loss_scale %s, %n, %inf {backoff = 5.000000e-01 : f64, growth = 2.000000e+00 : f64, interval = 2000 : i64, max_scale = 16777216.0 : f64, min_scale = 1.0 : f64} : (tensor<f32>, tensor<i64>, tensor<i1>) -> (tensor<f32>, tensor<i64>)
    ```
  }];
  let arguments = (ins Mpc_F32Scalar:$scale, Mpc_I64Scalar:$good_steps,
                   Mpc_I1Scalar:$found_inf, Optional<Mpc_I1Scalar>:$apply,
                   F64Attr:$growth, F64Attr:$backoff,
                   I64Attr:$interval, F64Attr:$min_scale, F64Attr:$max_scale);
  let results = (outs Mpc_F32Scalar:$new_scale, Mpc_I64Scalar:$new_good_steps);
}

def Mpc_AllReduceOp : Mpc_Op<"all_reduce"> {
  let summary = "average gradients over the ranks of a data-parallel job";
  let description = [{
    One bucket of gradients (mpc-data-parallel): each result is the mean
    over the job's ranks of its operand, summed in the `wire` type the
    operands have (f32, or f16/bf16 to halve the bytes), multiplied by
    1/ranks once; every rank gets the same bits.
    In a single process it is the identity. Not pure: it communicates, and
    runs where it stands, as soon as its bucket is ready, so the runtime
    can overlap it with the rest of the backward pass.

    Example:
    ```mlir
    %g0, %g1 = mpc.all_reduce %dw, %db {bucket = 0 : i64, wire = "f32"} : (tensor<4x3xf32>, tensor<3xf32>) -> (tensor<4x3xf32>, tensor<3xf32>)
    ```
  }];
  let arguments = (ins Variadic<Mpc_FloatTensor>:$grads, I64Attr:$bucket,
                   StrAttr:$wire);
  let results = (outs Variadic<Mpc_FloatTensor>:$reduced);
  let hasVerifier = 1;
}

#endif // MPC_MIXED_PRECISION_OPS_TD
