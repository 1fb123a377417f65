//===- TrainRanks.h - `mpc train` as one rank of a data-parallel job -*- C++ -*-===//
//
// The rank flags of `mpc train` (--collective-timeout, --rendezvous-timeout,
// --bucket-mb, --grad-wire) and joining the job its environment describes.
// Constructed beside the subcommand it belongs to (as PrecisionFlags), so
// the flags register after it.
//
//===----------------------------------------------------------------------===//

#ifndef MPC_TOOLS_MPC_TRAINRANKS_H
#define MPC_TOOLS_MPC_TRAINRANKS_H

#include "passes/Pipelines.h"
#include "runtime/Plan.h"
#include "runtime/dist/ProcessGroup.h"

#include "llvm/Support/CommandLine.h"

#include <memory>
#include <string>

namespace mpc {

struct RankFlags {
  explicit RankFlags(llvm::cl::SubCommand &sub);

  /// Reads the job environment; as a rank, opens its group (gloo for CPU
  /// ranks, the store for GPU ranks, whose gradients go through NCCL) and
  /// makes it the current one. `group` stays null in a single process.
  bool joinJob(bool cuda, ::mpc::rt::dist::JobEnv &job,
               std::unique_ptr<::mpc::rt::dist::ProcessGroup> &group,
               std::string &error) const;
  /// --bucket-mb and --grad-wire into the train pipeline's options.
  void apply(mlir::mpc::TrainPipelineOptions &pipeline) const;
  /// "data parallel: 2 ranks (gloo, torchrun), global batch 64 = 2 x 32,
  /// 1 gradient bucket on the wire in fp32".
  std::string describe(const ::mpc::rt::dist::ProcessGroup &group,
                       const ::mpc::rt::Plan &plan, int64_t batch) const;

  llvm::cl::opt<double> collectiveTimeout, rendezvousTimeout, bucketMb;
  llvm::cl::opt<std::string> gradWire;
};

} // namespace mpc

#endif // MPC_TOOLS_MPC_TRAINRANKS_H
