//===- ElementwiseOps.td - elementwise mpc ops -------------*- tablegen -*-===//

#ifndef MPC_ELEMENTWISE_OPS_TD
#define MPC_ELEMENTWISE_OPS_TD

include "ir/MpcDialect.td"

//===----------------------------------------------------------------------===//
// Unary
//===----------------------------------------------------------------------===//

def Mpc_ExpOp : Mpc_UnaryFloatOp<"exp", "Exp", [Mpc_DenyRange]>;
def Mpc_LogOp : Mpc_UnaryFloatOp<"log", "Log", [Mpc_DenyRange]>;
def Mpc_SqrtOp : Mpc_UnaryFloatOp<"sqrt", "Sqrt", [Mpc_Infer]>;
def Mpc_ReciprocalOp : Mpc_UnaryFloatOp<"reciprocal", "Reciprocal", [Mpc_Infer]>;
def Mpc_TanhOp : Mpc_UnaryFloatOp<"tanh", "Tanh", [Mpc_Infer]>;
def Mpc_SigmoidOp : Mpc_UnaryFloatOp<"sigmoid", "Sigmoid", [Mpc_Infer]>;
def Mpc_ErfOp : Mpc_UnaryFloatOp<"erf", "Erf", [Mpc_DenyTranscendental]>;
def Mpc_SinOp : Mpc_UnaryFloatOp<"sin", "Sin">;
def Mpc_CosOp : Mpc_UnaryFloatOp<"cos", "Cos">;
def Mpc_TanOp : Mpc_UnaryFloatOp<"tan", "Tan">;
def Mpc_AsinOp : Mpc_UnaryFloatOp<"asin", "Asin">;
def Mpc_AcosOp : Mpc_UnaryFloatOp<"acos", "Acos">;
def Mpc_SinhOp : Mpc_UnaryFloatOp<"sinh", "Sinh">;
def Mpc_CoshOp : Mpc_UnaryFloatOp<"cosh", "Cosh">;
def Mpc_AsinhOp : Mpc_UnaryFloatOp<"asinh", "Asinh">;
def Mpc_AcoshOp : Mpc_UnaryFloatOp<"acosh", "Acosh">;
def Mpc_AtanhOp : Mpc_UnaryFloatOp<"atanh", "Atanh">;
def Mpc_SoftplusOp : Mpc_UnaryFloatOp<"softplus", "Softplus", [Mpc_Infer]>;
def Mpc_SoftsignOp : Mpc_UnaryFloatOp<"softsign", "Softsign", [Mpc_Infer]>;
def Mpc_FloorOp : Mpc_UnaryFloatOp<"floor", "Floor", [Mpc_Clear]>;
def Mpc_CeilOp : Mpc_UnaryFloatOp<"ceil", "Ceil", [Mpc_Clear]>;
def Mpc_RoundOp : Mpc_UnaryFloatOp<"round", "Round", [Mpc_Clear]>;
def Mpc_HardSwishOp : Mpc_UnaryFloatOp<"hard_swish", "HardSwish", [Mpc_Infer]>;
def Mpc_MishOp : Mpc_UnaryFloatOp<"mish", "Mish", [Mpc_Infer]>;
def Mpc_AtanOp : Mpc_UnaryFloatOp<"atan", "Atan", [Mpc_Infer]>;

def Mpc_GeluOp : Mpc_UnaryFloatOp<"gelu", "Gelu", [Mpc_Infer]> {
  let arguments = (ins Mpc_FloatTensor:$x,
                   DefaultValuedStrAttr<StrAttr, "none">:$approximate);
  let hasVerifier = 1;
}
def Mpc_LeakyReluOp : Mpc_UnaryFloatOp<"leaky_relu", "LeakyRelu", [Mpc_Infer]> {
  let arguments = (ins Mpc_FloatTensor:$x,
                   DefaultValuedAttr<F32Attr, "0.01f">:$alpha);
}
def Mpc_EluOp : Mpc_UnaryFloatOp<"elu", "Elu", [Mpc_Infer]> {
  let arguments = (ins Mpc_FloatTensor:$x,
                   DefaultValuedAttr<F32Attr, "1.0f">:$alpha);
}
def Mpc_CeluOp : Mpc_UnaryFloatOp<"celu", "Celu", [Mpc_Infer]> {
  let arguments = (ins Mpc_FloatTensor:$x,
                   DefaultValuedAttr<F32Attr, "1.0f">:$alpha);
}
def Mpc_SeluOp : Mpc_UnaryFloatOp<"selu", "Selu", [Mpc_Infer]> {
  let arguments = (ins Mpc_FloatTensor:$x,
                   DefaultValuedAttr<F32Attr, "1.67326319217681884765625f">:$alpha,
                   DefaultValuedAttr<F32Attr, "1.05070102214813232421875f">:$gamma);
}
def Mpc_HardSigmoidOp : Mpc_UnaryFloatOp<"hard_sigmoid", "HardSigmoid", [Mpc_Infer]> {
  let arguments = (ins Mpc_FloatTensor:$x,
                   DefaultValuedAttr<F32Attr, "0.2f">:$alpha,
                   DefaultValuedAttr<F32Attr, "0.5f">:$beta);
}
def Mpc_ThresholdedReluOp : Mpc_UnaryFloatOp<"thresholded_relu", "ThresholdedRelu", [Mpc_Infer]> {
  let arguments = (ins Mpc_FloatTensor:$x,
                   DefaultValuedAttr<F32Attr, "1.0f">:$alpha);
}

def Mpc_AbsOp : Mpc_UnaryNumericOp<"abs", "Abs", [Mpc_Clear]>;
def Mpc_NegOp : Mpc_UnaryNumericOp<"neg", "Neg", [Mpc_Clear]> {
  let hasFolder = 1;
}
def Mpc_ReluOp : Mpc_UnaryNumericOp<"relu", "Relu", [Mpc_Clear]>;
def Mpc_SignOp : Mpc_UnaryNumericOp<"sign", "Sign", [Mpc_Clear]>;

def Mpc_IdentityOp : Mpc_Op<"identity", [Mpc_Clear, Pure, Mpc_InferByRule<"sameAsFirst">]> {
  let onnxName = "Identity";
  // Folds at import whenever its result is static, and plans are static.
  let inPlans = 0;
  let summary = "identity (ONNX Identity)";
  let description = [{
    Returns its operand. Kept (not folded at import) so node names survive;
    canonicalization removes it.

    Example:
    ```mlir
    %y = mpc.identity %x : (tensor<4xi1>) -> tensor<4xi1>
    ```
  }];
  let arguments = (ins Mpc_AnyTensor:$x);
  let results = (outs Mpc_AnyTensor:$y);
  let hasFolder = 1;
}

def Mpc_NotOp : Mpc_Op<"not", [Pure, Mpc_InferByRule<"sameAsFirst">]> {
  let onnxName = "Not";
  let summary = "logical not (ONNX Not)";
  let description = [{
    Example:
    ```mlir
    %y = mpc.not %x : (tensor<4xi1>) -> tensor<4xi1>
    ```
  }];
  let arguments = (ins Mpc_BoolTensor:$x);
  let results = (outs Mpc_BoolTensor:$y);
  let hasFolder = 1;
}

def Mpc_IsNaNOp : Mpc_Op<"is_nan", [Mpc_Clear, Pure, Mpc_InferByRule<"sameShapeBool">]> {
  let onnxName = "IsNaN";
  let summary = "NaN test (ONNX IsNaN)";
  let description = [{
    Example:
    ```mlir
    %m = mpc.is_nan %x : (tensor<4xf16>) -> tensor<4xi1>
    ```
  }];
  let arguments = (ins Mpc_FloatTensor:$x);
  let results = (outs Mpc_BoolTensor:$y);
}

def Mpc_IsInfOp : Mpc_Op<"is_inf", [Mpc_Clear, Pure, Mpc_InferByRule<"sameShapeBool">]> {
  let onnxName = "IsInf";
  let summary = "infinity test (ONNX IsInf)";
  let description = [{
    Example:
    ```mlir
    %m = mpc.is_inf %x {detect_negative = false} : (tensor<4xf32>) -> tensor<4xi1>
    ```
  }];
  let arguments = (ins Mpc_FloatTensor:$x,
                   DefaultValuedAttr<BoolAttr, "true">:$detect_negative,
                   DefaultValuedAttr<BoolAttr, "true">:$detect_positive);
  let results = (outs Mpc_BoolTensor:$y);
}

def Mpc_ClipOp : Mpc_Op<"clip", [Mpc_Clear, Pure, AttrSizedOperandSegments,
                                 Mpc_InferByRule<"sameAsFirst">]> {
  let onnxName = "Clip";
  let summary = "clamp to [min, max] (ONNX Clip)";
  let description = [{
    `min` and `max` are optional scalar operands of the input's element type
    (attributes before opset 11 are imported as constants).

    Example:
    ```mlir
    %y = mpc.clip %x min %lo max %hi : (tensor<4xf32>, tensor<f32>, tensor<f32>) -> tensor<4xf32>
    ```
  }];
  let arguments = (ins Mpc_NumericTensor:$x, Optional<Mpc_NumericTensor>:$min,
                   Optional<Mpc_NumericTensor>:$max);
  let results = (outs Mpc_NumericTensor:$y);
  let assemblyFormat = [{
    $x (`min` $min^)? (`max` $max^)? attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Mpc_CastOp : Mpc_Op<"cast", [Pure]> {
  let onnxName = "Cast";
  let summary = "element type conversion (ONNX Cast, CastLike)";
  let description = [{
    Converts every element to the result's element type; the shape is kept.
    Float narrowing rounds to nearest even (or saturates when `saturate` is
    set and the target has no infinity). This is also the precision-boundary
    cast inserted by the mixed-precision passes.

    Example:
    ```mlir
    %h = mpc.cast %x : (tensor<8x8xf32>) -> tensor<8x8xf16>
    ```
  }];
  let arguments = (ins Mpc_AnyTensor:$x);
  let results = (outs Mpc_AnyTensor:$y);
  let hasFolder = 1;
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Binary, variadic, comparisons
//===----------------------------------------------------------------------===//

def Mpc_AddOp : Mpc_BinaryOp<"add", "Add", Mpc_NumericTensor, [Mpc_Infer, Commutative]> {
  let hasFolder = 1;
}
def Mpc_SubOp : Mpc_BinaryOp<"sub", "Sub", Mpc_NumericTensor, [Mpc_Infer]> {
  let hasFolder = 1;
}
def Mpc_MulOp : Mpc_BinaryOp<"mul", "Mul", Mpc_NumericTensor, [Mpc_Infer, Commutative]> {
  let hasFolder = 1;
}
def Mpc_DivOp : Mpc_BinaryOp<"div", "Div", Mpc_NumericTensor, [Mpc_Infer]> {
  let hasFolder = 1;
}
def Mpc_ModOp : Mpc_BinaryOp<"mod", "Mod", Mpc_NumericTensor> {
  let arguments = (ins Mpc_NumericTensor:$a, Mpc_NumericTensor:$b,
                   DefaultValuedAttr<BoolAttr, "false">:$fmod);
  let hasFolder = 1;
}
def Mpc_PReluOp : Mpc_BinaryOp<"prelu", "PRelu", Mpc_FloatTensor, [Mpc_Infer]>;
def Mpc_AndOp : Mpc_BinaryOp<"and", "And", Mpc_BoolTensor, [Commutative]> {
  let hasFolder = 1;
}
def Mpc_OrOp : Mpc_BinaryOp<"or", "Or", Mpc_BoolTensor, [Commutative]> {
  let hasFolder = 1;
}
def Mpc_XorOp : Mpc_BinaryOp<"xor", "Xor", Mpc_BoolTensor, [Commutative]> {
  let hasFolder = 1;
}

def Mpc_PowOp : Mpc_Op<"pow", [Mpc_DenyRange, Pure, Mpc_InferByRule<"broadcastAsFirst">]> {
  let onnxName = "Pow";
  let summary = "broadcasting power (ONNX Pow)";
  let description = [{
    `base ^ exponent` with numpy-style broadcasting; the exponent may have
    another numeric element type, the result has the base's.

    Example:
    ```mlir
    %y = mpc.pow %x, %two : (tensor<4x8xf16>, tensor<f32>) -> tensor<4x8xf16>
    ```
  }];
  let arguments = (ins Mpc_NumericTensor:$base, Mpc_NumericTensor:$exponent);
  let results = (outs Mpc_NumericTensor:$y);
}

def Mpc_MaxOp : Mpc_VariadicOp<"max", "Max", [Mpc_Clear]> {
  let hasFolder = 1;
}
def Mpc_MinOp : Mpc_VariadicOp<"min", "Min", [Mpc_Clear]> {
  let hasFolder = 1;
}
def Mpc_SumOp : Mpc_VariadicOp<"sum", "Sum", [Mpc_Infer]>;
def Mpc_MeanOp : Mpc_VariadicOp<"mean", "Mean", [Mpc_Infer]>;

def Mpc_EqualOp : Mpc_CompareOp<"equal", "Equal", Mpc_AnyTensor> {
  let hasFolder = 1;
}
def Mpc_LessOp : Mpc_CompareOp<"less", "Less", Mpc_NumericTensor> {
  let hasFolder = 1;
}
def Mpc_LessOrEqualOp : Mpc_CompareOp<"less_or_equal", "LessOrEqual", Mpc_NumericTensor> {
  let hasFolder = 1;
}
def Mpc_GreaterOp : Mpc_CompareOp<"greater", "Greater", Mpc_NumericTensor> {
  let hasFolder = 1;
}
def Mpc_GreaterOrEqualOp
    : Mpc_CompareOp<"greater_or_equal", "GreaterOrEqual", Mpc_NumericTensor> {
  let hasFolder = 1;
}

def Mpc_WhereOp : Mpc_Op<"where", [Mpc_Clear, Pure, Mpc_InferByRule<"where">]> {
  let onnxName = "Where";
  let summary = "broadcasting select (ONNX Where)";
  let description = [{
    Example:
    ```mlir
    %y = mpc.where %mask, %x, %ninf : (tensor<1x1x8x8xi1>, tensor<2x4x8x8xf32>, tensor<f32>) -> tensor<2x4x8x8xf32>
    ```
  }];
  let arguments = (ins Mpc_BoolTensor:$condition, Mpc_AnyTensor:$x,
                   Mpc_AnyTensor:$y);
  let results = (outs Mpc_AnyTensor:$z);
  let hasFolder = 1;
}

#endif // MPC_ELEMENTWISE_OPS_TD
