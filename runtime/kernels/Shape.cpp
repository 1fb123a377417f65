//===- Shape.cpp - data movement kernels ----------------------------------===//
//
// These move elements without arithmetic, so they work on raw bytes of any
// element type; reshape-like ops share the input's storage.
//
//===----------------------------------------------------------------------===//

#include "runtime/Kernel.h"
#include "runtime/kernels/Broadcast.h"
#include "runtime/kernels/Common.h"

#include <algorithm>
#include <cstring>

namespace mpc::rt {
namespace {

void copyElem(Tensor &dst, int64_t di, const Tensor &src, int64_t si) {
  size_t w = dtypeSize(src.dtype());
  std::memcpy(dst.data<uint8_t>() + di * w, src.data<uint8_t>() + si * w, w);
}

/// Output i of dst takes input element map(i) of src.
template <typename Map> void gatherInto(Tensor &dst, const Tensor &src, Map map) {
  size_t w = dtypeSize(src.dtype());
  const uint8_t *s = src.data<uint8_t>();
  uint8_t *d = dst.data<uint8_t>();
  for (int64_t i = 0; i < dst.size(); ++i)
    std::memcpy(d + i * w, s + map(i) * w, w);
}

/// dst[i] = src[base + sum_d idx_d(i) * strides[d]] over dst's shape, with
/// an odometer instead of a division per element (transpose, slice,
/// expand).
void stridedCopy(Tensor &dst, const Tensor &src, std::vector<int64_t> strides,
                 int64_t base) {
  const Shape &shape = dst.shape();
  int64_t rank = (int64_t)shape.size(), total = dst.size();
  if (total == 0)
    return;
  auto run = [&](auto *d, const auto *s) {
    std::vector<int64_t> idx(rank, 0);
    int64_t inner = rank ? shape[rank - 1] : 1;
    int64_t innerStride = rank ? strides[rank - 1] : 0, off = base;
    for (int64_t i = 0; i < total; i += inner) {
      for (int64_t j = 0; j < inner; ++j)
        d[i + j] = s[off + j * innerStride];
      for (int64_t dim = rank - 2; dim >= 0; --dim) {
        off += strides[dim];
        if (++idx[dim] < shape[dim])
          break;
        off -= strides[dim] * shape[dim];
        idx[dim] = 0;
      }
    }
  };
  switch (dtypeSize(src.dtype())) {
  case 8:
    return run(dst.data<uint64_t>(), src.data<uint64_t>());
  case 4:
    return run(dst.data<uint32_t>(), src.data<uint32_t>());
  case 2:
    return run(dst.data<uint16_t>(), src.data<uint16_t>());
  default:
    return run(dst.data<uint8_t>(), src.data<uint8_t>());
  }
}

void reshapeLikeK(KernelContext &c) {
  c.setOutput(0, c.in(0).reshaped(c.outputInfo(0).shape));
}

void transposeK(KernelContext &c) {
  const Tensor &x = c.in(0);
  int64_t rank = x.rank();
  std::vector<int64_t> perm(rank);
  if (auto p = c.step.getInts("perm"))
    perm = *p;
  else
    for (int64_t i = 0; i < rank; ++i)
      perm[i] = rank - 1 - i;
  permuteInto(c.output(0), x, perm);
}

void concatK(KernelContext &c) {
  Tensor &y = c.output(0);
  int64_t axis = normAxis(c.step.getInt("axis", 0), y.rank());
  auto [outer, dim, inner] = splitAt(y.shape(), axis);
  (void)dim;
  size_t w = dtypeSize(y.dtype());
  uint8_t *dst = y.data<uint8_t>();
  for (int64_t o = 0; o < outer; ++o)
    for (size_t k = 0; k < c.numInputs(); ++k) {
      const Tensor &x = c.in(k);
      int64_t chunk = x.dim(axis) * inner * w;
      std::memcpy(dst, x.data<uint8_t>() + o * chunk, chunk);
      dst += chunk;
    }
}

void splitK(KernelContext &c) {
  const Tensor &x = c.in(0);
  int64_t axis = normAxis(c.step.getInt("axis", 0), x.rank());
  auto [outer, dim, inner] = splitAt(x.shape(), axis);
  size_t w = dtypeSize(x.dtype());
  int64_t rowBytes = dim * inner * w, offset = 0;
  for (size_t k = 0; k < c.numOutputs(); ++k) {
    Tensor &y = c.output(k);
    int64_t chunk = y.dim(axis) * inner * w;
    for (int64_t o = 0; o < outer; ++o)
      std::memcpy(y.data<uint8_t>() + o * chunk,
                  x.data<uint8_t>() + o * rowBytes + offset, chunk);
    offset += chunk;
  }
}

void sliceK(KernelContext &c) {
  const Tensor &x = c.in(0);
  Tensor &y = c.output(0);
  int64_t rank = x.rank();
  std::vector<int64_t> start(rank, 0), step(rank, 1);
  const Tensor &starts = c.in(1);
  for (int64_t i = 0; i < starts.size(); ++i) {
    int64_t axis = c.input(3) ? normAxis(c.input(3)->getInt(i), rank) : i;
    int64_t st = c.input(4) ? c.input(4)->getInt(i) : 1;
    int64_t dim = x.dim(axis), s = starts.getInt(i);
    s = s < 0 ? s + dim : s;
    s = st > 0 ? std::clamp<int64_t>(s, 0, dim)
               : std::clamp<int64_t>(s, 0, dim - 1);
    start[axis] = s;
    step[axis] = st;
  }
  auto xs = stridesOf(x.shape());
  std::vector<int64_t> strides(rank);
  int64_t base = 0;
  for (int64_t d = 0; d < rank; ++d) {
    strides[d] = xs[d] * step[d];
    base += start[d] * xs[d];
  }
  stridedCopy(y, x, strides, base);
}

void expandK(KernelContext &c) {
  const Tensor &x = c.in(0);
  Tensor &y = c.output(0);
  // Broadcast dims read with stride 0.
  auto xs = stridesOf(x.shape());
  int64_t off = y.rank() - x.rank();
  std::vector<int64_t> strides(y.rank(), 0);
  for (int64_t d = 0; d < x.rank(); ++d)
    strides[off + d] = x.dim(d) == 1 ? 0 : xs[d];
  stridedCopy(y, x, strides, 0);
}

void tileK(KernelContext &c) {
  const Tensor &x = c.in(0);
  Tensor &y = c.output(0);
  auto xs = stridesOf(x.shape());
  const Shape &ys = y.shape();
  gatherInto(y, x, [&](int64_t i) {
    int64_t off = 0;
    for (int64_t d = x.rank() - 1, r = i; d >= 0; --d) {
      off += ((r % ys[d]) % x.dim(d)) * xs[d];
      r /= ys[d];
    }
    return off;
  });
}

void padK(KernelContext &c) {
  const Tensor &x = c.in(0), &value = c.in(1);
  Tensor &y = c.output(0);
  int64_t rank = x.rank();
  auto pads = *c.step.getInts("pads");
  std::vector<int64_t> axes;
  if (auto a = c.step.getInts("axes"))
    axes = *a;
  else
    for (int64_t i = 0; i < rank; ++i)
      axes.push_back(i);
  std::vector<int64_t> before(rank, 0);
  for (size_t i = 0; i < axes.size(); ++i)
    before[normAxis(axes[i], rank)] = pads[i];
  std::string mode = c.step.getString("mode", "constant");
  auto xs = stridesOf(x.shape());
  const Shape &ys = y.shape();
  bool cropping = false;
  for (int64_t p : pads)
    cropping |= p < 0;
  if (mode == "constant" && !cropping && x.size() > 0) {
    // Fill with the value, then copy input rows into the interior.
    for (int64_t i = 0; i < y.size(); ++i)
      copyElem(y, i, value, 0);
    auto ysStrides = stridesOf(ys);
    size_t w = dtypeSize(x.dtype());
    int64_t inner = x.dim(rank - 1), rows = x.size() / inner;
    for (int64_t r = 0; r < rows; ++r) {
      int64_t off = before[rank - 1];
      for (int64_t d = rank - 2, q = r; d >= 0; --d) {
        off += (q % x.dim(d) + before[d]) * ysStrides[d];
        q /= x.dim(d);
      }
      std::memcpy(y.data<uint8_t>() + off * w,
                  x.data<uint8_t>() + r * inner * w, inner * w);
    }
    return;
  }
  for (int64_t i = 0; i < y.size(); ++i) {
    int64_t off = 0;
    bool outside = false;
    for (int64_t d = rank - 1, r = i; d >= 0; --d) {
      int64_t pos = r % ys[d] - before[d], dim = x.dim(d);
      r /= ys[d];
      if (pos < 0 || pos >= dim) {
        if (mode == "constant" || dim == 0) {
          outside = true;
          continue;
        }
        if (mode == "edge")
          pos = pos < 0 ? 0 : dim - 1;
        else if (mode == "wrap")
          pos = ((pos % dim) + dim) % dim;
        else { // reflect
          int64_t period = 2 * (dim - 1);
          pos = period ? ((pos % period) + period) % period : 0;
          if (pos >= dim)
            pos = period - pos;
        }
      }
      off += pos * xs[d];
    }
    if (outside)
      copyElem(y, i, value, 0);
    else
      copyElem(y, i, x, off);
  }
}

int64_t checkedIndex(int64_t v, int64_t dim) {
  if (v < -dim || v >= dim)
    throw KernelError("index " + std::to_string(v) + " is out of range [" +
                      std::to_string(-dim) + ", " + std::to_string(dim) + ")");
  return v < 0 ? v + dim : v;
}

void gatherK(KernelContext &c) {
  const Tensor &data = c.in(0), &idx = c.in(1);
  Tensor &y = c.output(0);
  auto [outer, dim, inner] =
      splitAt(data.shape(), normAxis(c.step.getInt("axis", 0), data.rank()));
  size_t w = dtypeSize(data.dtype());
  int64_t n = idx.size();
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < n; ++j) {
      int64_t k = checkedIndex(idx.getInt(j), dim);
      std::memcpy(y.data<uint8_t>() + ((o * n + j) * inner) * w,
                  data.data<uint8_t>() + ((o * dim + k) * inner) * w,
                  inner * w);
    }
}

void gatherGradK(KernelContext &c) {
  const Tensor &g = c.in(0), &idx = c.in(1);
  Tensor &y = c.outputZeroed(0);
  auto [outer, dim, inner] =
      splitAt(y.shape(), normAxis(c.step.getInt("axis", 0), y.rank()));
  int64_t n = idx.size();
  std::vector<float> acc(y.size(), 0.0f);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < n; ++j) {
      int64_t k = checkedIndex(idx.getInt(j), dim);
      for (int64_t i = 0; i < inner; ++i)
        acc[(o * dim + k) * inner + i] += g.getFloat((o * n + j) * inner + i);
    }
  storeFloats(y, acc.data());
}

/// GatherElements' element i: the offset in data (shape `data`, strides
/// `ds`) it reads, its index replacing its coordinate along `axis`.
int64_t elementSource(const Tensor &idx, int64_t i, int64_t axis,
                      const Shape &data, const std::vector<int64_t> &ds) {
  const Shape &is = idx.shape();
  int64_t off = 0;
  for (int64_t d = idx.rank() - 1, r = i; d >= 0; --d) {
    int64_t pos = r % is[d];
    r /= is[d];
    if (d == axis)
      pos = checkedIndex(idx.getInt(i), data[d]);
    off += pos * ds[d];
  }
  return off;
}

/// GatherElements' data gradient: every grad element added where its
/// forward element came from, in index order (as the CUDA kernel sums).
void gatherElementsGradK(KernelContext &c) {
  const Tensor &g = c.in(0), &idx = c.in(1);
  Tensor &y = c.output(0);
  int64_t axis = normAxis(c.step.getInt("axis", 0), y.rank());
  auto ys = stridesOf(y.shape());
  std::vector<float> acc(y.size(), 0.0f);
  for (int64_t i = 0; i < idx.size(); ++i)
    acc[elementSource(idx, i, axis, y.shape(), ys)] += g.getFloat(i);
  storeFloats(y, acc.data());
}

void gatherElementsK(KernelContext &c) {
  const Tensor &data = c.in(0), &idx = c.in(1);
  Tensor &y = c.output(0);
  int64_t axis = normAxis(c.step.getInt("axis", 0), data.rank());
  auto ds = stridesOf(data.shape());
  gatherInto(y, data, [&](int64_t i) {
    return elementSource(idx, i, axis, data.shape(), ds);
  });
}

void gatherNdK(KernelContext &c) {
  const Tensor &data = c.in(0), &idx = c.in(1);
  Tensor &y = c.output(0);
  int64_t b = c.step.getInt("batch_dims", 0);
  int64_t last = idx.dim(idx.rank() - 1);
  auto ds = stridesOf(data.shape());
  int64_t slice = 1, batch = 1;
  for (int64_t d = b + last; d < data.rank(); ++d)
    slice *= data.dim(d);
  for (int64_t d = 0; d < b; ++d)
    batch *= data.dim(d);
  int64_t tuples = idx.size() / last, perBatch = tuples / batch;
  size_t w = dtypeSize(data.dtype());
  for (int64_t t = 0; t < tuples; ++t) {
    int64_t off = (t / perBatch) * (b ? ds[b - 1] : 0);
    for (int64_t j = 0; j < last; ++j)
      off += checkedIndex(idx.getInt(t * last + j), data.dim(b + j)) *
             ds[b + j];
    std::memcpy(y.data<uint8_t>() + t * slice * w,
                data.data<uint8_t>() + off * w, slice * w);
  }
}

/// A scatter's reduction (add, mul, max, min) of update element u into
/// y's element o, rounded to the element type.
void combineInto(Tensor &y, int64_t o, const Tensor &upd, int64_t u,
                 const std::string &reduction) {
  if (isFloat(y.dtype())) {
    const float a = y.getFloat(o), b = upd.getFloat(u);
    y.setFloat(o, reduction == "add"   ? a + b
                  : reduction == "mul" ? a * b
                  : reduction == "max" ? std::max(a, b)
                                       : std::min(a, b));
  } else {
    const int64_t a = y.getInt(o), b = upd.getInt(u);
    y.setInt(o, reduction == "add"   ? a + b
                : reduction == "mul" ? a * b
                : reduction == "max" ? std::max(a, b)
                                     : std::min(a, b));
  }
}

/// ScatterND: data copied, then each tuple's slice of the updates stored
/// or combined into it, tuples in order (each result rounded to the
/// element type, as the CUDA kernel does).
void scatterNdK(KernelContext &c) {
  const Tensor &data = c.in(0), &idx = c.in(1), &upd = c.in(2);
  Tensor &y = c.output(0);
  const std::string reduction = c.step.getString("reduction", "none");
  const size_t w = dtypeSize(data.dtype());
  std::memcpy(y.data<uint8_t>(), data.data<uint8_t>(), data.size() * w);
  const int64_t last = idx.dim(idx.rank() - 1);
  auto ds = stridesOf(data.shape());
  int64_t slice = 1;
  for (int64_t d = last; d < data.rank(); ++d)
    slice *= data.dim(d);
  const int64_t tuples = last ? idx.size() / last : 0;
  for (int64_t t = 0; t < tuples; ++t) {
    int64_t off = 0;
    for (int64_t j = 0; j < last; ++j)
      off += checkedIndex(idx.getInt(t * last + j), data.dim(j)) * ds[j];
    if (reduction == "none") {
      std::memcpy(y.data<uint8_t>() + off * w, upd.data<uint8_t>() + t * slice * w,
                  slice * w);
      continue;
    }
    for (int64_t e = 0; e < slice; ++e)
      combineInto(y, off + e, upd, t * slice + e, reduction);
  }
}

/// ScatterElements: data copied, then each update stored or combined at
/// its own coordinates but for `axis`, where its index says, in index
/// order (each result rounded to the element type, as the CUDA kernel does).
void scatterElementsK(KernelContext &c) {
  const Tensor &data = c.in(0), &idx = c.in(1), &upd = c.in(2);
  Tensor &y = c.output(0);
  const std::string reduction = c.step.getString("reduction", "none");
  const size_t w = dtypeSize(data.dtype());
  std::memcpy(y.data<uint8_t>(), data.data<uint8_t>(), data.size() * w);
  const int64_t axis = normAxis(c.step.getInt("axis", 0), data.rank());
  const auto ds = stridesOf(data.shape());
  for (int64_t u = 0; u < idx.size(); ++u) {
    const int64_t o = elementSource(idx, u, axis, data.shape(), ds);
    if (reduction == "none")
      std::memcpy(y.data<uint8_t>() + o * w, upd.data<uint8_t>() + u * w, w);
    else
      combineInto(y, o, upd, u, reduction);
  }
}

void rangeK(KernelContext &c) {
  Tensor &y = c.output(0);
  if (isFloat(y.dtype())) {
    float s = c.in(0).getFloat(0), d = c.in(2).getFloat(0);
    for (int64_t i = 0; i < y.size(); ++i)
      y.setFloat(i, s + (float)i * d);
  } else {
    int64_t s = c.in(0).getInt(0), d = c.in(2).getInt(0);
    for (int64_t i = 0; i < y.size(); ++i)
      y.setInt(i, s + i * d);
  }
}

} // namespace

void permuteInto(Tensor &dst, const Tensor &src,
                 const std::vector<int64_t> &perm) {
  auto s = stridesOf(src.shape());
  std::vector<int64_t> strides(perm.size());
  for (size_t d = 0; d < perm.size(); ++d)
    strides[d] = s[perm[d]];
  stridedCopy(dst, src, strides, 0);
}

void registerShapeKernels(KernelTable &t) {
  for (OpId op : {OpId::Reshape, OpId::Squeeze, OpId::Unsqueeze, OpId::Flatten})
    t.add(op, reshapeLikeK);
  t.add(OpId::Transpose, transposeK);
  t.add(OpId::Concat, concatK);
  t.add(OpId::Split, splitK);
  t.add(OpId::Slice, sliceK);
  t.add(OpId::Expand, expandK);
  t.add(OpId::Tile, tileK);
  t.add(OpId::Pad, padK);
  t.add(OpId::Gather, gatherK);
  t.add(OpId::GatherElements, gatherElementsK);
  t.add(OpId::GatherElementsGrad, gatherElementsGradK);
  t.add(OpId::GatherGrad, gatherGradK);
  t.add(OpId::GatherND, gatherNdK);
  t.add(OpId::ScatterND, scatterNdK);
  t.add(OpId::ScatterElements, scatterElementsK);
  t.add(OpId::Range, rangeK);
}

} // namespace mpc::rt
