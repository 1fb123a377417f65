//===- Executor.cpp - runs a plan on the CPU ------------------------------===//

#include "runtime/Executor.h"
#include "runtime/Kernel.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <unordered_map>

namespace mpc::rt {
namespace {

std::unordered_map<std::string, Kernel> &registry() {
  static std::unordered_map<std::string, Kernel> kernels = [] {
    static std::unordered_map<std::string, Kernel> *target;
    std::unordered_map<std::string, Kernel> k;
    target = &k;
    auto add = [](const char *name, Kernel fn) { (*target)[name] = fn; };
    registerElementwiseKernels(add);
    registerLinalgKernels(add);
    registerNnKernels(add);
    registerShapeKernels(add);
    registerReduceKernels(add);
    registerTrainingKernels(add);
    return k;
  }();
  return kernels;
}

bool sameType(const Tensor &t, const ValueInfo &info) {
  return t.dtype() == info.dtype && t.shape() == info.shape;
}

std::string typeString(DType d, const Shape &s) {
  return std::string(dtypeName(d)) + shapeString(s);
}

/// Persistent across runs (training steps reuse the same sizes); bounded.
BufferPool &bufferPool() {
  static BufferPool pool;
  return pool;
}

constexpr size_t kMaxCachedBytes = size_t(2) << 30;

} // namespace

std::shared_ptr<uint8_t[]> BufferPool::take(size_t bytes) {
  auto it = free_.lower_bound(bytes);
  // Reuse a buffer of the same size class (at most 2x larger).
  if (it != free_.end() && it->first <= 2 * bytes) {
    auto buf = std::move(it->second);
    cached_ -= it->first;
    free_.erase(it);
    return buf;
  }
  size_t n = bytes;
  return std::shared_ptr<uint8_t[]>(
      static_cast<uint8_t *>(::operator new[](n, std::align_val_t(64))),
      [](uint8_t *p) { ::operator delete[](p, std::align_val_t(64)); });
}

void BufferPool::give(Tensor &t) {
  const auto &buf = t.storage();
  if (!buf || buf.use_count() != 1 || cached_ + t.bytes() > kMaxCachedBytes)
    return;
  cached_ += std::max<size_t>(t.bytes(), 1);
  free_.emplace(std::max<size_t>(t.bytes(), 1), buf);
  t = Tensor();
}

Kernel findKernel(const std::string &op) {
  auto it = registry().find(op);
  return it == registry().end() ? nullptr : it->second;
}

std::string firstUnsupportedOp(const Plan &plan) {
  for (const Step &s : plan.steps)
    if (!findKernel(s.op))
      return s.op;
  return "";
}

bool runPlan(const Plan &plan, const std::map<std::string, Tensor> &inputs,
             std::vector<Tensor> &outputs, std::string &error,
             RunStats *stats) {
  std::vector<Tensor> values(plan.values.size());
  for (const auto &[id, t] : plan.constants)
    values[id] = t;
  for (const Parameter &p : plan.params) {
    auto it = inputs.find(p.name);
    values[p.value] = it != inputs.end() ? it->second : p.init;
  }
  for (const Binding &b : plan.inputs) {
    auto it = inputs.find(b.name);
    if (it == inputs.end()) {
      const ValueInfo &info = plan.values[b.value];
      error = "missing input '" + b.name + "' (" +
              typeString(info.dtype, info.shape) + ")";
      return false;
    }
    const ValueInfo &info = plan.values[b.value];
    if (!sameType(it->second, info)) {
      error = "input '" + b.name + "': expected " +
              typeString(info.dtype, info.shape) + ", got " +
              typeString(it->second.dtype(), it->second.shape());
      return false;
    }
    values[b.value] = it->second;
  }
  // MPC_PROFILE=1 prints the time spent per op kind to stderr.
  static const bool profile = std::getenv("MPC_PROFILE") != nullptr;
  std::map<std::string, double> spent;
  // Last step reading each value: its buffer is recycled after that step
  // (plan inputs, parameters, constants and outputs are never recycled).
  std::vector<int> lastUse(plan.values.size(), -1);
  for (size_t s = 0; s < plan.steps.size(); ++s)
    for (int v : plan.steps[s].inputs)
      if (v >= 0)
        lastUse[v] = (int)s;
  std::vector<bool> pinned(plan.values.size(), false);
  for (const Binding &b : plan.inputs)
    pinned[b.value] = true;
  for (const Binding &b : plan.outputs)
    pinned[b.value] = true;
  for (const Parameter &p : plan.params)
    pinned[p.value] = true;
  for (const auto &[id, t] : plan.constants)
    pinned[id] = true;
  BufferPool &pool = bufferPool();
  for (size_t index = 0; index < plan.steps.size(); ++index) {
    const Step &step = plan.steps[index];
    auto start = std::chrono::steady_clock::now();
    Kernel kernel = findKernel(step.op);
    if (!kernel) {
      error = "node '" + step.name + "' (" + step.op +
              "): no CPU kernel for this op";
      return false;
    }
    KernelContext ctx(step, plan, values, &pool);
    try {
      kernel(ctx);
    } catch (const std::exception &e) {
      error = "node '" + step.name + "' (" + step.op + "): " + e.what();
      return false;
    }
    if (stats && step.has("mpc.count_underflow")) {
      const Tensor &in = values[step.inputs[0]], &out = values[step.outputs[0]];
      for (int64_t i = 0; i < in.size(); ++i)
        stats->underflow += in.getFloat(i) != 0.0f && out.getFloat(i) == 0.0f;
    }
    if (profile) {
      double ms = std::chrono::duration<double, std::milli>(
                      std::chrono::steady_clock::now() - start)
                      .count();
      spent[step.op] += ms;
      if (std::string(std::getenv("MPC_PROFILE")) == "steps")
        std::fprintf(stderr, "step: %-10.3f %s %s\n", ms, step.op.c_str(),
                     step.name.c_str());
    }
    for (int v : step.inputs)
      if (v >= 0 && lastUse[v] == (int)index && !pinned[v])
        pool.give(values[v]);
  }
  for (const auto &[op, ms] : spent)
    std::fprintf(stderr, "profile: %-28s %10.3f ms\n", op.c_str(), ms);
  outputs.clear();
  for (const Binding &b : plan.outputs)
    outputs.push_back(values[b.value]);
  return true;
}

} // namespace mpc::rt
