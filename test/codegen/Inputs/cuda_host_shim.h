// Runs emitted CUDA kernels on the host, for testing the emitter without a
// GPU: included (with -DMPC_HOST_EMULATION) before an artifact's
// kernels.cu compiled by g++. Blocks and threads run one after another;
// kernels with __syncthreads run their threads as real threads meeting at
// a barrier (fibers on one OS thread: each barrier switches to the next
// thread of the block), and the threads of each warp meet at __syncwarp
// (shuffles, mma.sync and ldmatrix exchange operands there). tc_gemm is
// replaced by a plain FP32-accumulating product with the same loaders,
// tile mapping and epilogue. WMMA fragments (the attention kernel) are
// whole in every lane: each lane loads its share of a tile, the warp
// exchanges the shares, each multiplies the full 16x16 tiles and stores
// its share. fp16/bf16 use mpc's RNE conversions (runtime/Half.h).
//
// Built with -fsanitize=thread (the race check: MPC_FAKE_CUDA_RACECHECK),
// every kernel's threads run as fibers that ThreadSanitizer sees as threads
// of their own, ordered only by what orders them on a GPU: the block's and
// the warp's barriers (and the launch before, the block before), so a
// shared- or global-memory access two threads make without a barrier
// between them is reported, whichever order the fibers happen to run in.
#pragma once
#include "runtime/Half.h"
#include "runtime/cuda/KernelConfig.h"
#include "test/codegen/Inputs/host_fibers.h"

#include <cmath>
#include <cstring>
#include <cstdint>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <sys/mman.h>
#include <type_traits>
#include <vector>

#if defined(__SANITIZE_THREAD__)
#include <sanitizer/tsan_interface.h>
constexpr bool mpc_racecheck = true;
// The emulator's own bookkeeping (fiber switches, barrier counts) is not
// the kernel's: not checked.
#define MPC_EMULATOR __attribute__((no_sanitize_thread))
inline void mpc_release(void *sync) { __tsan_release(sync); }
inline void mpc_acquire(void *sync) { __tsan_acquire(sync); }
// No fence (ThreadSanitizer models none): the atomics after it order blocks.
inline void mpc_fence() {}
#else
constexpr bool mpc_racecheck = false;
#define MPC_EMULATOR
inline void mpc_release(void *) {}
inline void mpc_acquire(void *) {}
inline void mpc_fence() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
#endif

struct dim3 {
  unsigned x = 1, y = 1, z = 1;
};
// Plain globals, as the rest of the emulator's state: launches run one at
// a time, and a thread_local in the dlopen'ed kernels cost a
// __tls_get_addr call at nearly every access (9% of an emulated step).
inline dim3 blockIdx, threadIdx, blockDim, gridDim;
inline bool mpc_threaded = false; // a block's threads are fibers

/// A kernel with barriers runs a block's threads as fibers on the calling
/// thread: each runs until it waits at a barrier, then the scheduler
/// resumes the next one (in thread order) whose barrier has opened.
struct MpcBarrier {
  unsigned n = 0, count = 0;
  unsigned long generation = 0;
  // What the race check synchronizes at: every thread releases its
  // generation's slot on arrival and acquires it on leaving. A slot per
  // generation, as a thread may arrive at the next barrier before the
  // last has left this one (4: no thread passes two barriers ahead).
  char slot[4];
};
struct MpcFiber {
  MpcContext ctx;
  dim3 idx;
  bool done = false;
  void *tsan = nullptr; // the race check's fiber, kept across launches
};
inline MpcBarrier mpc_barrier;
inline std::vector<MpcBarrier> mpc_warp_barriers; // one per warp
inline MpcContext mpc_scheduler;
inline void *mpc_scheduler_tsan = nullptr;
inline MpcFiber *mpc_current = nullptr;
inline unsigned long mpc_progress = 0; // barriers opened, fibers finished
inline char mpc_block_end;            // fibers release, the scheduler acquires

/// Back to the scheduler. The race check's switch does not synchronize:
/// threads of a block are ordered by their barriers only.
MPC_EMULATOR inline void mpc_yield() {
#if defined(__SANITIZE_THREAD__)
  __tsan_switch_to_fiber(mpc_scheduler_tsan, __tsan_switch_to_fiber_no_sync);
#endif
  mpc_context_switch(mpc_current->ctx, mpc_scheduler);
}
MPC_EMULATOR inline void mpc_barrier_wait(MpcBarrier &b) {
  unsigned long g = b.generation;
  mpc_release(&b.slot[g % 4]);
  if (++b.count == b.n)
    b.count = 0, ++b.generation, ++mpc_progress;
  else
    while (b.generation == g)
      mpc_yield();
  mpc_acquire(&b.slot[g % 4]);
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
/// A block's dynamic shared memory (blocks run one at a time): as much as
/// any GPU gives a block; the driver double checks each launch gives
/// the kernel what it declares (emu_<name>_smem).
alignas(16) inline unsigned char mpc_dynamic_smem_bytes[227 * 1024];
inline unsigned char *mpc_dynamic_smem() { return mpc_dynamic_smem_bytes; }
inline unsigned mpc_linear_thread() {
  return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
}
MPC_EMULATOR inline void __syncwarp() {
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
inline unsigned atomicAdd(unsigned *p, unsigned v) {
  return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST);
}
// An FP32 add by compare-and-swap, so that the race check sees an atomic.
inline float atomicAdd(float *p, float v) {
  uint32_t old = __atomic_load_n((uint32_t *)p, __ATOMIC_SEQ_CST), next;
  float f;
  do {
    std::memcpy(&f, &old, 4);
    const float sum = f + v;
    std::memcpy(&next, &sum, 4);
  } while (!__atomic_compare_exchange_n((uint32_t *)p, &old, next, false,
                                        __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST));
  return f;
}
inline void __threadfence() { mpc_fence(); }
struct float4 { float x, y, z, w; };
inline float4 __ldcg(const float4 *p) { return *p; } // (L2 only on the GPU)

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

/// A block's BM x BN tile of a GEMM (row tile `mb`), computed by its
/// thread 0 (the other threads return): each output's FP32 sum of
/// products in order of k.
template <int BM, int BN, typename LA, typename LB, typename EP>
void mpc_plain_gemm(int M, int N, int K, const LA &la, const LB &lb, const EP &ep, int mb) {
  if (threadIdx.x != 0)
    return;
  int m0 = mb * BM, n0 = blockIdx.x * BN;
  for (int m = m0; m < m0 + BM && m < M; ++m)
    for (int n = n0; n < n0 + BN && n < N; ++n) {
      float acc = 0.0f;
      for (int k = 0; k < K; ++k)
        acc += float(la(m, k)) * float(lb(k, n));
      ep(m, n, acc);
    }
}

// (The race check runs the prelude's own, with its shared-memory tiles.)
#if !defined(__SANITIZE_THREAD__)
template <typename T, typename LA, typename LB, typename EP>
void tc_gemm(int M, int N, int K, const LA &la, const LB &lb, const EP &ep, int mb) {
  mpc_plain_gemm<mpc::rt::cuda::kTcTileM, mpc::rt::cuda::kTcTileN>(M, N, K, la, lb, ep, mb);
}
#endif

// tc_gemm_mma likewise (its tiles, mma.sync and ldmatrix emulated with
// MPC_EMULATE_MMA_GEMM: MPC_FAKE_CUDA_MMA_GEMM=1 in the driver double).
#if !defined(__SANITIZE_THREAD__) && !defined(MPC_EMULATE_MMA_GEMM)
constexpr bool mpc_mma_gemm_fibers = false;
template <typename T, int BM, int BN, bool TA, bool TB, int STAGES, int SMEM, typename EP>
void tc_gemm_mma(int M, int N, int K, const T *A, long long lda, const T *B,
                 long long ldb, const EP &ep, int mb) {
  mpc_plain_gemm<BM, BN>(
      M, N, K,
      [&](int m, int k) { return A[TA ? (long long)k * lda + m : (long long)m * lda + k]; },
      [&](int k, int n) { return B[TB ? (long long)n * ldb + k : (long long)k * ldb + n]; }, ep, mb);
}
#else
constexpr bool mpc_mma_gemm_fibers = true;
#endif

/// What the lanes of each warp exchange in warp-collective operations
/// (shuffles, mma.sync): each lane writes its part, the warp meets, each
/// lane reads what it needs, the warp meets again before the next write.
struct MpcWarpExchange {
  unsigned a[32][4], b[32][2];
  unsigned char x[32][8]; // a shuffled value of up to 8 bytes
  float tile[256];        // a WMMA tile, gathered from the lanes' shares
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
/// mma_16816): the warp's A and B fragments are exchanged between its
/// lanes, and each lane computes its four results (FP32 sums of exact
/// products) from the rows and columns they need.
template <typename T>
void mma_16816(float d[4], const unsigned a[4], const unsigned b[2]) {
  unsigned tid = mpc_linear_thread(), lane = tid % 32;
  MpcWarpExchange &e = mpc_exchange[tid / 32];
  for (int i = 0; i < 4; ++i)
    e.a[lane][i] = a[i];
  e.b[lane][0] = b[0], e.b[lane][1] = b[1];
  __syncwarp();
  auto half = [](unsigned reg, int hi) {
    T v;
    uint16_t bits = hi ? reg >> 16 : reg & 0xffff;
    std::memcpy(&v, &bits, 2);
    return float(v);
  };
  // The lane's results are rows g and g + 8, columns 2t and 2t + 1 of D;
  // it gathers just those rows of A (from lanes 4g..4g+3) and columns of B
  // (from lanes 4n..4n+3 for each column n), and its C is its own d.
  int g = lane / 4, t = lane % 4;
  float A[2][16], B[16][2];
  for (int q = 0; q < 4; ++q)
    for (int h = 0; h < 2; ++h) {
      const unsigned *ra = e.a[4 * g + q];
      A[0][2 * q + h] = half(ra[0], h);
      A[1][2 * q + h] = half(ra[1], h);
      A[0][2 * q + 8 + h] = half(ra[2], h);
      A[1][2 * q + 8 + h] = half(ra[3], h);
      for (int j = 0; j < 2; ++j) {
        const unsigned *rb = e.b[4 * (2 * t + j) + q];
        B[2 * q + h][j] = half(rb[0], h);
        B[2 * q + 8 + h][j] = half(rb[1], h);
      }
    }
  __syncwarp();
  for (int i = 0; i < 4; ++i) {
    float acc = d[i];
    for (int k = 0; k < 16; ++k)
      acc += A[i / 2][k] * B[k][i & 1];
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

/// cp.async as the PTX ISA defines it: a thread's copies are pending
/// until a wait_group completes their group (commit_group closes one;
/// wait<N> completes all but the N newest), so a thread that reads its
/// copy early reads what was there before, and the race check sees the
/// copy made by its thread at the issue and at the wait. Zeros where
/// !valid.
struct MpcAsyncCopy {
  void *dst;
  const void *src;
  bool valid;
};
struct MpcAsyncCopies {
  std::vector<MpcAsyncCopy> pending;
  std::vector<size_t> groupEnds; // committed groups, oldest first
};
inline std::vector<MpcAsyncCopies> mpc_async; // a thread of the block each

/// CudaPrelude.h's mpc_exp2 (ex2.approx.ftz on a GPU): the exact one.
inline float mpc_exp2(float x) { return exp2f(x); }
/// CudaPrelude.h's mpc_tanh_approx (tanh.approx.f32 on a GPU): the exact one.
inline float mpc_tanh_approx(float x) { return tanhf(x); }

/// (GCC cannot bound the attention kernel's double-buffer offsets once
/// inlined and warns of an overflow that cannot happen.)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstringop-overflow"
#if defined(__SANITIZE_THREAD__)
extern "C" void __tsan_write_range(void *addr, unsigned long size);
extern "C" void __tsan_read_range(void *addr, unsigned long size);
#endif
inline void mpc_cp_async16(void *dst, const void *src, bool valid) {
  mpc_check_aligned(dst, 16, "cp.async destination");
  if (valid)
    mpc_check_aligned(src, 16, "cp.async source");
#if defined(__SANITIZE_THREAD__)
  // On a GPU the copy lands any time from its issue to its wait: the race
  // check sees it at both (a reader of the old tile between the two, with
  // no barrier, races with the issue).
  __tsan_write_range(dst, 16);
  if (valid)
    __tsan_read_range(const_cast<void *>(src), 16);
#endif
  mpc_async[mpc_linear_thread()].pending.push_back({dst, src, valid});
}
inline void mpc_cp_async_commit() {
  MpcAsyncCopies &q = mpc_async[mpc_linear_thread()];
  q.groupEnds.push_back(q.pending.size());
}
template <int N> void mpc_cp_async_wait() {
  MpcAsyncCopies &q = mpc_async[mpc_linear_thread()];
  if (q.groupEnds.size() <= N)
    return;
  size_t done = q.groupEnds[q.groupEnds.size() - 1 - N];
  for (size_t i = 0; i < done; ++i) {
    const MpcAsyncCopy &c = q.pending[i];
    if (c.valid)
      std::memcpy(c.dst, c.src, 16);
    else
      std::memset(c.dst, 0, 16);
  }
  q.pending.erase(q.pending.begin(), q.pending.begin() + done);
  q.groupEnds.erase(q.groupEnds.begin(), q.groupEnds.end() - N);
  for (size_t &end : q.groupEnds)
    end -= done;
}
#pragma GCC diagnostic pop

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
/// The layout of WMMA fragments is unspecified, so the emulation picks
/// one: lane l loads and stores the elements l, l + 32, ... of a tile (row
/// major), and the warp exchanges them at a warp barrier, so each lane
/// touches memory only for its share, as on a GPU (a kernel reading
/// another lane's stored elements without a barrier is a race the race
/// check sees).
/// The exchange needs the warp's lanes as fibers, which a kernel with
/// barriers has (the WMMA attention kernel; tc_gemm only under the race
/// check, where every kernel's threads are fibers).
inline void mpc_wmma_needs_fibers() {
  if (mpc_threaded)
    return;
  std::fprintf(stderr, "host emulation: WMMA in a kernel without barriers, "
                       "whose lanes cannot exchange tiles\n");
  std::abort();
}
template <typename Element>
void mpc_wmma_gather(float (&v)[16][16], Element at) {
  mpc_wmma_needs_fibers();
  unsigned tid = mpc_linear_thread(), lane = tid % 32;
  MpcWarpExchange &e = mpc_exchange[tid / 32];
  for (unsigned i = lane; i < 256; i += 32)
    e.tile[i] = at(i / 16, i % 16);
  __syncwarp();
  for (int i = 0; i < 256; ++i)
    v[i / 16][i % 16] = e.tile[i];
  __syncwarp();
}
/// matrix_a / matrix_b: the layout is the fragment's.
template <typename Use, typename T, typename L, typename P>
void load_matrix_sync(fragment<Use, 16, 16, 16, T, L> &f, const P *p,
                      unsigned ld) {
  constexpr bool col = std::is_same_v<L, col_major>;
  mpc_wmma_gather(f.v, [&](int r, int c) {
    return float(col ? p[c * ld + r] : p[r * ld + c]);
  });
}
inline void load_matrix_sync(fragment<accumulator, 16, 16, 16, float> &f,
                             const float *p, unsigned ld, layout_t l) {
  mpc_wmma_gather(f.v, [&](int r, int c) {
    return l == mem_col_major ? p[c * ld + r] : p[r * ld + c];
  });
}
inline void store_matrix_sync(float *p,
                              const fragment<accumulator, 16, 16, 16, float> &f,
                              unsigned ld, layout_t l) {
  mpc_wmma_needs_fibers();
  for (unsigned i = mpc_linear_thread() % 32; i < 256; i += 32) {
    int r = i / 16, c = i % 16;
    (l == mem_col_major ? p[c * ld + r] : p[r * ld + c]) = f.v[r][c];
  }
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
constexpr size_t kFiberStack = 1 << 20;
inline char *mpc_fiber_stack(unsigned t) {
  static std::vector<char *> stacks;
  while (stacks.size() <= t) {
    void *p = mmap(nullptr, kFiberStack, PROT_READ | PROT_WRITE,
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
MPC_EMULATOR inline void mpc_fiber_entry() {
  mpc_fiber_body(mpc_fiber_arg);
  mpc_release(&mpc_block_end);
  mpc_current->done = true, ++mpc_progress;
  mpc_yield(); // for the last time
}

/// A block's threads, kept across launches (and the race check's fibers
/// with them: ThreadSanitizer holds a bounded number of threads).
inline std::vector<MpcFiber> mpc_fibers;

/// The running thread's coordinates (the emulator's, not the kernel's).
MPC_EMULATOR inline void mpc_enter(dim3 grid, dim3 block, dim3 at, dim3 idx,
                                   bool threaded) {
  mpc_threaded = threaded;
  gridDim = grid, blockDim = block, blockIdx = at, threadIdx = idx;
}

/// Runs `kernel` for every thread of every block, blocks one after another
/// (so `__shared__`, a static, is the running block's). A kernel with
/// barriers (every kernel under the race check) runs each block's threads
/// as fibers; a round in which no barrier opens and no thread finishes is
/// a deadlock (a barrier some threads skip), reported rather than hung.
/// The race check runs the blocks last to first: a kernel whose result
/// depends on the order of its blocks (one reading what another writes:
/// no order on a GPU) then computes otherwise than the plain emulation,
/// which the tests comparing the two bit for bit see.
template <typename F>
MPC_EMULATOR void mpc_emulate(dim3 grid, dim3 block, bool barrier, F kernel) {
  barrier = barrier || mpc_racecheck;
  unsigned threads = block.x * block.y * block.z;
  auto idx = [&](unsigned t) {
    return dim3{t % block.x, t / block.x % block.y, t / (block.x * block.y)};
  };
  auto body = [](void *k) { (*(F *)k)(); };
  std::vector<MpcFiber> &fibers = mpc_fibers;
  if (fibers.size() < threads)
    fibers.resize(threads);
#if defined(__SANITIZE_THREAD__)
  mpc_scheduler_tsan = __tsan_get_current_fiber();
  for (unsigned t = 0; t < threads; ++t)
    if (!fibers[t].tsan)
      fibers[t].tsan = __tsan_create_fiber(0);
#endif
  const unsigned blocks = grid.x * grid.y * grid.z;
  for (unsigned n = 0; n < blocks; ++n) {
    const unsigned linear = mpc_racecheck ? blocks - 1 - n : n;
    const dim3 at{linear % grid.x, linear / grid.x % grid.y,
                  linear / (grid.x * grid.y)};
    mpc_async.assign(threads, {});
    if (!barrier) {
      for (unsigned t = 0; t < threads; ++t)
        mpc_enter(grid, block, at, idx(t), false), kernel();
      continue;
    }
    mpc_barrier = {threads, 0, 0, {}};
    mpc_warp_barriers.assign((threads + 31) / 32, {});
    for (unsigned w = 0; w < mpc_warp_barriers.size(); ++w)
      mpc_warp_barriers[w].n = std::min(32u, threads - 32 * w);
    mpc_fiber_body = body, mpc_fiber_arg = &kernel;
    for (unsigned t = 0; t < threads; ++t) {
      MpcFiber &f = fibers[t];
      f.done = false, f.idx = idx(t);
      mpc_context_init(f.ctx, mpc_fiber_stack(t), kFiberStack,
                       mpc_fiber_entry);
    }
    for (unsigned live = threads; live > 0;) {
      unsigned long before = mpc_progress;
      for (unsigned t = 0; t < threads; ++t) {
        if (fibers[t].done)
          continue;
        mpc_current = &fibers[t];
        mpc_enter(grid, block, at, fibers[t].idx, true);
#if defined(__SANITIZE_THREAD__)
        // Synchronizing: what the scheduler saw (the blocks and
        // launches before) happens before the thread's next steps.
        __tsan_switch_to_fiber(fibers[t].tsan, 0);
#endif
        mpc_context_switch(mpc_scheduler, fibers[t].ctx);
        live -= fibers[t].done;
      }
      if (live > 0 && mpc_progress == before) {
        std::fprintf(stderr, "host emulation: block (%u, %u, %u) "
                     "deadlocks at a barrier\n", at.x, at.y, at.z);
        std::abort();
      }
    }
    // The block's threads happen before the next block's (on a GPU
    // its shared memory is the block's own).
    mpc_acquire(&mpc_block_end);
  }
}
