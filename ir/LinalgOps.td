//===- LinalgOps.td - matmul, gemm, conv and pooling ops ---*- tablegen -*-===//
//
// The tensor-core candidates (matmul, gemm, conv) and the pooling windows that
// share their spatial shape arithmetic.
//
//===----------------------------------------------------------------------===//

#ifndef MPC_LINALG_OPS_TD
#define MPC_LINALG_OPS_TD

include "ir/MpcDialect.td"

def Mpc_MatMulOp : Mpc_Op<"matmul", [Mpc_AllowTensorCore, Pure, Mpc_InferCustom]> {
  let onnxName = "MatMul";
  let summary = "numpy matrix product (ONNX MatMul)";
  let description = [{
    Batched matrix product with broadcasting of the batch dimensions; 1-D
    operands are promoted and the promoted dimension removed, as in numpy.

    Example:
    ```mlir
    %y = mpc.matmul %a, %b : (tensor<2x4x8x16xf16>, tensor<16x32xf16>) -> tensor<2x4x8x32xf16>
    ```
  }];
  let arguments = (ins Mpc_NumericTensor:$a, Mpc_NumericTensor:$b);
  let results = (outs Mpc_NumericTensor:$y);
}

def Mpc_GemmOp : Mpc_Op<"gemm", [Mpc_AllowTensorCore, Pure, Mpc_InferCustom]> {
  let onnxName = "Gemm";
  let summary = "general matrix multiply (ONNX Gemm)";
  let description = [{
    `alpha * op(A) * op(B) + beta * C` with `op` an optional transpose and C
    unidirectionally broadcast to the result.

    Example:
    ```mlir
    %y = mpc.gemm %x, %w, %b {transB = true} : (tensor<64x784xf32>, tensor<128x784xf32>, tensor<128xf32>) -> tensor<64x128xf32>
    ```
  }];
  let arguments = (ins Mpc_NumericTensor:$a, Mpc_NumericTensor:$b,
                   Optional<Mpc_NumericTensor>:$c,
                   DefaultValuedAttr<F32Attr, "1.0f">:$alpha,
                   DefaultValuedAttr<F32Attr, "1.0f">:$beta,
                   DefaultValuedAttr<BoolAttr, "false">:$transA,
                   DefaultValuedAttr<BoolAttr, "false">:$transB);
  let results = (outs Mpc_NumericTensor:$y);
}

/// Window attributes shared by Conv and the pools. `pads` is
/// [x1_begin, x2_begin, ..., x1_end, x2_end, ...] as in ONNX.
defvar Mpc_WindowAttrs = (ins
  DefaultValuedStrAttr<StrAttr, "NOTSET">:$auto_pad,
  OptionalAttr<DenseI64ArrayAttr>:$kernel_shape,
  OptionalAttr<DenseI64ArrayAttr>:$strides,
  OptionalAttr<DenseI64ArrayAttr>:$pads,
  OptionalAttr<DenseI64ArrayAttr>:$dilations);

def Mpc_ConvOp : Mpc_Op<"conv", [Mpc_AllowTensorCore, Pure, Mpc_InferCustom]> {
  let onnxName = "Conv";
  let summary = "N-d convolution (ONNX Conv)";
  let description = [{
    Cross-correlation of X (N x C x D1..Dn) with W (M x C/group x k1..kn), plus
    an optional bias of M elements. With `channels_last` (set by
    mpc-channels-last, never by the importer) X is N x D1..Dn x C, W is
    M x k1..kn x C/group and the result N x O1..On x M: the layout cuDNN's
    tensor-core kernels read without transposing.

    Example:
    ```mlir
    %y = mpc.conv %x, %w, %b {pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<8x3x32x32xf16>, tensor<16x3x3x3xf16>, tensor<16xf16>) -> tensor<8x16x32x32xf16>
    ```
  }];
  let arguments = !con((ins Mpc_FloatTensor:$x, Mpc_FloatTensor:$w,
                            Optional<Mpc_FloatTensor>:$bias,
                            DefaultValuedAttr<I64Attr, "1">:$group,
                            DefaultValuedAttr<BoolAttr, "false">:$channels_last),
                       Mpc_WindowAttrs);
  let results = (outs Mpc_FloatTensor:$y);
}

def Mpc_ConvTransposeOp : Mpc_Op<"conv_transpose", [Mpc_AllowTensorCore, Pure, Mpc_InferCustom]> {
  let onnxName = "ConvTranspose";
  let summary = "N-d transposed convolution (ONNX ConvTranspose)";
  let description = [{
    The adjoint of conv: each input element scatters W (C x M/group x
    k1..kn) over a window of the output, plus an optional bias of M
    elements. The importer resolves auto_pad and output_shape into explicit
    `pads` and `output_padding` (extra rows at the end of each spatial
    dimension), so the output size is
    `stride * (in - 1) + output_padding + (k - 1) * dilation + 1 - pads`.

    Example:
    ```mlir
    %y = mpc.conv_transpose %x, %w {output_padding = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<8x64x7x7xf16>, tensor<64x32x3x3xf16>) -> tensor<8x32x14x14xf16>
    ```
  }];
  let arguments = (ins Mpc_FloatTensor:$x, Mpc_FloatTensor:$w,
                       Optional<Mpc_FloatTensor>:$bias,
                       DefaultValuedAttr<I64Attr, "1">:$group,
                       OptionalAttr<DenseI64ArrayAttr>:$kernel_shape,
                       OptionalAttr<DenseI64ArrayAttr>:$strides,
                       OptionalAttr<DenseI64ArrayAttr>:$pads,
                       OptionalAttr<DenseI64ArrayAttr>:$dilations,
                       OptionalAttr<DenseI64ArrayAttr>:$output_padding);
  let results = (outs Mpc_FloatTensor:$y);
}

def Mpc_MaxPoolOp : Mpc_Op<"max_pool", [Mpc_Clear, Pure, Mpc_InferCustom]> {
  let onnxName = "MaxPool";
  let summary = "max pooling (ONNX MaxPool)";
  let description = [{
    Also returns the flattened input index of each maximum (ONNX's Indices
    output, row-major unless `storage_order` is 1), which the backward pass
    routes gradients through. With `channels_last` (mpc-channels-last sets
    it where nothing reads the indices but the gradient) x and y are
    N x D1..Dn x C and an index is the element's in that layout.

    Example:
    ```mlir
    %y, %idx = mpc.max_pool %x {kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<8x64x112x112xf32>) -> (tensor<8x64x56x56xf32>, tensor<8x64x56x56xi64>)
    ```
  }];
  let arguments = !con((ins Mpc_NumericTensor:$x,
                            DefaultValuedAttr<BoolAttr, "false">:$ceil_mode,
                            DefaultValuedAttr<I64Attr, "0">:$storage_order,
                            DefaultValuedAttr<BoolAttr, "false">:$channels_last),
                       Mpc_WindowAttrs);
  let results = (outs Mpc_NumericTensor:$y, Mpc_I64Tensor:$indices);
}

def Mpc_AveragePoolOp : Mpc_Op<"average_pool", [Mpc_Infer, Pure, Mpc_InferCustom]> {
  let onnxName = "AveragePool";
  let summary = "average pooling (ONNX AveragePool)";
  let description = [{
    Example:
    ```mlir
    %y = mpc.average_pool %x {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<8x6x28x28xf32>) -> tensor<8x6x14x14xf32>
    ```
  }];
  let arguments = !con((ins Mpc_FloatTensor:$x,
                            DefaultValuedAttr<BoolAttr, "false">:$ceil_mode,
                            DefaultValuedAttr<BoolAttr, "false">:$count_include_pad),
                       Mpc_WindowAttrs);
  let results = (outs Mpc_FloatTensor:$y);
}

def Mpc_GlobalAveragePoolOp
    : Mpc_Op<"global_average_pool", [Mpc_Infer, Pure, Mpc_InferByRule<"globalPool">]> {
  let onnxName = "GlobalAveragePool";
  let summary = "mean over all spatial dimensions (ONNX GlobalAveragePool)";
  let description = [{
    Example:
    ```mlir
    %y = mpc.global_average_pool %x : (tensor<8x512x7x7xf32>) -> tensor<8x512x1x1xf32>
    ```
  }];
  let arguments = (ins Mpc_FloatTensor:$x);
  let results = (outs Mpc_FloatTensor:$y);
}

def Mpc_GlobalMaxPoolOp
    : Mpc_Op<"global_max_pool", [Mpc_Clear, Pure, Mpc_InferByRule<"globalPool">]> {
  let onnxName = "GlobalMaxPool";
  let summary = "max over all spatial dimensions (ONNX GlobalMaxPool)";
  let description = [{
    Example:
    ```mlir
    %y = mpc.global_max_pool %x : (tensor<8x512x7x7xf32>) -> tensor<8x512x1x1xf32>
    ```
  }];
  let arguments = (ins Mpc_FloatTensor:$x);
  let results = (outs Mpc_FloatTensor:$y);
}

#endif // MPC_LINALG_OPS_TD
