//===- Precision.h - --precision and the mixed-precision flags ---*- C++ -*-===//

#ifndef MPC_TOOLS_MPC_PRECISION_H
#define MPC_TOOLS_MPC_PRECISION_H

#include "passes/Pipelines.h"

#include "llvm/Support/CommandLine.h"

#include <memory>
#include <string>

namespace mpc {

/// The flags that choose a precision, registered on one subcommand (one
/// instance per command, defined next to its SubCommand). They fill the
/// options of the pipelines the command runs (passes/Pipelines.h).
struct PrecisionFlags {
  PrecisionFlags(llvm::cl::SubCommand &sub, bool training);

  llvm::cl::opt<std::string> precision;
  llvm::cl::list<std::string> ampAllow, ampDeny, ampKeepFp32;
  llvm::cl::opt<std::string> ampConfig;
  llvm::cl::opt<bool> fuseAttention, foldConstants;
  llvm::cl::opt<std::string> layout;
  /// Only for commands that run a backward pass.
  std::unique_ptr<llvm::cl::opt<std::string>> lossScale, trainParams;
  std::unique_ptr<llvm::cl::opt<bool>> recomputeColumns;
  std::unique_ptr<llvm::cl::opt<double>> clipGradNorm, ema, loraAlpha;
  std::unique_ptr<llvm::cl::opt<int64_t>> gradAccumulation, loraRank;
  std::unique_ptr<llvm::cl::opt<std::string>> lrSchedule, noWeightDecay,
      checkpointBlocks, checkpointSave, emaWarmup, loraTargets;

  bool isLow() const { return precision != "fp32"; }
  /// The first flag given that only an optimizer's update reads
  /// (--grad-accumulation, --no-weight-decay, --ema), or "" when none is.
  std::string updateOnlyFlag() const;
  /// The first flag given that phases (--phase, --recipe) do not take yet
  /// (--grad-accumulation, --ema, --lora-rank), or "".
  std::string notWithPhasesFlag() const;
  /// Checks the flag values (`phased`: shared by phases); false with a
  /// one-line `error`.
  bool validate(std::string &error, bool phased = false) const;
  /// "none", "static" or "dynamic": the mode --loss-scale resolves to.
  std::string lossScaleMode() const;
  /// The flags as pipeline options.
  void apply(mlir::mpc::PrecisionPipelineOptions &o) const;
  void apply(mlir::mpc::TrainPipelineOptions &o) const;
};

} // namespace mpc

#endif // MPC_TOOLS_MPC_PRECISION_H
