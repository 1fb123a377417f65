//===- Optimizer.h - FP32 parameter updates for training ----------*- C++ -*-===//

#ifndef MPC_RUNTIME_OPTIMIZER_H
#define MPC_RUNTIME_OPTIMIZER_H

#include "runtime/Tensor.h"

#include <map>
#include <string>

namespace mpc::rt {

struct OptimizerConfig {
  std::string kind = "sgd"; // sgd|momentum|nesterov|adam|adamw|adagrad
  float lr = 0.01f;
  float momentum = 0.9f;
  float weightDecay = 0.0f;
  float beta1 = 0.9f, beta2 = 0.999f, eps = 1e-8f;
};

/// Applies one update to FP32 master parameters with PyTorch's semantics
/// (torch.optim.SGD with momentum/nesterov and L2 weight decay, Adam,
/// AdamW, Adagrad), keeping its state (buffers, moments, step count).
class Optimizer {
public:
  explicit Optimizer(OptimizerConfig config) : config_(std::move(config)) {}

  /// param -= update(grad); both FP32 and of one shape.
  void step(const std::string &name, Tensor &param, const Tensor &grad);
  /// Call once per training step, before the step() calls.
  void beginStep() { ++t_; }

  /// Saves / restores the state (step count, buffers) as .npy files in
  /// `dir` (prefix "opt."); false with `error` on failure.
  bool save(const std::string &dir, std::string &error) const;
  bool load(const std::string &dir, std::string &error);

private:
  OptimizerConfig config_;
  int64_t t_ = 0;
  std::map<std::string, Tensor> m_, v_;
};

} // namespace mpc::rt

#endif // MPC_RUNTIME_OPTIMIZER_H
