//===- StridedView.cpp - how a value's elements lie in a buffer -----------===//

#include "codegen/StridedView.h"

namespace mlir::mpc::cuda {

using ::mpc::rt::Shape;

View View::of(const Shape &shape, const Shape &strides) {
  View v;
  for (size_t d = 0; d < shape.size(); ++d)
    v.fine.push_back({shape[d], strides[d]}), v.span.push_back(1);
  return v;
}

std::vector<View::Fine> View::dim(size_t d) const {
  size_t at = 0;
  for (size_t k = 0; k < d; ++k)
    at += span[k];
  return {fine.begin() + at, fine.begin() + at + span[d]};
}

View View::permuted(const std::vector<int64_t> &perm) const {
  View v;
  for (int64_t p : perm) {
    std::vector<Fine> f = dim(p);
    v.fine.insert(v.fine.end(), f.begin(), f.end());
    v.span.push_back(f.size());
  }
  return v;
}

View View::unpermuted(const std::vector<int64_t> &perm) const {
  std::vector<int64_t> inverse(perm.size());
  for (size_t d = 0; d < perm.size(); ++d)
    inverse[perm[d]] = (int64_t)d;
  return permuted(inverse);
}

bool View::reshape(const Shape &to, View &out) const {
  std::vector<Fine> src; // size-1 dims go anywhere
  for (Fine f : fine)
    if (f.first != 1)
      src.push_back(f);
  // Each dim of `to`, from the innermost, takes fine dims from the inside
  // until it has its size, splitting the last one it needs part of.
  std::vector<std::vector<Fine>> groups(to.size());
  size_t at = src.size();
  for (size_t t = to.size(); t-- > 0;) {
    int64_t need = to[t], have = 1;
    std::vector<Fine> &g = groups[t];
    if (need == 1)
      g.push_back({1, 0});
    while (have < need) {
      if (at == 0)
        return false;
      auto [size, stride] = src[at - 1];
      if (have * size <= need) {
        if (need % (have * size) != 0)
          return false;
        g.insert(g.begin(), src[--at]);
        have *= size;
      } else {
        int64_t part = need / have;
        if (need % have != 0 || size % part != 0)
          return false;
        g.insert(g.begin(), Fine{part, stride});
        src[at - 1] = {size / part, stride * part};
        have = need;
      }
    }
  }
  if (at != 0)
    return false;
  out = View();
  for (const std::vector<Fine> &g : groups) {
    out.fine.insert(out.fine.end(), g.begin(), g.end());
    out.span.push_back(g.size());
  }
  return true;
}

int64_t View::stride(size_t d) const {
  int64_t size = 1, st = -1;
  std::vector<Fine> f = dim(d);
  for (size_t k = f.size(); k-- > 0;) {
    if (f[k].first == 1)
      continue;
    if (st >= 0 && f[k].second != size * st)
      return -1;
    if (st < 0)
      st = f[k].second;
    size *= f[k].first;
  }
  return st < 0 ? 0 : st;
}

} // namespace mlir::mpc::cuda
