//===- Broadcast.h - numpy broadcasting iteration -----------------*- C++ -*-===//

#ifndef MPC_RUNTIME_KERNELS_BROADCAST_H
#define MPC_RUNTIME_KERNELS_BROADCAST_H

#include "runtime/Tensor.h"

#include <vector>

namespace mpc::rt {

/// Row-major strides of `shape`.
inline std::vector<int64_t> stridesOf(const Shape &shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (int64_t i = (int64_t)shape.size() - 2; i >= 0; --i)
    s[i] = s[i + 1] * shape[i + 1];
  return s;
}

/// Calls fn(outIndex, offsets) for every element of `out`, with offsets[k]
/// the flat index into inputs[k] under numpy broadcasting.
template <typename Fn>
void forEachBroadcast(const Shape &out, const std::vector<const Tensor *> &ins,
                      Fn fn) {
  size_t rank = out.size(), n = ins.size();
  int64_t total = numElements(out);
  if (total == 0)
    return;
  // Per input, the stride of each output dim (0 where broadcast).
  std::vector<std::vector<int64_t>> st(n, std::vector<int64_t>(rank, 0));
  for (size_t k = 0; k < n; ++k) {
    const Shape &s = ins[k]->shape();
    auto strides = stridesOf(s);
    size_t off = rank - s.size();
    for (size_t d = 0; d < s.size(); ++d)
      st[k][off + d] = s[d] == 1 ? 0 : strides[d];
  }
  std::vector<int64_t> idx(rank, 0), offs(n, 0);
  int64_t inner = rank ? out[rank - 1] : 1;
  for (int64_t i = 0; i < total; i += inner) {
    for (int64_t j = 0; j < inner; ++j) {
      fn(i + j, offs.data());
      if (rank)
        for (size_t k = 0; k < n; ++k)
          offs[k] += st[k][rank - 1];
    }
    if (!rank)
      break;
    for (size_t k = 0; k < n; ++k)
      offs[k] -= st[k][rank - 1] * inner;
    // Advance the odometer over the outer dims.
    for (int64_t d = (int64_t)rank - 2; d >= 0; --d) {
      ++idx[d];
      for (size_t k = 0; k < n; ++k)
        offs[k] += st[k][d];
      if (idx[d] < out[d])
        break;
      for (size_t k = 0; k < n; ++k)
        offs[k] -= st[k][d] * out[d];
      idx[d] = 0;
    }
  }
}

} // namespace mpc::rt

#endif // MPC_RUNTIME_KERNELS_BROADCAST_H
