//===- mpc-opt.cpp - mpc pass driver --------------------------------------===//
//
// mlir-opt with the mpc dialect, its gradient rules, passes and named
// pipelines (passes/Pipelines.h) registered, plus the upstream
// canonicalize and cse passes.
//
//===----------------------------------------------------------------------===//

#include "ir/MpcOps.h"
#include "passes/GradientRules.h"
#include "passes/Passes.h"
#include "passes/Pipelines.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"

int main(int argc, char **argv) {
  mlir::registerCanonicalizerPass();
  mlir::registerCSEPass();
  mlir::mpc::registerMpcPasses();
  mlir::mpc::registerMpcPipelines();
  mlir::DialectRegistry registry;
  registry.insert<mlir::mpc::MpcDialect, mlir::func::FuncDialect>();
  mlir::mpc::registerGradientInterfaces(registry);
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "mpc optimizer driver\n", registry));
}
