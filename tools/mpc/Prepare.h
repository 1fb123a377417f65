//===- Prepare.h - read inputs and import a model for one run ----*- C++ -*-===//

#ifndef MPC_TOOLS_MPC_PREPARE_H
#define MPC_TOOLS_MPC_PREPARE_H

#include "runtime/Tensor.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

#include <map>
#include <string>
#include <vector>

namespace mpc {

/// What `mpc run`, `mpc grad` and `mpc convert --auto` share: the fed
/// tensors, and the model imported with their shapes bound.
struct Prepared {
  mlir::OwningOpRef<mlir::ModuleOp> module;
  std::map<std::string, rt::Tensor> feeds;
};

/// Reads NAME=FILE inputs (.npy or .pb), imports `model` with their shapes
/// (and `--freeze` specs, a batch size when > 0), checks every graph input
/// is fed. Fails with a reported error.
bool prepare(mlir::MLIRContext &ctx, const std::string &model,
             const std::vector<std::string> &inputSpecs,
             const std::vector<std::string> &freezeSpecs, int64_t batchSize,
             Prepared &out);

} // namespace mpc

#endif // MPC_TOOLS_MPC_PREPARE_H
