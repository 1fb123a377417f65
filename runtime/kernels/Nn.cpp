//===- Nn.cpp - pooling, softmax, dropout, losses -------------------------===//
//
// All statistics and losses are computed in FP32 or better (sums in double),
// whatever the storage type, and rounded once on store.
//
//===----------------------------------------------------------------------===//

#include "runtime/Kernel.h"
#include "runtime/Parallel.h"
#include "runtime/Philox.h"
#include "runtime/kernels/Common.h"
#include "runtime/kernels/Window.h"

#include <cmath>
#include <limits>
#include <algorithm>
#include <cstring>

namespace mpc::rt {
namespace {

//===----------------------------------------------------------------------===//
// Pooling
//===----------------------------------------------------------------------===//

void maxPoolK(KernelContext &c) {
  const Tensor &x = c.in(0);
  Tensor &y = c.output(0);
  Tensor *idx = c.numOutputs() > 1 ? &c.output(1) : nullptr;
  // Channels last: plane p = (image, channel) has its elements C apart.
  bool last = c.step.getInt("channels_last", 0);
  Shape xs = last ? channelsFirstShape(x.shape()) : x.shape();
  Shape ys = last ? channelsFirstShape(y.shape()) : y.shape();
  Window win(c.step, xs, ys, {});
  int64_t ch = xs[1], planes = xs[0] * ch, isp = win.inSize(), osp = win.outSize();
  auto in = [&](int64_t p, int64_t off) {
    return last ? (p / ch * isp + off) * ch + p % ch : p * isp + off;
  };
  auto out = [&](int64_t p, int64_t o) {
    return last ? (p / ch * osp + o) * ch + p % ch : p * osp + o;
  };
  bool colMajor = c.step.getInt("storage_order", 0) == 1;
  int64_t kk = win.kernelSize();
  std::vector<int64_t> offsets = win.offsetTable();
  std::vector<float> xBuf;
  const float *xp = floatData(x, xBuf);
  parallelFor(planes, 1, [&](int64_t b, int64_t e) {
    for (int64_t p = b; p < e; ++p)
      for (int64_t o = 0; o < osp; ++o) {
        float best = -std::numeric_limits<float>::infinity();
        int64_t arg = -1;
        for (int64_t k = 0; k < kk; ++k) {
          int64_t off = offsets[k * osp + o];
          if (off < 0)
            continue;
          float v = xp[in(p, off)];
          if (arg < 0 || v > best || std::isnan(v)) {
            best = v;
            arg = off;
          }
        }
        if (y.dtype() == DType::F32)
          y.data<float>()[out(p, o)] = best;
        else
          y.setFloat(out(p, o), best);
        if (idx) {
          int64_t flat = arg;
          if (colMajor && win.in.size() == 2) // ONNX: column-major spatial
            flat = (arg % win.in[1]) * win.in[0] + arg / win.in[1];
          idx->data<int64_t>()[out(p, o)] = in(p, flat);
        }
      }
  });
}

void averagePoolK(KernelContext &c) {
  const Tensor &x = c.in(0);
  Tensor &y = c.output(0);
  Window win(c.step, x.shape(), y.shape(), {});
  bool includePad = c.step.getInt("count_include_pad", 0);
  int64_t planes = x.dim(0) * x.dim(1), isp = win.inSize(), osp = win.outSize();
  parallelFor(planes, 1, [&](int64_t b, int64_t e) {
    for (int64_t p = b; p < e; ++p)
      for (int64_t o = 0; o < osp; ++o) {
        float sum = 0;
        win.forWindow(o, [&](int64_t, int64_t i) {
          if (i >= 0)
            sum += x.getFloat(p * isp + i);
        });
        int64_t count = win.averageCount(o, includePad);
        y.setFloat(p * osp + o, count ? sum / (float)count : 0.0f);
      }
  });
}

void maxPoolGradK(KernelContext &c) {
  const Tensor &dy = c.in(0), &idx = c.in(1);
  Tensor &dx = c.output(0);
  std::vector<float> acc(dx.size(), 0.0f);
  for (int64_t i = 0; i < dy.size(); ++i) {
    int64_t at = idx.data<int64_t>()[i];
    if (at >= 0 && at < dx.size())
      acc[at] += dy.getFloat(i);
  }
  storeFloats(dx, acc.data());
}

void averagePoolGradK(KernelContext &c) {
  const Tensor &dy = c.in(0);
  Tensor &dx = c.output(0);
  Window win(c.step, dx.shape(), dy.shape(), {});
  bool includePad = c.step.getInt("count_include_pad", 0);
  int64_t planes = dx.dim(0) * dx.dim(1), isp = win.inSize(), osp = win.outSize();
  std::vector<float> acc(dx.size(), 0.0f);
  for (int64_t p = 0; p < planes; ++p)
    for (int64_t o = 0; o < osp; ++o) {
      int64_t count = win.averageCount(o, includePad);
      if (!count)
        continue;
      float share = dy.getFloat(p * osp + o) / (float)count;
      win.forWindow(o, [&](int64_t, int64_t i) {
        if (i >= 0)
          acc[p * isp + i] += share;
      });
    }
  storeFloats(dx, acc.data());
}

template <bool IsMax> void globalPoolK(KernelContext &c) {
  const Tensor &x = c.in(0);
  Tensor &y = c.output(0);
  int64_t planes = x.dim(0) * x.dim(1), sp = x.size() / std::max<int64_t>(planes, 1);
  for (int64_t p = 0; p < planes; ++p) {
    double acc = IsMax ? -std::numeric_limits<double>::infinity() : 0.0;
    for (int64_t i = 0; i < sp; ++i) {
      float v = x.getFloat(p * sp + i);
      // max as reduce_max: NaN propagates (np.max, torch.amax)
      acc = IsMax ? ((v != v || v > acc) ? (double)v : acc) : acc + v;
    }
    y.setFloat(p, IsMax ? (float)acc : (float)(acc / sp));
  }
}

//===----------------------------------------------------------------------===//
// Softmax
//===----------------------------------------------------------------------===//

/// Softmax or log-softmax of `x` along `axis` into float `out`.
void softmaxInto(const Tensor &x, int64_t axis, bool logSoftmax, float *out) {
  // Plain variables, not a structured binding: the lambdas below capture
  // them, which C++17 does not allow of bindings.
  const AxisSplit split = splitAt(x.shape(), axis);
  const int64_t outer = split.outer, dim = split.dim, inner = split.inner;
  std::vector<float> xBuf;
  const float *xp = floatData(x, xBuf);
  parallelFor(outer * inner, 64, [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      int64_t base = (r / inner) * dim * inner + r % inner;
      const float *in = xp + base;
      float *o = out + base;
      float mx = -std::numeric_limits<float>::infinity();
      for (int64_t j = 0; j < dim; ++j)
        mx = std::max(mx, in[j * inner]);
      double sum = 0;
      for (int64_t j = 0; j < dim; ++j) {
        float ex = std::exp(in[j * inner] - mx);
        o[j * inner] = ex;
        sum += ex;
      }
      if (logSoftmax) {
        float logSum = (float)std::log(sum);
        for (int64_t j = 0; j < dim; ++j)
          o[j * inner] = (in[j * inner] - mx) - logSum;
      } else {
        for (int64_t j = 0; j < dim; ++j)
          o[j * inner] = (float)(o[j * inner] / sum);
      }
    }
  });
}

template <bool Log> void softmaxK(KernelContext &c) {
  const Tensor &x = c.in(0);
  std::vector<float> out(x.size());
  softmaxInto(x, normAxis(c.step.getInt("axis", -1), x.rank()), Log,
              out.data());
  storeFloats(c.output(0), out.data());
}

//===----------------------------------------------------------------------===//
// Dropout
//===----------------------------------------------------------------------===//

void dropoutK(KernelContext &c) {
  const Tensor &x = c.in(0);
  float ratio = c.input(1) ? c.input(1)->getFloat(0) : 0.5f;
  bool training = c.input(2) && c.input(2)->getInt(0) != 0;
  Tensor &mask = c.output(1);
  if (!training || ratio == 0.0f) {
    c.setOutput(0, x);
    std::fill(mask.data<uint8_t>(), mask.data<uint8_t>() + mask.size(), 1);
    return;
  }
  // Philox words (runtime/Philox.h), four elements a group, as the CUDA
  // kernel draws them.
  Tensor &y = c.output(0);
  uint64_t seed = (uint64_t)c.step.getInt("seed", 0);
  uint32_t stream = (uint32_t)c.step.getInt("stream", 0);
  DropoutCounter counter = dropoutCounter(c.input(3), (uint64_t)x.size());
  uint64_t threshold = philox::mpc_dropout_threshold(ratio);
  float scale = philox::mpc_dropout_scale(ratio);
  uint32_t w[4];
  for (int64_t i = 0; i < x.size(); ++i) {
    uint64_t e = counter.first + (uint64_t)i;
    if (i == 0 || e % 4 == 0)
      philox::mpc_philox_words(seed, stream, counter.step, e / 4, w);
    bool keep = w[e % 4] >= threshold;
    mask.data<uint8_t>()[i] = keep;
    y.setFloat(i, keep ? x.getFloat(i) * scale : 0.0f);
  }
}

/// mpc.random: element i's Philox number (runtime/Philox.h), a + (b - a) u
/// for uniform u or a + b z for standard normal z, as the CUDA kernel
/// draws them; a data-parallel rank's elements numbered after the ranks
/// before it.
void randomK(KernelContext &c) {
  Tensor &y = c.output(0);
  const uint64_t seed = (uint64_t)c.step.getInt("seed", 0);
  const uint32_t stream = (uint32_t)c.step.getInt("stream", 0);
  const float a = (float)c.step.getFloat("a", 0.0), b = (float)c.step.getFloat("b", 1.0);
  const bool normal = c.step.getString("distribution", "uniform") == "normal";
  DropoutCounter counter = dropoutCounter(c.input(1), (uint64_t)y.size());
  for (int64_t i = 0; i < y.size(); ++i) {
    uint64_t e = counter.first + (uint64_t)i;
    y.setFloat(i, normal ? a + b * philox::mpc_random_normal(seed, stream, counter.step, e)
                         : a + (b - a) * philox::mpc_random_uniform(seed, stream,
                                                                    counter.step, e));
  }
}

//===----------------------------------------------------------------------===//
// Losses
//===----------------------------------------------------------------------===//

/// Negative log-likelihood of `logp` (N x C x D...) at `labels`, reduced.
void nllInto(KernelContext &c, const float *logp, const Shape &shape,
             const Tensor &labels, const Tensor *weights, Tensor &loss) {
  int64_t n = shape[0], cls = shape[1], inner = 1;
  for (size_t i = 2; i < shape.size(); ++i)
    inner *= shape[i];
  std::string reduction = c.step.getString("reduction", "mean");
  bool hasIgnore = c.step.has("ignore_index");
  int64_t ignore = c.step.getInt("ignore_index", 0);
  std::vector<float> per(n * inner);
  double total = 0, weightSum = 0;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t d = 0; d < inner; ++d) {
      int64_t label = labels.getInt(i * inner + d);
      if (hasIgnore && label == ignore) {
        per[i * inner + d] = 0;
        continue;
      }
      if (label < 0 || label >= cls)
        throw KernelError("label " + std::to_string(label) +
                          " is out of range [0, " + std::to_string(cls) + ")");
      float w = weights ? weights->getFloat(label) : 1.0f;
      float l = -logp[(i * cls + label) * inner + d] * w;
      per[i * inner + d] = l;
      total += l;
      weightSum += w;
    }
  if (reduction == "none") {
    storeFloats(loss, per.data());
    return;
  }
  loss.setFloat(0, reduction == "sum" ? (float)total
                                      : (float)(total / weightSum));
}

void softmaxCrossEntropyK(KernelContext &c) {
  const Tensor &scores = c.in(0);
  std::vector<float> logp(scores.size());
  softmaxInto(scores, 1, true, logp.data());
  nllInto(c, logp.data(), scores.shape(), c.in(1), c.input(2), c.output(0));
  if (c.numOutputs() > 1)
    storeFloats(c.output(1), logp.data());
}

void nllLossK(KernelContext &c) {
  std::vector<float> buf;
  const float *logp = floatData(c.in(0), buf);
  nllInto(c, logp, c.in(0).shape(), c.in(1), c.input(2), c.output(0));
}

/// Gradient of the NLL part: out[n, label, d] = -w * g / denom (mean) where
/// g is the incoming loss gradient (scalar, or per element for "none").
/// With `softmaxFrom`, adds softmax(logp) * w * g / denom everywhere first
/// (the softmax cross-entropy gradient).
void lossGrad(KernelContext &c, bool withSoftmax) {
  const Tensor &g = c.in(0), &logp = c.in(1), &labels = c.in(2);
  const Tensor *weights = c.input(3);
  Tensor &out = c.outputZeroed(0);
  const Shape &shape = logp.shape();
  int64_t n = shape[0], cls = shape[1], inner = 1;
  for (size_t i = 2; i < shape.size(); ++i)
    inner *= shape[i];
  std::string reduction = c.step.getString("reduction", "mean");
  bool hasIgnore = c.step.has("ignore_index");
  int64_t ignore = c.step.getInt("ignore_index", 0);
  double weightSum = 0;
  for (int64_t i = 0; i < n * inner; ++i) {
    int64_t label = labels.getInt(i);
    if (hasIgnore && label == ignore)
      continue;
    if (label < 0 || label >= cls)
      throw KernelError("label " + std::to_string(label) +
                        " is out of range [0, " + std::to_string(cls) + ")");
    weightSum += weights ? weights->getFloat(label) : 1.0f;
  }
  double denom = reduction == "mean" ? weightSum : 1.0;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t d = 0; d < inner; ++d) {
      int64_t label = labels.getInt(i * inner + d);
      if (hasIgnore && label == ignore)
        continue;
      double w = weights ? weights->getFloat(label) : 1.0;
      double gv = reduction == "none" ? g.getFloat(i * inner + d)
                                      : g.getFloat(0);
      double scale = w * gv / denom;
      if (withSoftmax)
        for (int64_t k = 0; k < cls; ++k) {
          int64_t idx = (i * cls + k) * inner + d;
          out.setFloat(idx, (float)(std::exp(logp.getFloat(idx)) * scale));
        }
      int64_t at = (i * cls + label) * inner + d;
      out.setFloat(at, (float)(out.getFloat(at) - scale));
    }
}

void softmaxCrossEntropyGradK(KernelContext &c) { lossGrad(c, true); }
void nllLossGradK(KernelContext &c) { lossGrad(c, false); }

//===----------------------------------------------------------------------===//
// OneHot, Trilu
//===----------------------------------------------------------------------===//

void oneHotK(KernelContext &c) {
  const Tensor &idx = c.in(0), &vals = c.in(1);
  Tensor &y = c.output(0);
  int64_t depth = c.step.getInt("depth", 0);
  int64_t axis = normAxis(c.step.getInt("axis", -1), y.rank());
  int64_t inner = 1;
  for (int64_t i = axis + 1; i < y.rank(); ++i)
    inner *= y.dim(i);
  for (int64_t i = 0; i < y.size(); ++i) {
    int64_t outerIdx = i / (depth * inner), d = (i / inner) % depth,
            in = i % inner;
    int64_t v = isFloat(idx.dtype()) ? (int64_t)idx.getFloat(outerIdx * inner + in)
                                     : idx.getInt(outerIdx * inner + in);
    if (v < 0)
      v += depth;
    bool on = v == d;
    if (isFloat(y.dtype()))
      y.setFloat(i, vals.getFloat(on ? 1 : 0));
    else
      y.setInt(i, vals.getInt(on ? 1 : 0));
  }
}

void triluK(KernelContext &c) {
  const Tensor &x = c.in(0);
  Tensor &y = c.outputZeroed(0);
  int64_t k = c.step.getInt("k", 0);
  bool upper = c.step.getInt("upper", 1);
  int64_t rows = x.rank() >= 2 ? x.dim(x.rank() - 2) : 1;
  int64_t cols = x.rank() >= 1 ? x.dim(x.rank() - 1) : 1;
  size_t width = dtypeSize(x.dtype());
  for (int64_t i = 0; i < x.size(); ++i) {
    int64_t r = (i / cols) % rows, col = i % cols;
    bool keep = upper ? col - r >= k : col - r <= k;
    if (keep)
      std::memcpy(y.data<uint8_t>() + i * width,
                  x.data<uint8_t>() + i * width, width);
  }
}

} // namespace

void registerNnKernels(KernelTable &t) {
  t.add(OpId::MaxPool, maxPoolK);
  t.add(OpId::AveragePool, averagePoolK);
  t.add(OpId::MaxPoolGrad, maxPoolGradK);
  t.add(OpId::AveragePoolGrad, averagePoolGradK);
  t.add(OpId::GlobalAveragePool, globalPoolK<false>);
  t.add(OpId::GlobalMaxPool, globalPoolK<true>);
  t.add(OpId::Softmax, softmaxK<false>);
  t.add(OpId::LogSoftmax, softmaxK<true>);
  t.add(OpId::Dropout, dropoutK);
  t.add(OpId::Random, randomK);
  t.add(OpId::SoftmaxCrossEntropyLoss, softmaxCrossEntropyK);
  t.add(OpId::NegativeLogLikelihoodLoss, nllLossK);
  t.add(OpId::SoftmaxCrossEntropyLossGrad, softmaxCrossEntropyGradK);
  t.add(OpId::NegativeLogLikelihoodLossGrad, nllLossGradK);
  t.add(OpId::OneHot, oneHotK);
  t.add(OpId::Trilu, triluK);
}

} // namespace mpc::rt
