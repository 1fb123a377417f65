//===- Half.h - IEEE binary16 and bfloat16 conversions ------------*- C++ -*-===//
//
// Integer-only conversions, so results do not depend on the host's FPU mode
// or compiler: FP32 -> FP16/BF16 round to nearest even, subnormals kept,
// overflow to infinity, NaN stays NaN (quiet, payload kept where it fits).
// These define the numerics contract every backend is checked against.
//
//===----------------------------------------------------------------------===//

#ifndef MPC_RUNTIME_HALF_H
#define MPC_RUNTIME_HALF_H

#include <cstdint>
#include <cstring>

namespace mpc::rt {

inline uint32_t floatBits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

inline float bitsFloat(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

/// FP32 -> binary16, round to nearest even.
inline uint16_t floatToHalf(float f) {
  uint32_t x = floatBits(f);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t exp = (x >> 23) & 0xffu;
  uint32_t mant = x & 0x7fffffu;
  if (exp == 0xff) // inf or NaN (keep NaN quiet with its top payload bits)
    return sign | 0x7c00u | (mant ? 0x200u | (mant >> 13) : 0u);
  int32_t e = int32_t(exp) - 127 + 15;
  if (e >= 0x1f) // overflow
    return sign | 0x7c00u;
  if (e <= 0) { // subnormal or zero in half
    if (e < -10)
      return sign; // rounds to zero (below half the smallest subnormal)
    mant |= 0x800000u; // implicit bit
    uint32_t shift = uint32_t(14 - e);
    uint32_t half = mant >> shift;
    uint32_t rem = mant & ((1u << shift) - 1);
    uint32_t mid = 1u << (shift - 1);
    if (rem > mid || (rem == mid && (half & 1u)))
      ++half;
    return sign | half;
  }
  uint32_t half = (uint32_t(e) << 10) | (mant >> 13);
  uint32_t rem = mant & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (half & 1u)))
    ++half; // may carry into the exponent, up to infinity: correct
  return sign | half;
}

/// binary16 -> FP32 (exact).
inline float halfToFloat(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  if (exp == 0x1f)
    return bitsFloat(sign | 0x7f800000u | (mant << 13));
  if (exp == 0) {
    if (mant == 0)
      return bitsFloat(sign);
    // Normalise the subnormal.
    int e = -1;
    do {
      mant <<= 1;
      ++e;
    } while (!(mant & 0x400u));
    return bitsFloat(sign | (uint32_t(127 - 15 - e) << 23) |
                     ((mant & 0x3ffu) << 13));
  }
  return bitsFloat(sign | ((exp + 127 - 15) << 23) | (mant << 13));
}

/// FP32 -> bfloat16, round to nearest even; NaN stays quiet NaN.
inline uint16_t floatToBf16(float f) {
  uint32_t x = floatBits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u)
    return uint16_t((x >> 16) | 0x40u);
  uint32_t rounding = 0x7fffu + ((x >> 16) & 1u);
  return uint16_t((x + rounding) >> 16);
}

/// bfloat16 -> FP32 (exact).
inline float bf16ToFloat(uint16_t b) { return bitsFloat(uint32_t(b) << 16); }

/// Arithmetic on fp16 (`bf16` false) or bf16 bit patterns, as a 16-bit
/// collective does it: computed in FP32 (exact for one operation), rounded
/// once to the 16-bit type.
inline float widen16(uint16_t v, bool bf16) {
  return bf16 ? bf16ToFloat(v) : halfToFloat(v);
}
inline uint16_t narrow16(float v, bool bf16) {
  return bf16 ? floatToBf16(v) : floatToHalf(v);
}
inline uint16_t add16(uint16_t a, uint16_t b, bool bf16) {
  return narrow16(widen16(a, bf16) + widen16(b, bf16), bf16);
}
inline uint16_t scale16(uint16_t v, float s, bool bf16) {
  return narrow16(widen16(v, bf16) * s, bf16);
}

/// Bulk fp16 <-> FP32 (F16C where the CPU has it: the same bits as the
/// conversions above, round to nearest even, subnormals kept).
void halfToFloats(const uint16_t *in, float *out, int64_t n);
void floatsToHalf(const float *in, uint16_t *out, int64_t n);

} // namespace mpc::rt

#endif // MPC_RUNTIME_HALF_H
