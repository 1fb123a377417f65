//===- ModelImporter.h - graph-level ONNX import (frontend-private) -------===//
//
// The importer of one ModelProto: OnnxImporter.cpp reads opsets, graphs,
// their inputs, initializers and outputs, and training graphs;
// GraphNodes.cpp imports a graph's nodes in order (per-op work is in the
// importers that ImporterImpl.h lists).
//
//===----------------------------------------------------------------------===//

#ifndef MPC_FRONTEND_MODELIMPORTER_H
#define MPC_FRONTEND_MODELIMPORTER_H

#include "frontend/OnnxImporter.h"
#include "frontend/ImporterImpl.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/Path.h"

namespace mlir::mpc::importer {

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
  /// Imports `graph` in place: its inputs bound to `args` (checked against
  /// their declared element types and ranks), its initializers as
  /// constants, names it does not define read through `outer`. Its
  /// outputs, or failure with the error prefixed by `where`.
  FailureOr<SmallVector<Value>>
  inlineGraph(const onnx::GraphProto &graph, ArrayRef<Value> args,
              const std::string &where,
              llvm::function_ref<Value(StringRef)> outer);
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

} // namespace mlir::mpc::importer

#endif // MPC_FRONTEND_MODELIMPORTER_H
