//===- Executor.h - runs a plan on the CPU ------------------------*- C++ -*-===//

#ifndef MPC_RUNTIME_EXECUTOR_H
#define MPC_RUNTIME_EXECUTOR_H

#include "runtime/Plan.h"

#include <map>
#include <string>
#include <vector>

namespace mpc::rt {

/// What a run measured besides its outputs.
struct RunStats {
  /// Elements nonzero before and zero after a step marked
  /// `mpc.count_underflow` (gradients rounded into fp16/bf16).
  int64_t underflow = 0;
  /// The run skipped the applied-only steps (runtime/AppliedOnly.h): the
  /// outputs they compute are unset.
  bool skippedApplied = false;
};

/// Runs `plan` with `inputs` (by name; parameters default to their initial
/// values unless given too). On success fills `outputs` in plan order.
/// On failure returns false with a one-line `error` naming the step.
bool runPlan(const Plan &plan, const std::map<std::string, Tensor> &inputs,
             std::vector<Tensor> &outputs, std::string &error,
             RunStats *stats = nullptr);

} // namespace mpc::rt

#endif // MPC_RUNTIME_EXECUTOR_H
