//===- TrainStep.cpp - the training pass pipeline -------------------------===//

#include "TrainStep.h"
#include "Precision.h"

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
                                  const std::string &loss,
                                  const PrecisionFlags *precision,
                                  std::string &error) {
  mlir::PassManager pm(module.getContext());
  if (precision)
    precision->addForwardPasses(pm);
  mlir::mpc::AutodiffOptions options;
  options.loss = loss;
  pm.addPass(mlir::mpc::createAutodiff(options));
  if (precision)
    precision->addTrainStepPasses(pm);
  if (!runPasses(pm, module, error))
    return {};
  for (auto f : module.getOps<mlir::func::FuncOp>())
    if (f->hasAttr("mpc.train_step"))
      return f;
  return {};
}

bool addOptimizer(mlir::ModuleOp module, const std::string &kind, float lr,
                  float momentum, float weightDecay, std::string &error) {
  mlir::mpc::OptimizerOptions o;
  o.kind = llvm::StringRef(kind).lower();
  o.lr = lr;
  o.momentum = momentum;
  o.weightDecay = weightDecay;
  mlir::PassManager pm(module.getContext());
  pm.addPass(mlir::mpc::createOptimizer(o));
  return runPasses(pm, module, error);
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
