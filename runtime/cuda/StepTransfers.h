//===- StepTransfers.h - what a CUDA step moves over the bus ----*- C++ -*-===//
//
// Besides its kernels' work a train step moves its batch in and a few
// scalars out. The batch goes through page-locked slots (the copy engine
// reads them at full speed; pageable memory goes through the driver's
// bounce buffers), and the next one may be prefetched while a step runs:
// copied from a second slot on a stream of its own into a second device
// buffer, moved in place (one device-to-device copy) when that step
// starts. Outputs read after every run come back behind the kernels into
// page-locked memory, one synchronization for all.
//
//===----------------------------------------------------------------------===//

#ifndef MPC_RUNTIME_CUDA_STEPTRANSFERS_H
#define MPC_RUNTIME_CUDA_STEPTRANSFERS_H

#include "runtime/Plan.h"
#include "runtime/cuda/CudaDriver.h"

#include <map>
#include <set>
#include <string>
#include <vector>

namespace mpc::rt::cu {

class StepTransfers {
public:
  /// `offsets`: the arena offsets of the plan's values (filled by the
  /// session before open()).
  StepTransfers(Driver &d, const Plan &plan,
                const std::vector<int64_t> &offsets)
      : d(d), plan(plan), offsets(offsets) {}
  ~StepTransfers();
  StepTransfers(const StepTransfers &) = delete;
  StepTransfers &operator=(const StepTransfers &) = delete;

  /// Slots for the inputs fed every step (`fed`), on the session's
  /// `stream` into its arena at `base`. Without page-locked memory the
  /// copies go direct.
  void open(const std::vector<int> &fed, Handle stream, DevicePtr base);
  /// Whether input `v` goes through a slot.
  bool staged(int v) const { return staging && slotOf.count(v); }
  /// Input `v` := `t` (staged(v)) in stream order; a value prefetched for
  /// it is dropped.
  bool set(int v, const Tensor &t, std::string &error);
  /// Input `v` := `t` from the next run on, copied while the current one
  /// runs. False with `error` empty where there is no slot or prefetch
  /// buffer: the caller sets it in stream order instead.
  bool prefetch(int v, const Tensor &t, std::string &error);
  /// Before a run: prefetched inputs moved in place once copied; cached
  /// outputs go stale.
  bool startRun(std::string &error);
  /// Outputs (plan index, value) copied back after every run.
  void readAfterEveryRun(const std::vector<std::pair<size_t, int>> &outputs);
  /// After a run's work was queued: the u64 at `counter` (when not 0) and
  /// the outputs read every run come back, then one synchronization.
  bool finishRun(DevicePtr counter, uint64_t &count, std::string &error);
  /// Output `index` of the last run where it was read back and its buffer
  /// not written since.
  bool cached(size_t index, Tensor &t) const;
  /// Value `v`'s buffer is about to be written (not by a run).
  void overwriting(int v);

private:
  bool openPrefetch(std::string &error);

  Driver &d;
  const Plan &plan;
  const std::vector<int64_t> &offsets;
  Handle stream = nullptr;
  DevicePtr base = 0;
  void *staging = nullptr;          // a page-locked slot per fed input
  std::map<int, size_t> slotOf;     // its offset in the slots
  size_t slotBytes = 0;
  std::set<int> pendingSlots;       // slots whose copy may be in flight
  // prefetch(): a second set of slots and a device buffer laid out alike,
  // filled on copyStream while a step runs.
  Handle copyStream = nullptr;
  void *nextStaging = nullptr;
  DevicePtr nextBase = 0;
  std::map<int, Handle> copied;     // per input: its last prefetch's end
  Handle consumed = nullptr;        // the last run's moves out of nextBase
  bool movedAny = false;            // consumed has been recorded
  bool noPrefetch = false;          // page-locked memory was short
  std::set<int> prefetched;         // inputs whose next value waits
  // readAfterEveryRun(): outputs copied back by finishRun(), at `at`
  // bytes into readBack (the counter first); fresh until the next run or
  // a write to their buffer.
  struct ReadBack {
    size_t index;
    int value;
    size_t at;
    bool fresh;
  };
  std::vector<ReadBack> readAfter;
  void *readBack = nullptr;
};

} // namespace mpc::rt::cu

#endif // MPC_RUNTIME_CUDA_STEPTRANSFERS_H
