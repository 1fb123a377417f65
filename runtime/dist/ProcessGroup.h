//===- ProcessGroup.h - the ranks of a data-parallel job ----------*- C++ -*-===//
//
// One process per device, as PyTorch DDP and Horovod run: a rank learns
// its place from the torchrun environment (RANK, WORLD_SIZE, LOCAL_RANK,
// MASTER_ADDR, MASTER_PORT) or from mpirun's (OMPI_COMM_WORLD_*, PMI_*),
// meets the others at rank 0's TcpStore, and reduces gradients through a
// collective library: gloo for CPU ranks (GlooGroup.cpp), NCCL for GPU
// ranks (runtime/cuda/Nccl.cpp, on the device's own buffers).
//
// Failure is loud: a collective that fails or times out (the
// --collective-timeout) makes every surviving rank check in at the store;
// the error names the ranks that did not.
//
//===----------------------------------------------------------------------===//

#ifndef MPC_RUNTIME_DIST_PROCESSGROUP_H
#define MPC_RUNTIME_DIST_PROCESSGROUP_H

#include "runtime/dist/TcpStore.h"

#include <chrono>
#include <cstdint>
#include <memory>
#include <algorithm>
#include <atomic>
#include <string>
#include <thread>

namespace mpc::rt::dist {

/// Where this process is in its job.
struct JobEnv {
  int rank = 0, size = 1, localRank = 0;
  std::string masterAddr = "127.0.0.1";
  int masterPort = 29500;
  std::string launcher; // "torchrun", "mpirun" or "" (a single process)

  bool distributed() const { return !launcher.empty(); }
};

/// Reads the environment. False with a one-line `error` when it is
/// inconsistent (RANK without WORLD_SIZE, a rank out of range...).
bool readJobEnv(JobEnv &env, std::string &error);

class ProcessGroup {
public:
  ProcessGroup(const JobEnv &env, std::unique_ptr<TcpStore> store,
               std::chrono::milliseconds timeout,
               std::chrono::milliseconds startTimeout)
      : env_(env), store_(std::move(store)), timeout_(timeout),
        startTimeout_(std::max(timeout, startTimeout)) {}
  virtual ~ProcessGroup();

  /// Starts the watchdog: a thread on its own store connection that ends
  /// this process with one line as soon as another rank's connection to
  /// the store closes before it finished (it died: a collective with it
  /// might otherwise wait for the whole timeout), or the store itself is
  /// gone (rank 0 died). A hung rank is caught by the collective timeout.
  bool startWatchdog(std::string &error);

  int rank() const { return env_.rank; }
  int size() const { return env_.size; }
  const JobEnv &env() const { return env_; }
  TcpStore &store() { return *store_; }
  std::chrono::milliseconds timeout() const { return timeout_; }
  /// Until the ranks have met once (each imports and compiles the model at
  /// its own pace first), the store and collectives wait up to
  /// `startTimeout()` (--rendezvous-timeout, as torchrun's); then
  /// `timeout()` (--collective-timeout).
  std::chrono::milliseconds startTimeout() const { return startTimeout_; }
  /// The ranks have met: collectives wait `timeout()` from here on.
  virtual void beginTraining() { started_ = true; }
  std::chrono::milliseconds collectiveTimeout() const {
    return started_ ? timeout_ : startTimeout();
  }
  virtual std::string name() const = 0; // "gloo", "nccl"

  /// In place on host memory: the sum over ranks, times 1/size (rounded
  /// to FP32 once) when `average`. Every rank gets the same bits.
  bool allReduce(float *data, size_t n, bool average, std::string &error);
  /// The same on fp16 (`bf16` false) or bf16 bit patterns: half the bytes
  /// on the wire, partial sums rounded to the 16-bit type.
  bool allReduce16(uint16_t *data, size_t n, bool bf16, bool average,
                   std::string &error);
  /// Integer sums (a mismatch count); double sums (the step's loss and
  /// flushed-to-zero count, in one collective).
  virtual bool allReduce(int64_t *data, size_t n, std::string &error) = 0;
  virtual bool allReduce(double *data, size_t n, std::string &error) = 0;
  virtual bool broadcast(void *data, size_t bytes, int root,
                         std::string &error) = 0;

  /// Seconds spent in collectives since the last call (per-step metrics).
  double takeCommSeconds() {
    double s = commSeconds_;
    commSeconds_ = 0;
    return s;
  }
  /// Every rank arrives here before rank 0's store goes away.
  bool finish(std::string &error);
  /// Bracket a training step: the watchdog ends the process, naming the
  /// ranks that hung, when one runs past the timeout.
  void stepStarted(int64_t step);
  void stepEnded();

protected:
  /// The sums the averaging all-reduces above are made of.
  virtual bool sum(float *data, size_t n, std::string &error) = 0;
  virtual bool sum16(uint16_t *data, size_t n, bool bf16,
                     std::string &error) = 0;
  /// The error after a failed collective: checks in at the store, waits a
  /// little for the others, and names the ranks that did not come.
  std::string failure(const std::string &what, const std::string &why);

  void stopWatchdog();

  JobEnv env_;
  std::unique_ptr<TcpStore> store_;
  std::unique_ptr<std::thread> watchdog_;
  std::atomic<bool> stopping_{false};
  std::atomic<int64_t> stepStart_{-1}, step_{0}; // ms on the steady clock
  std::chrono::milliseconds timeout_, startTimeout_;
  bool started_ = false;
  double commSeconds_ = 0;
};

/// The job's store: served here when this is rank 0, reached within the
/// rendezvous timeout `start` (--rendezvous-timeout); null with a one-line
/// `error` naming the rank.
std::unique_ptr<TcpStore> openJobStore(const JobEnv &env,
                                       std::chrono::milliseconds start,
                                       std::string &error);

/// The CPU ranks' group (gloo over TCP); null with `error` when mpc was
/// built without gloo.
std::unique_ptr<ProcessGroup> openGlooGroup(const JobEnv &env,
                                            std::chrono::milliseconds timeout,
                                            std::chrono::milliseconds start,
                                            std::string &error);

/// GPU ranks' group: their host-side reductions (a few scalars a step)
/// through the job's store; the gradients go through NCCL on the device,
/// in the CUDA session, which takes the store for NCCL's unique id.
std::unique_ptr<ProcessGroup> openStoreGroup(const JobEnv &env,
                                             std::chrono::milliseconds timeout,
                                             std::chrono::milliseconds start,
                                             std::string &error);

/// The job this process is a rank of: the CPU executor's all_reduce steps
/// reduce through it, a CUDA session opens its NCCL communicator from it
/// (null: one process).
ProcessGroup *currentGroup();
void setCurrentGroup(ProcessGroup *group);

} // namespace mpc::rt::dist

#endif // MPC_RUNTIME_DIST_PROCESSGROUP_H
