//===- Common.h - helpers shared by CPU kernels -------------------*- C++ -*-===//

#ifndef MPC_RUNTIME_KERNELS_COMMON_H
#define MPC_RUNTIME_KERNELS_COMMON_H

#include "runtime/Half.h"
#include "runtime/Tensor.h"

#include <cstdint>

#include <algorithm>
#include <vector>

namespace mpc::rt {

/// dst = src with its dims reordered: dim i of dst is dim perm[i] of src
/// (the Transpose kernel's copy; any element type).
void permuteInto(Tensor &dst, const Tensor &src,
                 const std::vector<int64_t> &perm);

/// Where a rank's dropout over `n` elements draws, from its [step, rank]
/// input (mpc-dropout-steps; none is step 0, a scalar step rank 0): the
/// counter's step and the rank's first element, after the r ranks before
/// it (runtime/Philox.h).
struct DropoutCounter {
  uint64_t step = 0, first = 0;
};
inline DropoutCounter dropoutCounter(const Tensor *counter, uint64_t n) {
  DropoutCounter c;
  if (counter) {
    c.step = (uint64_t)counter->getInt(0);
    if (counter->size() > 1)
      c.first = (uint64_t)counter->getInt(1) * n;
  }
  return c;
}

/// The elements of `t` as FP32: its own buffer when f32, else widened
/// (exactly, for f16/bf16) into `storage`.
inline const float *floatData(const Tensor &t, std::vector<float> &storage) {
  if (t.dtype() == DType::F32)
    return t.data<float>();
  storage.resize(t.size());
  if (t.dtype() == DType::F16)
    halfToFloats(t.data<uint16_t>(), storage.data(), t.size());
  else
    for (int64_t i = 0; i < t.size(); ++i)
      storage[i] = t.getFloat(i);
  return storage.data();
}

/// Stores FP32 results into `t`, rounding once to its element type.
inline void storeFloats(Tensor &t, const float *values) {
  if (t.dtype() == DType::F32) {
    std::copy(values, values + t.size(), t.data<float>());
    return;
  }
  if (t.dtype() == DType::F16) {
    floatsToHalf(values, t.data<uint16_t>(), t.size());
    return;
  }
  for (int64_t i = 0; i < t.size(); ++i)
    t.setFloat(i, values[i]);
}

/// Where an FP32 result for `t` is computed: t's own buffer when f32, else
/// `storage` (then finishFloatOut rounds it into t once).
inline float *floatOut(Tensor &t, std::vector<float> &storage) {
  if (t.dtype() == DType::F32)
    return t.data<float>();
  storage.assign(t.size(), 0.0f);
  return storage.data();
}
inline void finishFloatOut(Tensor &t, const std::vector<float> &storage) {
  if (t.dtype() != DType::F32)
    storeFloats(t, storage.data());
}

/// A tensor seen as [outer, dim, inner] around one axis.
struct AxisSplit {
  int64_t outer = 1, dim = 1, inner = 1;
};
inline AxisSplit splitAt(const Shape &shape, int64_t axis) {
  AxisSplit s;
  for (int64_t i = 0; i < (int64_t)shape.size(); ++i)
    (i < axis ? s.outer : i == axis ? s.dim : s.inner) *= shape[i];
  return s;
}

/// Axis in [-rank, rank) to [0, rank).
inline int64_t normAxis(int64_t axis, int64_t rank) {
  return axis < 0 ? axis + rank : axis;
}

} // namespace mpc::rt

#endif // MPC_RUNTIME_KERNELS_COMMON_H
