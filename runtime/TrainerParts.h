//===- TrainerParts.h - what Trainer.cpp and TrainPhases.cpp share -*- C++ -*-===//
//
// Private to runtime/: the batch of each step, the metrics line, and small
// formatting helpers of the training loop.
//
//===----------------------------------------------------------------------===//

#ifndef MPC_RUNTIME_TRAINERPARTS_H
#define MPC_RUNTIME_TRAINERPARTS_H

#include "runtime/Trainer.h"

#include <map>
#include <string>
#include <vector>

namespace mpc::rt::detail {

/// The batch of each step: rows in file order, or in a permutation per
/// epoch seeded by seed + epoch, so the batch depends only on the step
/// (resuming mid-epoch rebuilds the same permutation). With R ranks the
/// step's global batch is R x batch rows and rank r takes its r-th slice:
/// together the ranks see what one process with the global batch sees.
class Batches {
public:
  Batches(const std::map<std::string, Tensor> &data, const TrainerOptions &o);
  /// False with `error` when there is less than one full global batch.
  bool check(std::string &error) const;
  std::map<std::string, Tensor> at(int64_t step);

private:
  const std::map<std::string, Tensor> &data_;
  const TrainerOptions &options_;
  std::vector<int64_t> order_;
  int64_t epoch_ = -1;
  int64_t ranks_ = 1, rank_ = 0;
};

/// A 0-d tensor of type `t` holding `v`.
Tensor scalar(DType t, double v);
std::string format(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/// One JSON object of the metrics file (JSON has no NaN or infinity: a
/// non-finite loss is null); ranks add their time in collectives.
std::string metricsLine(const StepRecord &r, bool distributed = false);

} // namespace mpc::rt::detail

#endif // MPC_RUNTIME_TRAINERPARTS_H
