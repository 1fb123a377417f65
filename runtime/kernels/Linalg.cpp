//===- Linalg.cpp - matmul, gemm and convolution kernels ------------------===//
//
// Low-precision inputs are widened exactly, products accumulate in FP32 and
// the result is rounded once: the tensor-core contract D = A*B + C.
//
//===----------------------------------------------------------------------===//

#include "runtime/Kernel.h"
#include "runtime/Parallel.h"
#include "runtime/kernels/Broadcast.h"
#include "runtime/kernels/Common.h"
#include "runtime/kernels/Sgemm.h"
#include "runtime/kernels/Window.h"

namespace mpc::rt {
namespace {

/// For each batch index of `outBatch`, the flat batch index of an input
/// whose batch dims `inBatch` broadcast to it.
std::vector<int64_t> batchMap(const Shape &outBatch, const Shape &inBatch) {
  Tensor fake(DType::I1, inBatch);
  std::vector<int64_t> map(numElements(outBatch));
  forEachBroadcast(outBatch, {&fake}, [&](int64_t i, const int64_t *o) {
    map[i] = o[0];
  });
  return map;
}

void matmulK(KernelContext &c) {
  const Tensor &a = c.in(0), &b = c.in(1);
  Tensor &y = c.output(0);
  Shape as = a.shape(), bs = b.shape();
  if (as.size() == 1)
    as.insert(as.begin(), 1);
  if (bs.size() == 1)
    bs.push_back(1);
  int64_t m = as[as.size() - 2], k = as.back(), n = bs.back();
  Shape aBatch(as.begin(), as.end() - 2), bBatch(bs.begin(), bs.end() - 2);
  Shape outBatch(std::max(aBatch.size(), bBatch.size()));
  for (size_t i = 0; i < outBatch.size(); ++i) {
    auto dim = [&](const Shape &s) {
      size_t off = outBatch.size() - s.size();
      return i < off ? 1 : s[i - off];
    };
    outBatch[i] = std::max(dim(aBatch), dim(bBatch));
  }
  auto aMap = batchMap(outBatch, aBatch), bMap = batchMap(outBatch, bBatch);
  int64_t batches = numElements(outBatch);
  if (!isFloat(y.dtype())) {
    for (int64_t t = 0; t < batches; ++t)
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) {
          int64_t acc = 0;
          for (int64_t p = 0; p < k; ++p)
            acc += a.getInt(aMap[t] * m * k + i * k + p) *
                   b.getInt(bMap[t] * k * n + p * n + j);
          y.setInt(t * m * n + i * n + j, acc);
        }
    return;
  }
  std::vector<float> aBuf, bBuf, yBuf(y.size());
  const float *ap = floatData(a, aBuf), *bp = floatData(b, bBuf);
  for (int64_t t = 0; t < batches; ++t)
    sgemm(false, false, m, n, k, 1.0f, ap + aMap[t] * m * k, k,
          bp + bMap[t] * k * n, n, 0.0f, yBuf.data() + t * m * n, n);
  storeFloats(y, yBuf.data());
}

void gemmK(KernelContext &c) {
  const Tensor &a = c.in(0), &b = c.in(1);
  const Tensor *cIn = c.input(2);
  Tensor &y = c.output(0);
  bool ta = c.step.getInt("transA", 0), tb = c.step.getInt("transB", 0);
  float alpha = (float)c.step.getFloat("alpha", 1.0);
  float beta = (float)c.step.getFloat("beta", 1.0);
  int64_t m = y.dim(0), n = y.dim(1), k = ta ? a.dim(0) : a.dim(1);
  std::vector<float> aBuf, bBuf, yBuf(y.size(), 0.0f);
  if (cIn && beta != 0.0f)
    forEachBroadcast(y.shape(), {cIn}, [&](int64_t i, const int64_t *o) {
      yBuf[i] = beta * cIn->getFloat(o[0]);
    });
  sgemm(ta, tb, m, n, k, alpha, floatData(a, aBuf), a.dim(1),
        floatData(b, bBuf), b.dim(1), 1.0f, yBuf.data(), n);
  storeFloats(y, yBuf.data());
}

void convK(KernelContext &c) {
  const Tensor &x = c.in(0), &w = c.in(1);
  const Tensor *bias = c.input(2);
  Tensor &y = c.output(0);
  Window win(c.step, x.shape(), y.shape(),
             Shape(w.shape().begin() + 2, w.shape().end()));
  int64_t group = c.step.getInt("group", 1);
  int64_t batch = x.dim(0), cin = x.dim(1), cout = y.dim(1);
  int64_t cg = cin / group, mg = cout / group;
  int64_t kk = win.kernelSize(), osp = win.outSize(), isp = win.inSize();
  std::vector<float> xBuf, wBuf, yBuf(y.size());
  const float *xp = floatData(x, xBuf), *wp = floatData(w, wBuf);
  // Input offsets of every (kernel position, output position), shared by
  // all channels and images: -1 marks padding.
  std::vector<int64_t> offsets(kk * osp);
  parallelFor(osp, 64, [&](int64_t b, int64_t e) {
    for (int64_t o = b; o < e; ++o)
      win.forWindow(o, [&](int64_t k, int64_t idx) {
        offsets[k * osp + o] = idx;
      });
  });
  std::vector<float> col(cg * kk * osp);
  for (int64_t img = 0; img < batch; ++img)
    for (int64_t g = 0; g < group; ++g) {
      const float *xg = xp + (img * cin + g * cg) * isp;
      parallelFor(cg * kk, 16, [&](int64_t b, int64_t e) {
        for (int64_t row = b; row < e; ++row) {
          const float *xc = xg + (row / kk) * isp;
          const int64_t *off = offsets.data() + (row % kk) * osp;
          float *dst = col.data() + row * osp;
          for (int64_t o = 0; o < osp; ++o)
            dst[o] = off[o] < 0 ? 0.0f : xc[off[o]];
        }
      });
      float *yg = yBuf.data() + (img * cout + g * mg) * osp;
      sgemm(false, false, mg, osp, cg * kk, 1.0f, wp + g * mg * cg * kk,
            cg * kk, col.data(), osp, 0.0f, yg, osp);
      if (bias)
        for (int64_t m = 0; m < mg; ++m) {
          float bv = bias->getFloat(g * mg + m);
          for (int64_t o = 0; o < osp; ++o)
            yg[m * osp + o] += bv;
        }
    }
  storeFloats(y, yBuf.data());
}

} // namespace

void registerLinalgKernels(void (*add)(const char *, Kernel)) {
  add("matmul", matmulK);
  add("gemm", gemmK);
  add("conv", convK);
}

} // namespace mpc::rt
