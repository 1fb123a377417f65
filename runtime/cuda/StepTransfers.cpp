//===- StepTransfers.cpp - what a CUDA step moves over the bus ------------===//

#include "runtime/cuda/StepTransfers.h"

#include <algorithm>
#include <cstring>

namespace mpc::rt::cu {

StepTransfers::~StepTransfers() {
  for (void *host : {staging, nextStaging, readBack})
    if (host)
      d.memFreeHost(host);
  if (nextBase)
    d.memFree(nextBase);
  for (auto &[v, e] : copied)
    d.eventDestroy(e);
  if (consumed)
    d.eventDestroy(consumed);
  if (copyStream)
    d.streamDestroy(copyStream);
}

void StepTransfers::open(const std::vector<int> &fed, Handle s, DevicePtr b) {
  stream = s, base = b;
  for (int v : fed)
    slotOf[v] = slotBytes,
    slotBytes += (plan.values[v].bytes() + 255) / 256 * 256;
  if (slotBytes && d.memHostAlloc(&staging, slotBytes, 0) != 0)
    staging = nullptr;
}

bool StepTransfers::set(int v, const Tensor &t, std::string &error) {
  prefetched.erase(v); // this value wins over a prefetched one
  overwriting(v);
  // A slot's copy finishes before the run after it returns (finishRun
  // synchronizes); a slot set twice before a run waits for its first copy.
  if (!pendingSlots.insert(v).second &&
      !d.check(d.streamSynchronize(stream), "upload", error))
    return false;
  char *slot = static_cast<char *>(staging) + slotOf.at(v);
  std::memcpy(slot, t.raw(), t.bytes());
  return d.check(d.memcpyHtoD(base + offsets[v], slot, t.bytes(), stream),
                 "upload", error);
}

/// The prefetch buffers, on first use (a session that never prefetches
/// holds none). False with `error` empty where page-locked memory is
/// short: prefetch() then leaves the input to set().
bool StepTransfers::openPrefetch(std::string &error) {
  if (copyStream)
    return true;
  if (noPrefetch)
    return false;
  if (d.memHostAlloc(&nextStaging, slotBytes, 0) != 0)
    return nextStaging = nullptr, noPrefetch = true, false;
  return d.check(d.memAlloc(&nextBase, slotBytes),
                 "allocating " + std::to_string(slotBytes) +
                     " bytes for prefetched inputs",
                 error) &&
         d.check(d.eventCreate(&consumed, 2 /*DISABLE_TIMING*/),
                 "cuEventCreate", error) &&
         d.check(d.streamCreate(&copyStream, 1 /*NON_BLOCKING*/),
                 "cuStreamCreate", error);
}

bool StepTransfers::prefetch(int v, const Tensor &t, std::string &error) {
  if (!staged(v) || !openPrefetch(error))
    return false;
  // The slot's last copy has read it (long done: it fed the step before).
  Handle &done = copied[v];
  if (done ? !d.check(d.eventSynchronize(done), "prefetch", error)
           : !d.check(d.eventCreate(&done, 2 /*DISABLE_TIMING*/),
                      "cuEventCreate", error))
    return false;
  size_t at = slotOf.at(v);
  char *slot = static_cast<char *>(nextStaging) + at;
  std::memcpy(slot, t.raw(), t.bytes());
  // The buffer's last value was moved in place by the last startRun().
  if ((movedAny && !d.check(d.streamWaitEvent(copyStream, consumed, 0),
                            "cuStreamWaitEvent", error)) ||
      !d.check(d.memcpyHtoD(nextBase + at, slot, t.bytes(), copyStream),
               "prefetch", error) ||
      !d.check(d.eventRecord(done, copyStream), "cuEventRecord", error))
    return false;
  prefetched.insert(v);
  return true;
}

bool StepTransfers::startRun(std::string &error) {
  for (ReadBack &r : readAfter)
    r.fresh = false;
  // Prefetched inputs move in place once their copies are done.
  for (int v : prefetched)
    if (!d.check(d.streamWaitEvent(stream, copied[v], 0), "cuStreamWaitEvent",
                 error) ||
        !d.check(d.memcpyDtoD(base + offsets[v], nextBase + slotOf.at(v),
                              plan.values[v].bytes(), stream),
                 "moving a prefetched input", error))
      return false;
  if (prefetched.empty())
    return true;
  prefetched.clear();
  movedAny = true;
  return d.check(d.eventRecord(consumed, stream), "cuEventRecord", error);
}

void StepTransfers::readAfterEveryRun(
    const std::vector<std::pair<size_t, int>> &outputs) {
  if (readBack || outputs.empty())
    return; // once a session
  size_t at = 8; // after the counter
  for (const auto &[index, v] : outputs) {
    readAfter.push_back(ReadBack{index, v, at, false});
    at += (plan.values[v].bytes() + 7) / 8 * 8;
  }
  if (d.memHostAlloc(&readBack, at, 0) != 0)
    readBack = nullptr, readAfter.clear(); // each read on its own
}

bool StepTransfers::finishRun(DevicePtr counter, uint64_t &count,
                              std::string &error) {
  char *into = static_cast<char *>(readBack);
  if (counter && !d.check(d.memcpyDtoH(readBack ? into : (void *)&count,
                                       counter, sizeof count, stream),
                          "running the kernels", error))
    return false;
  for (const ReadBack &r : readAfter)
    if (!d.check(d.memcpyDtoH(into + r.at, base + offsets[r.value],
                              plan.values[r.value].bytes(), stream),
                 "running the kernels", error))
      return false;
  if (!d.check(d.streamSynchronize(stream), "running the kernels", error))
    return false;
  if (readBack && counter)
    std::memcpy(&count, into, sizeof count);
  for (ReadBack &r : readAfter)
    r.fresh = true;
  pendingSlots.clear();
  return true;
}

bool StepTransfers::cached(size_t index, Tensor &t) const {
  for (const ReadBack &r : readAfter)
    if (r.index == index && r.fresh) {
      const ValueInfo &info = plan.values[r.value];
      t = Tensor(info.dtype, info.shape);
      std::memcpy(t.raw(), static_cast<char *>(readBack) + r.at, t.bytes());
      return true;
    }
  return false;
}

void StepTransfers::overwriting(int v) {
  for (ReadBack &r : readAfter)
    if (offsets[r.value] < offsets[v] + (int64_t)plan.values[v].bytes() &&
        offsets[v] < offsets[r.value] + (int64_t)plan.values[r.value].bytes())
      r.fresh = false;
}

} // namespace mpc::rt::cu
