//===- StoredLayouts.cpp - tensors kept in another layout than ONNX's -----===//

#include "runtime/StoredLayouts.h"

#include <cstring>

namespace mpc::rt {

Shape permutedShape(const Shape &shape, const std::vector<int64_t> &perm) {
  Shape out(shape.size());
  for (size_t i = 0; i < shape.size(); ++i)
    out[i] = shape[perm[i]];
  return out;
}

Tensor permuted(const Tensor &t, const std::vector<int64_t> &perm) {
  const Shape &in = t.shape();
  size_t rank = in.size();
  Shape out = permutedShape(in, perm);
  Tensor r(t.dtype(), out);
  // Strides of the input, taken in the output's dim order.
  std::vector<int64_t> inStride(rank, 1), step(rank);
  for (size_t i = rank; i-- > 1;)
    inStride[i - 1] = inStride[i] * in[i];
  for (size_t i = 0; i < rank; ++i)
    step[i] = inStride[perm[i]];
  size_t bytes = dtypeSize(t.dtype());
  const char *src = static_cast<const char *>(t.raw());
  char *dst = static_cast<char *>(r.raw());
  std::vector<int64_t> idx(rank, 0);
  for (int64_t o = 0; o < r.size(); ++o) {
    int64_t at = 0;
    for (size_t i = 0; i < rank; ++i)
      at += idx[i] * step[i];
    std::memcpy(dst + o * bytes, src + at * bytes, bytes);
    for (size_t i = rank; i-- > 0;) { // next output index, row-major
      if (++idx[i] < out[i])
        break;
      idx[i] = 0;
    }
  }
  return r;
}

std::vector<int64_t> inversePerm(const std::vector<int64_t> &perm) {
  std::vector<int64_t> inv(perm.size());
  for (size_t i = 0; i < perm.size(); ++i)
    inv[perm[i]] = (int64_t)i;
  return inv;
}

bool isPerm(const std::vector<int64_t> &perm, size_t rank) {
  if (perm.size() != rank)
    return false;
  std::vector<bool> seen(rank, false);
  for (int64_t p : perm) {
    if (p < 0 || p >= (int64_t)rank || seen[p])
      return false;
    seen[p] = true;
  }
  return true;
}

Tensor toOnnxLayout(const StoredLayouts &layouts, const std::string &name,
                    const Tensor &t) {
  auto it = layouts.find(name);
  return it == layouts.end() ? t : permuted(t, inversePerm(it->second));
}

Tensor toStoredLayout(const StoredLayouts &layouts, const std::string &name,
                      const Tensor &t) {
  auto it = layouts.find(name);
  return it == layouts.end() ? t : permuted(t, it->second);
}

} // namespace mpc::rt
