//===- AppliedOnly.h - the steps only a group's update needs ----*- C++ -*-===//
//
// Under gradient accumulation (mpc-grad-accumulation) a train step runs on
// every micro-batch, but its updates - the optimizer's arithmetic over
// weights and state, their fp16 copies, the moving average, the clipping
// norm - matter only on a group's last (`mpc.accum.apply`): on the others
// the step selects the old values. The steps only those outputs need are
// marked `Step::appliedOnly`, and a session skips them on the other
// micro-batches, as a torch loop calls optimizer.step() once a group:
// those outputs then are their inputs' old values (feedBack leaves the
// input alone), and reading one is an error.
//
//===----------------------------------------------------------------------===//

#ifndef MPC_RUNTIME_APPLIEDONLY_H
#define MPC_RUNTIME_APPLIEDONLY_H

#include "runtime/Plan.h"

#include <string>
#include <vector>

namespace mpc::rt {

/// Sets `appliedOnly` on every step that no output outside the updates
/// needs, whole kernels at a time (the steps fused into or batched with a
/// needed step's kernel run with it); clears it where the plan has no
/// group flag. Run before the CUDA fusions (which then keep the two kinds
/// apart) and again after them.
void markAppliedOnlySteps(Plan &plan);

/// The value id of the flag a session reads to skip the applied-only
/// steps, or -1 when the plan has none.
int appliedOnlyFlag(const Plan &plan);

/// Per output: computed by an applied-only step (so left unwritten by a
/// run that skips them).
std::vector<bool> appliedOnlyOutputs(const Plan &plan);

/// "" when the marks are consistent: no step that always runs reads what
/// only an applied-only step computes; else why not.
std::string checkAppliedOnly(const Plan &plan);

/// The error for reading output `name` after a run that skipped it.
std::string skippedOutputError(const std::string &name);

} // namespace mpc::rt

#endif // MPC_RUNTIME_APPLIEDONLY_H
