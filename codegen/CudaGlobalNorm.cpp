//===- CudaGlobalNorm.cpp - the gradients' global norm, multi-tensor ------===//
//
// mpc.global_norm (mpc-clip-grad-norm's total norm) as one multi-tensor
// launch per element type, instead of a reduction launch per gradient and
// two more for the norm of the norms. A launch's blocks stride over every
// slot as the other multi-tensor kernels do; each block folds its share
// of a slot in double and leaves the sum in the kernel scratch, a double
// per slot and block. The launch's last block to finish (a ticket taken
// after a fence, as CUDA's threadFenceReduction sample does) folds each
// slot's partials in block order - a warp a slot, lanes strided, then a
// butterfly, so the bits do not depend on which block came last - rounds
// the slot's norm to FP32 as reduce_l2 does, adds its square to the
// step's running total in slot order and writes the total's root; the
// last launch's is the result. A one-thread prologue clears the total.
//
// With a second result (mpc-unscale-in-optimizer's found_inf) each
// thread also notes an inf/NaN it reads, as checkGrads does.
//
// The norms agree with the CPU backend's within reduction order: the
// partials' order, and the total's where tensors of several types are
// grouped into launches by type.
//
//===----------------------------------------------------------------------===//

#include "codegen/CudaKernels.h"
#include "runtime/cuda/KernelCalls.h"

using namespace ::mpc::rt;

namespace mlir::mpc::cuda {

bool Emitter::globalNorm(Step &s, const std::string &name) {
  const std::string blocks = std::to_string(kListMaxBlocks);
  // With found_inf (out1), as checkGrads: the prologue clears it and a
  // thread that read inf/NaN sets it (every writer writes 1).
  const bool flag = s.outputs.size() > 1;
  // scratch[0]: the running total; scratch[1]: the blocks done (an
  // unsigned); then a launch slot's partials, kListMaxBlocks each.
  const std::string setup =
      "  const float f = ld(in0, 0);\n"
      "  double acc = 0.0;\n"
      "  unsigned *const done = (unsigned *)(scratch + 1);\n"
      "  double *const partials = scratch + 2;\n" +
      std::string(flag ? "  int bad = 0;\n" : "");
  const std::string body =
      flag ? "    { const float r = ld($X0, i), v = r * f;\n"
             "      bad |= !isfinite(r); acc += (double)v * v; }\n"
           : "    { const float v = ld($X0, i) * f; acc += (double)v * v; }\n";
  const std::string slotEnd =
      "    {\n      const double sum = mpc_block_sum_f64(acc);\n"
      "      if (threadIdx.x == 0) partials[t * " +
      blocks + "LL + blockIdx.x] = sum;\n      acc = 0.0;\n    }\n";
  const std::string end =
      std::string(flag ? "  if (bad) out1[0] = 1;\n" : "") +
      "  constexpr int slots = sizeof(a.s) / sizeof(a.s[0]);\n"
      "  __shared__ int last;\n"
      "  __shared__ double squares[slots];\n"
      "  if (threadIdx.x == 0) {\n"
      "    __threadfence();\n"
      "    last = atomicAdd(done, 1u) == gridDim.x - 1;\n"
      "  }\n"
      "  __syncthreads();\n"
      "  if (!last) return;\n"
      "  __threadfence();\n"
      "  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;\n"
      "  for (int j = warp; j < slots; j += blockDim.x / 32) {\n"
      "    const volatile double *p = partials + j * " +
      blocks +
      "LL;\n"
      "    double sum = 0.0;\n"
      "    for (unsigned b = lane; b < gridDim.x; b += 32) sum += p[b];\n"
      "    sum = mpc_warp_sum(sum);\n"
      "    const float norm = (float)sqrt(sum);\n"
      "    if (lane == 0) squares[j] = (double)norm * norm;\n"
      "  }\n"
      "  __syncthreads();\n"
      "  if (threadIdx.x == 0) {\n"
      "    double total = scratch[0];\n"
      "    for (int j = 0; j < slots; ++j)\n"
      "      if (a.s[j].n > 0) total += squares[j];\n"
      "    scratch[0] = total;\n"
      "    st(out0, 0, (float)sqrt(total));\n"
      "    *done = 0;\n"
      "  }\n";
  const std::string prologue =
      "  scratch[0] = 0.0;\n  *(unsigned *)(scratch + 1) = 0;\n"
      "  st(out0, 0, 0.0f);\n" +
      std::string(flag ? "  out1[0] = 0;\n" : "");
  TensorListCode code{{1, 0, flag ? 2 : 1, 0}, 0, setup, body, end, prologue};
  code.slotEnd = slotEnd;
  code.scratch = true;
  code.barrier = true;
  if (!tensorLists(s, name, code))
    return false;
  s.cuda.scratch = globalNormScratchBytes(s.cuda.lists.perLaunch);
  return true;
}

} // namespace mlir::mpc::cuda
