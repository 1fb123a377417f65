//===- TrainerParts.cpp - what Trainer.cpp and TrainPhases.cpp share ------===//

#include "runtime/TrainerParts.h"
#include "runtime/dist/ProcessGroup.h"

#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <numeric>
#include <random>

namespace mpc::rt {
namespace {

/// Rows `rows` of `t` (axis 0) as a new tensor.
Tensor gatherRows(const Tensor &t, const int64_t *rows, int64_t n) {
  Shape shape = t.shape();
  shape[0] = n;
  Tensor out(t.dtype(), shape);
  size_t rowBytes = t.bytes() / std::max<int64_t>(t.dim(0), 1);
  for (int64_t i = 0; i < n; ++i)
    std::memcpy(static_cast<char *>(out.raw()) + i * rowBytes,
                static_cast<const char *>(t.raw()) + rows[i] * rowBytes,
                rowBytes);
  return out;
}

} // namespace

namespace detail {

Batches::Batches(const std::map<std::string, Tensor> &data,
                 const TrainerOptions &o)
    : data_(data), options_(o),
      order_(data.empty() ? o.batch : data.begin()->second.dim(0)) {
  if (o.group)
    ranks_ = o.group->size(), rank_ = o.group->rank();
}

bool Batches::check(std::string &error) const {
  if ((int64_t)order_.size() >= options_.batch * ranks_)
    return true;
  return (error = "need at least one full batch of " +
                  std::to_string(options_.batch) + " samples" +
                  (ranks_ > 1
                       ? " for each of the " + std::to_string(ranks_) + " ranks"
                       : ""),
          false);
}

std::map<std::string, Tensor> Batches::at(int64_t step) {
  int64_t global = options_.batch * ranks_;
  int64_t perEpoch = (int64_t)order_.size() / global;
  int64_t epoch = step / perEpoch, k = step % perEpoch;
  if (epoch != epoch_) {
    std::iota(order_.begin(), order_.end(), 0);
    if (options_.shuffle) {
      std::mt19937_64 rng(options_.seed + epoch);
      std::shuffle(order_.begin(), order_.end(), rng);
    }
    epoch_ = epoch;
  }
  std::map<std::string, Tensor> batch;
  const int64_t *rows = order_.data() + k * global + rank_ * options_.batch;
  for (const auto &[name, t] : data_)
    batch[name] = gatherRows(t, rows, options_.batch);
  return batch;
}

Tensor scalar(DType t, double v) {
  Tensor s(t, {});
  if (isFloat(t))
    s.setFloat(0, (float)v);
  else
    s.setInt(0, (int64_t)v);
  return s;
}

std::string format(const char *fmt, ...) {
  char buf[512];
  va_list args;
  va_start(args, fmt);
  std::vsnprintf(buf, sizeof buf, fmt, args);
  va_end(args);
  return buf;
}

std::string metricsLine(const StepRecord &r, bool distributed) {
  std::string loss = std::isfinite(r.loss) ? format("%.9g", r.loss) : "null";
  std::string time = format(", \"step_ms\": %.3f", r.ms);
  if (r.lr)
    time = format(", \"lr\": %.9g", *r.lr) + time;
  if (r.emaDecay)
    time = format(", \"ema_decay\": %.9g", *r.emaDecay) + time;
  if (r.gradNorm)
    time = (std::isfinite(*r.gradNorm)
                ? format(", \"grad_norm\": %.9g", *r.gradNorm)
                : std::string(", \"grad_norm\": null")) +
           time;
  if (distributed)
    time += format(", \"comm_ms\": %.3f", r.commMs);
  const std::string topK = r.topKAccuracyKey();
  for (auto [key, value] :
       {std::pair<std::string, std::optional<double>>{"eval_loss", r.evalLoss},
        {"eval_loss_ema", r.evalLossEma},
        {"eval_accuracy", r.evalAccuracy},
        {"eval_accuracy_ema", r.evalAccuracyEma},
        {topK, r.evalTopKAccuracy},
        {topK + "_ema", r.evalTopKAccuracyEma}})
    if (value)
      time += std::isfinite(*value)
                  ? format(", \"%s\": %.9g", key.c_str(), *value)
                  : format(", \"%s\": null", key.c_str());
  return format("{\"step\": %lld, \"loss\": %s, \"loss_scale\": %.9g, "
                "\"skipped\": %s, \"grad_underflow\": %lld, "
                "\"grad_overflow\": %lld%s}\n",
                (long long)r.step, loss.c_str(), r.lossScale,
                r.skipped ? "true" : "false", (long long)r.underflow,
                (long long)r.overflow, time.c_str());
}

} // namespace detail

} // namespace mpc::rt
