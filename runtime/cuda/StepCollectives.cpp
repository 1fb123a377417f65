//===- StepCollectives.cpp - a GPU rank's gradient buckets by NCCL --------===//

#include "runtime/cuda/StepCollectives.h"
#include "runtime/cuda/MemoryPlan.h"
#include "runtime/dist/ProcessGroup.h"

#include <algorithm>
#include <cstring>

namespace mpc::rt::cu {

StepCollectives::~StepCollectives() {
  if (comm)
    nccl::library().commDestroy(comm);
  for (Handle e : events)
    if (e)
      d.eventDestroy(e);
  if (stream)
    d.streamDestroy(stream);
}

bool StepCollectives::open(dist::ProcessGroup *group, std::string &error) {
  std::vector<size_t> reduces;
  for (size_t i = 0; i < plan.steps.size(); ++i)
    if (plan.steps[i].op == OpId::AllReduce)
      reduces.push_back(i);
  if (!group || reduces.empty())
    return true;
  nccl::Library &lib = nccl::library();
  if (std::string why = lib.load(); !why.empty())
    return (error = "GPU ranks need NCCL: " + why, false);
  nccl::UniqueId id{};
  std::vector<char> bytes;
  if (group->rank() == 0) {
    if (int r = lib.getUniqueId(&id))
      return (error = std::string("ncclGetUniqueId: ") + lib.errorString(r),
              false);
    bytes.assign(id.internal, id.internal + sizeof id.internal);
    if (!group->store().set("nccl/id", bytes, error))
      return false;
  } else {
    if (!group->store().get("nccl/id", bytes, group->timeout(), error) ||
        bytes.size() != sizeof id.internal)
      return (error = "rank " + std::to_string(group->rank()) +
                      ": no NCCL id from rank 0: " + error,
              false);
    std::memcpy(id.internal, bytes.data(), sizeof id.internal);
  }
  if (int r = lib.commInitRank(&comm, group->size(), id, group->rank())) {
    comm = nullptr;
    return (error = std::string("ncclCommInitRank: ") + lib.errorString(r),
            false);
  }
  if (!d.check(d.streamCreate(&stream, 1 /*NON_BLOCKING*/), "cuStreamCreate",
               error))
    return false;
  events.assign(2 * plan.steps.size(), nullptr);
  waitAt.assign(plan.steps.size() + 1, -1);
  for (size_t i : reduces) {
    if (!d.check(d.eventCreate(&events[2 * i], 2 /*DISABLE_TIMING*/),
                 "cuEventCreate", error) ||
        !d.check(d.eventCreate(&events[2 * i + 1], 2), "cuEventCreate", error))
      return false;
    int at = allReduceWait(plan, i);
    // One wait per step: waiting for the latest bucket read there covers
    // the earlier ones (NCCL's stream runs them in order).
    waitAt[at] = std::max(waitAt[at], (int)i);
  }
  line = std::to_string(reduces.size()) + " gradient bucket" +
         (reduces.size() == 1 ? "" : "s") + " averaged over " +
         std::to_string(group->size()) + " rank" +
         (group->size() == 1 ? "" : "s") + " by " + lib.describe() +
         " on its own stream";
  return true;
}

bool StepCollectives::launch(size_t i, Handle compute,
                             const std::function<DevicePtr(int)> &address,
                             std::string &error) {
  const Step &s = plan.steps[i];
  nccl::Library &lib = nccl::library();
  if (!d.check(d.eventRecord(events[2 * i], compute), "cuEventRecord", error) ||
      !d.check(d.streamWaitEvent(stream, events[2 * i], 0), "cuStreamWaitEvent",
               error))
    return false;
  lib.groupStart();
  for (size_t k = 0; k < s.inputs.size(); ++k) {
    const ValueInfo &v = plan.values[s.inputs[k]];
    int type = v.dtype == DType::F16    ? nccl::kFloat16
               : v.dtype == DType::BF16 ? nccl::kBfloat16
                                        : nccl::kFloat32;
    if (int r = lib.allReduce(
            (const void *)address(s.inputs[k]), (void *)address(s.outputs[k]),
            (size_t)numElements(v.shape), type, nccl::kAvg, comm, stream)) {
      lib.groupEnd();
      return (error = std::string("ncclAllReduce: ") + lib.errorString(r),
              false);
    }
  }
  if (int r = lib.groupEnd())
    return (error = std::string("ncclGroupEnd: ") + lib.errorString(r), false);
  if (i < issued.size())
    issued[i] = true;
  return d.check(d.eventRecord(events[2 * i + 1], stream), "cuEventRecord",
                 error);
}

bool StepCollectives::join(size_t i, Handle compute, std::string &error) {
  if (!comm || waitAt[i] < 0 ||
      ((size_t)waitAt[i] < issued.size() && !issued[waitAt[i]]))
    return true;
  return d.check(d.streamWaitEvent(compute, events[2 * waitAt[i] + 1], 0),
                 "cuStreamWaitEvent", error);
}

} // namespace mpc::rt::cu
