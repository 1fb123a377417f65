//===- MpcDialect.td - mpc dialect, type constraints, op base -*- tablegen -*-===//
//
// The `mpc` dialect: one value-semantics op per supported ONNX op (family),
// on builtin ranked tensors of f32, f16, bf16, i64, i32 and i1.
//
//===----------------------------------------------------------------------===//

#ifndef MPC_DIALECT_TD
#define MPC_DIALECT_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def Mpc_Dialect : Dialect {
  let name = "mpc";
  let cppNamespace = "::mlir::mpc";
  let summary = "ONNX-level ops for mixed-precision training";
  let description = [{
    Value-semantics tensor ops mirroring ONNX, plus `mpc.cast`, training ops
    (ONNX `ai.onnx.preview.training`) and `mpc.param` for model parameters.
    Result types are inferred from operand types, attributes and constant
    operands, so folding ONNX shape arithmetic makes types static.
  }];
  let hasConstantMaterializer = 1;
  let dependentDialects = ["::mlir::func::FuncDialect"];
}

//===----------------------------------------------------------------------===//
// Type constraints
//===----------------------------------------------------------------------===//

def Mpc_FloatElem : AnyTypeOf<[F32, F16, BF16]>;
def Mpc_IntElem : AnyTypeOf<[I64, I32]>;
def Mpc_NumericElem : AnyTypeOf<[F32, F16, BF16, I64, I32]>;
def Mpc_AnyElem : AnyTypeOf<[F32, F16, BF16, I64, I32, I1]>;

def Mpc_FloatTensor : RankedTensorOf<[F32, F16, BF16]>;
def Mpc_IntTensor : RankedTensorOf<[I64, I32]>;
def Mpc_I64Tensor : RankedTensorOf<[I64]>;
def Mpc_BoolTensor : RankedTensorOf<[I1]>;
def Mpc_NumericTensor : RankedTensorOf<[F32, F16, BF16, I64, I32]>;
def Mpc_AnyTensor : RankedTensorOf<[F32, F16, BF16, I64, I32, I1]>;

//===----------------------------------------------------------------------===//
// Result type inference traits
//===----------------------------------------------------------------------===//

// Declared result types may be more static than the inferred ones (e.g. a
// reshape whose shape operand is not a constant): types are compatible when
// element types agree and every dimension agrees or one side is dynamic.
// (isCompatibleReturnTypes below).

// The result types follow a shape rule shared by a family of ops
// (ir/ShapeRules.h), e.g. "sameAsFirst", "broadcast" or "reduce"; the rule is
// called with the op's adaptor.
class Mpc_InferByRule<string rule> : TraitList<[
  DeclareOpInterfaceMethods<InferTypeOpInterface>,
  NativeOpTrait<"InferTypeOpAdaptor", [], [{
  static bool isCompatibleReturnTypes(::mlir::TypeRange l, ::mlir::TypeRange r) {
    return ::mlir::mpc::areCompatibleTypes(l, r);
  }
}], [{
    ::llvm::LogicalResult $cppClass::inferReturnTypes(
        ::mlir::MLIRContext *, std::optional<::mlir::Location> loc,
        ::mlir::ValueRange operands, ::mlir::DictionaryAttr attributes,
        ::mlir::OpaqueProperties properties, ::mlir::RegionRange regions,
        ::llvm::SmallVectorImpl<::mlir::Type> &types) {
      $cppClass::Adaptor adaptor(operands, attributes, properties, regions);
      return ::mlir::mpc::rules::}] # rule # [{(loc, adaptor, types);
    }
  }]>
]>;

// The op defines `inferReturnTypes(ctx, loc, Adaptor, types)` by hand.
def Mpc_InferCustom : TraitList<[
  DeclareOpInterfaceMethods<InferTypeOpInterface>,
  NativeOpTrait<"InferTypeOpAdaptor", [], [{
    static ::llvm::LogicalResult inferReturnTypes(::mlir::MLIRContext *ctx,
        std::optional<::mlir::Location> loc, Adaptor adaptor,
        ::llvm::SmallVectorImpl<::mlir::Type> &types);
    static bool isCompatibleReturnTypes(::mlir::TypeRange l, ::mlir::TypeRange r) {
      return ::mlir::mpc::areCompatibleTypes(l, r);
    }
  }], [{
    ::llvm::LogicalResult $cppClass::inferReturnTypes(
        ::mlir::MLIRContext *ctx, std::optional<::mlir::Location> loc,
        ::mlir::ValueRange operands, ::mlir::DictionaryAttr attributes,
        ::mlir::OpaqueProperties properties, ::mlir::RegionRange regions,
        ::llvm::SmallVectorImpl<::mlir::Type> &types) {
      $cppClass::Adaptor adaptor(operands, attributes, properties, regions);
      return $cppClass::inferReturnTypes(ctx, loc, adaptor, types);
    }
  }]>
]>;

//===----------------------------------------------------------------------===//
// Precision classes (mpc-amp-classify; docs/mixed-precision.md)
//===----------------------------------------------------------------------===//

// The class an op gets in mixed precision, with one phrase saying why:
// Allow (always low precision), Infer (follows its float inputs), Clear
// (exact in any precision: follows its neighbours), Deny (always FP32). An
// op with none does no float arithmetic or stays FP32, the safe default.
// Merged from TensorFlow's auto_mixed_precision_lists.h, PyTorch autocast
// and TVM; keyed by mpc op, so the lists cannot go stale across opsets.
class Mpc_Amp<string cls, string reason> : NativeOpTrait<"Amp" # cls> {
  let cppNamespace = "::mlir::mpc";
  string ampClass = cls;
  string ampReason = reason;
}
def Mpc_AllowTensorCore
    : Mpc_Amp<"Allow", "runs on tensor cores with FP32 accumulation">;
def Mpc_DenyReduction
    : Mpc_Amp<"Deny", "sums many terms, so it accumulates in FP32">;
def Mpc_DenyRange
    : Mpc_Amp<"Deny", "its results overflow or lose digits in fp16">;
def Mpc_DenySoftmax
    : Mpc_Amp<"Deny", "exponentials and a normalising sum need FP32">;
def Mpc_DenyNorm : Mpc_Amp<"Deny", "mean and variance statistics need FP32">;
def Mpc_InferBatchNorm
    : Mpc_Amp<"Infer", "reads and writes its input's type; statistics, "
                       "scale and bias in FP32 (as cuDNN's batch norm under "
                       "autocast)">;
def Mpc_DenyLoss : Mpc_Amp<"Deny", "the loss is computed in FP32">;
def Mpc_DenyTranscendental
    : Mpc_Amp<"Deny", "a transcendental approximation kept in FP32">;
def Mpc_Infer
    : Mpc_Amp<"Infer", "safe in low precision, but follows its inputs">;
def Mpc_Clear
    : Mpc_Amp<"Clear", "exact in any precision (moves or selects values)">;

// Only operand 0 takes the op's precision: the other float operands are
// per-channel parameters and statistics, kept FP32 (mpc-amp-classify
// follows operand 0 alone, mpc-insert-casts casts the rest to f32).
def Mpc_Fp32Parameters : NativeOpTrait<"Fp32Parameters"> {
  let cppNamespace = "::mlir::mpc";
}

//===----------------------------------------------------------------------===//
// Op base classes
//===----------------------------------------------------------------------===//

class Mpc_Op<string mnemonic, list<Trait> traits = []>
    : Op<Mpc_Dialect, mnemonic, traits> {
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  /// The ONNX op type the op imports (one of them; "" for mpc's own ops).
  /// Named in precision decisions and matched by --amp-allow/--amp-deny.
  string onnxName = "";
  /// 0 for ops that never reach an execution plan (constants, parameters,
  /// ONNX Gradient before mpc-lower-gradient). Every other op needs a CPU
  /// kernel and a CUDA emitter (or a registered reason why not), checked
  /// against the list mpc-tblgen emits (runtime/OpId.h).
  bit inPlans = 1;
}

/// Float -> float elementwise op computed per element (exp, tanh, gelu...).
class Mpc_UnaryFloatOp<string mnemonic, string onnx, list<Trait> traits = []>
    : Mpc_Op<mnemonic, !listconcat([Pure, Mpc_InferByRule<"sameAsFirst">], traits)> {
  let onnxName = onnx;
  let summary = "elementwise " # onnx # " (ONNX " # onnx # ")";
  let description = "Applies ONNX `" # onnx # "` to every element; the "
    # "result has the operand's type.\n\nExample:\n```mlir\n%y = mpc." # mnemonic
    # " %x : (tensor<2x3xf16>) -> tensor<2x3xf16>\n```";
  let arguments = (ins Mpc_FloatTensor:$x);
  let results = (outs Mpc_FloatTensor:$y);
}

/// Elementwise op on floats and integers (abs, neg, relu, sign).
class Mpc_UnaryNumericOp<string mnemonic, string onnx, list<Trait> traits = []>
    : Mpc_Op<mnemonic, !listconcat([Pure, Mpc_InferByRule<"sameAsFirst">], traits)> {
  let onnxName = onnx;
  let summary = "elementwise " # onnx # " (ONNX " # onnx # ")";
  let description = "Applies ONNX `" # onnx # "` to every element; the "
    # "result has the operand's type.\n\nExample:\n```mlir\n%y = mpc." # mnemonic
    # " %x : (tensor<4xi64>) -> tensor<4xi64>\n```";
  let arguments = (ins Mpc_NumericTensor:$x);
  let results = (outs Mpc_NumericTensor:$y);
}

/// Binary op with ONNX multidirectional (numpy) broadcasting.
class Mpc_BinaryOp<string mnemonic, string onnx, TypeConstraint operandType,
                   list<Trait> traits = []>
    : Mpc_Op<mnemonic, !listconcat([Pure, Mpc_InferByRule<"broadcast">], traits)> {
  let onnxName = onnx;
  let summary = "broadcasting elementwise " # onnx # " (ONNX " # onnx # ")";
  let description = "ONNX `" # onnx # "` with numpy-style broadcasting; "
    # "both operands have one element type.\n\nExample:\n```mlir\n%z = mpc."
    # mnemonic # " %a, %b : (tensor<8x1xf32>, tensor<4xf32>) -> tensor<8x4xf32>\n```";
  let arguments = (ins operandType:$a, operandType:$b);
  let results = (outs operandType:$c);
}

/// Broadcasting comparison producing i1.
class Mpc_CompareOp<string mnemonic, string onnx, TypeConstraint operandType>
    : Mpc_Op<mnemonic, [Pure, Mpc_Clear, Mpc_InferByRule<"broadcastToBool">]> {
  let onnxName = onnx;
  let summary = "broadcasting comparison " # onnx # " (ONNX " # onnx # ")";
  let description = "ONNX `" # onnx # "` with numpy-style broadcasting; "
    # "the result is i1.\n\nExample:\n```mlir\n%m = mpc." # mnemonic
    # " %a, %b : (tensor<4x4xi64>, tensor<4x1xi64>) -> tensor<4x4xi1>\n```";
  let arguments = (ins operandType:$a, operandType:$b);
  let results = (outs Mpc_BoolTensor:$c);
}

/// Variadic broadcasting op (Max, Min, Sum, Mean).
class Mpc_VariadicOp<string mnemonic, string onnx, list<Trait> traits = []>
    : Mpc_Op<mnemonic, !listconcat([Pure, Mpc_InferByRule<"broadcast">], traits)> {
  let onnxName = onnx;
  let summary = "variadic broadcasting " # onnx # " (ONNX " # onnx # ")";
  let description = "ONNX `" # onnx # "` over one or more operands of one "
    # "element type, with numpy-style broadcasting.\n\nExample:\n```mlir\n%m = mpc."
    # mnemonic # " %a, %b, %c : (tensor<4xf32>, tensor<1xf32>, tensor<4xf32>) -> tensor<4xf32>\n```";
  let arguments = (ins Variadic<Mpc_NumericTensor>:$inputs);
  let results = (outs Mpc_NumericTensor:$y);
}

/// ONNX Reduce* op; `axes` empty or absent means all axes unless
/// `noop_with_empty_axes` is set.
class Mpc_ReduceOp<string mnemonic, string onnx, TypeConstraint type,
                   list<Trait> traits = []>
    : Mpc_Op<mnemonic, !listconcat([Pure, Mpc_InferByRule<"reduce">], traits)> {
  let onnxName = onnx;
  let summary = "reduction " # onnx # " (ONNX " # onnx # ")";
  let description = "ONNX `" # onnx # "` over `axes` (absent: all axes), "
    # "keeping reduced dimensions as 1 when `keepdims`. Axes are always an "
    # "attribute here, whatever the opset passed them as.\n\nExample:\n```mlir\n"
    # "%s = mpc." # mnemonic # " %x {axes = array<i64: 1>, keepdims = false} : "
    # "(tensor<8x16xf32>) -> tensor<8xf32>\n```";
  let arguments = (ins type:$x, OptionalAttr<DenseI64ArrayAttr>:$axes,
                   DefaultValuedAttr<BoolAttr, "true">:$keepdims,
                   DefaultValuedAttr<BoolAttr, "false">:$noop_with_empty_axes);
  let results = (outs type:$y);
}

#endif // MPC_DIALECT_TD
