//===- GraphNodes.cpp - a graph's nodes, in order -------------------------===//
//
// Imports a graph's nodes in topological order: each node's opset against
// the first version mpc implements, If inlined where its condition is a
// constant, and the op's importer (NodeImporters.cpp and its siblings) run
// on the node's resolved inputs, inlining the graph attributes it applies
// (FlexAttention's score_mod and prob_mod) with their inputs bound.
//
//===----------------------------------------------------------------------===//

#include "frontend/ModelImporter.h"
#include "ir/MpcOps.h"

#include "mlir/IR/Matchers.h"
#include "llvm/ADT/StringSwitch.h"

#include <optional>

using namespace mlir;

namespace mlir::mpc::importer {
namespace {

/// The first opset whose version of `op` mpc implements: multidirectional
/// broadcasting arrived in 7 (8 for the variadic ops), Cast's `to` became an
/// enum in 6, Reshape's shape an input in 5, Concat's axis required in 4,
/// Upsample's scales an attribute in 7; Attention, RMSNormalization and
/// RotaryEmbedding arrived in 23, Swish and TensorScatter in 24, CumProd in
/// 26, LinearAttention in 27, SwiGLU in 28.
int64_t minOpsetOf(llvm::StringRef op) {
  return llvm::StringSwitch<int64_t>(op)
      .Cases("Add", "Sub", "Mul", "Div", "Pow", "PRelu", 7)
      .Cases("Equal", "Less", "Greater", "And", "Or", "Xor", 7)
      .Cases("Gemm", "BatchNormalization", "Dropout", "AveragePool", 7)
      .Cases("Max", "Min", "Sum", "Mean", 8)
      .Case("Cast", 6)
      .Case("Reshape", 5)
      .Case("Concat", 4)
      .Case("Upsample", 7) // scales as an attribute, not width/height_scale
      .Cases("SplitToSequence", "SequenceAt", 11)
      .Cases("Attention", "RMSNormalization", "RotaryEmbedding", 23)
      .Cases("Swish", "TensorScatter", 24)
      .Case("CumProd", 26)
      .Case("LinearAttention", 27)
      .Case("SwiGLU", 28)
      .Default(1);
}

} // namespace

LogicalResult ModelImporter::importNodes(
    const onnx::GraphProto &graph, llvm::StringMap<Value> &values,
    llvm::function_ref<Value(StringRef)> resolveOuter) {
  std::vector<int> order;
  std::vector<std::vector<int>> users;
  std::string orderError;
  if (failed(nodeOrder(graph, [&](StringRef name) { return values.count(name) != 0; },
                       order, users, orderError)))
    return fail(orderError);
  llvm::StringMap<SmallVector<Value>> sequences; // SequenceImporters.cpp

  for (int idx : order) {
    std::optional<onnx::NodeProto> narrowed =
        narrowedDoubleConstant(graph, idx, users[idx]);
    const onnx::NodeProto &node = narrowed ? *narrowed : graph.node(idx);
    std::string domain = node.domain() == "ai.onnx" ? "" : node.domain();
    auto opsetIt = opsets.find(domain);
    int64_t opset = opsetIt == opsets.end() ? -1 : opsetIt->second;
    std::string nodeName = displayName(node);
    std::string prefix = "node '" + nodeName + "' (" +
                         (domain.empty() ? "" : domain + ".") + node.op_type() +
                         (opset < 0 ? "" : ", opset " + std::to_string(opset)) +
                         "): ";
    if (opset < 0)
      return fail(prefix + "the model imports no opset of domain '" +
                  (domain.empty() ? "ai.onnx" : domain) + "'");
    if (domain.empty() && opset < minOpsetOf(node.op_type()))
      return fail(prefix + "the opset " + Twine(opset) + " version of " +
                  node.op_type() + " is not supported (mpc needs opset >= " +
                  Twine(minOpsetOf(node.op_type())) + ")");
    if (domain.empty() && node.op_type() == "If") {
      if (failed(inlineIf(node, prefix, values, resolveOuter)))
        return failure();
      continue;
    }
    NodeImportFn fn = lookupNodeImporter(domain, node.op_type());
    if (!fn)
      return fail(prefix + "unsupported op " + node.op_type() +
                  " of domain '" + (domain.empty() ? "ai.onnx" : domain) +
                  "'");
    SmallVector<Value> inputs;
    for (const auto &in : node.input()) {
      if (in.empty()) {
        inputs.push_back(Value());
        continue;
      }
      if (sequences.count(in)) {
        if (node.op_type() != "SequenceAt" || inputs.size() != 0)
          return fail(prefix + "input '" + in +
                      "' is a sequence, which mpc reads only through "
                      "SequenceAt at a constant position");
        inputs.push_back(Value());
        continue;
      }
      auto it = values.find(in);
      Value v = it != values.end() ? it->second : resolveOuter(in);
      if (!v)
        return fail(prefix + "input '" + in +
                    "' is not produced by any node, graph input or "
                    "initializer");
      inputs.push_back(v);
    }
    Location loc = NameLoc::get(b.getStringAttr(nodeName));
    NodeContext nc(node, opset, b, loc, std::move(inputs), modelDir);
    nc.lookup = [&](StringRef name) -> Value {
      auto it = values.find(name);
      return it == values.end() ? Value() : it->second;
    };
    nc.sequences = &sequences;
    nc.inlineGraph = [&](const onnx::AttributeProto &attr,
                         ArrayRef<Value> args) {
      auto outer = [&](StringRef name) -> Value {
        auto it = values.find(name);
        return it != values.end() ? it->second : resolveOuter(name);
      };
      return inlineGraph(attr.g(), args, prefix + attr.name() + ": ", outer);
    };
    if (mlir::failed(fn(nc)) || nc.failed())
      return fail(prefix + (nc.error.empty() ? "import failed" : nc.error));
    if (node.op_type() == "Gather" && !nc.outputs.empty())
      if (auto gather = nc.outputs[0].getDefiningOp<mpc::GatherOp>())
        if (auto pad = torchPaddingIdx(node); pad && gather.getAxis() == 0)
          gather.setPaddingIdxAttr(b.getI64IntegerAttr(*pad));
    for (auto [i, out] : llvm::enumerate(node.output()))
      if (!out.empty() && i < nc.outputs.size())
        values[out] = nc.outputs[i];
  }
  for (const auto &seq : sequences)
    sequenceNames.insert(seq.getKey());
  return success();
}

LogicalResult ModelImporter::inlineIf(
    const onnx::NodeProto &node, const std::string &prefix,
    llvm::StringMap<Value> &values,
    llvm::function_ref<Value(StringRef)> resolveOuter) {
  auto outer = [&](StringRef name) -> Value {
    auto it = values.find(name);
    return it != values.end() ? it->second : resolveOuter(name);
  };
  Value cond = node.input_size() ? outer(node.input(0)) : Value();
  DenseElementsAttr value;
  if (!cond || !matchPattern(cond, m_Constant(&value)) ||
      value.getNumElements() != 1 || !value.getElementType().isInteger(1))
    return fail(prefix + "the condition must be a constant boolean once "
                         "shapes are bound (mpc imports If by inlining the "
                         "branch it takes)");
  bool taken = *value.getValues<bool>().begin();
  StringRef which = taken ? "then_branch" : "else_branch";
  const onnx::GraphProto *branch = nullptr;
  for (const auto &attr : node.attribute())
    if (attr.name() == which && attr.has_g())
      branch = &attr.g();
  if (!branch)
    return fail(prefix + "has no " + which);
  if (branch->output_size() != node.output_size())
    return fail(prefix + "the branch has " + Twine(branch->output_size()) +
                " outputs, the node " + Twine(node.output_size()));
  auto outs = inlineGraph(*branch, {}, prefix + which.str() + ": ", outer);
  if (failed(outs))
    return failure();
  for (auto [i, v] : llvm::enumerate(*outs))
    if (!node.output(i).empty())
      values[node.output(i)] = v;
  return success();
}

FailureOr<SmallVector<Value>>
ModelImporter::inlineGraph(const onnx::GraphProto &graph, ArrayRef<Value> args,
                           const std::string &where,
                           llvm::function_ref<Value(StringRef)> outer) {
  auto failHere = [&](const Twine &message) {
    (void)fail(where + message);
    return failure();
  };
  if (graph.input_size() != (int)args.size())
    return failHere("the graph takes " + Twine(graph.input_size()) +
                    " inputs, the op gives it " + Twine(args.size()));
  llvm::StringMap<Value> inner;
  for (auto [info, arg] : llvm::zip(graph.input(), args)) {
    auto type = llvm::cast<RankedTensorType>(arg.getType());
    const auto &declared = info.type().tensor_type();
    Type element = elementTypeOf(declared.elem_type(), &ctx);
    bool rankOk =
        !declared.has_shape() || declared.shape().dim_size() == type.getRank();
    for (int d = 0; rankOk && declared.has_shape() && d < type.getRank(); ++d)
      rankOk = !declared.shape().dim(d).has_dim_value() ||
               declared.shape().dim(d).dim_value() == type.getDimSize(d);
    if ((declared.elem_type() && element != type.getElementType()) || !rankOk) {
      std::string given;
      llvm::raw_string_ostream(given) << type;
      return failHere("input '" + info.name() + "' is declared " +
                      dataTypeName(declared.elem_type()) + " of rank " +
                      Twine(declared.shape().dim_size()) +
                      " and does not fit the " + given + " the op gives it");
    }
    inner[info.name()] = arg;
  }
  for (const auto &init : graph.initializer()) {
    std::string err;
    auto value = readTensor(init, &ctx, modelDir, err);
    if (failed(value))
      return failHere("initializer '" + init.name() + "': " + err);
    inner[init.name()] =
        b.create<mpc::ConstantOp>(NameLoc::get(b.getStringAttr(init.name())),
                                  *value)
            .getResult();
  }
  if (failed(importNodes(graph, inner, outer))) {
    error = where + error; // the subgraph node's own line, placed
    return failure();
  }
  SmallVector<Value> outs;
  for (const auto &out : graph.output()) {
    auto it = inner.find(out.name());
    Value v = it != inner.end() ? it->second : outer(out.name());
    if (!v)
      return failHere("output '" + out.name() + "' is not computed");
    outs.push_back(v);
  }
  return outs;
}

} // namespace mlir::mpc::importer
