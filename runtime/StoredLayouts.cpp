//===- StoredLayouts.cpp - tensors kept in another layout than ONNX's -----===//

#include "runtime/StoredLayouts.h"
#include "runtime/kernels/Common.h"

namespace mpc::rt {

Shape permutedShape(const Shape &shape, const std::vector<int64_t> &perm) {
  Shape out(shape.size());
  for (size_t i = 0; i < shape.size(); ++i)
    out[i] = shape[perm[i]];
  return out;
}

Tensor permuted(const Tensor &t, const std::vector<int64_t> &perm) {
  Tensor r(t.dtype(), permutedShape(t.shape(), perm));
  permuteInto(r, t, perm);
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
