// Runs emitted CUDA kernels on the host, for testing the emitter without a
// GPU: included (with -DMPC_HOST_EMULATION) before an artifact's
// kernels.cu compiled by g++. Blocks and threads run one after another;
// kernels with __syncthreads run their threads as real threads meeting at
// a barrier. tc_gemm is replaced by a plain FP32-accumulating product with
// the same loaders, tile mapping and epilogue (WMMA itself is not
// emulated). fp16/bf16 use mpc's RNE conversions (runtime/Half.h).
#pragma once
#include "runtime/Half.h"
#include "runtime/cuda/KernelConfig.h"

#include <cmath>
#include <cstdint>
#include <pthread.h>
#include <thread>
#include <vector>

struct dim3 {
  unsigned x = 1, y = 1, z = 1;
};
inline thread_local dim3 blockIdx, threadIdx, blockDim, gridDim;
inline pthread_barrier_t mpc_barrier;

#define __global__
#define __device__
#define __forceinline__ inline
#define __launch_bounds__(n)
#define __restrict__
#define __shared__ static
#define __align__(n)
inline void __syncthreads() { pthread_barrier_wait(&mpc_barrier); }
inline void __syncwarp() {}
inline float rsqrtf(float x) { return 1.0f / std::sqrt(x); }
using std::isfinite;
inline int atomicOr(int *p, int v) { // threads of a block are real threads
  return __atomic_fetch_or(p, v, __ATOMIC_SEQ_CST);
}
inline unsigned long long atomicAdd(unsigned long long *p,
                                    unsigned long long v) {
  return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST);
}

struct __half {
  uint16_t bits = 0;
  __half() = default;
  __half(float f) : bits(mpc::rt::floatToHalf(f)) {}
  operator float() const { return mpc::rt::halfToFloat(bits); }
};
struct __nv_bfloat16 {
  uint16_t bits = 0;
  __nv_bfloat16() = default;
  __nv_bfloat16(float f) : bits(mpc::rt::floatToBf16(f)) {}
  operator float() const { return mpc::rt::bf16ToFloat(bits); }
};
inline float __half2float(__half h) { return h; }
inline __half __float2half_rn(float f) { return __half(f); }
inline float __bfloat162float(__nv_bfloat16 h) { return h; }
inline __nv_bfloat16 __float2bfloat16_rn(float f) { return __nv_bfloat16(f); }

template <typename T, typename LA, typename LB, typename EP>
void tc_gemm(int M, int N, int K, const LA &la, const LB &lb, const EP &ep) {
  constexpr int BM = mpc::rt::cuda::kTcTileM, BN = mpc::rt::cuda::kTcTileN;
  if (threadIdx.x != 0)
    return; // thread 0 computes the block's tile
  int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
  for (int m = m0; m < m0 + BM && m < M; ++m)
    for (int n = n0; n < n0 + BN && n < N; ++n) {
      float acc = 0.0f;
      for (int k = 0; k < K; ++k)
        acc += float(la(m, k)) * float(lb(k, n));
      ep(m, n, acc);
    }
}

template <typename F>
void mpc_emulate(dim3 grid, dim3 block, bool barrier, F kernel) {
  unsigned threads = block.x * block.y * block.z;
  for (unsigned z = 0; z < grid.z; ++z)
    for (unsigned y = 0; y < grid.y; ++y)
      for (unsigned x = 0; x < grid.x; ++x) {
        auto run = [&](unsigned t) {
          gridDim = grid;
          blockDim = block;
          blockIdx = {x, y, z};
          threadIdx = {t % block.x, t / block.x % block.y,
                       t / (block.x * block.y)};
          kernel();
        };
        if (!barrier) {
          for (unsigned t = 0; t < threads; ++t)
            run(t);
          continue;
        }
        pthread_barrier_init(&mpc_barrier, nullptr, threads);
        std::vector<std::thread> pool;
        for (unsigned t = 0; t < threads; ++t)
          pool.emplace_back(run, t);
        for (auto &th : pool)
          th.join();
        pthread_barrier_destroy(&mpc_barrier);
      }
}
