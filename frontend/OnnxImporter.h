//===- OnnxImporter.h - ONNX ModelProto -> mpc dialect ------------*- C++ -*-===//

#ifndef MPC_FRONTEND_ONNXIMPORTER_H
#define MPC_FRONTEND_ONNXIMPORTER_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

#include <map>
#include <optional>
#include <string>

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

} // namespace mlir::mpc

#endif // MPC_FRONTEND_ONNXIMPORTER_H
