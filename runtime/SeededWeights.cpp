//===- SeededWeights.cpp - parameters drawn instead of shipped -----------===//

#include "runtime/SeededWeights.h"

#include "runtime/Half.h"

#include <cmath>

namespace mpc::rt {
namespace {

uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

uint64_t fnv1a64(const std::string &s) {
  uint64_t h = 0xCBF29CE484222325ull;
  for (unsigned char c : s)
    h = (h ^ c) * 0x100000001B3ull;
  return h;
}

} // namespace

SeededInit seededStats(const Tensor &t, uint64_t seed) {
  SeededInit s;
  s.seed = seed;
  int64_t n = t.size();
  if (n == 0)
    return s;
  double sum = 0, sq = 0;
  for (int64_t i = 0; i < n; ++i)
    sum += t.getFloat(i);
  s.mean = sum / n;
  for (int64_t i = 0; i < n; ++i) {
    double d = t.getFloat(i) - s.mean;
    sq += d * d;
  }
  s.std = std::sqrt(sq / n); // correctly rounded: the same everywhere
  return s;
}

void drawSeeded(Tensor &t, const std::string &name, const SeededInit &s) {
  uint64_t key = s.seed ^ fnv1a64(name);
  double half = s.std * 1.7320508075688772; // sqrt(3)
  for (int64_t i = 0; i < t.size(); ++i) {
    uint64_t h = splitmix64(key + (uint64_t)i * 0x9E3779B97F4A7C15ull);
    double u = (double)(h >> 40) / 16777216.0;
    float w = (float)(s.mean + half * (2.0 * u - 1.0));
    if (s.rounding == DType::F16 || s.rounding == DType::BF16) {
      bool bf16 = s.rounding == DType::BF16;
      w = widen16(narrow16(w, bf16), bf16);
    }
    t.setFloat(i, w);
  }
}

} // namespace mpc::rt
