//===- TrainPhases.cpp - the phases of a GAN-style step, in order ---------===//
//
// `mpc train --phase` (or --recipe): each phase is a Trainer with its own
// plan, session, optimizer and loss scale (or one shared scale); every
// step runs them in order on the same batch, and a phase's updated
// parameters are handed to the later phases' sessions.
//
//===----------------------------------------------------------------------===//

#include "runtime/Checkpoint.h"
#include "runtime/PlanIO.h"
#include "runtime/Trainer.h"
#include "runtime/TrainerParts.h"
#include "runtime/dist/ProcessGroup.h"

#include <algorithm>
#include <chrono>
#include <cmath>

namespace mpc::rt {

using namespace detail;

bool Trainer::SharedScaler::init(const std::vector<Trainer *> &phases,
                                 std::string &error) {
  // GradScaler.update's settings, from the first phase's update step (the
  // phases are built with the same --loss-scale).
  for (const Step &st : phases.front()->plan_.steps)
    if (st.op == OpId::UpdateLossScale) {
      growth = st.getFloat("growth", 2.0);
      backoff = st.getFloat("backoff", 0.5);
      interval = st.getInt("interval", 2000);
      minScale = st.getFloat("min_scale", 1.0);
      maxScale = st.getFloat("max_scale", 16777216.0);
      Trainer &first = *phases.front();
      scale = first.scale_;
      good = first.state_["mpc.loss_scale_good_steps"].getInt(0);
      return true;
    }
  return (error = "--loss-scaler shared needs dynamic loss scaling "
                  "(--loss-scale dynamic, the fp16 default)",
          false);
}

std::map<std::string, Tensor>
Trainer::SharedScaler::state(Trainer &t) const {
  t.scale_ = scale; // what this phase's record reports
  return {{"mpc.loss_scale", scalar(DType::F32, scale)},
          {"mpc.loss_scale_good_steps", scalar(DType::I64, (double)good)}};
}

void Trainer::SharedScaler::update(const std::vector<Trainer *> &phases,
                                   bool overflow) {
  if (overflow) {
    scale *= backoff;
    good = 0;
  } else if (++good >= interval) {
    scale *= growth;
    good = 0;
  }
  scale = std::clamp(scale, minScale, maxScale);
  scale = (float)scale; // the plan holds it in FP32
  for (Trainer *t : phases) { // what checkpoints save
    t->state_["mpc.loss_scale"] = scalar(DType::F32, scale);
    t->state_["mpc.loss_scale_good_steps"] = scalar(DType::I64, (double)good);
    t->scale_ = scale;
  }
}

bool Trainer::phaseLayouts(const std::vector<const Plan *> &plans,
                           StoredLayouts &layouts, std::string &error) {
  for (size_t k = 0; k < plans.size(); ++k)
    for (const auto &[name, perm] : plans[k]->layouts) {
      bool param = false;
      for (const Parameter &p : plans[k]->params)
        param |= p.name == name;
      std::string key = param ? name : "phase" + std::to_string(k) + "." + name;
      if (layouts.count(key) && layouts[key] != perm)
        return (error = "phases keep parameter '" + name +
                        "' in different layouts",
                false);
      layouts[key] = perm;
    }
  return true;
}

bool Trainer::trainPhases(const std::vector<Trainer *> &phases,
                          const std::vector<std::string> &names,
                          const std::map<std::string, Tensor> &data,
                          std::map<std::string, Tensor> &params,
                          std::string &error) {
  const TrainerOptions &o = phases.front()->options_;
  Batches batches(data, o);
  if (!batches.check(error))
    return false;
  // One checkpoint holds every phase: the parameters (each phase owns its
  // own) and each phase's state under "phase<k>." (the optimizer's step
  // count and the loss scale have the same names in every phase).
  bool resume = o.resume;
  for (Trainer *t : phases)
    t->options_.resume = false;
  // What the checkpoint holds in ONNX's layout.
  std::vector<const Plan *> plans;
  for (const Trainer *t : phases)
    plans.push_back(&t->plan_);
  StoredLayouts layouts;
  if (!phaseLayouts(plans, layouts, error))
    return false;
  for (size_t k = 0; k < phases.size(); ++k) {
    int64_t first;
    if (!phases[k]->setUp(data, params, first, error))
      return (error = "phase " + names[k] + ": " + error, false);
  }
  auto phaseState = [&](std::map<std::string, Tensor> &all) {
    for (size_t k = 0; k < phases.size(); ++k)
      for (auto &[name, t] : phases[k]->state_)
        all["phase" + std::to_string(k) + "." + name] = t;
  };
  int64_t first = 0;
  if (resume) {
    std::map<std::string, Tensor> state;
    phaseState(state);
    if (!loadCheckpoint(o.checkpointDir, first, params, state, layouts, error))
      return (error = "cannot resume from " + o.checkpointDir + ": " + error,
              false);
    for (size_t k = 0; k < phases.size(); ++k) {
      Trainer &t = *phases[k];
      for (auto &[name, v] : t.state_)
        v = state["phase" + std::to_string(k) + "." + name];
      if (t.state_.count("mpc.loss_scale"))
        t.scale_ = t.state_["mpc.loss_scale"].getFloat(0);
      if (!t.toSession(params, error) || !t.toSession(t.state_, error))
        return false;
    }
    if (o.progress)
      o.print("resumed from " + o.checkpointDir + " at step " +
              std::to_string(first) + "\n");
  }
  bool lead = !o.group || o.group->rank() == 0;
  SharedScaler shared;
  if (o.sharedLossScale && !shared.init(phases, error))
    return false;
  std::string log;
  auto start = std::chrono::steady_clock::now();
  // The next step's batch is gathered while the first phase runs and
  // prefetched into each phase's session while that phase runs, as
  // train() does.
  bool prefetched = false;
  std::map<std::string, Tensor> next;
  for (int64_t s = first; s < o.steps; ++s) {
    // A phase's step_ms counts its share of the loop as train()'s does:
    // the first phase's includes slicing the batch, each phase's includes
    // handing its updated weights to the other phases.
    auto t0 = std::chrono::steady_clock::now();
    std::map<std::string, Tensor> batch;
    if (!prefetched)
      batch = batches.at(s);
    prefetched = s + 1 < o.steps;
    std::string line = format("step %lld/%lld", (long long)s + 1,
                              (long long)o.steps);
    bool anyOverflow = false;
    for (size_t p = 0; p < phases.size(); ++p) {
      Trainer &t = *phases[p];
      if (p > 0)
        t0 = std::chrono::steady_clock::now();
      std::map<std::string, Tensor> feeds = batch;
      if (o.sharedLossScale)
        feeds.merge(shared.state(t));
      StepRecord r;
      t.addOptimizerScalars(feeds, r, s);
      feeds.merge(randomScalars(t.plan_, s, o.group ? o.group->rank() : 0));
      WhileRunning prefetch = nullptr;
      if (prefetched)
        prefetch = [&, p, s](std::string &e) {
          if (p == 0)
            next = batches.at(s + 1);
          return t.prefetchToSession(next, e);
        };
      if (!t.step(s, feeds, r, error, prefetch))
        return (error = "phase " + names[p] + ": " + error, false);
      anyOverflow |= r.skipped;
      // The parameters this phase updated, into the other phases (on a
      // GPU device to device).
      for (const auto &[index, name] : t.protocol_.weights)
        for (Trainer *other : phases)
          if (other != &t && valueOfName(other->plan_, name) >= 0 &&
              !other->session_.setFrom(t.session_, name, name, error))
            return false;
      r.ms = std::chrono::duration<double, std::milli>(
                 std::chrono::steady_clock::now() - t0)
                 .count();
      t.history_.push_back(r);
      double seconds = std::chrono::duration<double>(
                           std::chrono::steady_clock::now() - start)
                           .count();
      std::string m = metricsLine(r, o.group != nullptr);
      log += "{\"phase\": \"" + names[p] + "\", " + m.substr(1);
      line += format("  %s %.6f", names[p].c_str(), r.loss);
      if (t.scaling_)
        line += format(" (scale %g%s)", r.lossScale,
                       r.skipped ? ", skipped" : "");
      if (t.options_.onStep)
        t.options_.onStep(r, (s + 1) * o.batch / std::max(seconds, 1e-9));
      if (!t.scaling_ && !std::isfinite(r.loss))
        return (error = "phase " + names[p] + ": loss is not finite at step " +
                        std::to_string(s + 1) + "; lower --lr",
                false);
    }
    if (o.sharedLossScale)
      shared.update(phases, anyOverflow);
    // Samples from the last phase's forward pass.
    if (!phases.back()->sample(s + 1, error))
      return false;
    if (o.progress && (s == 0 || (s + 1) % 10 == 0 || s + 1 == o.steps))
      o.print(line + "\n");
    if (lead && !o.checkpointDir.empty() &&
        ((s + 1) % o.checkpointEvery == 0 || s + 1 == o.steps)) {
      // Every parameter (frozen ones as they started), as phases left them.
      std::map<std::string, Tensor> weights = params, state;
      for (Trainer *t : phases)
        for (const auto &[index, name] : t->protocol_.weights)
          if (!t->session_.get(name, weights[name], error))
            return false;
      for (Trainer *t : phases)
        if (!t->fromSession(t->state_, error))
          return false;
      phaseState(state);
      if (!saveCheckpoint(o.checkpointDir, s + 1, weights, state, layouts,
                          error))
        return false;
    }
  }
  // Every parameter as the last phase that updated it left it.
  for (Trainer *t : phases)
    for (const auto &[index, name] : t->protocol_.weights)
      if (!t->session_.get(name, params[name], error))
        return false;
  for (Trainer *t : phases)
    if (!t->checkRanksAgree(error))
      return false;
  return o.metricsPath.empty() ||
         writeFileAtomically(o.metricsPath, log, error);
}

} // namespace mpc::rt
