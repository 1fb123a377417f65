//===- TrainingOps.td - ai.onnx.preview.training ops -------*- tablegen -*-===//
//
// The ops of ONNX training graphs (TrainingInfoProto algorithms). Each reads
// and returns FP32 state explicitly, with no side effects.
//
//===----------------------------------------------------------------------===//

#ifndef MPC_TRAINING_OPS_TD
#define MPC_TRAINING_OPS_TD

include "ir/MpcDialect.td"

def Mpc_GradientOp : Mpc_Op<"gradient", [Pure, AttrSizedOperandSegments,
                                          Mpc_InferByRule<"gradient">]> {
  let summary = "gradient of the inference graph (ONNX Gradient)";
  let inPlans = 0; // mpc-lower-gradient replaces it
  let description = [{
    Operands are the values of `xs` followed by those of `zs` (names of the
    inference graph's tensors) and, when `y` is computed in the same
    function, its value as `target`; results are d`y`/d`xs`, one per name in
    `xs`, with the types of the corresponding operands. `mpc-lower-gradient`
    replaces ops that have a target by their reverse-mode computation.

    Example:
    ```mlir
    %da, %db = mpc.gradient %a, %b target %c {xs = ["a", "b"], y = "c", zs = []} : (tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> (tensor<2xf32>, tensor<2xf32>)
    ```
  }];
  let arguments = (ins Variadic<Mpc_AnyTensor>:$inputs,
                   Optional<Mpc_FloatTensor>:$target, StrArrayAttr:$xs,
                   StrArrayAttr:$zs, StrAttr:$y);
  let assemblyFormat = [{
    $inputs (`target` $target^)? attr-dict `:` functional-type(operands, results)
  }];
  let results = (outs Variadic<Mpc_FloatTensor>:$gradients);
  let hasVerifier = 1;
}

def Mpc_MomentumOp : Mpc_Op<"momentum", [Pure, Mpc_InferByRule<"momentum">]> {
  let onnxName = "Momentum";
  let summary = "SGD with momentum or Nesterov (ONNX Momentum)";
  let description = [{
    Operands: learning rate R, step count T, then n tensors X, n gradients G
    and n momenta V; results: n new X then n new V. `mode` is "standard" or
    "nesterov"; `norm_coefficient` is the L2 weight decay.

    Example:
    ```mlir
    %x1, %v1 = mpc.momentum %r, %t, %x, %g, %v {alpha = 0.9 : f32, beta = 1.0 : f32, mode = "standard", norm_coefficient = 0.0 : f32} : (tensor<f32>, tensor<i64>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
    ```
  }];
  let arguments = (ins Variadic<Mpc_AnyTensor>:$inputs, F32Attr:$alpha,
                   F32Attr:$beta, StrAttr:$mode, F32Attr:$norm_coefficient);
  let results = (outs Variadic<Mpc_FloatTensor>:$outputs);
  let hasVerifier = 1;
}

def Mpc_AdagradOp : Mpc_Op<"adagrad", [Pure, Mpc_InferByRule<"adagrad">]> {
  let onnxName = "Adagrad";
  let summary = "Adagrad (ONNX Adagrad)";
  let description = [{
    Operands: R, T, then n tensors X, n gradients G and n squared-gradient
    accumulators H; results: n new X then n new H.

    Example:
    ```mlir
    %x1, %h1 = mpc.adagrad %r, %t, %x, %g, %h {decay_factor = 0.0 : f32, epsilon = 1.0e-06 : f32, norm_coefficient = 0.0 : f32} : (tensor<f32>, tensor<i64>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
    ```
  }];
  let arguments = (ins Variadic<Mpc_AnyTensor>:$inputs,
                   DefaultValuedAttr<F32Attr, "0.0f">:$decay_factor,
                   DefaultValuedAttr<F32Attr, "1e-6f">:$epsilon,
                   DefaultValuedAttr<F32Attr, "0.0f">:$norm_coefficient);
  let results = (outs Variadic<Mpc_FloatTensor>:$outputs);
  let hasVerifier = 1;
}

def Mpc_AdamOp : Mpc_Op<"adam", [Pure, Mpc_InferByRule<"adam">]> {
  let onnxName = "Adam";
  let summary = "Adam (ONNX Adam)";
  let description = [{
    Operands: R, T, then n tensors X, n gradients G, n first moments V and n
    second moments H; results: n new X, n new V, n new H.

    Example:
    ```mlir
    %x1, %v1, %h1 = mpc.adam %r, %t, %x, %g, %v, %h {alpha = 0.9 : f32, beta = 0.999 : f32, epsilon = 1.0e-08 : f32, norm_coefficient = 0.0 : f32, norm_coefficient_post = 0.0 : f32} : (tensor<f32>, tensor<i64>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
    ```
  }];
  let arguments = (ins Variadic<Mpc_AnyTensor>:$inputs,
                   DefaultValuedAttr<F32Attr, "0.9f">:$alpha,
                   DefaultValuedAttr<F32Attr, "0.999f">:$beta,
                   DefaultValuedAttr<F32Attr, "1e-6f">:$epsilon,
                   DefaultValuedAttr<F32Attr, "0.0f">:$norm_coefficient,
                   DefaultValuedAttr<F32Attr, "0.0f">:$norm_coefficient_post);
  let results = (outs Variadic<Mpc_FloatTensor>:$outputs);
  let hasVerifier = 1;
}

#endif // MPC_TRAINING_OPS_TD
