//===- Optimizer.cpp - FP32 parameter updates for training ----------------===//

#include "runtime/Optimizer.h"

#include "runtime/Npy.h"

#include <cmath>
#include <filesystem>

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
  if (c.kind == "adagrad") { // torch.optim.Adagrad (no lr decay)
    float *sum = state(v_);
    for (int64_t i = 0; i < n; ++i) {
      float d = g[i] + c.weightDecay * p[i];
      sum[i] += d * d;
      p[i] -= c.lr * d / (std::sqrt(sum[i]) + 1e-10f);
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

namespace mpc::rt {

bool Optimizer::save(const std::string &dir, std::string &error) const {
  Tensor t(DType::I64, {});
  t.data<int64_t>()[0] = t_;
  if (!writeNpy(dir + "/opt.t.npy", t, error))
    return false;
  for (const auto &[prefix, map] :
       {std::pair{"opt.m.", &m_}, std::pair{"opt.v.", &v_}})
    for (const auto &[name, state] : *map)
      if (!writeNpy(dir + "/" + prefix + name + ".npy", state, error))
        return false;
  return true;
}

bool Optimizer::load(const std::string &dir, std::string &error) {
  Tensor t;
  if (!readNpy(dir + "/opt.t.npy", t, error))
    return false;
  t_ = t.getInt(0);
  m_.clear();
  v_.clear();
  for (const auto &entry : std::filesystem::directory_iterator(dir)) {
    std::string file = entry.path().filename().string();
    for (const auto &[prefix, map] :
         {std::pair{std::string("opt.m."), &m_},
          std::pair{std::string("opt.v."), &v_}})
      if (file.rfind(prefix, 0) == 0 && file.size() > prefix.size() + 4) {
        Tensor state;
        if (!readNpy(entry.path().string(), state, error))
          return false;
        (*map)[file.substr(prefix.size(), file.size() - prefix.size() - 4)] =
            std::move(state);
      }
  }
  return true;
}

} // namespace mpc::rt
