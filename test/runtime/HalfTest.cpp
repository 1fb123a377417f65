//===- HalfTest.cpp - FP16/BF16 conversions against independent ones -----===//
//
// Exhaustive over the 65536 16-bit patterns (round trip, widening), and over
// a dense sample of FP32 inputs plus every rounding boundary, against g++'s
// _Float16 (libgcc), the F16C instructions when the CPU has them, and an
// independent nearest-even search for bfloat16.
//
//===----------------------------------------------------------------------===//

#include "runtime/Half.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <immintrin.h>
#include <initializer_list>

using namespace mpc::rt;

static long checks = 0, failures = 0;

static void check(bool ok, const char *what, uint32_t input, uint32_t got,
                  uint32_t want) {
  ++checks;
  if (!ok && failures++ < 20)
    std::printf("FAIL %s: input 0x%08x got 0x%04x want 0x%04x\n", what, input,
                got, want);
}

static bool isNanHalf(uint16_t h) { return (h & 0x7c00) == 0x7c00 && (h & 0x3ff); }
static bool isNanBf16(uint16_t b) { return (b & 0x7f80) == 0x7f80 && (b & 0x7f); }

__attribute__((target("f16c"))) static uint16_t f16cFromFloat(float f) {
  return _cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT);
}
__attribute__((target("f16c"))) static float f16cToFloat(uint16_t h) {
  return _cvtsh_ss(h);
}

static uint16_t gccFromFloat(float f) {
  _Float16 h = (_Float16)f;
  uint16_t bits;
  std::memcpy(&bits, &h, 2);
  return bits;
}

/// bfloat16 by search: the nearer of the two bf16 neighbours (in double),
/// ties to the even one. Independent of the add-and-shift trick.
static uint16_t bf16BySearch(float f) {
  uint32_t x = floatBits(f);
  if (std::isinf(f))
    return uint16_t(x >> 16);
  uint32_t lo = x & 0xffff0000u, hi = lo + 0x10000u;
  double dlo = bitsFloat(lo), dhi = (hi & 0x7f800000u) == 0x7f800000u &&
                                            (lo & 0x7fffffffu) == 0x7f7f0000u
                                        ? std::ldexp(1.0, 128) *
                                              (f < 0 ? -1 : 1)
                                        : (double)bitsFloat(hi);
  double d = f, elo = std::fabs(d - dlo), ehi = std::fabs(dhi - d);
  if (elo < ehi || (elo == ehi && !((lo >> 16) & 1)))
    return uint16_t(lo >> 16);
  return uint16_t(hi >> 16);
}

static void checkFloat(float f, bool f16c) {
  uint32_t x = floatBits(f);
  uint16_t h = floatToHalf(f);
  if (std::isnan(f)) {
    check(isNanHalf(h), "half(NaN) is NaN", x, h, 0x7e00);
    check(isNanBf16(floatToBf16(f)), "bf16(NaN) is NaN", x, floatToBf16(f),
          0x7fc0);
    return;
  }
  check(h == gccFromFloat(f), "half vs _Float16", x, h, gccFromFloat(f));
  if (f16c)
    check(h == f16cFromFloat(f), "half vs F16C", x, h, f16cFromFloat(f));
  uint16_t b = floatToBf16(f), want = bf16BySearch(f);
  check(b == want, "bf16 vs nearest-even search", x, b, want);
}

int main() {
  bool f16c = __builtin_cpu_supports("f16c");
  // 1. Every 16-bit pattern: widening agrees, narrowing restores it.
  for (uint32_t h = 0; h < 65536; ++h) {
    float f = halfToFloat(uint16_t(h));
    if (f16c) {
      float w = f16cToFloat(uint16_t(h));
      check(std::isnan(f) ? std::isnan(w) : floatBits(f) == floatBits(w),
            "widen vs F16C", h, floatBits(f) >> 16, floatBits(w) >> 16);
    }
    if (!isNanHalf(uint16_t(h)))
      check(floatToHalf(f) == h, "half round trip", h, floatToHalf(f), h);
    float bf = bf16ToFloat(uint16_t(h));
    if (!isNanBf16(uint16_t(h)))
      check(floatToBf16(bf) == h, "bf16 round trip", h, floatToBf16(bf), h);
  }
  // 2. Every rounding boundary: half-way points between neighbours and the
  //    floats either side of them (ties to even, subnormals, overflow).
  for (uint32_t h = 0; h < 0x7c00; ++h)
    for (uint32_t sign : {0u, 0x8000u}) {
      float a = halfToFloat(uint16_t(h | sign));
      float b = h + 1 == 0x7c00 ? (sign ? -65520.0f : 65520.0f)
                                : halfToFloat(uint16_t((h + 1) | sign));
      float mid = (float)(((double)a + (double)b) / 2);
      checkFloat(mid, f16c);
      checkFloat(std::nextafter(mid, 0.0f), f16c);
      checkFloat(std::nextafter(mid, 1e30f * (sign ? -1 : 1)), f16c);
    }
  for (uint32_t hi = 0; hi < 65536; ++hi) // bf16 ties and neighbours
    for (uint32_t lo : {0x7fffu, 0x8000u, 0x8001u, 0x0000u, 0xffffu})
      checkFloat(bitsFloat((hi << 16) | lo), f16c);
  // 3. A dense sample of all FP32 bit patterns.
  for (uint64_t x = 0; x < (1ull << 32); x += 251)
    checkFloat(bitsFloat(uint32_t(x)), f16c);
  // 4. Named cases.
  struct {
    float in;
    uint16_t half;
  } cases[] = {{65504.0f, 0x7bff}, {65520.0f, 0x7c00}, {-65520.0f, 0xfc00},
               {5.9604645e-8f, 0x0001}, {2.9802322e-8f, 0x0000},
               {8.940697e-8f, 0x0002}, {-0.0f, 0x8000}, {1e-8f, 0x0000},
               {1.0009765625f, 0x3c01}, {1.00048828125f, 0x3c00}};
  for (auto c : cases)
    check(floatToHalf(c.in) == c.half, "named case", floatBits(c.in),
          floatToHalf(c.in), c.half);
  std::printf("fp16/bf16 conversions: F16C %s, %ld checks\n",
              f16c ? "used" : "not available", checks);
  std::printf("%ld passed, %ld failed\n", checks - failures, failures);
  return failures ? 1 : 0;
}
