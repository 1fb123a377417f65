//===- OnnxImporter.h - ONNX ModelProto -> mpc dialect ------------*- C++ -*-===//

#ifndef MPC_FRONTEND_ONNXIMPORTER_H
#define MPC_FRONTEND_ONNXIMPORTER_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace onnx {
class ModelProto;
} // namespace onnx

namespace mlir::mpc {

struct ImportOptions {
  /// The model file; names the module and anchors external data.
  std::string modelPath;
  /// Binds a symbolic (or unknown) leading dimension of every graph input.
  std::optional<int64_t> batch;
  /// Binds symbolic dimensions by name (dim_param).
  std::map<std::string, int64_t> dims;
  /// Graph inputs replaced by constants read from TensorProto files, for
  /// inputs that must be constant (axes, split sizes, shapes...).
  std::map<std::string, std::string> frozenInputs;
  /// Graph inputs replaced by these constant values (as frozenInputs).
  std::map<std::string, mlir::DenseElementsAttr> frozenValues;
  /// Shapes of the data a run will feed, binding each input's unknown dims.
  std::map<std::string, std::vector<int64_t>> inputShapes;
  /// When set, receives the type of every tensor of the main graph by ONNX
  /// name (inputs, initializers, node outputs) as imported.
  std::map<std::string, mlir::Type> *tensorTypes = nullptr;
};

/// Imports `model` into a new module: one func per graph (the main graph,
/// and each TrainingInfoProto's algorithm and initialization graphs), float
/// initializers as `mpc.param` plus function arguments. On failure returns
/// null and sets `error` to one line naming the node and op where relevant.
mlir::OwningOpRef<mlir::ModuleOp> importModel(mlir::MLIRContext &ctx,
                                              const onnx::ModelProto &model,
                                              const ImportOptions &options,
                                              std::string &error);

/// Loads `options.modelPath` (binary or text) and imports it; `error` is
/// prefixed with the file name.
mlir::OwningOpRef<mlir::ModuleOp> importModelFile(mlir::MLIRContext &ctx,
                                                  const ImportOptions &options,
                                                  std::string &error);

/// The function of the main graph (tagged mpc.entry).
mlir::func::FuncOp entryFunction(mlir::ModuleOp module);

/// The ONNX ops mpc imports, as "domain op_type" pairs, sorted.
std::vector<std::pair<std::string, std::string>> supportedOnnxOps();

/// Importer table rows ("Op -> mpc.op") whose mpc op the dialect does not
/// define; `mpc ops` refuses to list ops while any exists.
std::vector<std::string> unknownImporterTargets(mlir::MLIRContext &ctx);

} // namespace mlir::mpc

#endif // MPC_FRONTEND_ONNXIMPORTER_H
