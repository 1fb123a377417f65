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

bool StepTransfers::check(Result r, const std::string &what,
                          std::string &error) const {
  if (r)
    error = what + ": " + d.describe(r);
  return r == 0;
}

size_t StepTransfers::bytes(int v) const {
  const ValueInfo &info = plan.values[v];
  return (size_t)numElements(info.shape) * dtypeSize(info.dtype);
}

void StepTransfers::open(const std::vector<int> &fed, Handle s, DevicePtr b) {
  stream = s, base = b;
  for (int v : fed)
    slotOf[v] = slotBytes, slotBytes += (bytes(v) + 255) / 256 * 256;
  if (slotBytes && d.memHostAlloc(&staging, slotBytes, 0) != 0)
    staging = nullptr;
}

bool StepTransfers::set(int v, const Tensor &t, std::string &error) {
  prefetched.erase(v); // this value wins over a prefetched one
  overwriting(v);
  // A slot's copy finishes before the run after it returns (finishRun
  // synchronizes); a slot set twice before a run waits for its first copy.
  if (!pendingSlots.insert(v).second &&
      !check(d.streamSynchronize(stream), "upload", error))
    return false;
  char *slot = static_cast<char *>(staging) + slotOf.at(v);
  std::memcpy(slot, t.raw(), t.bytes());
  return check(d.memcpyHtoD(base + offsets[v], slot, t.bytes(), stream),
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
  return check(d.memAlloc(&nextBase, slotBytes),
               "allocating " + std::to_string(slotBytes) +
                   " bytes for prefetched inputs",
               error) &&
         check(d.eventCreate(&consumed, 2 /*DISABLE_TIMING*/), "cuEventCreate",
               error) &&
         check(d.streamCreate(&copyStream, 1 /*NON_BLOCKING*/),
               "cuStreamCreate", error);
}

bool StepTransfers::prefetch(int v, const Tensor &t, std::string &error) {
  if (!staged(v) || !openPrefetch(error))
    return false;
  // The slot's last copy has read it (long done: it fed the step before).
  Handle &done = copied[v];
  if (done ? !check(d.eventSynchronize(done), "prefetch", error)
           : !check(d.eventCreate(&done, 2 /*DISABLE_TIMING*/),
                    "cuEventCreate", error))
    return false;
  size_t at = slotOf.at(v);
  char *slot = static_cast<char *>(nextStaging) + at;
  std::memcpy(slot, t.raw(), t.bytes());
  // The buffer's last value was moved in place by the last startRun().
  if ((movedAny && !check(d.streamWaitEvent(copyStream, consumed, 0),
                          "cuStreamWaitEvent", error)) ||
      !check(d.memcpyHtoD(nextBase + at, slot, t.bytes(), copyStream),
             "prefetch", error) ||
      !check(d.eventRecord(done, copyStream), "cuEventRecord", error))
    return false;
  prefetched.insert(v);
  return true;
}

bool StepTransfers::startRun(std::string &error) {
  for (ReadBack &r : readAfter)
    r.fresh = false;
  // Prefetched inputs move in place once their copies are done.
  for (int v : prefetched)
    if (!check(d.streamWaitEvent(stream, copied[v], 0), "cuStreamWaitEvent",
               error) ||
        !check(d.memcpyDtoD(base + offsets[v], nextBase + slotOf.at(v),
                            bytes(v), stream),
               "moving a prefetched input", error))
      return false;
  if (prefetched.empty())
    return true;
  prefetched.clear();
  movedAny = true;
  return check(d.eventRecord(consumed, stream), "cuEventRecord", error);
}

void StepTransfers::readAfterEveryRun(
    const std::vector<std::pair<size_t, int>> &outputs) {
  if (readBack || outputs.empty())
    return; // once a session
  size_t at = 8; // after the counter
  for (const auto &[index, v] : outputs) {
    readAfter.push_back(ReadBack{index, v, at, false});
    at += (bytes(v) + 7) / 8 * 8;
  }
  if (d.memHostAlloc(&readBack, at, 0) != 0)
    readBack = nullptr, readAfter.clear(); // each read on its own
}

bool StepTransfers::finishRun(DevicePtr counter, uint64_t &count,
                              std::string &error) {
  char *into = static_cast<char *>(readBack);
  if (counter &&
      !check(d.memcpyDtoH(readBack ? into : (void *)&count, counter,
                          sizeof count, stream),
             "running the kernels", error))
    return false;
  for (const ReadBack &r : readAfter)
    if (!check(d.memcpyDtoH(into + r.at, base + offsets[r.value],
                            bytes(r.value), stream),
               "running the kernels", error))
      return false;
  if (!check(d.streamSynchronize(stream), "running the kernels", error))
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
    if (offsets[r.value] < offsets[v] + (int64_t)bytes(v) &&
        offsets[v] < offsets[r.value] + (int64_t)bytes(r.value))
      r.fresh = false;
}

} // namespace mpc::rt::cu
