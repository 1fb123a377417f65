//===- Optimizer.cpp - FP32 parameter updates for training ----------------===//

#include "runtime/Optimizer.h"

#include <cmath>

namespace mpc::rt {

void Optimizer::step(const std::string &name, Tensor &param,
                     const Tensor &grad) {
  float *p = param.data<float>();
  const float *g = grad.data<float>();
  int64_t n = param.size();
  const OptimizerConfig &c = config_;
  auto state = [&](std::map<std::string, Tensor> &map) -> float * {
    auto it = map.find(name);
    if (it == map.end())
      it = map.emplace(name, Tensor(DType::F32, param.shape())).first;
    return it->second.data<float>();
  };
  if (c.kind == "sgd" || c.kind == "momentum" || c.kind == "nesterov") {
    bool useMomentum = c.kind != "sgd" && c.momentum != 0.0f;
    float *buf = useMomentum ? state(m_) : nullptr;
    for (int64_t i = 0; i < n; ++i) {
      float d = g[i] + c.weightDecay * p[i];
      if (useMomentum) {
        // torch: the buffer starts as the first gradient.
        buf[i] = t_ == 1 ? d : c.momentum * buf[i] + d;
        d = c.kind == "nesterov" ? d + c.momentum * buf[i] : buf[i];
      }
      p[i] -= c.lr * d;
    }
    return;
  }
  // Adam / AdamW (torch.optim semantics).
  float *m = state(m_), *v = state(v_);
  double bc1 = 1.0 - std::pow((double)c.beta1, (double)t_);
  double bc2 = 1.0 - std::pow((double)c.beta2, (double)t_);
  float stepSize = (float)(c.lr / bc1);
  float bc2Sqrt = (float)std::sqrt(bc2);
  for (int64_t i = 0; i < n; ++i) {
    float d = g[i];
    if (c.kind == "adamw")
      p[i] *= 1.0f - c.lr * c.weightDecay;
    else
      d += c.weightDecay * p[i];
    m[i] = c.beta1 * m[i] + (1.0f - c.beta1) * d;
    v[i] = c.beta2 * v[i] + (1.0f - c.beta2) * d * d;
    float denom = std::sqrt(v[i]) / bc2Sqrt + c.eps;
    p[i] -= stepSize * m[i] / denom;
  }
}

} // namespace mpc::rt
