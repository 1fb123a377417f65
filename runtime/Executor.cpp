//===- Executor.cpp - runs a plan on the CPU ------------------------------===//

#include "runtime/Executor.h"
#include "runtime/AppliedOnly.h"
#include "runtime/Kernel.h"
#include "runtime/OpTrace.h"
#include "runtime/WeightCopies.h"
#include "runtime/dist/ProcessGroup.h"

#include <algorithm>
#include <future>

#include <chrono>
#include <cstdio>
#include <cstdlib>

namespace mpc::rt {
namespace {

const KernelTable &kernels() {
  static const KernelTable table = [] {
    KernelTable t;
    registerElementwiseKernels(t);
    registerLinalgKernels(t);
    registerNnKernels(t);
    registerNormKernels(t);
    registerShapeKernels(t);
    registerResizeKernels(t);
    registerReduceKernels(t);
    registerTrainingKernels(t);
    registerAttentionKernels(t);
    requireEveryOp("CPU kernel", "runtime/kernels/",
                   [&](OpId op) { return t[op] != nullptr; });
    return t;
  }();
  return table;
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

/// Data-parallel gradient buckets: with several ranks, an all_reduce step
/// runs on a communication thread, started where it stands (right after
/// its bucket's last gradient) so that it overlaps the rest of the
/// backward pass; the first step reading its results waits for it. Its
/// inputs are kept (not recycled) until then. Each bucket's task first
/// waits for the previous one: every rank issues its collectives in the
/// same order, as gloo requires.
class Buckets {
public:
  Buckets(const Plan &plan, std::vector<int> &lastUse)
      : plan_(plan), group_(dist::currentGroup()) {
    if (!group_ || group_->size() == 1)
      return;
    waitAt_.assign(plan.steps.size() + 1, {});
    for (size_t i = 0; i < plan.steps.size(); ++i) {
      if (plan.steps[i].op != OpId::AllReduce)
        continue;
      const std::vector<int> &outs = plan.steps[i].outputs;
      size_t at = plan.steps.size();
      for (size_t j = i + 1; j < plan.steps.size() && at == plan.steps.size();
           ++j)
        for (int v : plan.steps[j].inputs)
          if (std::find(outs.begin(), outs.end(), v) != outs.end())
            at = j;
      waitAt_[at].push_back(i);
      for (int v : plan.steps[i].inputs)
        lastUse[v] = std::max(lastUse[v], (int)at);
    }
  }
  ~Buckets() { // an error left tasks running: they end before values do
    for (auto &[step, task] : running_)
      task.wait();
  }

  /// Starts step `index` on the communication thread if it is a bucket to
  /// reduce across ranks (its outputs allocated here); false otherwise.
  bool start(size_t index, KernelContext &ctx) {
    const Step &s = plan_.steps[index];
    if (waitAt_.empty() || s.op != OpId::AllReduce)
      return false;
    std::vector<const Tensor *> in;
    std::vector<Tensor *> out;
    for (size_t k = 0; k < ctx.numInputs(); ++k)
      in.push_back(&ctx.in(k));
    for (size_t k = 0; k < ctx.numOutputs(); ++k)
      out.push_back(&ctx.output(k));
    std::shared_future<std::string> previous = last_;
    last_ = std::async(std::launch::async, [=, group = group_,
                                            wire = s.getString("wire", "f32")] {
              if (previous.valid() && !previous.get().empty())
                return std::string("an earlier bucket failed");
              std::string error;
              allReduceBucket(in, out, wire, group, error);
              return error;
            }).share();
    running_[index] = last_;
    return true;
  }

  /// Waits for the buckets step `index` reads (steps.size(): all of them).
  bool waitBefore(size_t index, std::string &error) {
    if (waitAt_.empty())
      return true;
    for (size_t step : waitAt_[index]) {
      auto task = running_.find(step);
      if (task == running_.end())
        continue; // not sent this run (a micro-batch skipping the update)
      std::string e = task->second.get();
      running_.erase(task);
      if (!e.empty())
        return (error = "node '" + plan_.steps[step].name + "' (" +
                        opName(OpId::AllReduce) + "): " + e,
                false);
    }
    return true;
  }

private:
  const Plan &plan_;
  dist::ProcessGroup *group_;
  std::vector<std::vector<size_t>> waitAt_; // per step: buckets to wait for
  std::map<size_t, std::shared_future<std::string>> running_;
  std::shared_future<std::string> last_;
};

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

void KernelTable::add(OpId op, Kernel kernel) {
  if (kernels_[(size_t)op]) { // two families claiming one op
    std::fprintf(stderr, "mpc: internal error: two CPU kernels for mpc.%s\n",
                 opName(op));
    std::abort();
  }
  kernels_[(size_t)op] = kernel;
}

Kernel findKernel(OpId op) { return kernels()[op]; }

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
  // Weight copies not given: cast from their masters (runtime/WeightCopies.h).
  std::vector<bool> derived(plan.values.size(), false);
  for (const WeightCopy &c : weightCopies(plan))
    if (!inputs.count(c.input)) {
      values[c.value] =
          castCopy(values[c.master->value], plan.values[c.value].dtype);
      derived[c.value] = true;
    }
  for (const Binding &b : plan.inputs) {
    if (derived[b.value])
      continue;
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
  Buckets buckets(plan, lastUse);
  // A micro-batch that does not apply the group's update skips what only
  // the update needs (runtime/AppliedOnly.h); its outputs stay unset.
  const int flag = appliedOnlyFlag(plan);
  const bool skipApplied = flag >= 0 && values[flag].getInt(0) == 0;
  for (size_t index = 0; index < plan.steps.size(); ++index) {
    const Step &step = plan.steps[index];
    auto start = std::chrono::steady_clock::now();
    KernelContext ctx(step, plan, values, &pool);
    if (!buckets.waitBefore(index, error))
      return false;
    if (skipApplied && step.appliedOnly)
      continue;
    try {
      if (!buckets.start(index, ctx))
        findKernel(step.op)(ctx);
    } catch (const std::exception &e) {
      error = "node '" + step.name + "' (" + opName(step.op) + "): " + e.what();
      return false;
    }
    if (stats && step.countUnderflow) {
      const Tensor &in = values[step.inputs[0]], &out = values[step.outputs[0]];
      for (int64_t i = 0; i < in.size(); ++i)
        stats->underflow += in.getFloat(i) != 0.0f && out.getFloat(i) == 0.0f;
    }
    if (profile) {
      double ms = std::chrono::duration<double, std::milli>(
                      std::chrono::steady_clock::now() - start)
                      .count();
      spent[opName(step.op)] += ms;
      if (std::string(std::getenv("MPC_PROFILE")) == "steps")
        std::fprintf(stderr, "step: %-10.3f %s %s\n", ms, opName(step.op),
                     step.name.c_str());
    }
    for (int v : step.inputs)
      if (v >= 0 && lastUse[v] == (int)index && !pinned[v])
        pool.give(values[v]);
  }
  if (!buckets.waitBefore(plan.steps.size(), error))
    return false;
  for (const auto &[op, ms] : spent)
    std::fprintf(stderr, "profile: %-28s %10.3f ms\n", op.c_str(), ms);
  outputs.clear();
  for (const Binding &b : plan.outputs)
    outputs.push_back(values[b.value]);
  if (stats)
    stats->skippedApplied = skipApplied;
  traceOps("cpu", plan);
  return true;
}

} // namespace mpc::rt
