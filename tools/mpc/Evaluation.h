//===- Evaluation.h - the held-out loss and accuracy ------------*- C++ -*-===//
//
// `mpc train --eval-data NAME=FILE.npy --eval-every N`: after every N steps
// and the last, the model's loss (and with --eval-accuracy its top-1
// accuracy, with --eval-top-k K its top-K) over held-out data with the weights
// the step left, as torch's model.eval() under the same autocast computes it
// (mpc-eval-mode: no dropout, batch norm on its running statistics). The
// evaluation runs its own forward plans (batches of --eval-batch rows and
// one for the remainder) on the training's device, their weights copied
// from the train session (device to device on a GPU).
//
//===----------------------------------------------------------------------===//

#ifndef MPC_TOOLS_MPC_EVALUATION_H
#define MPC_TOOLS_MPC_EVALUATION_H

#include "passes/Pipelines.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

#include "runtime/Session.h"
#include "runtime/Trainer.h"

#include "llvm/Support/CommandLine.h"

#include <functional>
#include <map>
#include <memory>
#include <string>

namespace mpc {

/// The arrays of `--data`-style specs NAME=FILE.npy (`flag` names the
/// option, `what` the arrays in messages): each with a sample axis 0, all
/// with the same number of samples; false with a one-line `error`.
bool readSampleArrays(const llvm::cl::list<std::string> &specs,
                      llvm::StringRef flag, llvm::StringRef what,
                      std::map<std::string, ::mpc::rt::Tensor> &arrays,
                      std::string &error);

/// What the evaluation's plans are built from, as the train step was.
struct EvalBuild {
  /// The model imported with these graph input shapes (its loss appended,
  /// its weights seeded, as for training); null with `error`.
  std::function<mlir::OwningOpRef<mlir::ModuleOp>(
      const std::map<std::string, ::mpc::rt::Shape> &, std::string &)>
      import;
  mlir::mpc::PrecisionPipelineOptions precision;
  std::string
      lossOutput; // --loss-output ("": the first f32, else float, scalar)
  /// A session for `plan` on the training's device (its device code built).
  std::function<std::unique_ptr<::mpc::rt::Session>(::mpc::rt::Plan &,
                                                    std::string &)>
      open;
  const ::mpc::rt::Plan *trainPlan = nullptr;
  /// The train step's options: the model evaluated is the one it trains
  /// (--lora-rank's adapters added as the step adds them).
  const mlir::mpc::TrainPipelineOptions *train = nullptr;
  int rank = 0, ranks = 1; // this rank evaluates its share of the rows
};

/// `mpc train --eval-data/--eval-every/--eval-batch`, constructed beside
/// the subcommand (as SampleFlags).
struct EvalFlags {
  explicit EvalFlags(llvm::cl::SubCommand &sub);
  bool enabled() const { return !data.empty(); }
  /// The flags alone; false with a one-line `error`.
  bool validate(std::string &error) const;
  /// Reads the held-out data, builds the evaluation's plans and sessions,
  /// and makes `options` evaluate (the hook owns them); false with `error`.
  bool setUp(const EvalBuild &build, int64_t trainBatch,
             ::mpc::rt::TrainerOptions &options, std::string &error) const;

  llvm::cl::list<std::string> data;
  llvm::cl::opt<int64_t> every;
  llvm::cl::opt<int64_t> batch;
  llvm::cl::opt<bool> accuracy;
  llvm::cl::opt<int64_t> topK;
};

} // namespace mpc

#endif // MPC_TOOLS_MPC_EVALUATION_H
