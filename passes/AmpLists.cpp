//===- AmpLists.cpp - the AMP op classes ----------------------------------===//
//
// Merged from TensorFlow's auto_mixed_precision_lists.h, PyTorch autocast
// and TVM (see docs/mixed-precision.md for the choices where they differ).
// The table is keyed by mpc op: the importer normalises every opset (1-21)
// to one mpc form, so the lists cannot go stale across opsets. Ops not in
// the table either do no float arithmetic or stay FP32 by default.
//
//===----------------------------------------------------------------------===//

#include "passes/AmpLists.h"

#include "llvm/ADT/SmallVector.h"

using namespace mlir::mpc;

namespace {

constexpr AmpClass A = AmpClass::Allow, I = AmpClass::Infer,
                   C = AmpClass::Clear, D = AmpClass::Deny;

const char *kTensorCore = "runs on tensor cores with FP32 accumulation";
const char *kReduction = "sums many terms, so it accumulates in FP32";
const char *kRange = "its results overflow or lose digits in fp16";
const char *kSoftmax = "exponentials and a normalising sum need FP32";
const char *kNorm = "mean and variance statistics need FP32";
const char *kLoss = "the loss is computed in FP32";
const char *kTranscendental = "a transcendental approximation kept in FP32";
const char *kInfer = "safe in low precision, but follows its inputs";
const char *kExact = "exact in any precision (moves or selects values)";

const AmpOpInfo kTable[] = {
    {"matmul", "MatMul", A, kTensorCore},
    {"gemm", "Gemm", A, kTensorCore},
    {"conv", "Conv", A, kTensorCore},

    {"exp", "Exp", D, kRange},
    {"log", "Log", D, kRange},
    {"pow", "Pow", D, kRange},
    {"softmax", "Softmax", D, kSoftmax},
    {"log_softmax", "LogSoftmax", D, kSoftmax},
    {"reduce_sum", "ReduceSum", D, kReduction},
    {"reduce_mean", "ReduceMean", D, kReduction},
    {"reduce_prod", "ReduceProd", D, kReduction},
    {"reduce_l1", "ReduceL1", D, kReduction},
    {"reduce_l2", "ReduceL2", D, kReduction},
    {"reduce_log_sum", "ReduceLogSum", D, kReduction},
    {"reduce_log_sum_exp", "ReduceLogSumExp", D, kReduction},
    {"reduce_sum_square", "ReduceSumSquare", D, kReduction},
    {"cum_sum", "CumSum", D, kReduction},
    {"layer_norm", "LayerNormalization", D, kNorm},
    {"batch_norm", "BatchNormalization", D, kNorm},
    {"batch_norm_train", "BatchNormalization", D, kNorm},
    {"erf", "Erf", D, kTranscendental},
    {"softmax_cross_entropy_loss", "SoftmaxCrossEntropyLoss", D, kLoss},
    {"nll_loss", "NegativeLogLikelihoodLoss", D, kLoss},

    {"add", "Add", I, kInfer},
    {"sub", "Sub", I, kInfer},
    {"mul", "Mul", I, kInfer},
    {"div", "Div", I, kInfer},
    {"sum", "Sum", I, kInfer},
    {"mean", "Mean", I, kInfer},
    {"average_pool", "AveragePool", I, kInfer},
    {"global_average_pool", "GlobalAveragePool", I, kInfer},
    {"elu", "Elu", I, kInfer},
    {"selu", "Selu", I, kInfer},
    {"celu", "Celu", I, kInfer},
    {"leaky_relu", "LeakyRelu", I, kInfer},
    {"prelu", "PRelu", I, kInfer},
    {"thresholded_relu", "ThresholdedRelu", I, kInfer},
    {"sigmoid", "Sigmoid", I, kInfer},
    {"hard_sigmoid", "HardSigmoid", I, kInfer},
    {"hard_swish", "HardSwish", I, kInfer},
    {"tanh", "Tanh", I, kInfer},
    {"softplus", "Softplus", I, kInfer},
    {"softsign", "Softsign", I, kInfer},
    {"mish", "Mish", I, kInfer},
    {"sqrt", "Sqrt", I, kInfer},
    {"reciprocal", "Reciprocal", I, kInfer},
    {"gelu", "Gelu", I, kInfer},

    {"reshape", "Reshape", C, kExact},
    {"transpose", "Transpose", C, kExact},
    {"concat", "Concat", C, kExact},
    {"split", "Split", C, kExact},
    {"slice", "Slice", C, kExact},
    {"gather", "Gather", C, kExact},
    {"gather_nd", "GatherND", C, kExact},
    {"gather_elements", "GatherElements", C, kExact},
    {"pad", "Pad", C, kExact},
    {"tile", "Tile", C, kExact},
    {"squeeze", "Squeeze", C, kExact},
    {"unsqueeze", "Unsqueeze", C, kExact},
    {"flatten", "Flatten", C, kExact},
    {"identity", "Identity", C, kExact},
    {"expand", "Expand", C, kExact},
    {"trilu", "Trilu", C, kExact},
    {"relu", "Relu", C, kExact},
    {"max_pool", "MaxPool", C, kExact},
    {"global_max_pool", "GlobalMaxPool", C, kExact},
    {"reduce_max", "ReduceMax", C, kExact},
    {"reduce_min", "ReduceMin", C, kExact},
    {"max", "Max", C, kExact},
    {"min", "Min", C, kExact},
    {"clip", "Clip", C, kExact},
    {"abs", "Abs", C, kExact},
    {"neg", "Neg", C, kExact},
    {"sign", "Sign", C, kExact},
    {"floor", "Floor", C, kExact},
    {"ceil", "Ceil", C, kExact},
    {"round", "Round", C, kExact},
    {"equal", "Equal", C, kExact},
    {"greater", "Greater", C, kExact},
    {"greater_or_equal", "GreaterOrEqual", C, kExact},
    {"less", "Less", C, kExact},
    {"less_or_equal", "LessOrEqual", C, kExact},
    {"where", "Where", C, kExact},
    {"arg_max", "ArgMax", C, kExact},
    {"arg_min", "ArgMin", C, kExact},
    {"is_inf", "IsInf", C, kExact},
    {"is_nan", "IsNaN", C, kExact},
    {"dropout", "Dropout", C, kExact},
};

} // namespace

const AmpOpInfo *mlir::mpc::ampInfo(llvm::StringRef mnemonic) {
  for (const AmpOpInfo &row : kTable)
    if (row.mnemonic == mnemonic)
      return &row;
  return nullptr;
}

llvm::SmallVector<const AmpOpInfo *>
mlir::mpc::ampInfoForOnnx(llvm::StringRef onnx) {
  llvm::SmallVector<const AmpOpInfo *> rows;
  for (const AmpOpInfo &row : kTable)
    if (row.onnx == onnx)
      rows.push_back(&row);
  return rows;
}

llvm::StringRef mlir::mpc::className(AmpClass c) {
  switch (c) {
  case AmpClass::Allow:
    return "allow";
  case AmpClass::Infer:
    return "infer";
  case AmpClass::Clear:
    return "clear";
  case AmpClass::Deny:
    return "deny";
  }
  return "";
}
