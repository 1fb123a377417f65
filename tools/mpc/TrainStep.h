//===- TrainStep.h - build the train step of an imported model ---*- C++ -*-===//

#ifndef MPC_TOOLS_MPC_TRAINSTEP_H
#define MPC_TOOLS_MPC_TRAINSTEP_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"

#include <string>

namespace mpc {

/// Runs mpc-autodiff on `module` and returns the train-step function, or
/// null with a one-line `error` naming the node when a rule is missing.
mlir::func::FuncOp buildTrainStep(mlir::ModuleOp module,
                                  const std::string &loss, std::string &error);

} // namespace mpc

#endif // MPC_TOOLS_MPC_TRAINSTEP_H
