//===- KernelCalls.h - the kernel launches of a plan step ---------*- C++ -*-===//
//
// One definition of what a step's kernels are launched with, shared by the
// CUDA session and the host emulation: buffer addresses and element counts
// as 8-byte argument values, in the order the emitted kernels declare them.
// MLIR-free.
//
//===----------------------------------------------------------------------===//

#ifndef MPC_RUNTIME_CUDA_KERNELCALLS_H
#define MPC_RUNTIME_CUDA_KERNELCALLS_H

#include "runtime/Plan.h"

#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace mpc::rt {

/// One kernel launch: its kernel, grid and block, and its arguments' values
/// (device addresses and counts, each passed as 8 bytes).
struct KernelCall {
  const std::string *kernel;
  std::array<int64_t, 3> grid, block;
  std::vector<uint64_t> args;
  /// The arguments are one struct parameter (multi-tensor kernels: their
  /// slots are an array the kernel indexes), not one parameter each.
  bool packed = false;
  int64_t smem = 0; // dynamic shared memory, bytes
};

/// Blocks of a multi-tensor launch whose largest slot has `largest`
/// elements: a thread per element up to a grid-stride cap.
inline constexpr int64_t kListThreads = 256, kListMaxBlocks = 1024;
inline int64_t tensorListBlocks(int64_t largest) {
  int64_t b = (largest + kListThreads - 1) / kListThreads;
  return b < 1 ? 1 : b > kListMaxBlocks ? kListMaxBlocks : b;
}

/// The launches of step `s` in order (its prologue first): `address` gives
/// a value's device address, `counter` the underflow counter's, `scratch`
/// the kernel scratch's (steps with `cuda.scratch`).
std::vector<KernelCall> kernelCalls(const Plan &plan, const Step &s,
                                    const std::function<uint64_t(int)> &address,
                                    uint64_t counter, uint64_t scratch);

/// mpc.global_norm's kernel scratch (codegen/CudaGlobalNorm.cpp): its
/// running total and a count of finished blocks, then a double a block for
/// each of a launch's `perLaunch` slots.
inline int64_t globalNormScratchBytes(int64_t perLaunch) {
  return 16 + perLaunch * kListMaxBlocks * 8;
}

/// The most kernel scratch a step may declare (the reader refuses more;
/// the attention backward's dQ partial sums stay below it).
inline constexpr int64_t kKernelScratchLimit = int64_t(1) << 30;

/// The attention backward's D = rowsum(dO y), FP32 a query, which the
/// prologue of its recomputing and atomic forms computes once for every
/// block (in whole 16 bytes; the last thing in their scratch).
inline int64_t attentionRowDBytes(int64_t heads, int64_t queries) {
  return (heads * queries + 3) / 4 * 4 * 4;
}
/// The attention backward's scratch where key blocks add dQ atomically
/// (--attention-dq atomic): one FP32 dQ, then a count a head and chunk of
/// kAttentionDqChunk queries (the key blocks that added to it), in whole
/// 16 bytes, then D.
inline constexpr int64_t kAttentionDqChunk = 128;
inline int64_t attentionAtomicDqBytes(int64_t heads, int64_t queries,
                                      int64_t d) {
  const int64_t chunks = (queries + kAttentionDqChunk - 1) / kAttentionDqChunk;
  return (heads * queries * d + (heads * chunks + 3) / 4 * 4) * 4;
}

/// The kernel scratch the plan's steps need: the largest `cuda.scratch`
/// (one range, shared; 0 when no step takes it).
int64_t kernelScratchBytes(const Plan &plan);

/// "" or why a step's kernels cannot run on the scratch it declares: a
/// batch norm whose grid splits a channel over blocks needs room for
/// their partial sums, the attention backward's key blocks for their dQ
/// partial sums (splits x batch x queries x head size FP32, the splits
/// its prologue's grid.x), and no other kernel takes the scratch argument
/// (checked when a plan is read; the values' shapes must be known).
std::string checkKernelScratch(const Plan &plan, const Step &s);

/// "" or what is inconsistent in a multi-tensor step's lists (read from a
/// plan that may be corrupt): operand counts, slots out of range.
std::string checkTensorLists(const Step &s);

/// "" or what is inconsistent in the plan's step batches: a batch that
/// names a step without its kernel or count, a step batched into a step
/// whose batch does not list it.
std::string checkStepBatches(const Plan &plan);

} // namespace mpc::rt

#endif // MPC_RUNTIME_CUDA_KERNELCALLS_H
