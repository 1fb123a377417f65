//===- TrainStep.cpp - run the pipelines on an imported model -------------===//

#include "TrainStep.h"

#include "passes/Passes.h"

#include "mlir/Pass/PassManager.h"

namespace mpc {

bool runPasses(mlir::PassManager &pm, mlir::ModuleOp module,
               std::string &error) {
  mlir::ScopedDiagnosticHandler handler(
      module.getContext(), [&](mlir::Diagnostic &d) {
        if (error.empty()) {
          if (auto name = llvm::dyn_cast<mlir::NameLoc>(d.getLocation()))
            error = "node '" + name.getName().str() + "': ";
          error += d.str();
        }
        return mlir::success();
      });
  return mlir::succeeded(pm.run(module));
}

mlir::func::FuncOp buildTrainStep(mlir::ModuleOp module,
                                  const mlir::mpc::TrainPipelineOptions &o,
                                  std::string &error) {
  mlir::PassManager pm(module.getContext());
  mlir::mpc::buildTrainPipeline(pm, o);
  if (!runPasses(pm, module, error))
    return {};
  for (auto f : module.getOps<mlir::func::FuncOp>())
    if (f->hasAttr("mpc.train_step"))
      return f;
  return {};
}

mlir::func::FuncOp buildAlgorithmStep(mlir::ModuleOp module,
                                      std::string &error) {
  mlir::PassManager pm(module.getContext());
  pm.addPass(mlir::mpc::createInlineInference());
  pm.addPass(mlir::mpc::createLowerGradient());
  if (!runPasses(pm, module, error))
    return {};
  for (auto f : module.getOps<mlir::func::FuncOp>())
    if (f->hasAttr("mpc.update_binding"))
      return f;
  error = "no training algorithm";
  return {};
}

} // namespace mpc
