//===- OnnxImporter.cpp - ONNX ModelProto -> mpc dialect ------------------===//
//
// Graph-level import: opset checks, graph inputs and their symbolic
// dimensions, initializers as parameters or constants, topological order with
// cycle and dangling-input errors, and TrainingInfoProto graphs. A graph's
// nodes are imported by GraphNodes.cpp; per-op work is in NodeImporters.cpp
// and its siblings.
//
//===----------------------------------------------------------------------===//

#include "frontend/ModelImporter.h"
#include "frontend/ModelLoader.h"
#include "frontend/ModelValidator.h"
#include "ir/MpcOps.h"

#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/Support/FormatVariadic.h"

#include <optional>

using namespace mlir;
using namespace mlir::mpc::importer;

namespace mlir::mpc::importer {
namespace {

/// Opsets of the default ONNX domain that mpc imports. Ops whose semantics
/// changed since opset 1 in ways mpc does not model have a higher minimum
/// (see minOpsetOf).
constexpr int64_t kMinOpset = 1, kMaxOpset = 28;

constexpr const char *kTrainingDomain = "ai.onnx.preview.training";
constexpr const char *kPreviewDomain = "ai.onnx.preview"; // FlexAttention

} // namespace

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
  for (const char *preview : {kTrainingDomain, kPreviewDomain}) {
    auto it = opsets.find(preview);
    if (it != opsets.end() && it->second != 1)
      return fail("unsupported opset " + Twine(it->second) + " of domain '" +
                  preview + "' (mpc supports 1)");
  }
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

} // namespace mlir::mpc::importer

namespace mlir::mpc {

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
