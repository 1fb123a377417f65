//===- Session.h - a plan run again and again, state kept ---------*- C++ -*-===//
//
// A training loop runs the same plan every step and feeds some outputs
// (new weights, optimizer and loss-scale state) back as the next step's
// inputs. A Session keeps every input and parameter where its backend
// computes: host memory for the CPU backend, the device arena for CUDA, so
// a GPU step moves only the batch in and the few scalars it reports out.
//
//===----------------------------------------------------------------------===//

#ifndef MPC_RUNTIME_SESSION_H
#define MPC_RUNTIME_SESSION_H

#include "runtime/Plan.h"

#include <memory>
#include <string>
#include <vector>

namespace mpc::rt {

class Session {
public:
  virtual ~Session() = default;
  /// Sets graph input or parameter `name`; it keeps the value across runs
  /// until set again. Parameters start at their initial values.
  virtual bool set(const std::string &name, const Tensor &t,
                   std::string &error) = 0;
  /// Runs the plan once on the current inputs.
  virtual bool run(std::string &error) = 0;
  /// run() in two halves: start() may return while the run is in flight
  /// (a GPU's queue), finish() waits for it. Between the two the host may
  /// prepare the next run's inputs and prefetch() them.
  virtual bool start(std::string &error) { return run(error); }
  virtual bool finish(std::string &error) { return (void)error, true; }
  /// Sets input `name` for the run after the one started: its copy may
  /// overlap the run in flight (a CUDA session copies on a stream of its
  /// own into a second buffer; the next start() moves it in place). Until
  /// that start, get(name) may return either value.
  virtual bool prefetch(const std::string &name, const Tensor &t,
                        std::string &error) {
    return set(name, t, error);
  }
  /// Output `index` (plan order) of the last run.
  virtual bool output(size_t index, Tensor &t, std::string &error) = 0;
  /// Whether the last run left output `index` uncomputed: a micro-batch
  /// that does not apply its group's update skips the steps only the
  /// update needs (runtime/AppliedOnly.h); its outputs keep their old
  /// values (feedBack leaves the input alone) and output() refuses them.
  virtual bool skipped(size_t index) const { return (void)index, false; }
  /// Outputs read after every run (a train step's loss, flag and scale):
  /// a CUDA session copies them back with the run's end, one
  /// synchronization for all, and output() answers from that copy.
  virtual void readAfterEveryRun(const std::vector<size_t> &outputs) {
    (void)outputs;
  }
  /// Makes output `index` of the last run the value of input or parameter
  /// `name` without a trip through the host.
  virtual bool feedBack(size_t index, const std::string &name,
                        std::string &error) = 0;
  /// The current value of input or parameter `name`.
  virtual bool get(const std::string &name, Tensor &t, std::string &error) = 0;
  /// Sets parameter `name` to the value of `fromName` in session `from`
  /// (a phase's update handed to the other phases, the weights or their
  /// moving average for an evaluation): through the host here; a CUDA
  /// session copies from another on the device.
  virtual bool setFrom(Session &from, const std::string &fromName,
                       const std::string &name, std::string &error) {
    Tensor t;
    return from.get(fromName, t, error) && set(name, t, error);
  }
  /// Gradient elements the last run flushed to zero (nonzero before and
  /// zero after a step marked mpc.count_underflow).
  virtual int64_t underflow() const = 0;
  /// One line on how the session runs its work ("" when there is nothing
  /// to say): for CUDA, who runs the GEMMs.
  virtual std::string describe() const { return ""; }
  /// A launching step's time run alone: its plan index, what runs it (a
  /// kernel's name without its hash, or the library and op) and the mean
  /// milliseconds of a few runs between events.
  struct StepTime {
    size_t step;
    std::string what;
    double ms;
  };
  /// Times every launching step alone, in plan order. The steps run again
  /// and write their results (an update over its state): call it after
  /// what the runs were for. Leaves `times` empty where the backend has
  /// no such timing (the CPU's is MPC_PROFILE).
  virtual bool profile(std::vector<StepTime> &times, std::string &error) {
    times.clear();
    return (void)error, true;
  }
};

/// The CPU backend (runPlan) as a session.
std::unique_ptr<Session> openCpuSession(const Plan &plan);

/// Index of the input binding or parameter called `name` in `plan`: its
/// value id, or -1.
int valueOfName(const Plan &plan, const std::string &name);

} // namespace mpc::rt

#endif // MPC_RUNTIME_SESSION_H
