// Runs emitted CUDA kernels on the host, for testing the emitter without a
// GPU: included (with -DMPC_HOST_EMULATION) before an artifact's
// kernels.cu compiled by g++. Blocks and threads run one after another;
// kernels with __syncthreads run their threads as real threads meeting at
// a barrier (fibers on one OS thread: each barrier switches to the next
// thread of the block), and the threads of each warp meet at __syncwarp
// (shuffles, mma.sync and ldmatrix exchange operands there). tc_gemm is
// replaced by a plain FP32-accumulating product with the same loaders,
// tile mapping and epilogue. WMMA fragments (the attention kernel) are
// emulated whole in every lane: each lane loads and multiplies the full
// 16x16 tiles, lane 0 stores them (the kernel syncs the warp before other
// lanes read). fp16/bf16 use mpc's RNE conversions (runtime/Half.h).
#pragma once
#include "runtime/Half.h"
#include "runtime/cuda/KernelConfig.h"

#include <cmath>
#include <cstring>
#include <cstdint>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <sys/mman.h>
#include <type_traits>
#include <ucontext.h>
#include <vector>

struct dim3 {
  unsigned x = 1, y = 1, z = 1;
};
inline thread_local dim3 blockIdx, threadIdx, blockDim, gridDim;
inline thread_local bool mpc_threaded = false; // a block's threads are fibers

/// A kernel with barriers runs a block's threads as fibers on the calling
/// thread: each runs until it waits at a barrier, then the scheduler
/// resumes the next one (in thread order) whose barrier has opened.
struct MpcBarrier {
  unsigned n = 0, count = 0;
  unsigned long generation = 0;
};
struct MpcFiber {
  ucontext_t ctx;
  dim3 idx;
  bool done = false;
};
inline MpcBarrier mpc_barrier;
inline std::vector<MpcBarrier> mpc_warp_barriers; // one per warp
inline ucontext_t mpc_scheduler;
inline MpcFiber *mpc_current = nullptr;
inline unsigned long mpc_progress = 0; // barriers opened, fibers finished
inline void mpc_barrier_wait(MpcBarrier &b) {
  unsigned long g = b.generation;
  if (++b.count == b.n) {
    b.count = 0, ++b.generation, ++mpc_progress;
    return;
  }
  while (b.generation == g)
    swapcontext(&mpc_current->ctx, &mpc_scheduler);
}

#define __global__
#define __device__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __grid_constant__
#define __restrict__
#define __shared__ static
#define __align__(n) __attribute__((aligned(n)))
inline void __syncthreads() { mpc_barrier_wait(mpc_barrier); }
inline unsigned mpc_linear_thread() {
  return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
}
inline void __syncwarp() {
  if (mpc_threaded)
    mpc_barrier_wait(mpc_warp_barriers[mpc_linear_thread() / 32]);
}
inline float rsqrtf(float x) { return 1.0f / std::sqrt(x); }
using std::isfinite;
inline int atomicOr(int *p, int v) { // (one OS thread runs the fibers)
  return __atomic_fetch_or(p, v, __ATOMIC_SEQ_CST);
}
inline unsigned long long atomicAdd(unsigned long long *p,
                                    unsigned long long v) {
  return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST);
}

struct uint2 {
  unsigned x, y;
};
struct uint4 {
  unsigned x, y, z, w;
};
inline uint4 make_uint4(unsigned x, unsigned y, unsigned z, unsigned w) {
  return {x, y, z, w};
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

/// What the lanes of each warp exchange in warp-collective operations
/// (shuffles, mma.sync): each lane writes its part, the warp meets, each
/// lane reads what it needs, the warp meets again before the next write.
struct MpcWarpExchange {
  unsigned a[32][4], b[32][2];
  float c[32][4];
  unsigned char x[32][8]; // a shuffled value of up to 8 bytes
};
inline MpcWarpExchange mpc_exchange[32]; // per warp of the running block

template <typename T> inline T __shfl_xor_sync(unsigned, T v, int laneMask) {
  static_assert(sizeof(T) <= 8, "shuffles move at most 8 bytes");
  unsigned tid = mpc_linear_thread();
  MpcWarpExchange &e = mpc_exchange[tid / 32];
  std::memcpy(e.x[tid % 32], &v, sizeof v);
  __syncwarp();
  T r;
  std::memcpy(&r, e.x[(tid % 32) ^ laneMask], sizeof r);
  __syncwarp();
  return r;
}

/// mma.sync m16n8k16 in the PTX ISA's register layout (CudaPrelude.h's
/// mma_16816): the warp's A, B and C are assembled from every lane's
/// registers, and each lane takes its four results (FP32 sums of exact
/// products).
template <typename T>
void mma_16816(float d[4], const unsigned a[4], const unsigned b[2]) {
  unsigned tid = mpc_linear_thread(), lane = tid % 32;
  MpcWarpExchange &e = mpc_exchange[tid / 32];
  for (int i = 0; i < 4; ++i)
    e.a[lane][i] = a[i], e.c[lane][i] = d[i];
  e.b[lane][0] = b[0], e.b[lane][1] = b[1];
  __syncwarp();
  auto half = [](unsigned reg, int hi) {
    T v;
    uint16_t bits = hi ? reg >> 16 : reg & 0xffff;
    std::memcpy(&v, &bits, 2);
    return float(v);
  };
  float A[16][16], B[16][8], C[16][8];
  for (int l = 0; l < 32; ++l) {
    int g = l / 4, t = l % 4;
    for (int h = 0; h < 2; ++h) {
      A[g][2 * t + h] = half(e.a[l][0], h);
      A[g + 8][2 * t + h] = half(e.a[l][1], h);
      A[g][2 * t + 8 + h] = half(e.a[l][2], h);
      A[g + 8][2 * t + 8 + h] = half(e.a[l][3], h);
      B[2 * t + h][g] = half(e.b[l][0], h);
      B[2 * t + 8 + h][g] = half(e.b[l][1], h);
      C[g][2 * t + h] = e.c[l][h];
      C[g + 8][2 * t + h] = e.c[l][2 + h];
    }
  }
  __syncwarp();
  int g = lane / 4, t = lane % 4;
  for (int i = 0; i < 4; ++i) {
    int r = g + (i >= 2 ? 8 : 0), n = 2 * t + (i & 1);
    float acc = C[r][n];
    for (int k = 0; k < 16; ++k)
      acc += A[r][k] * B[k][n];
    d[i] = acc;
  }
}

/// A GPU faults on an access not aligned to its size (misaligned address);
/// x86 does not, so the emulation stops the process there instead (a
/// one-line message and exit status 3, no crash dump).
inline void mpc_check_aligned(const void *p, size_t bytes, const char *what) {
  if (reinterpret_cast<uintptr_t>(p) % bytes == 0)
    return;
  std::fprintf(stderr,
               "mpc emulation: misaligned %s of %zu bytes at %p (a GPU "
               "faults here: misaligned address)\n",
               what, bytes, p);
  std::fflush(stderr);
  std::_Exit(3);
}

/// ldmatrix as the PTX ISA defines it (CudaPrelude.h's mpc_ldsm): each
/// lane gives one row address, the warp meets, and lane 4g + t takes from
/// each 8x8 tile k (rows from lanes 8k..8k+7) row g's elements 2t, 2t + 1,
/// or with Trans column g of rows 2t and 2t + 1.
template <int N, bool Trans, typename T>
void mpc_ldsm(unsigned *r, const T *row) {
  static_assert(sizeof(T) == 2, "ldmatrix moves 16-bit elements");
  unsigned tid = mpc_linear_thread(), lane = tid % 32;
  MpcWarpExchange &e = mpc_exchange[tid / 32];
  if (lane < 8 * N) // the lanes whose addresses ldmatrix reads: 16-byte rows
    mpc_check_aligned(row, 16, "ldmatrix row");
  std::memcpy(e.x[lane], &row, sizeof row);
  __syncwarp();
  auto rowOf = [&](unsigned l) {
    const uint16_t *p;
    std::memcpy(&p, e.x[l], sizeof p);
    return p;
  };
  unsigned g = lane / 4, t = lane % 4;
  for (int k = 0; k < N; ++k) {
    uint16_t lo = Trans ? rowOf(8 * k + 2 * t)[g] : rowOf(8 * k + g)[2 * t];
    uint16_t hi = Trans ? rowOf(8 * k + 2 * t + 1)[g] : rowOf(8 * k + g)[2 * t + 1];
    r[k] = lo | (unsigned)hi << 16;
  }
  __syncwarp();
}

/// cp.async completes at once here (the threads run one at a time): a
/// copy, zeros where !valid; its groups and waits have nothing to do.
/// (GCC cannot bound the attention kernel's double-buffer offsets once
/// inlined and warns of an overflow that cannot happen.)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstringop-overflow"
inline void mpc_cp_async16(void *dst, const void *src, bool valid) {
  mpc_check_aligned(dst, 16, "cp.async destination");
  if (valid)
    mpc_check_aligned(src, 16, "cp.async source");
  if (valid)
    std::memcpy(dst, src, 16);
  else
    std::memset(dst, 0, 16);
}
#pragma GCC diagnostic pop
inline void mpc_cp_async_commit() {}
template <int N> void mpc_cp_async_wait() {}

namespace nvcuda::wmma {
struct matrix_a {};
struct matrix_b {};
struct accumulator {};
struct row_major {};
struct col_major {};
enum layout_t { mem_row_major, mem_col_major };

/// A whole 16x16 tile (every lane holds all of it), widened to float:
/// fp16/bf16 operands convert exactly, so products are exact and the sums
/// FP32, as on the tensor cores (up to their summation order).
template <typename Use, int M, int N, int K, typename T, typename Layout = void>
struct fragment {
  float v[16][16] = {};
};

template <typename Use, typename T, typename L>
void fill_fragment(fragment<Use, 16, 16, 16, T, L> &f, float x) {
  for (auto &row : f.v)
    for (float &e : row)
      e = x;
}
/// matrix_a / matrix_b: the layout is the fragment's.
template <typename Use, typename T, typename L, typename P>
void load_matrix_sync(fragment<Use, 16, 16, 16, T, L> &f, const P *p,
                      unsigned ld) {
  constexpr bool col = std::is_same_v<L, col_major>;
  for (int r = 0; r < 16; ++r)
    for (int c = 0; c < 16; ++c)
      f.v[r][c] = float(col ? p[c * ld + r] : p[r * ld + c]);
}
inline void load_matrix_sync(fragment<accumulator, 16, 16, 16, float> &f,
                             const float *p, unsigned ld, layout_t l) {
  for (int r = 0; r < 16; ++r)
    for (int c = 0; c < 16; ++c)
      f.v[r][c] = l == mem_col_major ? p[c * ld + r] : p[r * ld + c];
}
inline void store_matrix_sync(float *p,
                              const fragment<accumulator, 16, 16, 16, float> &f,
                              unsigned ld, layout_t l) {
  if (mpc_linear_thread() % 32 != 0)
    return; // lane 0 stores the warp's tile
  for (int r = 0; r < 16; ++r)
    for (int c = 0; c < 16; ++c)
      (l == mem_col_major ? p[c * ld + r] : p[r * ld + c]) = f.v[r][c];
}
template <typename TA, typename LA, typename TB, typename LB>
void mma_sync(fragment<accumulator, 16, 16, 16, float> &d,
              const fragment<matrix_a, 16, 16, 16, TA, LA> &a,
              const fragment<matrix_b, 16, 16, 16, TB, LB> &b,
              const fragment<accumulator, 16, 16, 16, float> &c) {
  fragment<accumulator, 16, 16, 16, float> out;
  for (int r = 0; r < 16; ++r)
    for (int n = 0; n < 16; ++n) {
      float acc = c.v[r][n];
      for (int k = 0; k < 16; ++k)
        acc += a.v[r][k] * b.v[k][n];
      out.v[r][n] = acc;
    }
  d = out;
}
} // namespace nvcuda::wmma
using namespace nvcuda;

/// The fibers' stacks, kept across launches: reserved address space, so
/// only the pages a kernel touches are ever backed.
inline char *mpc_fiber_stack(unsigned t) {
  constexpr size_t kStack = 1 << 20;
  static std::vector<char *> stacks;
  while (stacks.size() <= t) {
    void *p = mmap(nullptr, kStack, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) {
      std::fprintf(stderr, "host emulation: no memory for a fiber stack\n");
      std::abort();
    }
    stacks.push_back((char *)p);
  }
  return stacks[t];
}
inline void (*mpc_fiber_body)(void *);
inline void *mpc_fiber_arg;
inline void mpc_fiber_entry() {
  mpc_fiber_body(mpc_fiber_arg);
  mpc_current->done = true, ++mpc_progress; // uc_link: back to the scheduler
}

/// Runs `kernel` for every thread of every block, blocks one after another
/// (so `__shared__`, a static, is the running block's). A kernel with
/// barriers runs each block's threads as fibers; a round in which no
/// barrier opens and no thread finishes is a deadlock (a barrier some
/// threads skip), reported rather than hung.
template <typename F>
void mpc_emulate(dim3 grid, dim3 block, bool barrier, F kernel) {
  unsigned threads = block.x * block.y * block.z;
  dim3 at;
  auto run = [&](unsigned t) {
    mpc_threaded = barrier;
    gridDim = grid;
    blockDim = block;
    blockIdx = at;
    threadIdx = {t % block.x, t / block.x % block.y, t / (block.x * block.y)};
  };
  auto body = [](void *k) { (*(F *)k)(); };
  std::vector<MpcFiber> fibers(barrier ? threads : 0);
  for (at.z = 0; at.z < grid.z; ++at.z)
    for (at.y = 0; at.y < grid.y; ++at.y)
      for (at.x = 0; at.x < grid.x; ++at.x) {
        if (!barrier) {
          for (unsigned t = 0; t < threads; ++t)
            run(t), kernel();
          continue;
        }
        mpc_barrier = {threads, 0, 0};
        mpc_warp_barriers.assign((threads + 31) / 32, {});
        for (unsigned w = 0; w < mpc_warp_barriers.size(); ++w)
          mpc_warp_barriers[w].n = std::min(32u, threads - 32 * w);
        mpc_fiber_body = body, mpc_fiber_arg = &kernel;
        for (unsigned t = 0; t < threads; ++t) {
          MpcFiber &f = fibers[t];
          f.done = false;
          run(t), f.idx = threadIdx;
          getcontext(&f.ctx);
          f.ctx.uc_stack.ss_sp = mpc_fiber_stack(t);
          f.ctx.uc_stack.ss_size = 1 << 20;
          f.ctx.uc_link = &mpc_scheduler;
          makecontext(&f.ctx, mpc_fiber_entry, 0);
        }
        for (unsigned live = threads; live > 0;) {
          unsigned long before = mpc_progress;
          for (unsigned t = 0; t < threads; ++t) {
            if (fibers[t].done)
              continue;
            mpc_current = &fibers[t];
            threadIdx = fibers[t].idx;
            swapcontext(&mpc_scheduler, &fibers[t].ctx);
            live -= fibers[t].done;
          }
          if (live > 0 && mpc_progress == before) {
            std::fprintf(stderr, "host emulation: block (%u, %u, %u) "
                         "deadlocks at a barrier\n", at.x, at.y, at.z);
            std::abort();
          }
        }
      }
}
