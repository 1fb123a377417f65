//===- Sgemm.cpp - blocked FP32 matrix multiply ---------------------------===//
//
// Goto-style blocking: B is packed in panels of nr columns, A in panels of
// mr rows, and an mr x nr micro-kernel keeps its accumulators in registers.
// The micro-kernel is picked once for the CPU: AVX-512 (8 x 32) or AVX2
// (6 x 16) with fused multiply-add, else portable C++ (4 x 16). Each C
// element accumulates over k in order, so a given machine always gives the
// same bits; machines with and without FMA differ within accumulation
// tolerance (the numerics contract only demands that for GEMMs).
//
//===----------------------------------------------------------------------===//

#include "runtime/kernels/Sgemm.h"
#include "runtime/Parallel.h"

#include <algorithm>
#include <immintrin.h>
#include <vector>

namespace mpc::rt {
namespace {

constexpr int64_t kKc = 256, kMc = 96, kNc = 2048, kNChunk = 256;

/// bp points at a kc x nr panel of B whose rows are ldbp floats apart: a
/// packed panel (ldbp = nr) or B itself when it is row-major (ldbp = ldb).
using MicroKernel = void (*)(int64_t kc, const float *ap, const float *bp,
                             int64_t ldbp, float *c, int64_t ldc, int64_t mr,
                             int64_t nr, float alpha);

struct KernelSpec {
  int64_t mr, nr;
  MicroKernel fn;
};

/// Adds alpha * tile (MR x NR, row-major) into the mr x nr corner of C.
template <int64_t NR>
inline void storeTile(const float *tile, int64_t rows, float *c, int64_t ldc,
                      int64_t mr, int64_t nr, float alpha) {
  for (int64_t i = 0; i < std::min(rows, mr); ++i)
    for (int64_t j = 0; j < nr; ++j)
      c[i * ldc + j] += alpha * tile[i * NR + j];
}

template <int64_t MR, int64_t NR>
void microGeneric(int64_t kc, const float *ap, const float *bp, int64_t ldbp,
                  float *c, int64_t ldc, int64_t mr, int64_t nr, float alpha) {
  float acc[MR * NR] = {};
  for (int64_t p = 0; p < kc; ++p)
    for (int64_t i = 0; i < MR; ++i) {
      float av = ap[p * MR + i];
      for (int64_t j = 0; j < NR; ++j)
        acc[i * NR + j] += av * bp[p * ldbp + j];
    }
  storeTile<NR>(acc, MR, c, ldc, mr, nr, alpha);
}

__attribute__((target("avx2,fma"))) void
microAvx2(int64_t kc, const float *ap, const float *bp, int64_t ldbp, float *c,
          int64_t ldc, int64_t mr, int64_t nr, float alpha) {
  constexpr int64_t MR = 6, NR = 16;
  __m256 acc[MR][2];
  for (int64_t i = 0; i < MR; ++i)
    acc[i][0] = acc[i][1] = _mm256_setzero_ps();
  for (int64_t p = 0; p < kc; ++p) {
    __m256 b0 = _mm256_loadu_ps(bp + p * ldbp);
    __m256 b1 = _mm256_loadu_ps(bp + p * ldbp + 8);
    for (int64_t i = 0; i < MR; ++i) {
      __m256 a = _mm256_broadcast_ss(ap + p * MR + i);
      acc[i][0] = _mm256_fmadd_ps(a, b0, acc[i][0]);
      acc[i][1] = _mm256_fmadd_ps(a, b1, acc[i][1]);
    }
  }
  alignas(64) float tile[MR * NR];
  for (int64_t i = 0; i < MR; ++i) {
    _mm256_storeu_ps(tile + i * NR, acc[i][0]);
    _mm256_storeu_ps(tile + i * NR + 8, acc[i][1]);
  }
  storeTile<NR>(tile, MR, c, ldc, mr, nr, alpha);
}

__attribute__((target("avx512f"))) void
microAvx512(int64_t kc, const float *ap, const float *bp, int64_t ldbp,
            float *c, int64_t ldc, int64_t mr, int64_t nr, float alpha) {
  constexpr int64_t MR = 8, NR = 32;
  __m512 acc[MR][2];
  for (int64_t i = 0; i < MR; ++i)
    acc[i][0] = acc[i][1] = _mm512_setzero_ps();
  for (int64_t p = 0; p < kc; ++p) {
    __m512 b0 = _mm512_loadu_ps(bp + p * ldbp);
    __m512 b1 = _mm512_loadu_ps(bp + p * ldbp + 16);
    for (int64_t i = 0; i < MR; ++i) {
      __m512 a = _mm512_set1_ps(ap[p * MR + i]);
      acc[i][0] = _mm512_fmadd_ps(a, b0, acc[i][0]);
      acc[i][1] = _mm512_fmadd_ps(a, b1, acc[i][1]);
    }
  }
  if (nr == NR && alpha == 1.0f) { // full-width rows: add in place
    for (int64_t i = 0; i < mr; ++i) {
      float *row = c + i * ldc;
      _mm512_storeu_ps(row, _mm512_add_ps(_mm512_loadu_ps(row), acc[i][0]));
      _mm512_storeu_ps(row + 16,
                       _mm512_add_ps(_mm512_loadu_ps(row + 16), acc[i][1]));
    }
    return;
  }
  alignas(64) float tile[MR * NR];
  for (int64_t i = 0; i < MR; ++i) {
    _mm512_storeu_ps(tile + i * NR, acc[i][0]);
    _mm512_storeu_ps(tile + i * NR + 16, acc[i][1]);
  }
  storeTile<NR>(tile, MR, c, ldc, mr, nr, alpha);
}

const KernelSpec &kernelSpec() {
  static const KernelSpec spec =
      __builtin_cpu_supports("avx512f") ? KernelSpec{8, 32, microAvx512}
      : __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")
          ? KernelSpec{6, 16, microAvx2}
          : KernelSpec{4, 16, microGeneric<4, 16>};
  return spec;
}

inline float at(const float *p, int64_t ld, bool trans, int64_t r, int64_t c) {
  return trans ? p[c * ld + r] : p[r * ld + c];
}

/// One nr-wide panel of op(B) starting at column j, w columns valid.
void packPanelB(const float *b, int64_t ldb, bool transB, int64_t p0,
                int64_t kc, int64_t j, int64_t w, int64_t nr, float *out) {
  for (int64_t p = 0; p < kc; ++p, out += nr) {
    if (!transB && w == nr) {
      std::copy_n(b + (p0 + p) * ldb + j, nr, out);
      continue;
    }
    for (int64_t jj = 0; jj < nr; ++jj)
      out[jj] = jj < w ? at(b, ldb, transB, p0 + p, j + jj) : 0.0f;
  }
}

/// Whether the micro-kernel reads row-major B in place instead of a packed
/// copy: saves a pass over B, except when rows 4 KB apart would alias in
/// the cache.
bool readBDirect(bool transB, int64_t ldb) { return !transB && ldb % 1024; }

/// Packs the panels of op(B)[p0:p0+kc, j0:j0+nc] the micro-kernel does not
/// read in place (see readBDirect; a partial last panel always).
void packB(const float *b, int64_t ldb, bool transB, int64_t p0, int64_t kc,
           int64_t j0, int64_t nc, int64_t nr, float *packed) {
  int64_t panels = (nc + nr - 1) / nr;
  parallelFor(panels, 4, [&](int64_t pb, int64_t pe) {
    for (int64_t panel = pb; panel < pe; ++panel) {
      int64_t w = std::min(nr, nc - panel * nr);
      if (!readBDirect(transB, ldb) || w < nr)
        packPanelB(b, ldb, transB, p0, kc, j0 + panel * nr, w, nr,
                   packed + panel * nr * kc);
    }
  });
}

/// Packs op(A)[i0:i0+mc, p0:p0+kc] into mr-tall row panels (zero pad).
void packA(const float *a, int64_t lda, bool transA, int64_t i0, int64_t mc,
           int64_t p0, int64_t kc, int64_t mr, float *out) {
  for (int64_t i = 0; i < mc; i += mr)
    for (int64_t p = 0; p < kc; ++p)
      for (int64_t ii = 0; ii < mr; ++ii)
        *out++ = i + ii < mc ? at(a, lda, transA, i0 + i + ii, p0 + p) : 0.0f;
}

} // namespace

void sgemm(bool transA, bool transB, int64_t m, int64_t n, int64_t k,
           float alpha, const float *a, int64_t lda, const float *b,
           int64_t ldb, float beta, float *c, int64_t ldc) {
  parallelFor(m, 16, [&](int64_t ib, int64_t ie) {
    for (int64_t i = ib; i < ie; ++i)
      for (int64_t j = 0; j < n; ++j)
        c[i * ldc + j] = beta == 0.0f ? 0.0f : beta * c[i * ldc + j];
  });
  if (k == 0 || m == 0 || n == 0)
    return;
  // Tiny products (attention heads, small batches): packing costs more than
  // it saves; a direct loop, k in order per element.
  if (m * n * k <= 32 * 32 * 32) {
    for (int64_t i = 0; i < m; ++i)
      for (int64_t p = 0; p < k; ++p) {
        float av = alpha * at(a, lda, transA, i, p);
        float *cRow = c + i * ldc;
        for (int64_t j = 0; j < n; ++j)
          cRow[j] += av * at(b, ldb, transB, p, j);
      }
    return;
  }
  const KernelSpec &spec = kernelSpec();
  int64_t mr = spec.mr, nr = spec.nr;
  // Reused across calls; workers must see the caller's buffer, not theirs.
  static thread_local std::vector<float> bScratch;
  std::vector<float> &bPack = bScratch;
  for (int64_t j0 = 0; j0 < n; j0 += kNc) {
    int64_t nc = std::min(kNc, n - j0);
    int64_t ncPad = (nc + nr - 1) / nr * nr;
    for (int64_t p0 = 0; p0 < k; p0 += kKc) {
      int64_t kc = std::min(kKc, k - p0);
      bPack.resize(ncPad * kc);
      packB(b, ldb, transB, p0, kc, j0, nc, nr, bPack.data());
      // Tasks are (row block, column chunk) pairs, so small-m products
      // (convolutions with few output channels) still use every thread.
      int64_t mBlocks = (m + kMc - 1) / kMc;
      int64_t nChunks = (nc + kNChunk - 1) / kNChunk;
      parallelFor(mBlocks * nChunks, 1, [&](int64_t tBegin, int64_t tEnd) {
        static thread_local std::vector<float> aPack;
        aPack.resize((kMc + mr - 1) / mr * mr * kc);
        int64_t packed = -1;
        for (int64_t t = tBegin; t < tEnd; ++t) {
          int64_t blk = t / nChunks, chunk = t % nChunks;
          int64_t i0 = blk * kMc, mc = std::min(kMc, m - i0);
          if (packed != blk)
            packA(a, lda, transA, i0, mc, p0, kc, mr, aPack.data());
          packed = blk;
          int64_t jEnd = std::min(nc, (chunk + 1) * kNChunk);
          for (int64_t j = chunk * kNChunk; j < jEnd; j += nr) {
            bool direct = readBDirect(transB, ldb) && nc - j >= nr;
            const float *bp =
                direct ? b + p0 * ldb + j0 + j : bPack.data() + j * kc;
            int64_t ldbp = direct ? ldb : nr;
            for (int64_t i = 0; i < mc; i += mr)
              spec.fn(kc, aPack.data() + i * kc, bp, ldbp,
                      c + (i0 + i) * ldc + j0 + j, ldc, std::min(mr, mc - i),
                      std::min(nr, nc - j), alpha);
          }
        }
      });
    }
  }
}

} // namespace mpc::rt
