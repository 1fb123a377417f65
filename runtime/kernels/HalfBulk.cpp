//===- HalfBulk.cpp - bulk fp16 <-> FP32 conversions ----------------------===//

#include "runtime/Half.h"

#include <immintrin.h>

namespace mpc::rt {
namespace {

__attribute__((target("f16c,avx"))) void halfToFloatsF16c(const uint16_t *in,
                                                          float *out,
                                                          int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(out + i, _mm256_cvtph_ps(_mm_loadu_si128(
                                  reinterpret_cast<const __m128i *>(in + i))));
  for (; i < n; ++i)
    out[i] = halfToFloat(in[i]);
}

__attribute__((target("f16c,avx"))) void floatsToHalfF16c(const float *in,
                                                          uint16_t *out,
                                                          int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128(reinterpret_cast<__m128i *>(out + i),
                     _mm256_cvtps_ph(_mm256_loadu_ps(in + i),
                                     _MM_FROUND_TO_NEAREST_INT));
  for (; i < n; ++i)
    out[i] = floatToHalf(in[i]);
}

bool hasF16c() {
  static const bool has = __builtin_cpu_supports("f16c") &&
                          __builtin_cpu_supports("avx");
  return has;
}

} // namespace

void halfToFloats(const uint16_t *in, float *out, int64_t n) {
  if (hasF16c())
    return halfToFloatsF16c(in, out, n);
  for (int64_t i = 0; i < n; ++i)
    out[i] = halfToFloat(in[i]);
}

void floatsToHalf(const float *in, uint16_t *out, int64_t n) {
  if (hasF16c())
    return floatsToHalfF16c(in, out, n);
  for (int64_t i = 0; i < n; ++i)
    out[i] = floatToHalf(in[i]);
}

} // namespace mpc::rt
