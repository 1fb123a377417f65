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

#include <algorithm>

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
  std::vector<float> aBuf, bBuf, yBuf;
  const float *ap = floatData(a, aBuf), *bp = floatData(b, bBuf);
  float *yp = floatOut(y, yBuf);
  if (numElements(bBatch) == 1 && numElements(aBatch) == batches) {
    // A shared right operand (x @ W): fold A's batch into the rows.
    sgemm(false, false, batches * m, n, k, 1.0f, ap, k, bp, n, 0.0f, yp, n);
    finishFloatOut(y, yBuf);
    return;
  }
  // Many small products (attention heads): one thread per batch range;
  // sgemm's own threads take over for few large ones.
  int64_t grain = m * n * k >= (1 << 20) ? batches : 1;
  parallelFor(batches, grain, [&](int64_t tb, int64_t te) {
    for (int64_t t = tb; t < te; ++t)
      sgemm(false, false, m, n, k, 1.0f, ap + aMap[t] * m * k, k,
            bp + bMap[t] * k * n, n, 0.0f, yp + t * m * n, n);
  });
  finishFloatOut(y, yBuf);
}

void gemmK(KernelContext &c) {
  const Tensor &a = c.in(0), &b = c.in(1);
  const Tensor *cIn = c.input(2);
  Tensor &y = c.output(0);
  bool ta = c.step.getInt("transA", 0), tb = c.step.getInt("transB", 0);
  float alpha = (float)c.step.getFloat("alpha", 1.0);
  float beta = (float)c.step.getFloat("beta", 1.0);
  int64_t m = y.dim(0), n = y.dim(1), k = ta ? a.dim(0) : a.dim(1);
  std::vector<float> aBuf, bBuf, yBuf;
  float *yp = floatOut(y, yBuf);
  bool withC = cIn && beta != 0.0f;
  if (withC)
    forEachBroadcast(y.shape(), {cIn}, [&](int64_t i, const int64_t *o) {
      yp[i] = beta * cIn->getFloat(o[0]);
    });
  sgemm(ta, tb, m, n, k, alpha, floatData(a, aBuf), a.dim(1),
        floatData(b, bBuf), b.dim(1), withC ? 1.0f : 0.0f, yp, n);
  finishFloatOut(y, yBuf);
}

/// One im2col row of a 2-D convolution: the input plane `x` read at kernel
/// position `k` for every output position, zero in the padding. Rows of
/// unit stride are contiguous runs of the input.
void im2colRow2d(const Window &w, int64_t k, const float *x, float *dst) {
  int64_t kh = k / w.kernel[1], kw = k % w.kernel[1];
  int64_t ih0 = kh * w.dilations[0] - w.padBegin[0];
  int64_t iw0 = kw * w.dilations[1] - w.padBegin[1];
  int64_t H = w.in[0], W = w.in[1], OH = w.out[0], OW = w.out[1];
  int64_t sh = w.strides[0], sw = w.strides[1];
  for (int64_t oh = 0; oh < OH; ++oh, dst += OW) {
    int64_t ih = ih0 + oh * sh;
    if (ih < 0 || ih >= H) {
      std::fill_n(dst, OW, 0.0f);
      continue;
    }
    const float *src = x + ih * W;
    if (sw == 1) { // [ow_begin, ow_end) reads src[iw0 + ow] in bounds
      int64_t begin = std::clamp<int64_t>(-iw0, 0, OW);
      int64_t end = std::clamp<int64_t>(W - iw0, begin, OW);
      std::fill_n(dst, begin, 0.0f);
      std::copy(src + iw0 + begin, src + iw0 + end, dst + begin);
      std::fill(dst + end, dst + OW, 0.0f);
      continue;
    }
    for (int64_t ow = 0; ow < OW; ++ow) {
      int64_t iw = iw0 + ow * sw;
      dst[ow] = iw >= 0 && iw < W ? src[iw] : 0.0f;
    }
  }
}

/// Channels-last operands (conv's `channels_last`) are computed here as
/// channels-first ones, transposed on the way in and out by the Transpose
/// kernel's copy. The values and their accumulation order are those of the
/// channels-first convolution; the result is rounded once, as there.
struct ChannelsFirst {
  static Shape shape(const Shape &t) { return channelsFirstShape(t); }
  /// Channels-last `t` as channels-first FP32 (`first` holds the copy).
  static const float *from(const Tensor &t, Tensor &first,
                           std::vector<float> &storage) {
    first = Tensor(t.dtype(), shape(t.shape()));
    permuteInto(first, t, channelsFirstOrder(t.rank()));
    return floatData(first, storage);
  }
  /// Channels-first `data` stored into channels-last `t`, rounded once.
  static void store(Tensor &t, const float *data) {
    Tensor first(t.dtype(), shape(t.shape()));
    storeFloats(first, data);
    permuteInto(t, first, channelsLastOrder(t.rank()));
  }
};

void convK(KernelContext &c) {
  const Tensor &x = c.in(0), &w = c.in(1);
  const Tensor *bias = c.input(2);
  Tensor &y = c.output(0);
  bool last = c.step.getInt("channels_last", 0);
  Shape xs = last ? ChannelsFirst::shape(x.shape()) : x.shape();
  Shape ws = last ? ChannelsFirst::shape(w.shape()) : w.shape();
  Shape ys = last ? ChannelsFirst::shape(y.shape()) : y.shape();
  Window win(c.step, xs, ys, Shape(ws.begin() + 2, ws.end()));
  int64_t group = c.step.getInt("group", 1);
  int64_t batch = xs[0], cin = xs[1], cout = ys[1];
  int64_t cg = cin / group, mg = cout / group;
  int64_t kk = win.kernelSize(), osp = win.outSize(), isp = win.inSize();
  std::vector<float> xBuf, wBuf, yBuf;
  Tensor xF, wF; // channels last: the operands channels first
  const float *xp = last ? ChannelsFirst::from(x, xF, xBuf) : floatData(x, xBuf);
  const float *wp = last ? ChannelsFirst::from(w, wF, wBuf) : floatData(w, wBuf);
  if (last)
    yBuf.assign(y.size(), 0.0f);
  float *yp = last ? yBuf.data() : floatOut(y, yBuf);
  // 2-D convolutions take contiguous rows (im2colRow2d); others gather
  // through the offset table.
  std::vector<int64_t> offsets;
  if (win.in.size() != 2)
    offsets = win.offsetTable();
  // Images are batched into one GEMM per group (columns = image x output
  // position), so late layers with few output positions still give the
  // GEMM a wide N. Chunks bound the im2col buffer to 8 MB (cache-friendly;
  // measured fastest on ResNet-18).
  int64_t rows = cg * kk;
  int64_t chunk = std::clamp<int64_t>((2 << 20) / std::max<int64_t>(rows * osp, 1),
                                      1, batch);
  // Scratch kept per thread across calls: no allocation or page faults per
  // convolution.
  // (Lambdas below must see the caller's buffers, not their thread's.)
  static thread_local std::vector<float> colScratch, outScratch;
  std::vector<float> &col = colScratch, &out = outScratch;
  for (int64_t g = 0; g < group; ++g)
    for (int64_t img0 = 0; img0 < batch; img0 += chunk) {
      int64_t nb = std::min(chunk, batch - img0), cols = nb * osp;
      col.resize(rows * cols);
      out.resize(mg * cols);
      parallelFor(rows * nb, 16, [&](int64_t b, int64_t e) {
        for (int64_t r = b; r < e; ++r) {
          int64_t row = r / nb, img = img0 + r % nb;
          const float *xc =
              xp + ((img * cin + g * cg) + row / kk) * isp;
          float *dst = col.data() + row * cols + (img - img0) * osp;
          if (win.in.size() == 2) {
            im2colRow2d(win, row % kk, xc, dst);
            continue;
          }
          const int64_t *off = offsets.data() + (row % kk) * osp;
          for (int64_t o = 0; o < osp; ++o)
            dst[o] = off[o] < 0 ? 0.0f : xc[off[o]];
        }
      });
      sgemm(false, false, mg, cols, rows, 1.0f, wp + g * mg * rows, rows,
            col.data(), cols, 0.0f, out.data(), cols);
      parallelFor(nb * mg, 16, [&](int64_t b, int64_t e) {
        for (int64_t r = b; r < e; ++r) {
          int64_t img = r / mg, m = r % mg;
          float bv = bias ? bias->getFloat(g * mg + m) : 0.0f;
          const float *src = out.data() + m * cols + img * osp;
          float *dst = yp + ((img0 + img) * cout + g * mg + m) * osp;
          for (int64_t o = 0; o < osp; ++o)
            dst[o] = src[o] + bv;
        }
      });
    }
  if (last)
    return ChannelsFirst::store(y, yp);
  finishFloatOut(y, yBuf);
}

/// Gradients of conv: per image and group, dW += dY col^T and
/// dcol = W^T dY scattered back (col2im). Accumulation in FP32.
void convGrad(KernelContext &c, bool wrtInput, const Tensor *bias = nullptr) {
  const Tensor &dy = c.in(0), &other = c.in(1);
  Tensor &out = c.output(0);
  const Tensor &x = wrtInput ? out : other;   // shapes only when wrtInput
  const Tensor &w = wrtInput ? other : out;
  bool last = c.step.getInt("channels_last", 0);
  auto first = [&](const Tensor &t) {
    return last ? ChannelsFirst::shape(t.shape()) : t.shape();
  };
  Shape xs = first(x), ws = first(w), dys = first(dy);
  Window win(c.step, xs, dys, Shape(ws.begin() + 2, ws.end()));
  int64_t group = c.step.getInt("group", 1);
  int64_t batch = xs[0], cin = xs[1], cout = dys[1];
  int64_t cg = cin / group, mg = cout / group;
  int64_t kk = win.kernelSize(), osp = win.outSize(), isp = win.inSize();
  int64_t rows = cg * kk;
  std::vector<int64_t> offsets = win.offsetTable();
  std::vector<float> dyBuf, oBuf, acc(out.size(), 0.0f), col(rows * osp);
  Tensor dyF, oF; // channels last: the operands channels first
  const float *dyp =
      last ? ChannelsFirst::from(dy, dyF, dyBuf) : floatData(dy, dyBuf);
  const float *op =
      last ? ChannelsFirst::from(other, oF, oBuf) : floatData(other, oBuf);
  for (int64_t img = 0; img < batch; ++img)
    for (int64_t g = 0; g < group; ++g) {
      const float *dyg = dyp + (img * cout + g * mg) * osp;
      if (wrtInput) {
        // dcol[rows, osp] = W_g^T [rows, mg] x dY_g [mg, osp]
        sgemm(true, false, rows, osp, mg, 1.0f, op + g * mg * rows, rows, dyg,
              osp, 0.0f, col.data(), osp);
        float *dx = acc.data() + (img * cin + g * cg) * isp;
        for (int64_t r = 0; r < rows; ++r) {
          const int64_t *off = offsets.data() + (r % kk) * osp;
          float *plane = dx + (r / kk) * isp;
          for (int64_t o = 0; o < osp; ++o)
            if (off[o] >= 0)
              plane[off[o]] += col[r * osp + o];
        }
      } else {
        const float *xg = op + (img * cin + g * cg) * isp;
        for (int64_t r = 0; r < rows; ++r) {
          const int64_t *off = offsets.data() + (r % kk) * osp;
          const float *plane = xg + (r / kk) * isp;
          for (int64_t o = 0; o < osp; ++o)
            col[r * osp + o] = off[o] < 0 ? 0.0f : plane[off[o]];
        }
        // dW_g[mg, rows] += dY_g [mg, osp] x col^T [osp, rows]
        sgemm(false, true, mg, rows, osp, 1.0f, dyg, osp, col.data(), osp,
              1.0f, acc.data() + g * mg * rows, rows);
      }
    }
  if (bias) {
    int64_t plane = acc.size() / (batch * cin);
    for (int64_t r = 0; r < batch * cin; ++r) {
      float bv = bias->getFloat(r % cin);
      for (int64_t i = r * plane; i < (r + 1) * plane; ++i)
        acc[i] += bv;
    }
  }
  if (last)
    return ChannelsFirst::store(out, acc.data());
  storeFloats(out, acc.data());
}

void convGradInputK(KernelContext &c) { convGrad(c, true); }
void convGradWeightK(KernelContext &c) { convGrad(c, false); }

/// ConvTranspose is conv's input gradient with X in dY's place (W is
/// C x M/group x k, conv's layout with the roles of C and M swapped); the
/// bias is added in FP32 before the one rounding, as conv's is.
void convTransposeK(KernelContext &c) { convGrad(c, true, c.input(2)); }

} // namespace

void registerLinalgKernels(KernelTable &t) {
  t.add(OpId::MatMul, matmulK);
  t.add(OpId::Gemm, gemmK);
  t.add(OpId::Conv, convK);
  t.add(OpId::ConvGradInput, convGradInputK);
  t.add(OpId::ConvGradWeight, convGradWeightK);
  t.add(OpId::ConvTranspose, convTransposeK);
}

} // namespace mpc::rt
