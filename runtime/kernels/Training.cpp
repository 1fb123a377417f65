//===- Training.cpp - ai.onnx.preview.training optimizer kernels ----------===//
//
// Momentum, Adagrad and Adam exactly as the ONNX operator specifications
// write them, on FP32 state; the loss-scaling steps; the gradient
// all-reduce of data-parallel ranks.
//
//===----------------------------------------------------------------------===//

#include "runtime/Half.h"
#include "runtime/Kernel.h"
#include "runtime/Parallel.h"
#include "runtime/dist/ProcessGroup.h"
#include "runtime/kernels/Common.h"

#include <algorithm>
#include <cmath>

namespace mpc::rt {
namespace {

/// Number of optimized tensors n for operands (R, T, groups x n tensors).
int64_t groupSize(KernelContext &c, int64_t groups) {
  return ((int64_t)c.numInputs() - 2) / groups;
}

void momentumK(KernelContext &c) {
  float r = c.in(0).getFloat(0);
  int64_t t = c.in(1).getInt(0), n = groupSize(c, 3);
  float alpha = (float)c.step.getFloat("alpha", 0);
  float beta = t > 0 ? (float)c.step.getFloat("beta", 0) : 1.0f;
  float lambda = (float)c.step.getFloat("norm_coefficient", 0);
  bool nesterov = c.step.getString("mode", "standard") == "nesterov";
  for (int64_t k = 0; k < n; ++k) {
    const Tensor &x = c.in(2 + k), &g = c.in(2 + n + k), &v = c.in(2 + 2 * n + k);
    Tensor &xo = c.output(k), &vo = c.output(n + k);
    for (int64_t i = 0; i < x.size(); ++i) {
      float gr = lambda * x.getFloat(i) + g.getFloat(i);
      float vn = alpha * v.getFloat(i) + beta * gr;
      vo.setFloat(i, vn);
      xo.setFloat(i, nesterov ? x.getFloat(i) - r * (gr + alpha * vn)
                              : x.getFloat(i) - r * vn);
    }
  }
}

void adagradK(KernelContext &c) {
  float r = c.in(0).getFloat(0);
  int64_t t = c.in(1).getInt(0), n = groupSize(c, 3);
  float decay = (float)c.step.getFloat("decay_factor", 0);
  float eps = (float)c.step.getFloat("epsilon", 1e-6);
  float lambda = (float)c.step.getFloat("norm_coefficient", 0);
  float rate = r / (1.0f + (float)t * decay);
  for (int64_t k = 0; k < n; ++k) {
    const Tensor &x = c.in(2 + k), &g = c.in(2 + n + k), &h = c.in(2 + 2 * n + k);
    Tensor &xo = c.output(k), &ho = c.output(n + k);
    for (int64_t i = 0; i < x.size(); ++i) {
      float gr = lambda * x.getFloat(i) + g.getFloat(i);
      float hn = h.getFloat(i) + gr * gr;
      ho.setFloat(i, hn);
      xo.setFloat(i, x.getFloat(i) - rate * gr / (std::sqrt(hn) + eps));
    }
  }
}

void adamK(KernelContext &c) {
  float r = c.in(0).getFloat(0);
  int64_t t = c.in(1).getInt(0), n = groupSize(c, 4);
  float alpha = (float)c.step.getFloat("alpha", 0.9);
  float beta = (float)c.step.getFloat("beta", 0.999);
  float eps = (float)c.step.getFloat("epsilon", 1e-6);
  float lambda = (float)c.step.getFloat("norm_coefficient", 0);
  float post = (float)c.step.getFloat("norm_coefficient_post", 0);
  float rate = t > 0 ? (float)(r * std::sqrt(1.0 - std::pow(beta, t)) /
                               (1.0 - std::pow(alpha, t)))
                     : r;
  for (int64_t k = 0; k < n; ++k) {
    const Tensor &x = c.in(2 + k), &g = c.in(2 + n + k);
    const Tensor &v = c.in(2 + 2 * n + k), &h = c.in(2 + 3 * n + k);
    Tensor &xo = c.output(k), &vo = c.output(n + k), &ho = c.output(2 * n + k);
    for (int64_t i = 0; i < x.size(); ++i) {
      float gr = lambda * x.getFloat(i) + g.getFloat(i);
      float vn = alpha * v.getFloat(i) + (1 - alpha) * gr;
      float hn = beta * h.getFloat(i) + (1 - beta) * gr * gr;
      vo.setFloat(i, vn);
      ho.setFloat(i, hn);
      float xn = x.getFloat(i) - rate * (vn / (std::sqrt(hn) + eps));
      xo.setFloat(i, (1 - post) * xn);
    }
  }
}

/// Gradients times 1/scale, and whether any element is inf or NaN.
void unscaleGradsK(KernelContext &c) {
  size_t n = c.numInputs() - 1;
  // GradScaler: the reciprocal in double, rounded once to FP32.
  float inv = (float)(1.0 / (double)c.in(n).getFloat(0));
  bool foundInf = false;
  for (size_t k = 0; k < n; ++k) {
    const Tensor &g = c.in(k);
    Tensor &u = c.output(k);
    for (int64_t i = 0; i < g.size(); ++i) {
      float v = g.getFloat(i);
      foundInf |= !std::isfinite(v);
      u.setFloat(i, v * inv);
    }
  }
  c.output(n).data<uint8_t>()[0] = foundInf;
}

/// 1/scale as unscaleGradsK takes it, and whether any gradient element is
/// inf or NaN; the gradients are only read (updates unscale as they read).
void checkGradsK(KernelContext &c) {
  size_t n = c.numInputs() - 1;
  bool foundInf = false;
  for (size_t k = 0; k < n; ++k) {
    const Tensor &g = c.in(k);
    for (int64_t i = 0; i < g.size(); ++i)
      foundInf |= !std::isfinite(g.getFloat(i));
  }
  c.output(0).setFloat(0, (float)(1.0 / (double)c.in(n).getFloat(0)));
  c.output(1).data<uint8_t>()[0] = foundInf;
}

/// torch's clip_grad_norm_ total: each tensor's norm (its elements times
/// the factor in FP32, squares summed in double, rounded once, as
/// reduce_l2), then the norm of those norms in operand order; with a
/// second output, whether any element is inf or NaN, as checkGradsK.
void globalNormK(KernelContext &c) {
  const float factor = c.in(0).getFloat(0);
  const int64_t n = (int64_t)c.numInputs() - 1;
  std::vector<float> norms(n);
  std::vector<uint8_t> bad(n);
  parallelFor(n, 1, [&](int64_t b, int64_t e) {
    for (int64_t k = b; k < e; ++k) {
      std::vector<float> storage;
      const Tensor &x = c.in(1 + k);
      const float *p = floatData(x, storage);
      double a = 0;
      bool inf = false;
      for (int64_t i = 0; i < x.size(); ++i) {
        inf |= !std::isfinite(p[i]);
        const double v = p[i] * factor;
        a += v * v;
      }
      norms[k] = (float)std::sqrt(a);
      bad[k] = inf;
    }
  });
  double total = 0;
  for (float v : norms)
    total += (double)v * v;
  c.output(0).setFloat(0, (float)std::sqrt(total));
  if (c.numOutputs() > 1)
    c.output(1).data<uint8_t>()[0] =
        std::any_of(bad.begin(), bad.end(), [](uint8_t b) { return b; });
}

/// The all_reduce step: its outputs allocated, then the bucket averaged
/// (runtime/Executor.cpp may run allReduceBucket on its communication
/// thread instead, overlapping the rest of the backward pass).
void allReduceK(KernelContext &c) {
  std::vector<const Tensor *> in;
  std::vector<Tensor *> out;
  for (size_t k = 0; k < c.numInputs(); ++k)
    in.push_back(&c.in(k));
  for (size_t k = 0; k < c.numOutputs(); ++k)
    out.push_back(&c.output(k));
  std::string error;
  if (!allReduceBucket(in, out, c.step.getString("wire", "f32"),
                       dist::currentGroup(), error))
    throw KernelError(error);
}

void updateLossScaleK(KernelContext &c) {
  double scale = c.in(0).getFloat(0);
  int64_t good = c.in(1).getInt(0);
  if (c.numInputs() > 3 && !c.in(3).data<uint8_t>()[0]) {
    c.output(0).setFloat(0, (float)scale); // not a group's last micro-batch
    c.output(1).setInt(0, good);
    return;
  }
  if (c.in(2).data<uint8_t>()[0]) {
    scale *= c.step.getFloat("backoff", 0.5);
    good = 0;
  } else if (++good >= c.step.getInt("interval", 2000)) {
    scale *= c.step.getFloat("growth", 2.0);
    good = 0;
  }
  scale = std::clamp(scale, c.step.getFloat("min_scale", 1.0),
                     c.step.getFloat("max_scale", 16777216.0));
  c.output(0).setFloat(0, (float)scale);
  c.output(1).setInt(0, good);
}

} // namespace

bool allReduceBucket(const std::vector<const Tensor *> &in,
                     const std::vector<Tensor *> &out, const std::string &wire,
                     dist::ProcessGroup *group, std::string &error) {
  size_t total = 0;
  for (const Tensor *t : in)
    total += (size_t)t->size();
  // Packed into one buffer, in the wire type, for one collective.
  std::vector<float> packed(total);
  size_t at = 0;
  for (const Tensor *t : in)
    for (int64_t i = 0; i < t->size(); ++i)
      packed[at++] = t->getFloat(i);
  if (group && group->size() > 1) {
    bool ok;
    if (wire == "f32") {
      ok = group->allReduce(packed.data(), total, true, error);
    } else {
      bool bf16 = wire == "bf16";
      std::vector<uint16_t> bits(total);
      for (size_t i = 0; i < total; ++i)
        bits[i] = narrow16(packed[i], bf16);
      ok = group->allReduce16(bits.data(), total, bf16, true, error);
      for (size_t i = 0; i < total; ++i)
        packed[i] = widen16(bits[i], bf16);
    }
    if (!ok)
      return false;
  }
  at = 0;
  for (Tensor *t : out)
    for (int64_t i = 0; i < t->size(); ++i)
      t->setFloat(i, packed[at++]);
  return true;
}

void registerTrainingKernels(KernelTable &t) {
  t.add(OpId::Momentum, momentumK);
  t.add(OpId::Adagrad, adagradK);
  t.add(OpId::Adam, adamK);
  t.add(OpId::UnscaleGrads, unscaleGradsK);
  t.add(OpId::CheckGrads, checkGradsK);
  t.add(OpId::GlobalNorm, globalNormK);
  t.add(OpId::AllReduce, allReduceK);
  t.add(OpId::UpdateLossScale, updateLossScaleK);
}

} // namespace mpc::rt
