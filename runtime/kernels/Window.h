//===- Window.h - conv/pool window geometry -----------------------*- C++ -*-===//

#ifndef MPC_RUNTIME_KERNELS_WINDOW_H
#define MPC_RUNTIME_KERNELS_WINDOW_H

#include "runtime/Plan.h"

#include <algorithm>
#include <vector>

namespace mpc::rt {

/// Kernel sizes, strides, dilations and begin pads of a window op whose
/// input and output shapes are known (N x C x spatial...).
struct Window {
  std::vector<int64_t> kernel, strides, dilations, padBegin, padEnd;
  std::vector<int64_t> in, out; // spatial dims

  Window(const Step &step, const Shape &x, const Shape &y,
         const std::vector<int64_t> &kernelFromWeights) {
    size_t n = x.size() - 2;
    in.assign(x.begin() + 2, x.end());
    out.assign(y.begin() + 2, y.end());
    kernel = step.getInts("kernel_shape").value_or(kernelFromWeights);
    strides = step.getInts("strides").value_or(std::vector<int64_t>(n, 1));
    dilations = step.getInts("dilations").value_or(std::vector<int64_t>(n, 1));
    auto pads = step.getInts("pads").value_or(std::vector<int64_t>(2 * n, 0));
    std::string autoPad = step.getString("auto_pad", "NOTSET");
    padBegin.assign(n, 0);
    padEnd.assign(n, 0);
    for (size_t i = 0; i < n; ++i) {
      if (autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER") {
        int64_t total = std::max<int64_t>(
            (out[i] - 1) * strides[i] + (kernel[i] - 1) * dilations[i] + 1 -
                in[i],
            0);
        padBegin[i] = autoPad == "SAME_UPPER" ? total / 2 : total - total / 2;
        padEnd[i] = total - padBegin[i];
      } else if (autoPad != "VALID") {
        padBegin[i] = pads[i];
        padEnd[i] = pads[n + i];
      }
    }
  }
  int64_t kernelSize() const {
    int64_t k = 1;
    for (int64_t d : kernel)
      k *= d;
    return k;
  }
  int64_t outSize() const {
    int64_t k = 1;
    for (int64_t d : out)
      k *= d;
    return k;
  }
  int64_t inSize() const {
    int64_t k = 1;
    for (int64_t d : in)
      k *= d;
    return k;
  }

  /// Window positions of output `o` inside input-plus-explicit-padding (the
  /// divisor of average pooling with count_include_pad).
  int64_t paddedCount(int64_t o) const {
    int64_t count = 1;
    for (int64_t i = (int64_t)kernel.size() - 1, r = o; i >= 0; --i) {
      int64_t origin = (r % out[i]) * strides[i] - padBegin[i], inside = 0;
      r /= out[i];
      for (int64_t k = 0; k < kernel[i]; ++k) {
        int64_t pos = origin + k * dilations[i];
        inside += pos >= -padBegin[i] && pos < in[i] + padEnd[i];
      }
      count *= inside;
    }
    return count;
  }

  /// Divisor of average pooling at output `o`: the window positions inside
  /// the input, or inside input-plus-explicit-padding with count_include_pad.
  int64_t averageCount(int64_t o, bool includePad) const {
    if (includePad)
      return paddedCount(o);
    int64_t count = 0;
    forWindow(o, [&](int64_t, int64_t i) { count += i >= 0; });
    return count;
  }

  /// Input offset (within one plane) of every (kernel position k, output
  /// position o) at [k * outSize() + o], -1 in padding; shared by all
  /// planes, images and channels.
  std::vector<int64_t> offsetTable() const {
    int64_t osp = outSize();
    std::vector<int64_t> table(kernelSize() * osp);
    for (int64_t o = 0; o < osp; ++o)
      forWindow(o, [&](int64_t k, int64_t i) { table[k * osp + o] = i; });
    return table;
  }

  /// Calls fn(kernelIndex, inputIndex or -1 when in padding) for every
  /// window position of output position `o` (flat).
  template <typename Fn> void forWindow(int64_t o, Fn fn) const {
    size_t n = kernel.size();
    int64_t origin[8], coord[8];
    for (int64_t i = (int64_t)n - 1, r = o; i >= 0; --i) {
      origin[i] = (r % out[i]) * strides[i] - padBegin[i];
      r /= out[i];
    }
    int64_t kk = kernelSize();
    for (int64_t k = 0; k < kk; ++k) {
      bool inside = true;
      int64_t flat = 0;
      for (int64_t i = (int64_t)n - 1, r = k; i >= 0; --i) {
        coord[i] = origin[i] + (r % kernel[i]) * dilations[i];
        r /= kernel[i];
        inside &= coord[i] >= 0 && coord[i] < in[i];
      }
      if (inside)
        for (size_t i = 0; i < n; ++i)
          flat = flat * in[i] + coord[i];
      fn(k, inside ? flat : -1);
    }
  }
};

/// A channels-last shape [N, D1..Dn, C] (a conv's `channels_last`
/// operands; a filter is [M, k1..kn, C/group]) in the channels-first
/// order [N, C, D1..Dn] that Window and the kernels' loops take.
inline Shape channelsFirstShape(const Shape &t) {
  Shape s{t[0], t.back()};
  s.insert(s.end(), t.begin() + 1, t.end() - 1);
  return s;
}
/// The dim orders taking channels last to first (channelsFirstShape's)
/// and back, for a tensor of `rank` dims.
inline std::vector<int64_t> channelsFirstOrder(int64_t rank) {
  std::vector<int64_t> p{0, rank - 1};
  for (int64_t i = 1; i + 1 < rank; ++i)
    p.push_back(i);
  return p;
}
inline std::vector<int64_t> channelsLastOrder(int64_t rank) {
  std::vector<int64_t> p{0};
  for (int64_t i = 2; i < rank; ++i)
    p.push_back(i);
  p.push_back(1);
  return p;
}

} // namespace mpc::rt

#endif // MPC_RUNTIME_KERNELS_WINDOW_H
