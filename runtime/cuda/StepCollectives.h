//===- StepCollectives.h - a GPU rank's gradient buckets by NCCL *- C++ -*-===//
//
// As a rank of a data-parallel job, a CUDA session averages each gradient
// bucket (an all_reduce step) through NCCL on a stream of its own: the
// bucket starts after what the compute stream queued before it, and the
// compute stream waits for it only before the first step reading it.
//
//===----------------------------------------------------------------------===//

#ifndef MPC_RUNTIME_CUDA_STEPCOLLECTIVES_H
#define MPC_RUNTIME_CUDA_STEPCOLLECTIVES_H

#include "runtime/Plan.h"
#include "runtime/cuda/CudaDriver.h"
#include "runtime/cuda/Nccl.h"

#include <functional>
#include <string>
#include <vector>

namespace mpc::rt::dist {
class ProcessGroup;
}

namespace mpc::rt::cu {

class StepCollectives {
public:
  StepCollectives(Driver &d, const Plan &plan) : d(d), plan(plan) {}
  ~StepCollectives();
  StepCollectives(const StepCollectives &) = delete;
  StepCollectives &operator=(const StepCollectives &) = delete;

  /// As a rank of `group`, NCCL's communicator (its unique id through the
  /// job's store), its stream and the events ordering it. Without a job
  /// (or buckets) nothing: the all_reduce steps run their one-rank kernel.
  bool open(dist::ProcessGroup *group, std::string &error);
  /// Whether NCCL runs the all_reduce steps.
  bool active() const { return comm != nullptr; }
  /// Step `i`'s bucket averaged on NCCL's stream after what `compute`
  /// has queued so far (`address`: a value's device address).
  bool launch(size_t i, Handle compute,
              const std::function<DevicePtr(int)> &address, std::string &error);
  /// Before step `i` (steps.size(): the end of the run): `compute` waits
  /// for the bucket it reads, if this run launched it (a micro-batch that
  /// skips the update sends no gradient bucket: runtime/AppliedOnly.h).
  bool join(size_t i, Handle compute, std::string &error);
  /// A run's launches begin (or a graph's capture).
  void beginRun() { issued.assign(plan.steps.size(), false); }
  /// One line on the buckets, or "".
  const std::string &summary() const { return line; }

private:
  Driver &d;
  const Plan &plan;
  nccl::Comm comm = nullptr;
  Handle stream = nullptr;
  std::vector<Handle> events; // per all_reduce step: ready, done
  std::vector<int> waitAt;    // per step: the all_reduce it waits for first
  std::vector<bool> issued;   // per step: launched in this run
  std::string line;
};

} // namespace mpc::rt::cu

#endif // MPC_RUNTIME_CUDA_STEPCOLLECTIVES_H
