//===- TrainProtocol.cpp - how a train step hands state to the next -------===//

#include "runtime/TrainProtocol.h"
#include "runtime/WeightCopies.h"

#include <algorithm>
#include <cmath>

namespace mpc::rt {

static bool startsWith(const std::string &s, const char *prefix) {
  return s.rfind(prefix, 0) == 0;
}

TrainProtocol::TrainProtocol(const Plan &plan) {
  for (size_t i = 0; i < plan.outputs.size(); ++i) {
    const std::string &name = plan.outputs[i].name;
    if (name == "mpc.found_inf")
      foundInf = (int)i;
    else if (name == "mpc.grad_norm")
      gradNorm = (int)i;
    else if (startsWith(name, "mpc.new.") &&
             valueOfName(plan, name.substr(8)) >= 0)
      weights.emplace_back(i, name.substr(8));
    else if (isWeightCopy(plan, name))
      weightCopies.emplace_back(i, name);
    else if (startsWith(name, "mpc.opt.") && valueOfName(plan, name) >= 0)
      optimizerState.emplace_back(i, name);
    else if (startsWith(name, "mpc.loss_scale") && valueOfName(plan, name) >= 0)
      scaleState.emplace_back(i, name);
    else if (startsWith(name, "mpc.accum.") && valueOfName(plan, name) >= 0)
      accumState.emplace_back(i, name);
    else if (startsWith(name, "mpc.ema.") && valueOfName(plan, name) >= 0)
      emaState.emplace_back(i, name);
  }
  for (const auto &entry : weights)
    if (!plan.train ||
        std::none_of(plan.train->gradients.begin(), plan.train->gradients.end(),
                     [&](const auto &g) { return g.second == entry.second; }))
      statistics.push_back(entry);
}

bool TrainProtocol::advance(Session &s, bool taken, bool moved,
                            std::string &error) const {
  for (const auto *list : {&scaleState, &accumState})
    for (const auto &[index, name] : *list)
      if (!s.feedBack(index, name, error))
        return false;
  // The step moved the average toward the weights it keeps; without an
  // all-finite flag (the CPU backend's unscaled steps) the host's skip of
  // a step with non-finite gradients must keep the average too.
  if (foundInf >= 0 || moved)
    for (const auto &[index, name] : emaState)
      if (!s.feedBack(index, name, error))
        return false;
  for (const auto &entry : weights) {
    bool statistic = std::find(statistics.begin(), statistics.end(), entry) !=
                     statistics.end();
    if ((statistic ? moved : taken) &&
        !s.feedBack(entry.first, entry.second, error))
      return false;
  }
  if (!taken)
    return true;
  for (const auto *list : {&weightCopies, &optimizerState})
    for (const auto &[index, name] : *list)
      if (!s.feedBack(index, name, error))
        return false;
  return true;
}

double scheduledLr(const Plan &plan, int64_t t, float baseLr,
                   int64_t runSteps) {
  if (!plan.train || !plan.train->lrSchedule)
    return baseLr;
  return (double)baseLr * plan.train->lrSchedule->factor(t, runSteps);
}

std::map<std::string, Tensor> optimizerScalars(const Plan &plan, int64_t t,
                                               double lr) {
  std::map<std::string, Tensor> feeds;
  if (valueOfName(plan, "mpc.opt.lr") >= 0) {
    Tensor rate(DType::F32, {});
    rate.setFloat(0, (float)lr);
    feeds["mpc.opt.lr"] = rate;
  }
  if (valueOfName(plan, "mpc.opt.first") >= 0) {
    Tensor first(DType::I1, {});
    first.data<uint8_t>()[0] = t == 1;
    feeds["mpc.opt.first"] = first;
  }
  if (valueOfName(plan, "mpc.opt.step_size") >= 0) {
    // The FP32 betas the IR uses (mpc-optimizer records them), in double.
    TrainInfo info = plan.train.value_or(TrainInfo());
    double bc1 = 1.0 - std::pow((double)info.adamBeta1, (double)t);
    double bc2 = 1.0 - std::pow((double)info.adamBeta2, (double)t);
    Tensor stepSize(DType::F32, {}), bc2Sqrt(DType::F32, {});
    stepSize.setFloat(0, (float)(lr / bc1));
    bc2Sqrt.setFloat(0, (float)std::sqrt(bc2));
    feeds["mpc.opt.step_size"] = stepSize;
    feeds["mpc.opt.bc2_sqrt"] = bc2Sqrt;
  }
  return feeds;
}

std::optional<double> emaDecay(const Plan &plan, int64_t update) {
  if (!plan.train || !plan.train->emaWarmup)
    return std::nullopt;
  const TrainInfo::EmaWarmup &w = *plan.train->emaWarmup;
  const double step = (double)std::max<int64_t>(0, update - 1);
  if (step <= 0)
    return 0.0;
  const double warm = w.numUpdates
                          ? (1.0 + step) / (10.0 + step)
                          : 1.0 - std::pow(1.0 + step / w.gamma, -w.power);
  return std::max(0.0, std::min(w.decay, warm));
}

std::map<std::string, Tensor> emaScalars(const Plan &plan,
                                         std::optional<double> decay) {
  std::map<std::string, Tensor> feeds;
  if (decay && valueOfName(plan, "mpc.ema_rate") >= 0) {
    Tensor rate(DType::F32, {});
    rate.setFloat(0, (float)(1.0 - *decay));
    feeds["mpc.ema_rate"] = rate;
  }
  return feeds;
}

std::map<std::string, Tensor> randomScalars(const Plan &plan, int64_t step,
                                            int64_t rank) {
  std::map<std::string, Tensor> feeds;
  if (valueOfName(plan, "mpc.rng.step") >= 0) {
    Tensor s(DType::I64, {2});
    s.setInt(0, step);
    s.setInt(1, rank);
    feeds["mpc.rng.step"] = s;
  }
  return feeds;
}

} // namespace mpc::rt
