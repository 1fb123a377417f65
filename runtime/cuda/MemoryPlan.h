//===- MemoryPlan.h - device buffer offsets for a plan ------------*- C++ -*-===//

#ifndef MPC_RUNTIME_CUDA_MEMORYPLAN_H
#define MPC_RUNTIME_CUDA_MEMORYPLAN_H

#include "runtime/Plan.h"

#include <cstdint>
#include <vector>

namespace mpc::rt {

/// One arena for a plan: an offset per value, 256-byte aligned. Inputs,
/// parameters, constants and outputs get their own ranges; every other
/// buffer is reused once the last kernel reading it ran (first fit); an
/// aliasing step's output shares its alias's range; the intermediates of a
/// fused chain (`cuda.fusedInto`) live in registers and get no range
/// (offset -1), as does an output stored as a fused cast's result; the
/// parts of an in-place split or concat lie inside the whole's range, which
/// lives from the first write of any part; a GEMM's
/// library-computed bias gradient has its range from the GEMM on, a ReLU
/// mask from the GEMM writing it to the last GEMM reading it. Returns
/// the arena size.
int64_t planDeviceMemory(const Plan &plan, std::vector<int64_t> &offsets);

/// Where each value lives: `root`, the value whose buffer holds it
/// (itself; through aliasing steps, e.g. reshapes or a Relu fused into its
/// GEMM, the first one; for a part of an in-place split or concat, the
/// whole's root), and `delta`, the byte offset of its first element there.
struct BufferPlacement {
  std::vector<int> root;
  std::vector<int64_t> delta;
};
BufferPlacement bufferPlacement(const Plan &plan);
/// The byte offset in the whole of each part of an in-place split (its
/// outputs) or concat (its inputs); empty when they do not tile it along
/// the axis, their other dims the whole's (the plan reader refuses such a
/// plan: checkAttentionViews).
std::vector<int64_t> inPlaceOffsets(const Plan &plan, const Step &s);
/// Whether a split's (concat's) parts are each one run of its input
/// (output), 256 bytes aligned like every arena buffer (the dims before
/// its axis all 1, each part's offset a multiple of 256): left in place
/// they are ordinary row-major buffers that any kernel or library call
/// may read.
bool contiguousParts(const Plan &plan, const Step &s);
/// bufferPlacement's roots.
std::vector<int> bufferRoots(const Plan &plan);

/// Per buffer (`root` from bufferRoots), the steps that read it, in order
/// (once per operand); an aliasing step reads nothing.
std::vector<std::vector<size_t>> bufferReaders(const Plan &plan,
                                               const std::vector<int> &root);

/// The step before which the session waits for all_reduce step `step`
/// (NCCL runs it on its own stream): the first that reads one of its
/// results, or steps.size() when only the plan's outputs do.
int allReduceWait(const Plan &plan, size_t step);

/// The values a step's kernel reads: for the last step of a fused
/// elementwise chain, what its members read from outside the chain; else
/// the step's own inputs (-1 for an absent optional one), then a batch
/// norm's epilogue addend.
std::vector<int> kernelInputs(const Step &s);
/// The values a step's kernel writes, in its output order: its outputs,
/// output 0 replaced by `cuda.storedAs` where a cast is fused in.
std::vector<int> kernelOutputs(const Step &s);
/// The step whose kernel computes step `i`: `i`, or the chain its
/// `cuda.fusedInto` leads to (a widening cast fused into a member, the
/// member into the chain).
int kernelStep(const Plan &plan, int i);

} // namespace mpc::rt

#endif // MPC_RUNTIME_CUDA_MEMORYPLAN_H
