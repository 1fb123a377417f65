//===- OnnxImporter.cpp - ONNX ModelProto -> mpc dialect ------------------===//
//
// Graph-level import: opset checks, graph inputs and their symbolic
// dimensions, initializers as parameters or constants, topological order with
// cycle and dangling-input errors, and TrainingInfoProto graphs. Per-op work
// is in NodeImporters.cpp.
//
//===----------------------------------------------------------------------===//

#include "frontend/OnnxImporter.h"
#include "frontend/ImporterImpl.h"
#include "frontend/ModelLoader.h"
#include "frontend/ModelValidator.h"
#include "ir/MpcOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"

#include <optional>

using namespace mlir;
using namespace mlir::mpc::importer;

namespace mlir::mpc {
namespace {

/// Opsets of the default ONNX domain that mpc imports. Ops whose semantics
/// changed since opset 1 in ways mpc does not model have a higher minimum
/// (see minOpsetOf).
constexpr int64_t kMinOpset = 1, kMaxOpset = 28;

/// The first opset whose version of `op` mpc implements: multidirectional
/// broadcasting arrived in 7 (8 for the variadic ops), Cast's `to` became an
/// enum in 6, Reshape's shape an input in 5, Concat's axis required in 4,
/// Upsample's scales an attribute in 7; Attention, RMSNormalization and
/// RotaryEmbedding arrived in 23, Swish in 24, SwiGLU in 28.
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
      .Case("Swish", 24)
      .Case("SwiGLU", 28)
      .Default(1);
}
constexpr const char *kTrainingDomain = "ai.onnx.preview.training";

/// What a graph may reference from an enclosing graph (training algorithms
/// read the main graph's inputs and initializers).
struct OuterScope {
  llvm::StringMap<Type> inputs;
  llvm::StringMap<const onnx::TensorProto *> initializers;
};

class ModelImporter {
public:
  ModelImporter(MLIRContext &ctx, const onnx::ModelProto &model,
                const ImportOptions &options, std::string &error)
      : ctx(ctx), model(model), options(options), error(error),
        b(&ctx), modelDir(llvm::sys::path::parent_path(options.modelPath)) {}

  OwningOpRef<ModuleOp> run();

private:
  LogicalResult fail(const Twine &message) {
    if (error.empty())
      error = message.str();
    return failure();
  }
  LogicalResult readOpsets();
  /// Values of the graphs imported so far that are sequences (their parts
  /// live only during the import: SequenceImporters.cpp).
  llvm::StringSet<> sequenceNames;
  FailureOr<Type> inputType(const onnx::ValueInfoProto &info,
                            SmallVectorImpl<StringRef> &dimParams);
  /// Imports `graph` as func `name`. `outer` lets it read outer names,
  /// which become extra arguments.
  FailureOr<func::FuncOp> importGraph(const onnx::GraphProto &graph,
                                      StringRef name, bool isMain);
  FailureOr<DenseElementsAttr> readFrozenInput(StringRef name,
                                               const std::string &path,
                                               Type declared);
  LogicalResult importNodes(const onnx::GraphProto &graph,
                            llvm::StringMap<Value> &values,
                            llvm::function_ref<Value(StringRef)> resolveOuter);
  LogicalResult importTrainingInfo(StringRef mainName);
  /// If whose condition is a constant once shapes are bound (torch's
  /// exports of diagonal, LocalResponseNorm): the branch it takes,
  /// imported in place; its outputs become the node's.
  LogicalResult inlineIf(const onnx::NodeProto &node, const std::string &prefix,
                         llvm::StringMap<Value> &values,
                         llvm::function_ref<Value(StringRef)> resolveOuter);
  LogicalResult checkDeclaredOutput(const onnx::ValueInfoProto &out,
                                    Type computed);
  /// `base`, or base_1, base_2...: a function name no parameter (named
  /// after an initializer) or other function takes.
  std::string funcName(const std::string &base) {
    auto taken = [&](const std::string &n) {
      if (module->lookupSymbol(n))
        return true;
      for (const auto &init : model.graph().initializer())
        if (init.name() == n)
          return true;
      return false;
    };
    std::string name = base;
    for (int k = 1; taken(name); ++k)
      name = base + "_" + std::to_string(k);
    return name;
  }

  MLIRContext &ctx;
  const onnx::ModelProto &model;
  const ImportOptions &options;
  std::string &error;
  OpBuilder b;
  std::string modelDir;
  OwningOpRef<ModuleOp> module;
  llvm::StringMap<int64_t> opsets;
  OuterScope mainScope;
  llvm::StringMap<StringAttr> paramSymbols;
};

LogicalResult ModelImporter::readOpsets() {
  for (const auto &op : model.opset_import()) {
    std::string domain = op.domain() == "ai.onnx" ? "" : op.domain();
    opsets[domain] = op.version();
  }
  if (opsets.empty())
    return fail("model imports no opset");
  // A model of training ops only may omit the default domain; its nodes
  // report it otherwise.
  auto it = opsets.find("");
  if (it != opsets.end() &&
      (it->second < kMinOpset || it->second > kMaxOpset))
    return fail("unsupported opset " + Twine(it->second) +
                " of domain 'ai.onnx' (mpc supports " + Twine(kMinOpset) +
                " to " + Twine(kMaxOpset) + ")");
  auto training = opsets.find(kTrainingDomain);
  if (training != opsets.end() && training->second != 1)
    return fail("unsupported opset " + Twine(training->second) +
                " of domain '" + kTrainingDomain + "' (mpc supports 1)");
  return success();
}

FailureOr<Type> ModelImporter::inputType(const onnx::ValueInfoProto &info,
                                         SmallVectorImpl<StringRef> &dimParams) {
  const std::string where = "graph input '" + info.name() + "'";
  if (!info.type().has_tensor_type())
    return fail(where + " is not a tensor (sequences, maps and optionals are "
                        "not supported)");
  const auto &tt = info.type().tensor_type();
  Type elem = elementTypeOf(tt.elem_type(), &ctx);
  if (!elem)
    return fail(where + " has element type " + dataTypeName(tt.elem_type()) +
                ", which is not supported");
  if (!tt.has_shape())
    return fail(where + " has no shape; mpc needs at least its rank");
  SmallVector<int64_t> shape;
  auto data = options.inputShapes.find(info.name());
  const std::vector<int64_t> *dataShape =
      data != options.inputShapes.end() &&
              (int)data->second.size() == tt.shape().dim_size()
          ? &data->second
          : nullptr;
  for (auto [i, dim] : llvm::enumerate(tt.shape().dim())) {
    int64_t size = ShapedType::kDynamic;
    if (dim.has_dim_value()) {
      if (dim.dim_value() < 0)
        return fail(where + " has negative dimension " +
                    Twine(dim.dim_value()));
      size = dim.dim_value();
    } else if (dim.has_dim_param() && options.dims.count(dim.dim_param())) {
      size = options.dims.at(dim.dim_param());
    } else if (dataShape) {
      size = (*dataShape)[i];
    } else if (i == 0 && options.batch) {
      size = *options.batch;
    }
    shape.push_back(size);
    dimParams.push_back(size == ShapedType::kDynamic && dim.has_dim_param()
                            ? StringRef(dim.dim_param())
                            : StringRef());
  }
  return Type(RankedTensorType::get(shape, elem));
}

FailureOr<DenseElementsAttr>
ModelImporter::readFrozenInput(StringRef name, const std::string &path,
                               Type declared) {
  onnx::TensorProto tensor;
  std::string err;
  if (!loadTensor(path, tensor, err) ||
      !validateTensor(tensor, modelDir, "tensor", err))
    return fail("--freeze " + name + ": " + err);
  auto value = readTensor(tensor, &ctx, modelDir, err);
  if (mlir::failed(value))
    return fail("--freeze " + name + ": tensor " + err);
  if (!areCompatibleTypes(declared, value->getType()))
    return fail("--freeze " + name + ": value of type " +
                llvm::formatv("{0}", value->getType()).str() +
                " does not match the input type " +
                llvm::formatv("{0}", declared).str());
  return *value;
}

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
  const onnx::GraphProto *branch = nullptr;
  for (const auto &attr : node.attribute())
    if (attr.name() == (taken ? "then_branch" : "else_branch") && attr.has_g())
      branch = &attr.g();
  if (!branch)
    return fail(prefix + "has no " + (taken ? "then_branch" : "else_branch"));
  if (branch->initializer_size() || branch->input_size())
    return fail(prefix + "a branch with initializers or inputs is not "
                         "supported");
  if (branch->output_size() != node.output_size())
    return fail(prefix + "the branch has " + Twine(branch->output_size()) +
                " outputs, the node " + Twine(node.output_size()));
  llvm::StringMap<Value> inner;
  if (failed(importNodes(*branch, inner, outer)))
    return failure();
  for (auto [i, out] : llvm::enumerate(branch->output())) {
    auto it = inner.find(out.name());
    Value v = it != inner.end() ? it->second : outer(out.name());
    if (!v)
      return fail(prefix + "branch output '" + out.name() +
                  "' is not computed");
    if (!node.output(i).empty())
      values[node.output(i)] = v;
  }
  return success();
}

FailureOr<func::FuncOp> ModelImporter::importGraph(const onnx::GraphProto &graph,
                                                   StringRef name,
                                                   bool isMain) {
  b.setInsertionPointToEnd(module->getBody());
  auto func = b.create<func::FuncOp>(
      NameLoc::get(b.getStringAttr(graph.name())), name,
      b.getFunctionType({}, {}));
  Block *body = func.addEntryBlock();
  llvm::StringMap<Value> values;
  SmallVector<DictionaryAttr> argAttrs;

  llvm::StringMap<const onnx::TensorProto *> inits;
  for (const auto &init : graph.initializer())
    inits[init.name()] = &init;

  auto addArg = [&](Type type, ArrayRef<NamedAttribute> attrs) {
    argAttrs.push_back(b.getDictionaryAttr(attrs));
    return body->addArgument(type, func.getLoc());
  };

  // Graph inputs (an input with an initializer is a defaulted parameter).
  OpBuilder constBuilder = OpBuilder::atBlockBegin(body);
  for (const auto &info : graph.input()) {
    if (inits.count(info.name()))
      continue;
    SmallVector<StringRef> dimParams;
    auto type = inputType(info, dimParams);
    if (mlir::failed(type))
      return failure();
    auto frozen = options.frozenInputs.find(info.name());
    auto frozenValue = options.frozenValues.find(info.name());
    if (isMain && (frozen != options.frozenInputs.end() ||
                   frozenValue != options.frozenValues.end())) {
      FailureOr<DenseElementsAttr> value = failure();
      if (frozenValue != options.frozenValues.end() &&
          areCompatibleTypes(*type, frozenValue->second.getType()))
        value = frozenValue->second;
      else if (frozen != options.frozenInputs.end())
        value = readFrozenInput(info.name(), frozen->second, *type);
      else
        return fail("input '" + info.name() + "': value of type " +
                    llvm::formatv("{0}", frozenValue->second.getType()).str() +
                    " does not match the input type " +
                    llvm::formatv("{0}", *type).str());
      if (mlir::failed(value))
        return failure();
      values[info.name()] = constBuilder.create<mpc::ConstantOp>(
          NameLoc::get(b.getStringAttr(info.name())), *value);
      continue;
    }
    SmallVector<NamedAttribute> attrs{
        b.getNamedAttr("mpc.input", b.getStringAttr(info.name()))};
    if (llvm::any_of(dimParams, [](StringRef s) { return !s.empty(); }))
      attrs.push_back(b.getNamedAttr("mpc.dim_params",
                                     b.getStrArrayAttr(dimParams)));
    values[info.name()] = addArg(*type, attrs);
    if (isMain)
      mainScope.inputs[info.name()] = *type;
  }

  // Initializers: state (float, or written by an update binding) ->
  // mpc.param + argument; the rest (and the float settings of ops such as
  // Resize's scales) constants.
  std::optional<InitializerRoles> roles;
  if (isMain && graph.initializer_size()) {
    roles.emplace(model);
    // Read by the training pipelines (buildTrainStep): refused, not guessed.
    std::string folded = roles->torchSignature().foldedByExporter(graph);
    if (!folded.empty())
      (*module)->setAttr("mpc.untrainable", b.getStringAttr(folded));
    if (roles->torchSignature().present())
      (*module)->setAttr("mpc.torch_signature", b.getUnitAttr());
  }
  for (const auto &init : graph.initializer()) {
    std::string err;
    auto value = readTensor(init, &ctx, modelDir, err);
    if (mlir::failed(value))
      return fail("initializer '" + init.name() + "' " + err);
    Location loc = NameLoc::get(b.getStringAttr(init.name()));
    InitializerRole role =
        isMain ? roles->role(init, value->getType())
               : InitializerRole::Constant;
    if (role == InitializerRole::Constant) {
      values[init.name()] =
          constBuilder.create<mpc::ConstantOp>(loc, *value).getResult();
      continue;
    }
    // Parameters precede the functions, in initializer order.
    OpBuilder moduleBuilder(&ctx);
    moduleBuilder.setInsertionPoint(func);
    auto param = moduleBuilder.create<mpc::ParamOp>(
        loc, init.name(), role == InitializerRole::Trainable,
        llvm::cast<RankedTensorType>(value->getType()),
        llvm::cast<ElementsAttr>(*value));
    paramSymbols[init.name()] = param.getSymNameAttr();
    values[init.name()] = addArg(
        value->getType(),
        {b.getNamedAttr("mpc.param", FlatSymbolRefAttr::get(
                                         param.getSymNameAttr()))});
    if (isMain)
      mainScope.initializers[init.name()] = &init;
  }

  // Names from the main graph, for training graphs: inputs and parameters
  // become arguments, constants are re-materialized.
  auto resolveOuter = [&](StringRef outerName) -> Value {
    if (isMain)
      return Value();
    if (auto it = mainScope.inputs.find(outerName); it != mainScope.inputs.end())
      return values[outerName] = addArg(
                 it->second, {b.getNamedAttr("mpc.input",
                                             b.getStringAttr(outerName))});
    if (auto it = paramSymbols.find(outerName); it != paramSymbols.end()) {
      auto param = module->lookupSymbol<mpc::ParamOp>(it->second);
      return values[outerName] = addArg(
                 param.getType(),
                 {b.getNamedAttr("mpc.param",
                                 FlatSymbolRefAttr::get(it->second))});
    }
    return Value();
  };

  b.setInsertionPointToEnd(body);
  if (mlir::failed(importNodes(graph, values, resolveOuter)))
    return failure();
  if (isMain && options.tensorTypes)
    for (const auto &entry : values)
      if (entry.second)
        (*options.tensorTypes)[entry.first().str()] = entry.second.getType();

  SmallVector<Value> results;
  SmallVector<DictionaryAttr> resultAttrs;
  for (const auto &out : graph.output()) {
    auto it = values.find(out.name());
    Value v = it != values.end() ? it->second : resolveOuter(out.name());
    if (!v && sequenceNames.count(out.name()))
      return fail("graph output '" + out.name() +
                  "' is a sequence; mpc's outputs are tensors");
    if (!v)
      return fail("graph output '" + out.name() + "' is not produced by any "
                                                  "node, input or initializer");
    if (mlir::failed(checkDeclaredOutput(out, v.getType())))
      return failure();
    results.push_back(v);
    resultAttrs.push_back(b.getDictionaryAttr(
        {b.getNamedAttr("mpc.output", b.getStringAttr(out.name()))}));
  }
  auto ret = b.create<func::ReturnOp>(func.getLoc(), results);
  foldIdentityDropouts(*body);
  results.assign(ret.getOperands().begin(), ret.getOperands().end());
  // Folded shape arithmetic and frozen inputs leave unused constants.
  for (Operation &op : llvm::make_early_inc_range(llvm::reverse(*body)))
    if (isOpTriviallyDead(&op))
      op.erase();
  func.setFunctionType(
      b.getFunctionType(body->getArgumentTypes(), ValueRange(results).getTypes()));
  func.setAllArgAttrs(argAttrs);
  func.setAllResultAttrs(resultAttrs);
  return func;
}

/// A declared output type is a promise to the model's users: one the graph
/// does not keep is an error (onnx.checker's full check), not a silent cast.
LogicalResult ModelImporter::checkDeclaredOutput(const onnx::ValueInfoProto &out,
                                                 Type computed) {
  const std::string where = "graph output '" + out.name() + "'";
  if (!out.has_type())
    return success();
  if (!out.type().has_tensor_type())
    return fail(where + " is declared as a non-tensor, but the graph "
                        "computes a tensor");
  const auto &tt = out.type().tensor_type();
  auto type = llvm::cast<RankedTensorType>(computed);
  if (tt.elem_type() != onnx::TensorProto::UNDEFINED &&
      elementTypeOf(tt.elem_type(), &ctx) != type.getElementType())
    return fail(where + " is declared " + dataTypeName(tt.elem_type()) +
                " but the graph computes " +
                llvm::formatv("{0}", type).str());
  if (!tt.has_shape())
    return success();
  bool same = tt.shape().dim_size() == type.getRank();
  for (int i = 0; same && i < type.getRank(); ++i) {
    const auto &dim = tt.shape().dim(i);
    same = !dim.has_dim_value() || type.isDynamicDim(i) ||
           dim.dim_value() == type.getDimSize(i);
  }
  if (same)
    return success();
  std::string declared;
  for (const auto &dim : tt.shape().dim())
    declared += (declared.empty() ? "" : ",") +
                (dim.has_dim_value() ? std::to_string(dim.dim_value())
                 : dim.dim_param().empty() ? std::string("?")
                                           : dim.dim_param());
  return fail(where + " is declared with shape [" + declared +
              "] but the graph computes " + llvm::formatv("{0}", type).str());
}

LogicalResult ModelImporter::importTrainingInfo(StringRef mainName) {
  for (auto [i, info] : llvm::enumerate(model.training_info())) {
    auto bindings = [&](const auto &list) {
      SmallVector<NamedAttribute> attrs;
      for (const auto &kv : list)
        attrs.push_back(b.getNamedAttr(kv.key(), b.getStringAttr(kv.value())));
      return b.getDictionaryAttr(attrs);
    };
    if (info.has_initialization() && info.initialization().node_size()) {
      auto init = importGraph(info.initialization(),
                              funcName(("training_initialization_" + Twine(i)).str()),
                              /*isMain=*/false);
      if (mlir::failed(init))
        return failure();
      (*init)->setAttr("mpc.initialization_binding",
                       bindings(info.initialization_binding()));
    }
    if (info.has_algorithm()) {
      auto algo = importGraph(info.algorithm(),
                              funcName(("training_algorithm_" + Twine(i)).str()),
                              /*isMain=*/false);
      if (mlir::failed(algo))
        return failure();
      (*algo)->setAttr("mpc.update_binding", bindings(info.update_binding()));
      (*algo)->setAttr("mpc.inference_graph",
                       FlatSymbolRefAttr::get(&ctx, mainName));
    }
  }
  return success();
}

OwningOpRef<ModuleOp> ModelImporter::run() {
  module = ModuleOp::create(FileLineColLoc::get(&ctx, options.modelPath, 0, 0));
  if (mlir::failed(readOpsets()))
    return nullptr;
  std::string name =
      funcName(model.graph().name().empty() ? "main" : model.graph().name());
  auto main = importGraph(model.graph(), name, /*isMain=*/true);
  if (mlir::failed(main))
    return nullptr;
  (*main)->setAttr("mpc.entry", b.getUnitAttr());
  if (mlir::failed(importTrainingInfo((*main).getSymName())))
    return nullptr;
  auto opsetAttrs = llvm::map_to_vector(opsets, [&](const auto &kv) {
    return b.getNamedAttr(kv.getKey().empty() ? "ai.onnx" : kv.getKey(),
                          b.getI64IntegerAttr(kv.getValue()));
  });
  (*module)->setAttr("mpc.opsets", b.getDictionaryAttr(opsetAttrs));
  return std::move(module);
}

} // namespace

OwningOpRef<ModuleOp> importModel(MLIRContext &ctx,
                                  const onnx::ModelProto &model,
                                  const ImportOptions &options,
                                  std::string &error) {
  ctx.loadDialect<mpc::MpcDialect, func::FuncDialect>();
  auto module = ModelImporter(ctx, model, options, error).run();
  if (!module)
    error = oneLine(error);
  return module;
}

func::FuncOp entryFunction(ModuleOp module) {
  for (auto f : module.getOps<func::FuncOp>())
    if (f->hasAttr("mpc.entry"))
      return f;
  return {};
}

std::vector<std::pair<std::string, std::string>> supportedOnnxOps() {
  return importer::supportedOps();
}

std::vector<std::string> unknownImporterTargets(MLIRContext &ctx) {
  ctx.loadDialect<mpc::MpcDialect>();
  std::vector<std::pair<std::string, std::string>> rows;
  importer::listSimpleTargets(rows);
  std::vector<std::string> unknown;
  for (const auto &[onnx, op] : rows)
    if (!RegisteredOperationName::lookup(op, &ctx))
      unknown.push_back(onnx + " -> " + op);
  return unknown;
}

OwningOpRef<ModuleOp> importModelFile(MLIRContext &ctx,
                                      const ImportOptions &options,
                                      std::string &error) {
  onnx::ModelProto model;
  std::string message;
  OwningOpRef<ModuleOp> module;
  if (loadModel(options.modelPath, model, message))
    module = importModel(ctx, model, options, message);
  if (!module)
    error = options.modelPath + ": " + message;
  return module;
}

} // namespace mlir::mpc
