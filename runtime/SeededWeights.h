//===- SeededWeights.h - parameters drawn instead of shipped -----*- C++ -*-===//
//
// `mpc compile --weights seed:N` (and `mpc train --weights seed:N`, which
// trains from the same values): every float parameter of
// kSeededMinElements or more elements is replaced by draws from a
// counter-based generator with the exported tensor's own mean and standard
// deviation, so an artifact records (seed, mean, std) instead of its bytes
// and a large model travels in kilobytes. The draw, the one definition both
// the compiler and the runtime call:
//
//   h   = splitmix64(seed ^ fnv1a64(name) + i * 0x9E3779B97F4A7C15)
//   u   = (h >> 40) / 2^24                  (24 bits: exact in a float)
//   w_i = float(mean + std * sqrt(3) * (2u - 1))     (in double)
//
// then, for a parameter stored in FP16 or BF16, w_i rounded to that type
// (to nearest even): its draws are what the stored type can hold, also
// where training keeps the parameter as an FP32 master
// (mpc-promote-half-params), so the master and the stored weight agree.
//
// uniform on mean +- sqrt(3) std, which has that mean and std. Integer and
// IEEE double arithmetic only (no libm), so every machine draws the same
// bits.
//
//===----------------------------------------------------------------------===//

#ifndef MPC_RUNTIME_SEEDEDWEIGHTS_H
#define MPC_RUNTIME_SEEDEDWEIGHTS_H

#include "runtime/Tensor.h"

#include <cstdint>
#include <string>

namespace mpc::rt {

/// Smaller parameters (biases, norms' scales) keep their exported values.
constexpr int64_t kSeededMinElements = 4096;

struct SeededInit {
  uint64_t seed = 0;
  double mean = 0, std = 0;
  DType rounding = DType::F32; // the stored type the draws are rounded to
};

/// The mean and (population) standard deviation of `t`'s values.
SeededInit seededStats(const Tensor &t, uint64_t seed);

/// Fills float tensor `t` (its dtype and shape set) with the draws of the
/// parameter called `name`.
void drawSeeded(Tensor &t, const std::string &name, const SeededInit &s);

} // namespace mpc::rt

#endif // MPC_RUNTIME_SEEDEDWEIGHTS_H
