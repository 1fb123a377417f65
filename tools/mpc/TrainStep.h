//===- TrainStep.h - build the train step of an imported model --*- C++ -*-===//

#ifndef MPC_TOOLS_MPC_TRAINSTEP_H
#define MPC_TOOLS_MPC_TRAINSTEP_H

#include "PhaseSpecs.h"
#include "passes/Pipelines.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"

#include "runtime/Trainer.h"

#include <map>
#include <string>

namespace mpc {

/// Runs mpc-train-pipeline on `module`; returns the train-step function,
/// or null with a one-line `error` naming the node. A model computing in
/// FP16 of its own gets dynamic loss scaling unless `o` says otherwise
/// (`o.lossScale` set to it).
mlir::func::FuncOp buildTrainStep(mlir::ModuleOp module,
                                  mlir::mpc::TrainPipelineOptions &o,
                                  std::string &error);

/// Whether the model computes in FP16 itself (its own casts: a
/// torch.autocast export on a GPU, a model stored in FP16), whatever
/// --precision says.
bool computesInFp16(mlir::ModuleOp module);

/// `base` (the shared optimizer flags) specialised to phase `phase`: its
/// loss, the parameters it trains and its optimizer overrides; false with
/// `error` when the result is invalid.
bool phasePipeline(const PhaseSpec &phase, mlir::mpc::TrainPipelineOptions &base,
                   std::string &error);

/// For a model with a TrainingInfoProto: mpc-inline-inference,
/// mpc-lower-gradient, mpc-chain-algorithms; returns the one algorithm
/// function (null with `error`).
mlir::func::FuncOp buildAlgorithmStep(mlir::ModuleOp module,
                                      std::string &error);

/// Appends `kind` (cross_entropy or mse) on the entry function's first
/// output with a new graph input `label` (`mpc train --loss`); the loss
/// becomes the first result, named "loss".
bool appendLoss(mlir::func::FuncOp func, llvm::StringRef kind,
                llvm::StringRef label, std::string &error);

/// A TrainingInfoProto algorithm `step` on `trainer`: its update bindings,
/// its loss, and the initialization graphs run once into `params`.
bool setUpAlgorithm(mlir::ModuleOp module, mlir::func::FuncOp step,
                    std::map<std::string, ::mpc::rt::Tensor> &params,
                    ::mpc::rt::Trainer &trainer, std::string &error);

/// Runs `pm` on `module`; false with the first diagnostic in `error`
/// ("node 'NAME': message" when it has a node location).
bool runPasses(mlir::PassManager &pm, mlir::ModuleOp module,
               std::string &error);

} // namespace mpc

#endif // MPC_TOOLS_MPC_TRAINSTEP_H
