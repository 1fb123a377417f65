//===- TrainStep.h - build the train step of an imported model ---*- C++ -*-===//

#ifndef MPC_TOOLS_MPC_TRAINSTEP_H
#define MPC_TOOLS_MPC_TRAINSTEP_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"

namespace mlir {
class PassManager;
} // namespace mlir

#include <string>

namespace mpc {

struct PrecisionFlags;

/// Runs the training pipeline on `module`: with a low `precision`,
/// mpc-amp-classify and mpc-insert-casts first; then mpc-autodiff; then
/// mpc-master-weights and mpc-loss-scaling. Returns the train-step
/// function, or null with a one-line `error` naming the node.
mlir::func::FuncOp buildTrainStep(mlir::ModuleOp module,
                                  const std::string &loss,
                                  const PrecisionFlags *precision,
                                  std::string &error);

/// Runs mpc-optimizer (`kind`: sgd, momentum, nesterov, adam, adamw,
/// adagrad; any case) on the train step.
bool addOptimizer(mlir::ModuleOp module, const std::string &kind, float lr,
                  float momentum, float weightDecay, std::string &error);

/// For a model with a TrainingInfoProto: mpc-inline-inference then
/// mpc-lower-gradient; returns the algorithm function (null with `error`).
mlir::func::FuncOp buildAlgorithmStep(mlir::ModuleOp module,
                                      std::string &error);

/// Runs `pm` on `module`; false with the first diagnostic in `error`
/// ("node 'NAME': message" when it has a node location).
bool runPasses(mlir::PassManager &pm, mlir::ModuleOp module,
               std::string &error);

} // namespace mpc

#endif // MPC_TOOLS_MPC_TRAINSTEP_H
