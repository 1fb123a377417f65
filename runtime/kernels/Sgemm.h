//===- Sgemm.h - blocked FP32 matrix multiply ---------------------*- C++ -*-===//

#ifndef MPC_RUNTIME_KERNELS_SGEMM_H
#define MPC_RUNTIME_KERNELS_SGEMM_H

#include <cstdint>

namespace mpc::rt {

/// C[m x n] = alpha * op(A)[m x k] * op(B)[k x n] + beta * C, row-major,
/// op = optional transpose. Each C element accumulates over k in a fixed
/// order (blocks of kKc, sequential within a block) whatever the thread
/// count or SIMD width, so results are reproducible.
void sgemm(bool transA, bool transB, int64_t m, int64_t n, int64_t k,
           float alpha, const float *a, int64_t lda, const float *b,
           int64_t ldb, float beta, float *c, int64_t ldc);

} // namespace mpc::rt

#endif // MPC_RUNTIME_KERNELS_SGEMM_H
