//===- Sgemm.cpp - blocked FP32 matrix multiply ---------------------------===//
//
// Goto-style blocking: B is packed in panels of kNr columns, A in panels of
// kMr rows, and a kMr x kNr micro-kernel keeps its accumulators in
// registers. The micro-kernel is plain C++ the compiler vectorises; with
// FP contraction off, every C element sees the same operation sequence.
//
//===----------------------------------------------------------------------===//

#include "runtime/kernels/Sgemm.h"
#include "runtime/Parallel.h"

#include <algorithm>
#include <vector>

namespace mpc::rt {
namespace {

constexpr int64_t kMr = 4, kNr = 16;
constexpr int64_t kKc = 256, kMc = 64, kNc = 1024, kNChunk = 128;

inline float at(const float *p, int64_t ld, bool trans, int64_t r, int64_t c) {
  return trans ? p[c * ld + r] : p[r * ld + c];
}

/// Packs op(B)[p0:p0+kc, j0:j0+nc] into kNr-wide column panels (zero pad).
void packB(const float *b, int64_t ldb, bool transB, int64_t p0, int64_t kc,
           int64_t j0, int64_t nc, float *out) {
  for (int64_t j = 0; j < nc; j += kNr)
    for (int64_t p = 0; p < kc; ++p)
      for (int64_t jj = 0; jj < kNr; ++jj)
        *out++ = j + jj < nc ? at(b, ldb, transB, p0 + p, j0 + j + jj) : 0.0f;
}

/// Packs op(A)[i0:i0+mc, p0:p0+kc] into kMr-tall row panels (zero pad).
void packA(const float *a, int64_t lda, bool transA, int64_t i0, int64_t mc,
           int64_t p0, int64_t kc, float *out) {
  for (int64_t i = 0; i < mc; i += kMr)
    for (int64_t p = 0; p < kc; ++p)
      for (int64_t ii = 0; ii < kMr; ++ii)
        *out++ = i + ii < mc ? at(a, lda, transA, i0 + i + ii, p0 + p) : 0.0f;
}

void microKernel(int64_t kc, const float *ap, const float *bp, float *c,
                 int64_t ldc, int64_t mr, int64_t nr, float alpha) {
  float acc[kMr][kNr] = {};
  for (int64_t p = 0; p < kc; ++p) {
    const float *bRow = bp + p * kNr;
    for (int64_t i = 0; i < kMr; ++i) {
      float av = ap[p * kMr + i];
      for (int64_t j = 0; j < kNr; ++j)
        acc[i][j] += av * bRow[j];
    }
  }
  for (int64_t i = 0; i < mr; ++i)
    for (int64_t j = 0; j < nr; ++j)
      c[i * ldc + j] += alpha * acc[i][j];
}

} // namespace

void sgemm(bool transA, bool transB, int64_t m, int64_t n, int64_t k,
           float alpha, const float *a, int64_t lda, const float *b,
           int64_t ldb, float beta, float *c, int64_t ldc) {
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j)
      c[i * ldc + j] = beta == 0.0f ? 0.0f : beta * c[i * ldc + j];
  if (k == 0 || m == 0 || n == 0)
    return;
  std::vector<float> bPack;
  for (int64_t j0 = 0; j0 < n; j0 += kNc) {
    int64_t nc = std::min(kNc, n - j0);
    int64_t ncPad = (nc + kNr - 1) / kNr * kNr;
    for (int64_t p0 = 0; p0 < k; p0 += kKc) {
      int64_t kc = std::min(kKc, k - p0);
      bPack.resize(ncPad * kc);
      packB(b, ldb, transB, p0, kc, j0, nc, bPack.data());
      // Tasks are (row block, column chunk) pairs, so small-m products
      // (convolutions with few output channels) still use every thread.
      int64_t mBlocks = (m + kMc - 1) / kMc;
      int64_t nChunks = (nc + kNChunk - 1) / kNChunk;
      parallelFor(mBlocks * nChunks, 1, [&](int64_t tBegin, int64_t tEnd) {
        std::vector<float> aPack(kMc * kc);
        int64_t packed = -1;
        for (int64_t t = tBegin; t < tEnd; ++t) {
          int64_t blk = t / nChunks, chunk = t % nChunks;
          int64_t i0 = blk * kMc, mc = std::min(kMc, m - i0);
          if (packed != blk)
            packA(a, lda, transA, i0, mc, p0, kc, aPack.data());
          packed = blk;
          int64_t jEnd = std::min(nc, (chunk + 1) * kNChunk);
          for (int64_t j = chunk * kNChunk; j < jEnd; j += kNr)
            for (int64_t i = 0; i < mc; i += kMr)
              microKernel(kc, aPack.data() + i * kc, bPack.data() + j * kc,
                          c + (i0 + i) * ldc + j0 + j, ldc,
                          std::min(kMr, mc - i), std::min(kNr, nc - j), alpha);
        }
      });
    }
  }
}

} // namespace mpc::rt
