//===- ShapeOps.td - constants, data movement and shape ops -*- tablegen -*-===//
//
// Ops whose result shape may depend on the *value* of an operand (reshape,
// expand, slice...). Their inference reads constant operands, so once ONNX
// shape arithmetic is folded every type becomes static.
//
//===----------------------------------------------------------------------===//

#ifndef MPC_SHAPE_OPS_TD
#define MPC_SHAPE_OPS_TD

include "ir/MpcDialect.td"

def Mpc_ConstantOp : Mpc_Op<"constant", [ConstantLike, Pure,
                                         Mpc_InferByRule<"constantValue">]> {
  let summary = "constant tensor (ONNX Constant, non-trainable initializers)";
  let inPlans = 0; // plan constants
  let description = [{
    Example:
    ```mlir
    %shape = mpc.constant dense<[0, -1]> : tensor<2xi64>
    ```
  }];
  let arguments = (ins ElementsAttr:$value);
  let results = (outs Mpc_AnyTensor:$output);
  let assemblyFormat = "attr-dict $value";
  let hasFolder = 1;
}

def Mpc_ParamOp : Op<Mpc_Dialect, "param", [Symbol, HasParent<"::mlir::ModuleOp">]> {
  let summary = "a model parameter and its initial value";
  bit inPlans = 0; // plan parameters
  let description = [{
    One per float initializer that is model state: trainable weights, or
    (without `trainable`) running statistics such as BatchNormalization's
    mean and variance; and one per initializer of any type that a
    TrainingInfoProto update binding writes (an integer step counter).
    Functions receive the value as an argument tagged
    `mpc.param = @name`, so master weights, optimizer state and loss-scale
    state stay visible in the IR.

    Example:
    ```mlir
    mpc.param @"fc1.weight" trainable : tensor<2x2xf32> = dense<[[1.0, 2.0], [3.0, 4.0]]>
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name, UnitAttr:$trainable,
                   TypeAttrOf<Mpc_AnyTensor>:$type, ElementsAttr:$value);
  let assemblyFormat = [{
    $sym_name (`trainable` $trainable^)? attr-dict `:` $type `=` $value
  }];
  let hasVerifier = 1;
}

def Mpc_ShapeOp : Mpc_Op<"shape", [Pure, Mpc_InferByRule<"shapeOf">]> {
  let onnxName = "Shape";
  // Folds at import whenever its result is static, and plans are static.
  let inPlans = 0;
  let summary = "shape of a tensor as i64 (ONNX Shape)";
  let description = [{
    Dimensions `start` to `end` (Python-style, negatives allowed). Folds to a
    constant when those dimensions are static.

    Example:
    ```mlir
    %s = mpc.shape %x : (tensor<?x16x64xf32>) -> tensor<3xi64>
    ```
  }];
  let arguments = (ins Mpc_AnyTensor:$x, OptionalAttr<I64Attr>:$start,
                   OptionalAttr<I64Attr>:$end);
  let results = (outs Mpc_I64Tensor:$shape);
  let hasFolder = 1;
}

def Mpc_SizeOp : Mpc_Op<"size", [Pure, Mpc_InferByRule<"scalarI64">]> {
  let onnxName = "Size";
  // Folds at import whenever its result is static, and plans are static.
  let inPlans = 0;
  let summary = "number of elements as an i64 scalar (ONNX Size)";
  let description = [{
    Example:
    ```mlir
    %n = mpc.size %x : (tensor<4x16xf32>) -> tensor<i64>
    ```
  }];
  let arguments = (ins Mpc_AnyTensor:$x);
  let results = (outs Mpc_I64Tensor:$size);
  let hasFolder = 1;
}

def Mpc_ReshapeOp : Mpc_Op<"reshape", [Mpc_Clear, Pure, Mpc_InferCustom]> {
  let onnxName = "Reshape";
  let summary = "reshape (ONNX Reshape)";
  let description = [{
    The shape operand may hold 0 (copy the input dimension, unless
    `allowzero`) and one -1 (inferred).

    Example:
    ```mlir
    %y = mpc.reshape %x, %s : (tensor<4x16x64xf32>, tensor<4xi64>) -> tensor<4x16x8x8xf32>
    ```
  }];
  let arguments = (ins Mpc_AnyTensor:$data, Mpc_I64Tensor:$shape,
                   DefaultValuedAttr<BoolAttr, "false">:$allowzero);
  let results = (outs Mpc_AnyTensor:$reshaped);
  let hasFolder = 1;
}

def Mpc_TransposeOp : Mpc_Op<"transpose", [Mpc_Clear, Pure, Mpc_InferCustom]> {
  let onnxName = "Transpose";
  let summary = "permute dimensions (ONNX Transpose)";
  let description = [{
    Without `perm` the dimensions are reversed.

    Example:
    ```mlir
    %y = mpc.transpose %x {perm = array<i64: 0, 2, 1, 3>} : (tensor<4x16x8x8xf32>) -> tensor<4x8x16x8xf32>
    ```
  }];
  let arguments = (ins Mpc_AnyTensor:$x, OptionalAttr<DenseI64ArrayAttr>:$perm);
  let results = (outs Mpc_AnyTensor:$y);
  let hasFolder = 1;
}

def Mpc_ConcatOp : Mpc_Op<"concat", [Mpc_Clear, Pure, Mpc_InferCustom]> {
  let onnxName = "Concat";
  let summary = "concatenate along an axis (ONNX Concat)";
  let description = [{
    Example:
    ```mlir
    %s = mpc.concat %a, %b {axis = 0 : i64} : (tensor<1xi64>, tensor<2xi64>) -> tensor<3xi64>
    ```
  }];
  let arguments = (ins Variadic<Mpc_AnyTensor>:$inputs, I64Attr:$axis);
  let results = (outs Mpc_AnyTensor:$concat);
  let hasFolder = 1;
}

def Mpc_SplitOp : Mpc_Op<"split", [Mpc_Clear, Pure, Mpc_InferCustom]> {
  let onnxName = "Split";
  let summary = "split along an axis (ONNX Split)";
  let description = [{
    Into `num_outputs` parts of sizes `split` when given, else equal parts
    (the last one smaller when the size does not divide, as in opset 18).

    Example:
    ```mlir
    %q, %k, %v = mpc.split %qkv {axis = 2 : i64, num_outputs = 3 : i64} : (tensor<4x16x192xf32>) -> (tensor<4x16x64xf32>, tensor<4x16x64xf32>, tensor<4x16x64xf32>)
    ```
  }];
  let arguments = (ins Mpc_AnyTensor:$x, I64Attr:$axis, I64Attr:$num_outputs,
                   OptionalAttr<DenseI64ArrayAttr>:$split);
  let results = (outs Variadic<Mpc_AnyTensor>:$outputs);
  let hasFolder = 1;
}

def Mpc_SliceOp : Mpc_Op<"slice", [Mpc_Clear, Pure, AttrSizedOperandSegments, Mpc_InferCustom]> {
  let onnxName = "Slice";
  let summary = "strided slice (ONNX Slice)";
  let description = [{
    Starts and ends are clamped as ONNX specifies; missing `axes` means the
    leading axes, missing `steps` means 1.

    Example:
    ```mlir
    %y = mpc.slice %x, %starts, %ends axes %axes : (tensor<1x1x1024x1024xf32>, tensor<2xi64>, tensor<2xi64>, tensor<2xi64>) -> tensor<1x1x16x16xf32>
    ```
  }];
  let arguments = (ins Mpc_AnyTensor:$data, Mpc_IntTensor:$starts,
                   Mpc_IntTensor:$ends, Optional<Mpc_IntTensor>:$axes,
                   Optional<Mpc_IntTensor>:$steps);
  let results = (outs Mpc_AnyTensor:$output);
  let assemblyFormat = [{
    $data `,` $starts `,` $ends (`axes` $axes^)? (`steps` $steps^)? attr-dict
    `:` functional-type(operands, results)
  }];
  let hasFolder = 1;
}

def Mpc_SqueezeOp : Mpc_Op<"squeeze", [Mpc_Clear, Pure, Mpc_InferCustom]> {
  let onnxName = "Squeeze";
  let summary = "remove size-1 dimensions (ONNX Squeeze)";
  let description = [{
    Without `axes`, every static size-1 dimension is removed.

    Example:
    ```mlir
    %y = mpc.squeeze %x {axes = array<i64: 0>} : (tensor<1x4xi64>) -> tensor<4xi64>
    ```
  }];
  let arguments = (ins Mpc_AnyTensor:$x, OptionalAttr<DenseI64ArrayAttr>:$axes);
  let results = (outs Mpc_AnyTensor:$y);
  let hasFolder = 1;
}

def Mpc_UnsqueezeOp : Mpc_Op<"unsqueeze", [Mpc_Clear, Pure, Mpc_InferCustom]> {
  let onnxName = "Unsqueeze";
  let summary = "insert size-1 dimensions (ONNX Unsqueeze)";
  let description = [{
    Example:
    ```mlir
    %y = mpc.unsqueeze %x {axes = array<i64: 0>} : (tensor<i64>) -> tensor<1xi64>
    ```
  }];
  let arguments = (ins Mpc_AnyTensor:$x, DenseI64ArrayAttr:$axes);
  let results = (outs Mpc_AnyTensor:$y);
  let hasFolder = 1;
}

def Mpc_FlattenOp : Mpc_Op<"flatten", [Mpc_Clear, Pure, Mpc_InferCustom]> {
  let onnxName = "Flatten";
  let summary = "flatten to 2-D (ONNX Flatten)";
  let description = [{
    Example:
    ```mlir
    %y = mpc.flatten %x {axis = 1 : i64} : (tensor<8x512x1x1xf32>) -> tensor<8x512xf32>
    ```
  }];
  let arguments = (ins Mpc_AnyTensor:$x, DefaultValuedAttr<I64Attr, "1">:$axis);
  let results = (outs Mpc_AnyTensor:$y);
}

def Mpc_ExpandOp : Mpc_Op<"expand", [Mpc_Clear, Pure, Mpc_InferCustom]> {
  let onnxName = "Expand";
  let summary = "broadcast to a shape (ONNX Expand)";
  let description = [{
    Example:
    ```mlir
    %y = mpc.expand %x, %s : (tensor<1x16xi64>, tensor<2xi64>) -> tensor<4x16xi64>
    ```
  }];
  let arguments = (ins Mpc_AnyTensor:$x, Mpc_I64Tensor:$shape);
  let results = (outs Mpc_AnyTensor:$y);
  let hasFolder = 1;
}

def Mpc_TileOp : Mpc_Op<"tile", [Mpc_Clear, Pure, Mpc_InferCustom]> {
  let onnxName = "Tile";
  let summary = "repeat along each axis (ONNX Tile)";
  let description = [{
    Example:
    ```mlir
    %y = mpc.tile %x, %r : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<4x3xf32>
    ```
  }];
  let arguments = (ins Mpc_AnyTensor:$x, Mpc_I64Tensor:$repeats);
  let results = (outs Mpc_AnyTensor:$y);
}

def Mpc_PadOp : Mpc_Op<"pad", [Mpc_Clear, Pure, Mpc_InferCustom]> {
  let onnxName = "Pad";
  let summary = "pad (ONNX Pad; pads and axes as attributes)";
  let description = [{
    `pads` is [x1_begin, ..., xn_begin, x1_end, ..., xn_end] over `axes`
    (default: all axes); `mode` is constant, reflect, edge or wrap.

    Example:
    ```mlir
    %y = mpc.pad %x, %zero {pads = array<i64: 0, 1, 0, 1>} : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x5xf32>
    ```
  }];
  let arguments = (ins Mpc_AnyTensor:$x, Mpc_AnyTensor:$constant_value,
                   DenseI64ArrayAttr:$pads, OptionalAttr<DenseI64ArrayAttr>:$axes,
                   DefaultValuedStrAttr<StrAttr, "constant">:$mode);
  let results = (outs Mpc_AnyTensor:$y);
  let hasFolder = 1;
}

def Mpc_GatherOp : Mpc_Op<"gather", [Mpc_Clear, Pure, Mpc_InferCustom]> {
  let onnxName = "Gather";
  let summary = "gather slices along an axis (ONNX Gather; embeddings)";
  let description = [{
    With `padding_idx` (torch's Embedding(padding_idx=p), read from
    torch.onnx.export's record of the aten op) the slice at index p gets
    no gradient from this gather, as in torch.

    Example:
    ```mlir
    %e = mpc.gather %table, %ids {axis = 0 : i64} : (tensor<50257x768xf32>, tensor<4x16xi64>) -> tensor<4x16x768xf32>
    ```
  }];
  let arguments = (ins Mpc_AnyTensor:$data, Mpc_IntTensor:$indices,
                   DefaultValuedAttr<I64Attr, "0">:$axis,
                   OptionalAttr<I64Attr>:$padding_idx);
  let results = (outs Mpc_AnyTensor:$output);
  let hasFolder = 1;
}

def Mpc_GatherElementsOp
    : Mpc_Op<"gather_elements", [Mpc_Clear, Pure, Mpc_InferCustom]> {
  let onnxName = "GatherElements";
  let summary = "gather single elements along an axis (ONNX GatherElements)";
  let description = [{
    Example:
    ```mlir
    %y = mpc.gather_elements %x, %i {axis = 1 : i64} : (tensor<3x3xf32>, tensor<3x2xi64>) -> tensor<3x2xf32>
    ```
  }];
  let arguments = (ins Mpc_AnyTensor:$data, Mpc_IntTensor:$indices,
                   DefaultValuedAttr<I64Attr, "0">:$axis);
  let results = (outs Mpc_AnyTensor:$output);
}

def Mpc_GatherNDOp : Mpc_Op<"gather_nd", [Mpc_Clear, Pure, Mpc_InferCustom]> {
  let onnxName = "GatherND";
  let summary = "gather by index tuples (ONNX GatherND)";
  let description = [{
    Example:
    ```mlir
    %y = mpc.gather_nd %x, %i {batch_dims = 0 : i64} : (tensor<2x2xf32>, tensor<2x2xi64>) -> tensor<2xf32>
    ```
  }];
  let arguments = (ins Mpc_AnyTensor:$data, Mpc_I64Tensor:$indices,
                   DefaultValuedAttr<I64Attr, "0">:$batch_dims);
  let results = (outs Mpc_AnyTensor:$output);
}

def Mpc_ScatterNDOp : Mpc_Op<"scatter_nd", [Mpc_Clear, Pure, Mpc_InferByRule<"sameAsFirst">]> {
  let onnxName = "ScatterND";
  let summary = "scatter by index tuples (ONNX ScatterND)";
  let description = [{
    A copy of `data` with the slice each index tuple selects replaced by
    (`reduction` none) or combined with (add, mul, max, min) its slice of
    `updates`, tuples in order. Index tuples that enumerate every element
    of `data` in order (as torch exports `x[..., :n] = y` over all of x)
    fold to `updates`.

    Example:
    ```mlir
    %y = mpc.scatter_nd %x, %i, %u {reduction = "add"} : (tensor<4x3xf32>, tensor<2x1xi64>, tensor<2x3xf32>) -> tensor<4x3xf32>
    ```
  }];
  let arguments = (ins Mpc_AnyTensor:$data, Mpc_I64Tensor:$indices,
                   Mpc_AnyTensor:$updates,
                   DefaultValuedAttr<StrAttr, "\"none\"">:$reduction);
  let results = (outs Mpc_AnyTensor:$output);
  let hasFolder = 1;
}

def Mpc_ScatterElementsOp
    : Mpc_Op<"scatter_elements", [Mpc_Clear, Pure, Mpc_InferCustom]> {
  let onnxName = "ScatterElements";
  let summary = "scatter single elements along an axis (ONNX ScatterElements)";
  let description = [{
    A copy of `data` where each element of `updates` replaces (`reduction`
    none) or is combined with (add, mul, max, min) the element at its own
    coordinates but for `axis`, where its index says; updates in index
    order, so repeated indices combine (or the last one wins).

    Example:
    ```mlir
    %y = mpc.scatter_elements %x, %i, %u {axis = 1 : i64} : (tensor<2x4xi64>, tensor<2x1xi64>, tensor<2x1xi64>) -> tensor<2x4xi64>
    ```
  }];
  let arguments = (ins Mpc_AnyTensor:$data, Mpc_IntTensor:$indices,
                   Mpc_AnyTensor:$updates,
                   DefaultValuedAttr<I64Attr, "0">:$axis,
                   DefaultValuedAttr<StrAttr, "\"none\"">:$reduction);
  let results = (outs Mpc_AnyTensor:$output);
}

def Mpc_ConstantOfShapeOp
    : Mpc_Op<"constant_of_shape", [Pure, Mpc_InferCustom]> {
  let onnxName = "ConstantOfShape";
  // Folds at import whenever its result is static, and plans are static.
  let inPlans = 0;
  let summary = "tensor filled with one value (ONNX ConstantOfShape)";
  let description = [{
    `value` is a one-element tensor giving the element type and fill value.

    Example:
    ```mlir
    %z = mpc.constant_of_shape %s {value = dense<0.0> : tensor<1xf32>} : (tensor<2xi64>) -> tensor<4x16xf32>
    ```
  }];
  let arguments = (ins Mpc_I64Tensor:$shape, ElementsAttr:$value);
  let results = (outs Mpc_AnyTensor:$output);
  let hasFolder = 1;
}

def Mpc_RangeOp : Mpc_Op<"range", [Pure, Mpc_InferCustom]> {
  let onnxName = "Range";
  let summary = "arithmetic sequence (ONNX Range)";
  let description = [{
    Example:
    ```mlir
    %pos = mpc.range %zero, %n, %one : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<16xi64>
    ```
  }];
  let arguments = (ins Mpc_NumericTensor:$start, Mpc_NumericTensor:$limit,
                   Mpc_NumericTensor:$delta);
  let results = (outs Mpc_NumericTensor:$output);
  let hasFolder = 1;
}

#endif // MPC_SHAPE_OPS_TD
