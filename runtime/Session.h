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
  /// Output `index` (plan order) of the last run.
  virtual bool output(size_t index, Tensor &t, std::string &error) = 0;
  /// Makes output `index` of the last run the value of input or parameter
  /// `name` without a trip through the host.
  virtual bool feedBack(size_t index, const std::string &name,
                        std::string &error) = 0;
  /// The current value of input or parameter `name`.
  virtual bool get(const std::string &name, Tensor &t, std::string &error) = 0;
  /// Gradient elements the last run flushed to zero (nonzero before and
  /// zero after a step marked mpc.count_underflow).
  virtual int64_t underflow() const = 0;
  /// One line on how the session runs its work ("" when there is nothing
  /// to say): for CUDA, who runs the GEMMs.
  virtual std::string describe() const { return ""; }
};

/// The CPU backend (runPlan) as a session.
std::unique_ptr<Session> openCpuSession(const Plan &plan);

/// Index of the input binding or parameter called `name` in `plan`: its
/// value id, or -1.
int valueOfName(const Plan &plan, const std::string &name);

} // namespace mpc::rt

#endif // MPC_RUNTIME_SESSION_H
