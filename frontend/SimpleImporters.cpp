//===- SimpleImporters.cpp - ONNX ops that map 1:1 onto an mpc op ---------===//
//
// Most ops map 1:1 onto an mpc op with renamed/retyped attributes: a table
// row each. Ops whose signature changed across opsets have a function each
// in NodeImporters.cpp.
//
//===----------------------------------------------------------------------===//

#include "frontend/ImporterImpl.h"

#include "llvm/ADT/StringMap.h"

using namespace mlir;

namespace mlir::mpc::importer {
namespace {

enum class Kind { I64, F32, Bool, Str, I64s };

struct AttrSpec {
  llvm::StringLiteral name;
  Kind kind;
};

struct SimpleOp {
  llvm::StringLiteral mpcOp;
  std::vector<AttrSpec> attrs;
  /// ONNX attributes accepted and dropped because they cannot change the
  /// result mpc computes.
  std::vector<llvm::StringRef> ignored = {};
};

const std::vector<AttrSpec> kWindowAttrs = {{"auto_pad", Kind::Str},
                                            {"kernel_shape", Kind::I64s},
                                            {"strides", Kind::I64s},
                                            {"pads", Kind::I64s},
                                            {"dilations", Kind::I64s}};

std::vector<AttrSpec> withWindow(std::vector<AttrSpec> extra) {
  extra.insert(extra.end(), kWindowAttrs.begin(), kWindowAttrs.end());
  return extra;
}

const llvm::StringMap<SimpleOp> &simpleOps() {
  static const llvm::StringMap<SimpleOp> table = [] {
    llvm::StringMap<SimpleOp> t;
    for (auto [onnx, mpc] : std::initializer_list<std::pair<const char *, llvm::StringLiteral>>{
             {"Exp", "mpc.exp"}, {"Log", "mpc.log"}, {"Sqrt", "mpc.sqrt"},
             {"Reciprocal", "mpc.reciprocal"}, {"Tanh", "mpc.tanh"},
             {"Sigmoid", "mpc.sigmoid"}, {"Erf", "mpc.erf"}, {"Sin", "mpc.sin"},
             {"Tan", "mpc.tan"}, {"Asin", "mpc.asin"}, {"Acos", "mpc.acos"},
             {"Sinh", "mpc.sinh"}, {"Cosh", "mpc.cosh"},
             {"Asinh", "mpc.asinh"}, {"Acosh", "mpc.acosh"},
             {"Atanh", "mpc.atanh"},
             {"Cos", "mpc.cos"}, {"Softplus", "mpc.softplus"},
             {"Softsign", "mpc.softsign"}, {"Floor", "mpc.floor"},
             {"Ceil", "mpc.ceil"}, {"Round", "mpc.round"},
             {"HardSwish", "mpc.hard_swish"}, {"Mish", "mpc.mish"},
             {"Atan", "mpc.atan"},
             {"Abs", "mpc.abs"}, {"Neg", "mpc.neg"}, {"Relu", "mpc.relu"},
             {"Sign", "mpc.sign"}, {"Identity", "mpc.identity"},
             {"Not", "mpc.not"}, {"IsNaN", "mpc.is_nan"}, {"Add", "mpc.add"},
             {"Sub", "mpc.sub"}, {"Mul", "mpc.mul"}, {"Div", "mpc.div"},
             {"PRelu", "mpc.prelu"}, {"And", "mpc.and"}, {"Or", "mpc.or"},
             {"Xor", "mpc.xor"}, {"Pow", "mpc.pow"}, {"Equal", "mpc.equal"},
             {"Less", "mpc.less"}, {"LessOrEqual", "mpc.less_or_equal"},
             {"Greater", "mpc.greater"},
             {"GreaterOrEqual", "mpc.greater_or_equal"}, {"Where", "mpc.where"},
             {"Max", "mpc.max"}, {"Min", "mpc.min"}, {"Sum", "mpc.sum"},
             {"Mean", "mpc.mean"}, {"MatMul", "mpc.matmul"},
             {"GlobalAveragePool", "mpc.global_average_pool"},
             {"GlobalMaxPool", "mpc.global_max_pool"}, {"Size", "mpc.size"},
             {"Expand", "mpc.expand"}, {"Tile", "mpc.tile"}})
      t.try_emplace(onnx, SimpleOp{mpc, {}});
    t.try_emplace("Gelu", SimpleOp{"mpc.gelu", {{"approximate", Kind::Str}}});
    for (auto [onnx, mpc] : std::initializer_list<std::pair<const char *, llvm::StringLiteral>>{
             {"LeakyRelu", "mpc.leaky_relu"}, {"Elu", "mpc.elu"},
             {"Celu", "mpc.celu"}, {"ThresholdedRelu", "mpc.thresholded_relu"}})
      t.try_emplace(onnx, SimpleOp{mpc, {{"alpha", Kind::F32}}});
    t.try_emplace("Selu", SimpleOp{"mpc.selu", {{"alpha", Kind::F32},
                                                {"gamma", Kind::F32}}});
    t.try_emplace("HardSigmoid",
                  SimpleOp{"mpc.hard_sigmoid",
                           {{"alpha", Kind::F32}, {"beta", Kind::F32}}});
    t.try_emplace("IsInf", SimpleOp{"mpc.is_inf",
                                    {{"detect_negative", Kind::Bool},
                                     {"detect_positive", Kind::Bool}}});
    t.try_emplace("Mod", SimpleOp{"mpc.mod", {{"fmod", Kind::Bool}}});
    t.try_emplace("Gemm", SimpleOp{"mpc.gemm",
                                   {{"alpha", Kind::F32},
                                    {"beta", Kind::F32},
                                    {"transA", Kind::Bool},
                                    {"transB", Kind::Bool}}});
    t.try_emplace("Conv",
                  SimpleOp{"mpc.conv", withWindow({{"group", Kind::I64}})});
    t.try_emplace("MaxPool",
                  SimpleOp{"mpc.max_pool",
                           withWindow({{"ceil_mode", Kind::Bool},
                                       {"storage_order", Kind::I64}})});
    t.try_emplace("AveragePool",
                  SimpleOp{"mpc.average_pool",
                           withWindow({{"ceil_mode", Kind::Bool},
                                       {"count_include_pad", Kind::Bool}})});
    for (auto [onnx, mpc] : std::initializer_list<std::pair<const char *, llvm::StringLiteral>>{
             {"SoftmaxCrossEntropyLoss", "mpc.softmax_cross_entropy_loss"},
             {"NegativeLogLikelihoodLoss", "mpc.nll_loss"}})
      t.try_emplace(onnx, SimpleOp{mpc,
                                   {{"reduction", Kind::Str},
                                    {"ignore_index", Kind::I64}}});
    for (auto [onnx, mpc] : std::initializer_list<std::pair<const char *, llvm::StringLiteral>>{
             {"ArgMax", "mpc.arg_max"}, {"ArgMin", "mpc.arg_min"}})
      t.try_emplace(onnx, SimpleOp{mpc,
                                   {{"axis", Kind::I64},
                                    {"keepdims", Kind::Bool},
                                    {"select_last_index", Kind::Bool}}});
    t.try_emplace("Shape", SimpleOp{"mpc.shape", {{"start", Kind::I64},
                                                  {"end", Kind::I64}}});
    t.try_emplace("Reshape",
                  SimpleOp{"mpc.reshape", {{"allowzero", Kind::Bool}}});
    t.try_emplace("Transpose",
                  SimpleOp{"mpc.transpose", {{"perm", Kind::I64s}}});
    t.try_emplace("Concat", SimpleOp{"mpc.concat", {{"axis", Kind::I64}}});
    t.try_emplace("Flatten", SimpleOp{"mpc.flatten", {{"axis", Kind::I64}}});
    t.try_emplace("Gather", SimpleOp{"mpc.gather", {{"axis", Kind::I64}}});
    t.try_emplace("GatherElements",
                  SimpleOp{"mpc.gather_elements", {{"axis", Kind::I64}}});
    t.try_emplace("GatherND",
                  SimpleOp{"mpc.gather_nd", {{"batch_dims", Kind::I64}}});
    t.try_emplace("ScatterND",
                  SimpleOp{"mpc.scatter_nd", {{"reduction", Kind::Str}}});
    // Scatter (opsets 9-10) is ScatterElements under its old name.
    for (const char *name : {"ScatterElements", "Scatter"})
      t.try_emplace(name, SimpleOp{"mpc.scatter_elements",
                                   {{"axis", Kind::I64}, {"reduction", Kind::Str}}});
    return t;
  }();
  return table;
}

/// Converts the node's attributes as `spec` says.
SmallVector<NamedAttribute> convertAttrs(NodeContext &c,
                                         ArrayRef<AttrSpec> specs) {
  SmallVector<NamedAttribute> attrs;
  for (const AttrSpec &spec : specs) {
    if (!c.attr(spec.name))
      continue;
    Attribute value;
    switch (spec.kind) {
    case Kind::I64:
      value = c.b.getI64IntegerAttr(c.getInt(spec.name, 0));
      break;
    case Kind::Bool:
      value = c.b.getBoolAttr(c.getInt(spec.name, 0) != 0);
      break;
    case Kind::F32:
      value = c.b.getF32FloatAttr(c.getFloat(spec.name, 0));
      break;
    case Kind::Str:
      value = c.b.getStringAttr(c.getString(spec.name, ""));
      break;
    case Kind::I64s:
      value = c.b.getDenseI64ArrayAttr(c.getInts(spec.name).value_or(
          SmallVector<int64_t>()));
      break;
    }
    attrs.push_back(c.named(spec.name, value));
  }
  return attrs;
}

LogicalResult importSimple(NodeContext &c) {
  const SimpleOp &op = simpleOps().find(c.node.op_type())->second;
  SmallVector<StringRef> known(op.ignored.begin(), op.ignored.end());
  for (const AttrSpec &a : op.attrs)
    known.push_back(a.name);
  if (failed(c.checkAttrs(known)))
    return failure();
  auto attrs = convertAttrs(c, op.attrs);
  auto operands = denseOperands(c);
  if (failed(operands))
    return failure();
  return c.emit(op.mpcOp, *operands, attrs);
}

} // namespace

NodeImportFn lookupSimpleImporter(StringRef opType) {
  return simpleOps().count(opType) ? importSimple : nullptr;
}

void listSimpleOps(std::vector<std::string> &ops) {
  for (const auto &kv : simpleOps())
    ops.push_back(kv.getKey().str());
}

void listSimpleTargets(std::vector<std::pair<std::string, std::string>> &rows) {
  for (const auto &kv : simpleOps())
    rows.emplace_back(kv.getKey().str(), kv.getValue().mpcOp.str());
}

/// Operands up to the last given input; a gap in the middle is an error
/// (mpc ops take their optional operands positionally).
FailureOr<SmallVector<Value>> denseOperands(NodeContext &c) {
  SmallVector<Value> operands(c.inputs);
  while (!operands.empty() && !operands.back())
    operands.pop_back();
  for (auto [i, v] : llvm::enumerate(operands))
    if (!v) {
      (void)c.fail("omitting optional input " + Twine(i) +
             " while giving later ones is not supported");
      return failure();
    }
  return operands;
}

} // namespace mlir::mpc::importer
