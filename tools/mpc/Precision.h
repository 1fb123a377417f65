//===- Precision.h - --precision and the mixed-precision flags ---*- C++ -*-===//

#ifndef MPC_TOOLS_MPC_PRECISION_H
#define MPC_TOOLS_MPC_PRECISION_H

#include "mlir/Pass/PassManager.h"
#include "llvm/Support/CommandLine.h"

#include <string>

namespace mpc {

/// The flags that choose a precision, registered on one subcommand (one
/// instance per command, defined next to its SubCommand).
struct PrecisionFlags {
  PrecisionFlags(llvm::cl::SubCommand &sub, bool training);

  llvm::cl::opt<std::string> precision;
  llvm::cl::list<std::string> ampAllow, ampDeny, ampKeepFp32;
  llvm::cl::opt<std::string> ampConfig;
  /// Only for commands that run a backward pass.
  std::unique_ptr<llvm::cl::opt<std::string>> lossScale;

  /// Without loss scaling, still add mpc-loss-scaling at a static scale of
  /// 1 for its all-finite flag (results unchanged: the unscale is exact).
  bool finiteCheck = false;

  bool isLow() const { return precision != "fp32"; }
  /// Checks the flag values; false with a one-line `error`.
  bool validate(std::string &error) const;
  /// mpc-amp-classify + mpc-insert-casts for fp16/bf16 (nothing for fp32).
  void addForwardPasses(mlir::OpPassManager &pm) const;
  /// mpc-amp-classify alone.
  void addClassifyPass(mlir::OpPassManager &pm) const;
  /// mpc-master-weights + mpc-loss-scaling, after mpc-autodiff.
  void addTrainStepPasses(mlir::OpPassManager &pm) const;
  /// "none", "static" or "dynamic": the mode --loss-scale resolves to.
  std::string lossScaleMode() const;
};

} // namespace mpc

#endif // MPC_TOOLS_MPC_PRECISION_H
