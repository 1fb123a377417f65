//===- PlanFusionChecks.h - steps computed in another step's call -*- C++ -*-===//

#ifndef MPC_RUNTIME_PLANFUSIONCHECKS_H
#define MPC_RUNTIME_PLANFUSIONCHECKS_H

#include "runtime/Plan.h"

#include <set>
#include <string>
#include <utility>
#include <vector>

namespace mpc::rt {

/// "" or the first inconsistency the checks below find in the steps that
/// a kernel or library call computes for others: what the plan reader
/// refuses, and what the CUDA emitter checks its own plans against.
std::string checkPlanFusions(const Plan &plan);
/// "" or what is inconsistent in the results a library computes for other
/// steps (cuBLASLt's bias gradient, GELU and GELU gradient epilogues).
std::string checkLibraryFusions(const Plan &plan);
/// "" or what is inconsistent in a cast fused into its producer.
std::string checkStoredCasts(const Plan &plan);
/// "" or what is inconsistent in a step computed in a later step's kernel
/// (a chain member, a relu_grad folded into a batch_norm_grad).
std::string checkLaterFusions(const Plan &plan);
/// "" or what is wrong with a step whose kernel writes only some outputs
/// (`cuda.written`): a step or the plan's outputs reading another.
std::string checkUnwrittenOutputs(const Plan &plan);
/// "" or what is inconsistent in a batch norm computing its reader Add.
std::string checkEpilogueAdds(const Plan &plan);
/// "" or what is inconsistent in a row kernel adding its input 0 as it
/// loads (CudaLaunch::prologueAdd).
std::string checkPrologueAdds(const Plan &plan);
/// Which kernels may write a result over an input (UpdatesInPlace.cpp),
/// built once per plan: it indexes the steps reading each value.
class InPlaceUpdates {
public:
  explicit InPlaceUpdates(const Plan &plan);
  /// "" or why kernel step `k` may not write `result` into `input`'s
  /// buffer: an elementwise chain's kernel storing `result`, the output
  /// the runtime feeds back into `input`, of the same type and shape;
  /// `input` a plan input or parameter and no output, read by no step that
  /// runs after the kernel (but the chain's own members, element by
  /// element).
  std::string problem(size_t k, int result, int input) const;

private:
  const Plan &plan;
  std::vector<std::vector<int>> readers; // per value, the steps reading it
  /// (result, input) value pairs the train protocol feeds back
  /// (runtime/TrainProtocol.h).
  std::set<std::pair<int, int>> fedBack;
};
/// "" or the first CudaLaunch::updatesInPlace pair that is not allowed.
std::string checkUpdatesInPlace(const Plan &plan);
/// "" or what is inconsistent in the strided views attention kernels read
/// or write in place (PlanViewChecks.cpp): an aliased transpose keeps the
/// innermost dim; an in-place split or concat has parts that tile its
/// whole; a view (the view side of such a transpose, a part, and what
/// aliasing reshapes and transposes make of them) is no plan output and is
/// read or written, but by those aliasing steps, only as an attention
/// operand that can be one (Q, K, V, y; dy, q, k, v, y, dq, dk, dv).
std::string checkAttentionViews(const Plan &plan);
/// An op that only reshapes: on CUDA its result aliases its input.
bool reshapesOnly(OpId op);
/// A transpose (rank 3 or more, explicit perm) that keeps the innermost dim
/// in place: its result's rows stay contiguous, so attention can read or
/// write it as a view.
bool keepsInnermostDim(const Plan &plan, const Step &t);
/// How many of an attention step's inputs (or, with `output`, results) may
/// be views, counted from the first: Q, K, V and y; dy, q, k, v, y and dq,
/// dk, dv for attention_grad; 0 for other ops.
size_t attentionViewSlots(OpId op, bool output);

} // namespace mpc::rt

#endif // MPC_RUNTIME_PLANFUSIONCHECKS_H
