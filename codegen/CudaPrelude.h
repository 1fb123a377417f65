//===- CudaPrelude.h - shared device code of every emitted .cu ----*- C++ -*-===//

#ifndef MPC_CODEGEN_CUDAPRELUDE_H
#define MPC_CODEGEN_CUDAPRELUDE_H

#include <string>

namespace mlir::mpc {

/// Loads/stores that widen to FP32 and round once, and the two GEMM
/// templates (tensor-core WMMA and SIMT FP32) the per-step kernels
/// instantiate with their own loaders and epilogues. Their tile sizes come
/// from runtime/cuda/KernelConfig.h: cudaPreludeConstants() writes them
/// above this text.
inline constexpr const char *kCudaPrelude = R"CUDA(
#ifndef MPC_HOST_EMULATION
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <mma.h>
using namespace nvcuda;
#endif
#ifdef __CUDACC_RTC__ // NVRTC has no C library headers
#define INFINITY __int_as_float(0x7f800000)
#define NAN __int_as_float(0x7fffffff)
#endif
// std::is_same without <type_traits> (which NVRTC lacks).
template <typename A, typename B> struct mpc_same { static constexpr bool value = false; };
template <typename A> struct mpc_same<A, A> { static constexpr bool value = true; };
// W elements moved as one 16-byte-aligned access (multi-tensor kernels).
template <typename T, int W> struct alignas(16) mpc_vec { T v[W]; };
typedef long long i64;

__device__ __forceinline__ float ld(const float *p, i64 i) { return p[i]; }
__device__ __forceinline__ float ld(const __half *p, i64 i) { return __half2float(p[i]); }
__device__ __forceinline__ float ld(const __nv_bfloat16 *p, i64 i) { return __bfloat162float(p[i]); }
__device__ __forceinline__ float ld(const i64 *p, i64 i) { return (float)p[i]; }
__device__ __forceinline__ float ld(const int *p, i64 i) { return (float)p[i]; }
__device__ __forceinline__ float ld(const unsigned char *p, i64 i) { return (float)p[i]; }
__device__ __forceinline__ void st(float *p, i64 i, float v) { p[i] = v; }
__device__ __forceinline__ void st(__half *p, i64 i, float v) { p[i] = __float2half_rn(v); }
__device__ __forceinline__ void st(__nv_bfloat16 *p, i64 i, float v) { p[i] = __float2bfloat16_rn(v); }
__device__ __forceinline__ void st(i64 *p, i64 i, float v) { p[i] = (i64)v; }
__device__ __forceinline__ void st(int *p, i64 i, float v) { p[i] = (int)v; }
__device__ __forceinline__ void st(unsigned char *p, i64 i, float v) { p[i] = v != 0.0f; }
// V consecutive elements of an operand as one access of up to 16 bytes
// (elementwise kernels' vector path; the caller checks mpc_aligned), each
// element converted by ld/st as the scalar path converts it.
template <typename T, int V>
struct alignas(sizeof(T) * V < 16 ? sizeof(T) * V : 16) mpc_lanes { T v[V]; };
template <int V, typename T> __device__ __forceinline__ bool mpc_aligned(const T *p) {
  return (unsigned long long)p % alignof(mpc_lanes<T, V>) == 0;
}
// Under host emulation a vector access the GPU would fault on (misaligned
// address) stops the run (cuda_host_shim.h: mpc_check_aligned).
template <int V, typename T> __device__ __forceinline__ void ldv(const T *p, float *x) {
#if defined(MPC_HOST_EMULATION)
  mpc_check_aligned(p, alignof(mpc_lanes<T, V>), "vector load");
#endif
  const mpc_lanes<T, V> q = *(const mpc_lanes<T, V> *)p;
#pragma unroll
  for (int e = 0; e < V; ++e) x[e] = ld(q.v, e);
}
// 16 bytes loaded or stored as one access, global or shared (the data
// movers, attention's tile loads); checked for alignment under emulation.
__device__ __forceinline__ uint4 mpc_ld16(const void *p) {
#if defined(MPC_HOST_EMULATION)
  mpc_check_aligned(p, 16, "16-byte load");
#endif
  return *(const uint4 *)p;
}
__device__ __forceinline__ void mpc_put16(void *p, const uint4 &v) {
#if defined(MPC_HOST_EMULATION)
  mpc_check_aligned(p, 16, "16-byte store");
#endif
  *(uint4 *)p = v;
}
// 16 bytes stored as one access. In PTX: NVVM split a struct copy into
// 4-byte stores in the row kernels' loops over a row of constant length.
__device__ __forceinline__ void mpc_st16(void *p, const uint4 &v) {
#if defined(MPC_HOST_EMULATION) // (not "#ifdef": tools split kernels.cu there)
  mpc_check_aligned(p, 16, "16-byte store");
  memcpy(p, &v, 16);
#else
  asm volatile("st.global.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(p), "r"(v.x),
               "r"(v.y), "r"(v.z), "r"(v.w) : "memory");
#endif
}
// 8 bytes likewise (four fp16 values: NVVM made four 2-byte stores).
__device__ __forceinline__ void mpc_st8(void *p, const uint2 &v) {
#if defined(MPC_HOST_EMULATION)
  mpc_check_aligned(p, 8, "8-byte store");
  memcpy(p, &v, 8);
#else
  asm volatile("st.global.v2.u32 [%0], {%1, %2};" ::"l"(p), "r"(v.x), "r"(v.y)
               : "memory");
#endif
}
// p[0] += a and p[1] += b (8-byte aligned FP32) as atomics at the L2:
// one vector reduction on sm_90 (attention's dQ, --attention-dq atomic).
// A reduction (REDG), not atomicAdd's ATOMG, whose scoreboard holds the
// issuing warp until the L2 answers (on an H200 the key blocks then
// stalled 2.7 cycles an instruction on it).
__device__ __forceinline__ void mpc_red_add2(float *p, float a, float b) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("red.global.add.v2.f32 [%0], {%1, %2};" ::"l"(p), "f"(a), "f"(b)
               : "memory");
#else
  atomicAdd(p, a);
  atomicAdd(p + 1, b);
#endif
}
template <int V, typename T> __device__ __forceinline__ void stv(T *p, const float *x) {
#if defined(MPC_HOST_EMULATION)
  mpc_check_aligned(p, alignof(mpc_lanes<T, V>), "vector store");
#endif
  mpc_lanes<T, V> q;
#pragma unroll
  for (int e = 0; e < V; ++e) st(q.v, e, x[e]);
  if (sizeof(q) % 16 == 0) {
#pragma unroll
    for (int k = 0; k < (int)sizeof(q) / 16; ++k) {
      uint4 w;
      memcpy(&w, (const char *)&q + 16 * k, 16);
      mpc_st16((char *)p + 16 * k, w);
    }
  } else if (sizeof(q) == 8) {
    uint2 w;
    memcpy(&w, &q, 8);
    mpc_st8(p, w);
  } else {
    *(mpc_lanes<T, V> *)p = q;
  }
}
// A value rounded to a storage type and widened back (a fused chain's
// intermediates round as a store and load would).
__device__ __forceinline__ float rnd_f16(float v) { return __half2float(__float2half_rn(v)); }
__device__ __forceinline__ float rnd_bf16(float v) { return __bfloat162float(__float2bfloat16_rn(v)); }
__device__ __forceinline__ float rnd_i1(float v) { return v != 0.0f ? 1.0f : 0.0f; }
__device__ __forceinline__ i64 global_index() { return (i64)blockIdx.x * blockDim.x + threadIdx.x; }
// Float -> integer as the CPU backend converts: NaN is 0, the rest clamped
// to the target's range, then truncated.
__device__ __forceinline__ i64 mpc_f2i(float v, double lo, double hi) { return v != v ? 0 : (i64)fmin(fmax((double)v, lo), hi); }

// A warp's sum or max of v, in every lane: the butterfly adds the same two
// values in both lanes of each pair (addition commutes), so all lanes end
// with the same bits.
__device__ __forceinline__ float mpc_warp_sum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
__device__ __forceinline__ double mpc_warp_sum(double v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
__device__ __forceinline__ float mpc_warp_max(float v) {
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
// A block's sum (max) for a row a block shares: each warp's butterfly,
// then every thread folds the warps' partials in warp order (the same bits
// in every thread). The first barrier keeps a previous call's readers
// ahead of this call's writers.
template <typename Op>
__device__ __forceinline__ float mpc_block_fold(float warpResult, Op op) {
  __shared__ float part[32];
  __syncthreads();
  if (threadIdx.x % 32 == 0) part[threadIdx.x / 32] = warpResult;
  __syncthreads();
  float s = part[0];
  for (unsigned w = 1; w < blockDim.x / 32; ++w) s = op(s, part[w]);
  return s;
}
struct mpc_add_op { __device__ float operator()(float a, float b) const { return a + b; } };
struct mpc_max_op { __device__ float operator()(float a, float b) const { return fmaxf(a, b); } };
__device__ __forceinline__ float mpc_block_sum(float v) {
  return mpc_block_fold(mpc_warp_sum(v), mpc_add_op());
}
__device__ __forceinline__ float mpc_block_max(float v) {
  return mpc_block_fold(mpc_warp_max(v), mpc_max_op());
}
// The same sum in double (mpc.global_norm's partials).
__device__ __forceinline__ double mpc_block_sum_f64(double v) {
  __shared__ double part[32];
  v = mpc_warp_sum(v);
  __syncthreads();
  if (threadIdx.x % 32 == 0) part[threadIdx.x / 32] = v;
  __syncthreads();
  double s = part[0];
  for (unsigned w = 1; w < blockDim.x / 32; ++w) s += part[w];
  return s;
}

// A row's log-sum-exp in log2 units, for attention's backward 2^(v mult -
// lse2) (mpc_exp2): an all-masked row's -inf as +inf, so that its
// probabilities are 2^-inf = 0 whatever its scores, with no select a score.
__device__ __forceinline__ float mpc_lse2(float lse) {
  return lse == -INFINITY ? INFINITY : lse * 1.44269504088896341f;
}

// Attention dropout's words shared by the four lanes 4g + t, g = 4m ..
// 4m + 3 (one t): each drew Philox group k = g & 3 of four into `w`, and
// gets word k of every group, out[q] of group q: in round r the lane
// reads from lane ^ 4r, which drew group k ^ r, the word k it sent (it
// sends its own group's word k ^ r). Three shuffles instead of three
// more draws; indices into w and recv are selects, not local memory.
__device__ __forceinline__ void mpc_quad_words(const unsigned w[4], unsigned out[4]) {
  const int k = (int)(threadIdx.x % 32 / 4 % 4);
  unsigned recv[4];
#pragma unroll
  for (int r = 0; r < 4; ++r) {
    const int s = k ^ r;
    const unsigned send = s == 0 ? w[0] : s == 1 ? w[1] : s == 2 ? w[2] : w[3];
    recv[r] = r == 0 ? send : __shfl_xor_sync(0xffffffffu, send, 4 * r);
  }
#pragma unroll
  for (int q = 0; q < 4; ++q) {
    const int r = k ^ q;
    out[q] = r == 0 ? recv[0] : r == 1 ? recv[1] : r == 2 ? recv[2] : recv[3];
  }
}

// Two fp16/bf16 values as one 32-bit register (lo in the low half), the
// operand form of mma.sync.
template <typename T>
__device__ __forceinline__ unsigned mpc_pack2(T lo, T hi) {
  unsigned short a, b;
  memcpy(&a, &lo, 2);
  memcpy(&b, &hi, 2);
  return (unsigned)a | ((unsigned)b << 16);
}

// The two values of a packed pair to p[0] (lo, where `lo`) and p[stride]
// (hi, where `hi`): an A fragment's neighbours along a column of memory.
template <typename T>
__device__ __forceinline__ void mpc_st_pair(T *p, i64 stride, unsigned v, bool lo, bool hi) {
  const unsigned short a = (unsigned short)(v & 0xffffu), b = (unsigned short)(v >> 16);
  if (lo) memcpy(p, &a, 2);
  if (hi) memcpy(p + stride, &b, 2);
}

#ifndef MPC_HOST_EMULATION
// d += A B for one m16n8k16 tile on the tensor cores: A 16x16 and B 16x8
// fp16/bf16 in packed pairs, d 16x8 FP32, in the PTX ISA's layout (lane =
// 4 g + t): A {(g, 2t), (g+8, 2t), (g, 2t+8), (g+8, 2t+8)}, B {(2t, g),
// (2t+8, g)}, d {(g, 2t), (g, 2t+1), (g+8, 2t), (g+8, 2t+1)}; each A and B
// register holds the element named and its right (A) or lower (B)
// neighbour. sm_75 has no k16 form: two k8 products.
template <typename T>
__device__ __forceinline__ void mma_16816(float d[4], const unsigned a[4], const unsigned b[2]) {
#if __CUDA_ARCH__ >= 800
  if constexpr (mpc_same<T, __half>::value)
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  else
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#else
  asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5}, {%6}, {%0,%1,%2,%3};\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(b[0]));
  asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5}, {%6}, {%0,%1,%2,%3};\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
               : "r"(a[2]), "r"(a[3]), "r"(b[1]));
#endif
}

// 2^x on the SFU: ex2.approx.ftz (2 ulp, subnormal results flushed to
// zero, 2^-inf = +0), what exp2f becomes under nvcc --use_fast_math, as
// FlashAttention compiles it. exp2f alone adds a range check and two
// multiplies to keep subnormals: attention's probabilities (summed to a
// row's 1) need none of them. The host emulation's is exp2f.
__device__ __forceinline__ float mpc_exp2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

// tanh on the SFU (sm_75+): tanh.approx.f32 (about 2^-11 relative), as
// FlashAttention-2 computes its softcap (mpc_tanh, runtime/Formulas.h:
// tanhf, is the Tanh op's). The host emulation's is tanhf.
__device__ __forceinline__ float mpc_tanh_approx(float x) {
  float y;
  asm("tanh.approx.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

// ldmatrix (sm_75+): N (4 or 2) 8x8 tiles of 16-bit elements from shared
// memory into mma.sync's fragment layout. Lane L gives the address of row
// L % 8 of tile L / 8 (16-byte aligned); lane 4g + t receives, of each
// tile, row g's elements 2t and 2t + 1, or with Trans column g's rows 2t
// and 2t + 1 (lower index in the lower half).
template <int N, bool Trans, typename T>
__device__ __forceinline__ void mpc_ldsm(unsigned *r, const T *row) {
  const unsigned a = (unsigned)__cvta_generic_to_shared(row);
  if constexpr (N == 4 && !Trans)
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(a));
  else if constexpr (N == 4)
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(a));
  else if constexpr (!Trans)
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0,%1}, [%2];\n"
                 : "=r"(r[0]), "=r"(r[1]) : "r"(a));
  else
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0,%1}, [%2];\n"
                 : "=r"(r[0]), "=r"(r[1]) : "r"(a));
}

// cp.async (sm_80+): 16 bytes from global to shared memory without a
// trip through registers, zeros where !valid; the copies a thread issued
// complete at mpc_cp_async_wait<N> (all but its N newest groups). Before
// sm_80 a plain copy.
__device__ __forceinline__ void mpc_cp_async16(void *dst, const void *src, bool valid) {
#if __CUDA_ARCH__ >= 800
  const unsigned d = (unsigned)__cvta_generic_to_shared(dst);
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(d), "l"(src),
               "r"(valid ? 16 : 0));
#else
  *(uint4 *)dst = valid ? *(const uint4 *)src : make_uint4(0, 0, 0, 0);
#endif
}
__device__ __forceinline__ void mpc_cp_async_commit() {
#if __CUDA_ARCH__ >= 800
  asm volatile("cp.async.commit_group;\n" ::);
#endif
}
template <int N> __device__ __forceinline__ void mpc_cp_async_wait() {
#if __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
#endif
}
// The block's dynamic shared memory: as many bytes as the launch gives
// (the plan's `smem`; beyond 48 KiB the session opts the kernel in).
extern __shared__ __align__(16) unsigned char mpc_smem_[];
__device__ __forceinline__ unsigned char *mpc_dynamic_smem() { return mpc_smem_; }
#endif

// C[m, n] = sum_k A(m, k) B(k, n) on tensor cores: a BM x BN tile per
// block of warps (32x32 each; row tile `mb`, column tile blockIdx.x: row
// tiles past a grid's 65535 along y are looped over), K in steps of BK
// through shared memory,
// FP32 accumulators; the epilogue gets each FP32 sum once. (The host
// emulation's own is a plain product, but for the race check, which runs
// this one with its WMMA emulated.)
#if !defined(MPC_HOST_EMULATION) || defined(__SANITIZE_THREAD__)
template <typename T, typename LA, typename LB, typename EP>
__device__ __forceinline__ void tc_gemm(int M, int N, int K, const LA &la, const LB &lb, const EP &ep, int mb) {
  constexpr int BM = MPC_TC_TILE_M, BN = MPC_TC_TILE_N, BK = MPC_TC_TILE_K;
  constexpr int PA = BK + 8, PB = BN + 8, WN = BN / 32;
  __shared__ __align__(32) T As[BM * PA];
  __shared__ __align__(32) T Bs[BK * PB];
  __shared__ __align__(32) float Cs[(BM / 32) * WN][32 * 32];
  const int warp = threadIdx.x / 32, wm = warp / WN, wn = warp % WN;
  const int m0 = mb * BM, n0 = blockIdx.x * BN;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[2][2];
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 2; ++j)
      wmma::fill_fragment(acc[i][j], 0.0f);
  for (int k0 = 0; k0 < K; k0 += BK) {
    for (int e = threadIdx.x; e < BM * BK; e += blockDim.x) {
      int r = e / BK, c = e % BK, m = m0 + r, k = k0 + c;
      As[r * PA + c] = (m < M && k < K) ? la(m, k) : T(0.0f);
    }
    for (int e = threadIdx.x; e < BK * BN; e += blockDim.x) {
      int r = e / BN, c = e % BN, k = k0 + r, n = n0 + c;
      Bs[r * PB + c] = (k < K && n < N) ? lb(k, n) : T(0.0f);
    }
    __syncthreads();
    for (int kk = 0; kk < BK; kk += 16) {
      wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> a[2];
      wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::row_major> b[2];
      for (int i = 0; i < 2; ++i)
        wmma::load_matrix_sync(a[i], As + (wm * 32 + i * 16) * PA + kk, PA);
      for (int j = 0; j < 2; ++j)
        wmma::load_matrix_sync(b[j], Bs + kk * PB + wn * 32 + j * 16, PB);
      for (int i = 0; i < 2; ++i)
        for (int j = 0; j < 2; ++j)
          wmma::mma_sync(acc[i][j], a[i], b[j], acc[i][j]);
    }
    __syncthreads();
  }
  float *cs = Cs[warp];
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 2; ++j)
      wmma::store_matrix_sync(cs + i * 16 * 32 + j * 16, acc[i][j], 32, wmma::mem_row_major);
  __syncwarp();
  for (int e = threadIdx.x % 32; e < 32 * 32; e += 32) {
    int m = m0 + wm * 32 + e / 32, n = n0 + wn * 32 + e % 32;
    if (m < M && n < N)
      ep(m, n, cs[e]);
  }
}
#endif

// C[m, n] = sum_k A(m, k) B(k, n) on tensor cores for operands that are
// strided fp16/bf16 matrices (Gemm, MatMul): A(m, k) at A[m lda + k], or
// A[k lda + m] with TA; B(k, n) at B[k ldb + n], or B[n ldb + k] with TB.
// A BM x BN tile per block of 4 warps (2 x 2, each a BM/2 x BN/2 tile of
// m16n8k16 products), K in steps of 32 through STAGES stages of dynamic
// shared memory (SMEM bytes: the launch's): the next stages'
// tiles copy by cp.async (16 bytes, zero-filled past the edges) while the
// warps multiply this step's (CUTLASS's multistage sm_80 GEMM; one barrier
// a step, before the refill of the stage the last step read), fragments
// read by ldmatrix
// (.trans where the operand's contiguous axis is not the fragment's), rows
// padded by 8 elements so neither conflicts on banks. Operands that are not
// 16-byte aligned (or chunks that straddle an edge) load element by element
// into the same tiles. The epilogue gets each FP32 sum once, from the
// accumulator registers. (The host emulation's own is a plain product,
// but under the race check and MPC_EMULATE_MMA_GEMM.)
#if !defined(MPC_HOST_EMULATION) || defined(__SANITIZE_THREAD__) || defined(MPC_EMULATE_MMA_GEMM)
// A ROWS x COLS tile (COLS contiguous in global memory, rows ld apart) to
// shared memory at row stride LDS; zeros outside rows x cols.
template <typename T, int ROWS, int COLS, int LDS, int THREADS>
__device__ __forceinline__ void mpc_tile_copy(T *s, const T *g, i64 ld, int rows, int cols, bool vec) {
  constexpr int CH = COLS / 8;
  static_assert(ROWS * CH % THREADS == 0, "whole 16-byte chunks a thread");
#pragma unroll
  for (int it = 0; it < ROWS * CH / THREADS; ++it) {
    const int c = threadIdx.x + it * THREADS, r = c / CH, col = c % CH * 8;
    T *d = s + r * LDS + col;
    const bool in = r < rows && col < cols;
    const T *src = g + (in ? (i64)r * ld + col : 0);
    if (vec && (!in || col + 8 <= cols)) {
      mpc_cp_async16(d, src, in);
    } else { // (rare: kept small, not unrolled)
#pragma unroll 1
      for (int e = 0; e < 8; ++e)
        d[e] = in && col + e < cols ? src[e] : T(0.0f);
    }
  }
}

template <typename T, int BM, int BN, bool TA, bool TB, int STAGES, int SMEM, typename EP>
__device__ __forceinline__ void tc_gemm_mma(int M, int N, int K, const T *A, i64 lda, const T *B, i64 ldb,
                                            const EP &ep, int mb) {
  constexpr int BK = MPC_MMA_GEMM_TILE_K, THREADS = MPC_MMA_GEMM_THREADS;
  constexpr int WTM = BM / 2, WTN = BN / 2, MT = WTM / 16, NT = WTN / 8;
  // Shared tiles, contiguous axis last: A as [BM][BK] or (TA) [BK][BM], B
  // as [BK][BN] or (TB) [BN][BK].
  constexpr int LDA = (TA ? BM : BK) + 8, LDB = (TB ? BK : BN) + 8;
  constexpr int SA = (TA ? BK : BM) * LDA, SB = (TB ? BN : BK) * LDB;
  static_assert(STAGES * (SA + SB) * (int)sizeof(T) <= SMEM, "the launch's shared memory holds the stages");
  static_assert(SA * sizeof(T) % 16 == 0, "stages 16-byte aligned");
  static_assert(STAGES >= 2 && THREADS == 128, "a pipeline; 2 x 2 warps");
  T *const As = (T *)mpc_dynamic_smem(), *const Bs = As + STAGES * SA;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, wm = warp / 2, wn = warp % 2;
  const int m0 = mb * BM, n0 = blockIdx.x * BN;
  const bool va = (unsigned long long)A % 16 == 0 && lda % 8 == 0;
  const bool vb = (unsigned long long)B % 16 == 0 && ldb % 8 == 0;
  auto load = [&](int stage, int k0) {
    T *as = As + stage * SA, *bs = Bs + stage * SB;
    if (TA)
      mpc_tile_copy<T, BK, BM, LDA, THREADS>(as, A + (i64)k0 * lda + m0, lda, K - k0, M - m0, va);
    else
      mpc_tile_copy<T, BM, BK, LDA, THREADS>(as, A + (i64)m0 * lda + k0, lda, M - m0, K - k0, va);
    if (TB)
      mpc_tile_copy<T, BN, BK, LDB, THREADS>(bs, B + (i64)n0 * ldb + k0, ldb, N - n0, K - k0, vb);
    else
      mpc_tile_copy<T, BK, BN, LDB, THREADS>(bs, B + (i64)k0 * ldb + n0, ldb, K - k0, N - n0, vb);
  };
  float acc[MT][NT][4];
#pragma unroll
  for (int i = 0; i < MT; ++i)
#pragma unroll
    for (int j = 0; j < NT; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e)
        acc[i][j][e] = 0.0f;
  // ldmatrix's lane roles: lane L addresses row L % 8 of 8x8 tile L / 8.
  const int r8 = lane % 8, t8 = lane / 8;
  const int KT = (K + BK - 1) / BK;
  // Step kt waits for its tiles, copies step kt + STAGES - 1's into the
  // stage step kt - 1 read (every warp is past it: the barrier), then
  // multiplies its own; steps below 0 only copy (one copy site: the
  // kernel compiles faster). A group is committed every step, empty ones
  // at the end, so the wait always leaves the STAGES - 2 newest pending.
  for (int kt = 1 - STAGES; kt < KT; ++kt) {
    if (kt >= 0) {
      mpc_cp_async_wait<STAGES - 2>();
      __syncthreads();
    }
    const int next = kt + STAGES - 1;
    if (next < KT)
      load(next % STAGES, next * BK);
    mpc_cp_async_commit();
    if (kt < 0)
      continue;
    const T *as = As + kt % STAGES * SA, *bs = Bs + kt % STAGES * SB;
#pragma unroll
    for (int kk = 0; kk < BK; kk += 16) {
      unsigned a[MT][4], b[NT][2];
#pragma unroll
      for (int i = 0; i < MT; ++i) {
        const int m = wm * WTM + i * 16;
        if (TA) // tiles (m 0-7, k 0-7), (m 8-15, k 0-7), (m 0-7, k 8-15), (m 8-15, k 8-15)
          mpc_ldsm<4, true>(a[i], as + (kk + r8 + t8 / 2 * 8) * LDA + m + t8 % 2 * 8);
        else
          mpc_ldsm<4, false>(a[i], as + (m + lane % 16) * LDA + kk + lane / 16 * 8);
      }
#pragma unroll
      for (int j = 0; j < NT; j += 2) { // two n8 tiles: (b0, b1) of each
        const int n = wn * WTN + j * 8;
        unsigned r[4];
        if (TB)
          mpc_ldsm<4, false>(r, bs + (n + r8 + t8 / 2 * 8) * LDB + kk + t8 % 2 * 8);
        else
          mpc_ldsm<4, true>(r, bs + (kk + r8 + t8 % 2 * 8) * LDB + n + t8 / 2 * 8);
        b[j][0] = r[0], b[j][1] = r[1], b[j + 1][0] = r[2], b[j + 1][1] = r[3];
      }
#pragma unroll
      for (int i = 0; i < MT; ++i)
#pragma unroll
        for (int j = 0; j < NT; ++j)
          mma_16816<T>(acc[i][j], a[i], b[j]);
    }
  }
  const int g = lane / 4, t = lane % 4;
#pragma unroll
  for (int i = 0; i < MT; ++i)
#pragma unroll
    for (int j = 0; j < NT; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int m = m0 + wm * WTM + i * 16 + g + e / 2 * 8, n = n0 + wn * WTN + j * 8 + 2 * t + e % 2;
        if (m < M && n < N)
          ep(m, n, acc[i][j][e]);
      }
}
#endif

// The same product on ordinary cores in FP32 (fp32 artifacts): one output
// per thread, MPC_SIMT_TILE^2 threads per block.
template <typename LA, typename LB, typename EP>
__device__ __forceinline__ void simt_gemm(int M, int N, int K, const LA &la, const LB &lb, const EP &ep, int mb) {
  constexpr int T = MPC_SIMT_TILE;
  int n = blockIdx.x * T + threadIdx.x % T, m = mb * T + threadIdx.x / T;
  if (m >= M || n >= N)
    return;
  float acc = 0.0f;
  for (int k = 0; k < K; ++k)
    acc = fmaf(la(m, k), lb(k, n), acc);
  ep(m, n, acc);
}
)CUDA";

/// The MPC_* tile constants of runtime/cuda/KernelConfig.h as C++.
std::string cudaPreludeConstants();

} // namespace mlir::mpc

#endif // MPC_CODEGEN_CUDAPRELUDE_H
