//===- Kernel.h - what a CPU kernel sees of one plan step ---------*- C++ -*-===//

#ifndef MPC_RUNTIME_KERNEL_H
#define MPC_RUNTIME_KERNEL_H

#include "runtime/Plan.h"

#include <algorithm>
#include <array>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace mpc::rt {

/// Thrown by kernels for invalid data (an index out of range...); the
/// executor turns it into an error message naming the step.
struct KernelError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// Recycles tensor storage between steps (and runs) by byte size, so large
/// activations do not pay allocation and first-touch page faults each time.
class BufferPool {
public:
  std::shared_ptr<uint8_t[]> take(size_t bytes);
  /// Returns `t`'s storage if nothing else shares it.
  void give(Tensor &t);

private:
  std::multimap<size_t, std::shared_ptr<uint8_t[]>> free_;
  size_t cached_ = 0;
};

class KernelContext {
public:
  KernelContext(const Step &step, const Plan &plan, std::vector<Tensor> &values,
                BufferPool *pool = nullptr)
      : step(step), plan_(plan), values_(values), pool_(pool) {}

  const Step &step;

  size_t numInputs() const { return step.inputs.size(); }
  /// Input i, or null when absent (an omitted optional operand).
  const Tensor *input(size_t i) const {
    if (i >= step.inputs.size() || step.inputs[i] < 0)
      return nullptr;
    return &values_[step.inputs[i]];
  }
  const Tensor &in(size_t i) const { return *input(i); }
  size_t numOutputs() const { return step.outputs.size(); }
  const ValueInfo &outputInfo(size_t i) const {
    return plan_.values[step.outputs[i]];
  }
  /// Allocates output i with the plan's type. Its contents are unspecified:
  /// kernels write every element (or call outputZeroed).
  Tensor &output(size_t i) {
    const ValueInfo &info = outputInfo(i);
    if (!pool_)
      return values_[step.outputs[i]] = Tensor(info.dtype, info.shape);
    size_t bytes = std::max<size_t>(numElements(info.shape) *
                                        dtypeSize(info.dtype),
                                    1);
    return values_[step.outputs[i]] =
               Tensor(info.dtype, info.shape, pool_->take(bytes));
  }
  Tensor &outputZeroed(size_t i) {
    Tensor &t = output(i);
    std::fill_n(static_cast<uint8_t *>(t.raw()), t.bytes(), 0);
    return t;
  }
  /// Makes output i share `t`'s storage (reshape-like ops).
  void setOutput(size_t i, Tensor t) { values_[step.outputs[i]] = std::move(t); }

private:
  const Plan &plan_;
  std::vector<Tensor> &values_;
  BufferPool *pool_;
};

using Kernel = void (*)(KernelContext &);

/// The CPU kernels, one per op. Every op that can reach a plan must have
/// one: the table is checked against the generated op list when first
/// used, and a missing kernel stops the process naming the op.
class KernelTable {
public:
  void add(OpId op, Kernel kernel);
  Kernel operator[](OpId op) const { return kernels_[(size_t)op]; }

private:
  std::array<Kernel, kNumOps> kernels_{};
};

/// The kernel of `op` (complete for every op in plans).
Kernel findKernel(OpId op);

namespace dist {
class ProcessGroup;
}
/// An all_reduce step's work on allocated outputs: the mean over `group`'s
/// ranks of each input (the identity without a group), in `wire` type.
bool allReduceBucket(const std::vector<const Tensor *> &in,
                     const std::vector<Tensor *> &out, const std::string &wire,
                     dist::ProcessGroup *group, std::string &error);

// Registration, one function per kernel file (op family).
void registerElementwiseKernels(KernelTable &t);
void registerLinalgKernels(KernelTable &t);
void registerNnKernels(KernelTable &t);
void registerNormKernels(KernelTable &t);
void registerShapeKernels(KernelTable &t);
void registerReduceKernels(KernelTable &t);
void registerTrainingKernels(KernelTable &t);
void registerAttentionKernels(KernelTable &t);
void registerResizeKernels(KernelTable &t);

} // namespace mpc::rt

#endif // MPC_RUNTIME_KERNEL_H
