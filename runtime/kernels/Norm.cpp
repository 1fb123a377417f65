//===- Norm.cpp - batch, layer and RMS normalization ----------------------===//
//
// Statistics are computed in FP32 or better (sums in double), whatever the
// storage type, and each result is rounded once on store.
//
//===----------------------------------------------------------------------===//

#include "runtime/Formulas.h"
#include "runtime/Kernel.h"
#include "runtime/Parallel.h"
#include "runtime/kernels/Common.h"

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

namespace mpc::rt {
namespace {

/// Where batch norm's x [N, C, sp...] keeps element (img, channel, i):
/// channels first, or last (`channels_last`: x is [N, sp..., C]). The
/// kernels walk a channel's elements in (img, i) order either way, so the
/// two layouts give the same bits.
struct Channels {
  int64_t n, ch, sp;
  bool last;
  Channels(const Tensor &x, const Step &s)
      : n(x.dim(0)), last(s.getInt("channels_last", 0)) {
    ch = x.dim(last ? x.rank() - 1 : 1);
    sp = x.size() / std::max<int64_t>(n * ch, 1);
  }
  int64_t at(int64_t img, int64_t c, int64_t i) const {
    return last ? (img * sp + i) * ch + c : (img * ch + c) * sp + i;
  }
};

/// y = (x - mean) * invStd * scale + bias per channel.
void normalizeChannels(const Channels &l, const Tensor &x, Tensor &y,
                       const Tensor &scale, const Tensor &bias,
                       const std::vector<float> &mean,
                       const std::vector<float> &invStd) {
  parallelFor(l.n * l.ch, 1, [&](int64_t b, int64_t e) {
    for (int64_t p = b; p < e; ++p) {
      int64_t img = p / l.ch, cidx = p % l.ch;
      float s = scale.getFloat(cidx), bi = bias.getFloat(cidx);
      for (int64_t i = 0; i < l.sp; ++i) {
        int64_t k = l.at(img, cidx, i);
        y.setFloat(k, (x.getFloat(k) - mean[cidx]) * invStd[cidx] * s + bi);
      }
    }
  });
}

void batchNormK(KernelContext &c) {
  const Tensor &x = c.in(0);
  float eps = (float)c.step.getFloat("epsilon", 1e-5);
  Channels l(x, c.step);
  int64_t ch = l.ch;
  std::vector<float> mean(ch), inv(ch);
  for (int64_t i = 0; i < ch; ++i) {
    mean[i] = c.in(3).getFloat(i);
    inv[i] = 1.0f / std::sqrt(c.in(4).getFloat(i) + eps);
  }
  normalizeChannels(l, x, c.output(0), c.in(1), c.in(2), mean, inv);
}

/// x [N, C, ...]'s batch statistics per channel: sums in double, mean
/// and population variance rounded to FP32, inv = 1 / sqrt(var + eps).
/// batch_norm_train and batch_norm_grad share them (so does the CUDA
/// backend's formula).
void channelStats(const Channels &l, const Tensor &x, float eps,
                  std::vector<float> &mean, std::vector<float> &var,
                  std::vector<float> &inv) {
  int64_t n = l.n, ch = l.ch, sp = l.sp;
  mean.assign(ch, 0), var.assign(ch, 0), inv.assign(ch, 0);
  for (int64_t cidx = 0; cidx < ch; ++cidx) {
    double sum = 0, sq = 0;
    for (int64_t img = 0; img < n; ++img)
      for (int64_t i = 0; i < sp; ++i) {
        double v = x.getFloat(l.at(img, cidx, i));
        sum += v;
        sq += v * v;
      }
    // Means multiply by 1 / count, as the CUDA kernels do (a double
    // division there brings a slow path with a stack frame).
    double rcount = 1.0 / std::max((double)n * sp, 1.0), m = sum * rcount;
    mean[cidx] = (float)m;
    var[cidx] = (float)std::max(sq * rcount - m * m, 0.0);
    inv[cidx] = 1.0f / std::sqrt(var[cidx] + eps);
  }
}

void batchNormTrainK(KernelContext &c) {
  const Tensor &x = c.in(0);
  float eps = (float)c.step.getFloat("epsilon", 1e-5);
  float momentum = (float)c.step.getFloat("momentum", 0.9);
  Channels l(x, c.step);
  int64_t ch = l.ch;
  std::vector<float> mean, var, inv;
  channelStats(l, x, eps, mean, var, inv);
  normalizeChannels(l, x, c.output(0), c.in(1), c.in(2), mean, inv);
  Tensor &rm = c.output(1), &rv = c.output(2);
  // torch's running variance: the unbiased one (as the CUDA kernel).
  const int64_t count = l.n * l.sp;
  const bool unbiased = c.step.getInt("unbiased_running_var", 0) && count > 1;
  const float bessel = unbiased ? (float)((double)count / (double)(count - 1)) : 1.0f;
  for (int64_t i = 0; i < ch; ++i) {
    rm.setFloat(i, c.in(3).getFloat(i) * momentum + mean[i] * (1 - momentum));
    rv.setFloat(i, unbiased ? c.in(4).getFloat(i) * momentum + var[i] * bessel * (1 - momentum)
                            : c.in(4).getFloat(i) * momentum + var[i] * (1 - momentum));
  }
}

/// dbias = sum(dy), dscale = sum(dy xhat) per channel, dx = scale inv (dy
/// - dbias / M - xhat dscale / M): double sums, each result rounded once.
/// xhat is the forward's FP32 (x - mean) * inv; its sum against dy is
/// taken as inv (sum(dy x) - mean sum(dy)) (each dy x exact in double), so
/// the sums need one pass, as the CUDA kernel takes them alongside the
/// statistics. With a Relu's result (input 3), dy is relu_grad(input 0,
/// it).
void batchNormGradK(KernelContext &c) {
  const Tensor &x = c.in(1), &scale = c.in(2);
  const Tensor *reluOut = c.input(3);
  struct {
    const Tensor &g, *y;
    float getFloat(int64_t i) const {
      float v = g.getFloat(i);
      return y ? formulas::mpc_relu_grad(v, y->getFloat(i)) : v;
    }
  } dy{c.in(0), reluOut};
  Channels l(x, c.step);
  std::vector<float> mean, var, inv;
  channelStats(l, x, (float)c.step.getFloat("epsilon", 1e-5), mean, var, inv);
  int64_t n = l.n, ch = l.ch, sp = l.sp;
  Tensor &dx = c.output(0), &dscale = c.output(1), &dbias = c.output(2);
  parallelFor(ch, 1, [&](int64_t s, int64_t e) {
    for (int64_t cidx = s; cidx < e; ++cidx) {
      auto at = [&](int64_t img, int64_t i) { return l.at(img, cidx, i); };
      double sumDy = 0, sumDyX = 0;
      for (int64_t img = 0; img < n; ++img)
        for (int64_t i = 0; i < sp; ++i) {
          double g = dy.getFloat(at(img, i));
          sumDy += g;
          sumDyX += g * x.getFloat(at(img, i));
        }
      double sumDyXhat = (double)inv[cidx] * (sumDyX - (double)mean[cidx] * sumDy);
      // The two means once per channel, times 1 / count (as channelStats).
      double rcount = 1.0 / std::max((double)n * sp, 1.0);
      double k = (double)scale.getFloat(cidx) * inv[cidx];
      double meanDy = sumDy * rcount, meanDyXhat = sumDyXhat * rcount;
      for (int64_t img = 0; img < n; ++img)
        for (int64_t i = 0; i < sp; ++i) {
          float xhat = (x.getFloat(at(img, i)) - mean[cidx]) * inv[cidx];
          dx.setFloat(at(img, i), k * (dy.getFloat(at(img, i)) - meanDy -
                                       xhat * meanDyXhat));
        }
      dscale.setFloat(cidx, sumDyXhat);
      dbias.setFloat(cidx, sumDy);
    }
  });
}

/// The rows a normalization works on: x's elements from `axis` on form a
/// row (inner), rows = the rest (outer). Callers copy them into plain
/// variables, which their parallelFor lambdas capture (C++17 does not
/// capture structured bindings).
std::pair<int64_t, int64_t> normRows(const Tensor &x, int64_t axis) {
  axis = normAxis(axis, x.rank());
  int64_t inner = 1;
  for (int64_t i = axis; i < x.rank(); ++i)
    inner *= x.dim(i);
  return {x.size() / std::max<int64_t>(inner, 1), inner};
}

void layerNormK(KernelContext &c) {
  const Tensor &x = c.in(0), &scale = c.in(1);
  const Tensor *bias = c.input(2);
  float eps = (float)c.step.getFloat("epsilon", 1e-5);
  const auto rows = normRows(x, c.step.getInt("axis", -1));
  const int64_t outer = rows.first, inner = rows.second;
  Tensor &y = c.output(0), &meanOut = c.output(1), &invOut = c.output(2);
  std::vector<float> xBuf, sBuf, bBuf, yBuf;
  const float *xp = floatData(x, xBuf), *sp = floatData(scale, sBuf);
  const float *bp = bias ? floatData(*bias, bBuf) : nullptr;
  float *yp = floatOut(y, yBuf);
  parallelFor(outer, 4, [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      const float *row = xp + r * inner;
      double sum = 0, sq = 0;
      for (int64_t i = 0; i < inner; ++i) {
        sum += row[i];
        sq += (double)row[i] * row[i];
      }
      double m = sum / inner;
      float mean = (float)m;
      float inv =
          1.0f / std::sqrt((float)std::max(sq / inner - m * m, 0.0) + eps);
      float *out = yp + r * inner;
      for (int64_t i = 0; i < inner; ++i) {
        float v = (row[i] - mean) * inv * sp[i];
        out[i] = bp ? v + bp[i] : v;
      }
      meanOut.setFloat(r, mean);
      invOut.setFloat(r, inv);
    }
  });
  finishFloatOut(y, yBuf);
}

/// RMSNormalization in FP32: the mean square summed in index order (as the
/// CUDA kernel sums it), y = x * inv * scale, rounded once.
void rmsNormK(KernelContext &c) {
  const Tensor &x = c.in(0), &scale = c.in(1);
  float eps = (float)c.step.getFloat("epsilon", 1e-5);
  const auto rows = normRows(x, c.step.getInt("axis", -1));
  const int64_t outer = rows.first, inner = rows.second;
  int64_t sc = std::max<int64_t>(scale.size(), 1);
  Tensor &y = c.output(0), &invOut = c.output(1);
  std::vector<float> xBuf, sBuf, yBuf;
  const float *xp = floatData(x, xBuf), *sp = floatData(scale, sBuf);
  float *yp = floatOut(y, yBuf);
  parallelFor(outer, 4, [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      const float *row = xp + r * inner;
      float sq = 0.0f;
      for (int64_t i = 0; i < inner; ++i)
        sq += row[i] * row[i];
      float inv = 1.0f / std::sqrt(sq / (float)inner + eps);
      float *out = yp + r * inner;
      for (int64_t i = 0; i < inner; ++i)
        out[i] = row[i] * inv * sp[i % sc];
      invOut.setFloat(r, inv);
    }
  });
  finishFloatOut(y, yBuf);
}

/// The input gradient of layer_norm (with a mean) or rms_norm, a row at a
/// time: xhat and dxhat = g * scale in FP32, the two row sums in double,
/// dx = inv * (dxhat - sum(dxhat)/n - xhat * sum(dxhat * xhat)/n) rounded
/// once (the first sum only for layer norm).
void normGradK(KernelContext &c) {
  const Tensor &g = c.in(0), &x = c.in(1), &scale = c.in(2), &inv = c.in(3);
  const Tensor *mean = c.input(4);
  const auto rows = normRows(x, c.step.getInt("axis", -1));
  const int64_t outer = rows.first, inner = rows.second;
  int64_t sc = std::max<int64_t>(scale.size(), 1);
  Tensor &dx = c.output(0);
  std::vector<float> gBuf, xBuf, sBuf, dBuf;
  const float *gp = floatData(g, gBuf), *xp = floatData(x, xBuf),
              *sp = floatData(scale, sBuf);
  float *dp = floatOut(dx, dBuf);
  parallelFor(outer, 4, [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      float m = mean ? mean->getFloat(r) : 0.0f, k = inv.getFloat(r);
      const float *gr = gp + r * inner, *xr = xp + r * inner;
      double sumD = 0, sumDX = 0;
      for (int64_t i = 0; i < inner; ++i) {
        float xhat = (xr[i] - m) * k, dxhat = gr[i] * sp[i % sc];
        sumD += dxhat;
        sumDX += (double)dxhat * xhat;
      }
      float a = mean ? (float)(sumD / inner) : 0.0f,
            p = (float)(sumDX / inner);
      for (int64_t i = 0; i < inner; ++i) {
        float xhat = (xr[i] - m) * k, dxhat = gr[i] * sp[i % sc];
        dp[r * inner + i] = k * (dxhat - a - xhat * p);
      }
    }
  });
  finishFloatOut(dx, dBuf);
}

} // namespace

void registerNormKernels(KernelTable &t) {
  t.add(OpId::BatchNorm, batchNormK);
  t.add(OpId::BatchNormTrain, batchNormTrainK);
  t.add(OpId::BatchNormGrad, batchNormGradK);
  t.add(OpId::LayerNorm, layerNormK);
  t.add(OpId::RmsNorm, rmsNormK);
  t.add(OpId::NormGrad, normGradK);
}

} // namespace mpc::rt
