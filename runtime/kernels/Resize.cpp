//===- Resize.cpp - resize_axis: one axis resampled by a tap table --------===//
//
// out[outer, o, inner] = fill[o] + sum_t w[o,t] * x[outer, idx[o,t], inner]
// in FP32, taps in table order, zero weights skipped, rounded once: the
// order the CUDA kernel uses, so the two agree bit for bit.
//
//===----------------------------------------------------------------------===//

#include "runtime/Kernel.h"
#include "runtime/Parallel.h"
#include "runtime/kernels/Common.h"

namespace mpc::rt {
namespace {

void resizeAxisK(KernelContext &c) {
  const Tensor &x = c.in(0);
  Tensor &y = c.output(0);
  int64_t axis = c.step.getInt("axis", 0), size = c.step.getInt("size", 1);
  std::vector<int64_t> idx = *c.step.getInts("indices");
  const float *w = c.step.getTensor("weights")->data<float>();
  const Tensor *fill = c.step.getTensor("fill");
  int64_t taps = idx.size() / size;
  AxisSplit in = splitAt(x.shape(), axis);
  std::vector<float> xs, ys;
  const float *xf = floatData(x, xs);
  float *yf = floatOut(y, ys);
  parallelFor(in.outer * size, 64, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      int64_t outer = r / size, o = r % size;
      float *dst = yf + r * in.inner;
      float start = fill ? fill->data<float>()[o] : 0.0f;
      std::fill_n(dst, in.inner, start);
      for (int64_t t = 0; t < taps; ++t) {
        float wt = w[o * taps + t];
        if (wt == 0.0f)
          continue;
        const float *src = xf + (outer * in.dim + idx[o * taps + t]) * in.inner;
        for (int64_t i = 0; i < in.inner; ++i)
          dst[i] += wt * src[i];
      }
    }
  });
  finishFloatOut(y, ys);
}

} // namespace

void registerResizeKernels(KernelTable &t) {
  t.add(OpId::ResizeAxis, resizeAxisK);
}

} // namespace mpc::rt
