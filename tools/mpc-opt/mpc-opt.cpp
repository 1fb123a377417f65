//===- mpc-opt.cpp - mpc pass driver --------------------------------------===//
//
// mlir-opt with the mpc dialect and passes registered, plus the upstream
// canonicalize and cse passes.
//
//===----------------------------------------------------------------------===//

#include "ir/MpcOps.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"

int main(int argc, char **argv) {
  mlir::registerCanonicalizerPass();
  mlir::registerCSEPass();
  mlir::mpc::registerMpcPasses();
  mlir::DialectRegistry registry;
  registry.insert<mlir::mpc::MpcDialect, mlir::func::FuncDialect>();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "mpc optimizer driver\n", registry));
}
