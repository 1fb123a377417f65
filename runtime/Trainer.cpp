//===- Trainer.cpp - the training loop over a train-step plan -------------===//

#include "runtime/Trainer.h"
#include "runtime/TrainerParts.h"
#include "runtime/Checkpoint.h"
#include "runtime/PlanIO.h"
#include "runtime/WeightCopies.h"
#include "runtime/dist/ProcessGroup.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <unistd.h>

namespace mpc::rt {
namespace {

/// FNV-1a over bytes: the ranks compare their weights by it.
uint64_t fnv1a(const void *data, size_t n, uint64_t h) {
  const auto *p = static_cast<const unsigned char *>(data);
  for (size_t i = 0; i < n; ++i)
    h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

} // namespace

using namespace detail;

Trainer::Trainer(const Plan &plan, Session &session, TrainerOptions options)
    : plan_(plan), session_(session), options_(std::move(options)),
      protocol_(plan) {
  if (plan.train)
    lossOutput_ = plan.train->loss;
}

void Trainer::useBindings(std::vector<std::pair<std::string, size_t>> bindings,
                          int lossOutput) {
  bindings_ = std::move(bindings);
  algorithm_ = true;
  lossOutput_ = lossOutput;
}

bool Trainer::toSession(const std::map<std::string, Tensor> &m,
                        std::string &error) {
  for (const auto &[name, t] : m)
    if (valueOfName(plan_, name) >= 0 && !session_.set(name, t, error))
      return false;
  return true;
}

bool Trainer::prefetchToSession(const std::map<std::string, Tensor> &m,
                                std::string &error) {
  for (const auto &[name, t] : m)
    if (valueOfName(plan_, name) >= 0 && !session_.prefetch(name, t, error))
      return false;
  return true;
}

bool Trainer::fromSession(std::map<std::string, Tensor> &m,
                          std::string &error) {
  for (auto &[name, t] : m)
    if (valueOfName(plan_, name) >= 0 && !session_.get(name, t, error))
      return false;
  return true;
}

/// Initial optimizer and loss-scale state (or the checkpoint's), all of it
/// and the weights put in the session.
bool Trainer::setUp(const std::map<std::string, Tensor> &data,
                    std::map<std::string, Tensor> &params, int64_t &first,
                    std::string &error) {
  if (lossOutput_ < 0 || lossOutput_ >= (int)plan_.outputs.size())
    return (error = "the plan is not a train step (no loss output)", false);
  double scale = plan_.train ? plan_.train->lossScaleInit : 1.0;
  for (const Binding &in : plan_.inputs) {
    if (in.name == "mpc.loss_scale")
      state_[in.name] = scalar(DType::F32, scale);
    else if (in.name == "mpc.loss_scale_good_steps")
      state_[in.name] = scalar(DType::I64, 0);
    else if (in.name.rfind("mpc.opt.", 0) == 0 || in.name == "mpc.rng.step" ||
             in.name.rfind("mpc.accum.", 0) == 0 ||
             in.name.rfind("mpc.ema.", 0) == 0 || in.name == "mpc.ema_rate")
      continue; // optimizer state, accumulators, the average (below),
                // per-step scalars
    else if (isWeightCopy(plan_, in.name))
      continue; // the session casts it from its master
    else if (!data.count(in.name))
      return (error = "no --data for graph input '" + in.name + "'", false);
  }
  for (const auto &[index, name] : protocol_.optimizerState) {
    const ValueInfo &v = plan_.values[valueOfName(plan_, name)];
    state_[name] = Tensor(v.dtype, v.shape); // zeros
  }
  // A group's first micro-batch reads its accumulators as zero
  // (mpc.accum.first): not state a checkpoint needs. They start as zeros,
  // the session needing a value.
  std::map<std::string, Tensor> accumulators;
  for (const auto &[index, name] : protocol_.accumState) {
    const ValueInfo &v = plan_.values[valueOfName(plan_, name)];
    accumulators[name] = Tensor(v.dtype, v.shape);
  }
  // The moving average starts at the initial weights (timm's ModelEmaV2
  // copies the model); a checkpoint holds it.
  for (const auto &[index, name] : protocol_.emaState) {
    auto p = params.find(name.substr(std::strlen("mpc.ema.")));
    if (p == params.end())
      return (error = "no initial value for '" + name + "'", false);
    Tensor copy(p->second.dtype(), p->second.shape());
    std::memcpy(copy.raw(), p->second.raw(), copy.bytes());
    state_[name] = std::move(copy);
  }
  // Optimizer steps taken (skipped steps do not count, as in torch), for
  // the per-step scalars.
  state_["mpc.opt.t"] = Tensor(DType::I64, {});
  first = 0;
  if (options_.resume) {
    if (!loadCheckpoint(options_.checkpointDir, first, params, state_,
                        plan_.layouts, error))
      return (error = "cannot resume from " + options_.checkpointDir + ": " +
                      error,
              false);
    if (options_.progress)
      options_.print("resumed from " + options_.checkpointDir + " at step " +
                     std::to_string(first) + "\n");
  }
  scaling_ = state_.count("mpc.loss_scale") ||
             (protocol_.foundInf >= 0 && options_.lossScaleMode != "none");
  scale_ = state_.count("mpc.loss_scale") ? state_["mpc.loss_scale"].getFloat(0)
                                          : scale;
  // Weights and state live in the session from here on (on the GPU for a
  // CUDA session); read back for checkpoints and at the end.
  // Every rank starts from the same model or checkpoint: checked by hash
  // (cheaper than DDP's broadcast of the weights, and it catches a rank
  // given another file).
  if (!sameWeights(params, "at the start (another model or checkpoint?)",
                   error))
    return false;
  if (options_.group)
    options_.group->beginTraining(); // --collective-timeout from here
  if (options_.group)
    options_.group->takeCommSeconds(); // steps report their own
  // What every step reads back, fetched with the step's end.
  std::vector<size_t> everyStep = {(size_t)lossOutput_};
  if (protocol_.foundInf >= 0)
    everyStep.push_back((size_t)protocol_.foundInf);
  if (protocol_.gradNorm >= 0)
    everyStep.push_back((size_t)protocol_.gradNorm);
  for (const auto &[index, name] : protocol_.scaleState)
    everyStep.push_back((size_t)index);
  session_.readAfterEveryRun(everyStep);
  return toSession(params, error) && toSession(state_, error) &&
         toSession(accumulators, error);
}

bool Trainer::sameWeights(const std::map<std::string, Tensor> &weights,
                          const char *when, std::string &error) {
  dist::ProcessGroup *g = options_.group;
  if (!g || g->size() == 1)
    return true;
  uint64_t h = 1469598103934665603ull;
  for (const auto &[name, t] : weights) // the same order on every rank
    if (valueOfName(plan_, name) >= 0)
      h = fnv1a(t.raw(), t.bytes(), h);
  uint64_t lead = h;
  if (!g->broadcast(&lead, sizeof lead, 0, error))
    return false;
  int64_t differ = lead != h;
  if (!g->allReduce(&differ, 1, error))
    return false;
  if (differ)
    return (error = "the weights of " + std::to_string(differ) + " of " +
                    std::to_string(g->size()) + " ranks differ from rank 0's " +
                    when,
            false);
  if (options_.progress && std::string(when) == "after training")
    options_.print(format("weights identical on all %d ranks (fnv1a %016llx)\n",
                          g->size(), (unsigned long long)h));
  return true;
}

bool Trainer::checkRanksAgree(std::string &error) {
  if (!options_.group || options_.group->size() == 1)
    return true;
  std::map<std::string, Tensor> weights;
  for (const auto &[index, name] : protocol_.weights)
    weights[name];
  return fromSession(weights, error) &&
         sameWeights(weights, "after training", error);
}

void Trainer::addOptimizerScalars(std::map<std::string, Tensor> &feeds,
                                  StepRecord &r, int64_t s) {
  const int64_t t = state_["mpc.opt.t"].getInt(0) + 1;
  const double lr = scheduledLr(plan_, t, options_.lr, options_.steps);
  if (plan_.train && plan_.train->lrSchedule)
    r.lr = lr;
  feeds.merge(optimizerScalars(plan_, t, lr));
  // The average moves every update, skipped ones too: counted by s.
  r.emaDecay = emaDecay(plan_, s + 1);
  feeds.merge(emaScalars(plan_, r.emaDecay));
}

/// Runs step `s` (0-based) on `feeds` and moves the state on: the loss
/// scale always, weights and optimizer state unless the step is skipped.
bool Trainer::step(int64_t s, const std::map<std::string, Tensor> &feeds,
                   StepRecord &r, std::string &error,
                   const WhileRunning &whileRunning, bool apply) {
  if (options_.group)
    options_.group->stepStarted(s + 1);
  bool ok = runStep(s, feeds, r, error, whileRunning, apply);
  if (options_.group)
    options_.group->stepEnded();
  return ok;
}

bool Trainer::runStep(int64_t s, const std::map<std::string, Tensor> &feeds,
                      StepRecord &r, std::string &error,
                      const WhileRunning &whileRunning, bool apply) {
  if (!toSession(feeds, error))
    return false;
  if (!session_.start(error) || (whileRunning && !whileRunning(error)) ||
      !session_.finish(error))
    return (error = "step " + std::to_string(s + 1) + ": " + error, false);
  // Step health: the all-finite flag, and the non-finite gradient elements
  // (read back only when the flag is up, or there is none); a step with
  // any is skipped, so inf/NaN never reaches the master weights.
  Tensor loss, flag;
  if (!session_.output(lossOutput_, loss, error) ||
      (protocol_.foundInf >= 0 &&
       !session_.output(protocol_.foundInf, flag, error)))
    return false;
  bool flagged = protocol_.foundInf >= 0 && flag.getInt(0);
  r.overflow = 0;
  if ((protocol_.foundInf < 0 || flagged) && plan_.train)
    for (const auto &[index, name] : plan_.train->gradients) {
      Tensor g;
      if (!session_.output(index, g, error))
        return false;
      for (int64_t i = 0; i < g.size(); ++i)
        r.overflow += !std::isfinite(g.getFloat(i));
    }
  r.step = s + 1;
  r.loss = loss.getFloat(0);
  if (protocol_.gradNorm >= 0 && apply) { // the group's summed gradients
    Tensor norm;
    if (!session_.output(protocol_.gradNorm, norm, error))
      return false;
    r.gradNorm = norm.getFloat(0);
  }
  // (A group of micro-batches is skipped when any had some: the
  // accumulators summed them.)
  groupOverflow_ += r.overflow;
  r.skipped = groupOverflow_ > 0 || flagged;
  if (apply)
    groupOverflow_ = 0;
  r.lossScale = scale_;
  if (algorithm_) {
    for (const auto &[name, index] : bindings_)
      if (!session_.feedBack(index, name, error))
        return false;
  } else {
    // Statistics move with each micro-batch whose gradients were finite.
    if (!protocol_.advance(session_, apply && !r.skipped,
                           !flagged && r.overflow == 0, error))
      return false;
    if (apply && !r.skipped)
      state_["mpc.opt.t"].setInt(0, state_["mpc.opt.t"].getInt(0) + 1);
  }
  // The loss-scale state is read back (two scalars): it moves every step.
  for (const auto &[index, name] : protocol_.scaleState)
    if (!session_.output(index, state_[name], error))
      return false;
  if (state_.count("mpc.loss_scale"))
    scale_ = state_["mpc.loss_scale"].getFloat(0);
  r.underflow = session_.underflow();
  // The ranks' gradients, flag and loss scale agree (the plan averaged
  // them); the loss and the flushed-to-zero count are each rank's own.
  // The plan averages the loss with the last gradient bucket; what is
  // left is the flushed-to-zero count of a low-precision step.
  if (dist::ProcessGroup *g = options_.group; g && g->size() > 1) {
    bool lossAveraged = false, counts = false;
    for (const Step &st : plan_.steps) {
      counts |= st.countUnderflow;
      if (st.op == OpId::AllReduce)
        for (int v : st.outputs)
          lossAveraged |= v == plan_.outputs[lossOutput_].value;
    }
    if (!lossAveraged || counts) {
      double sums[2] = {r.loss, (double)r.underflow}; // one collective
      if (!g->allReduce(sums, 2, error))
        return (error = "step " + std::to_string(s + 1) + ": " + error, false);
      if (!lossAveraged)
        r.loss = (float)(sums[0] / g->size());
      r.underflow = (int64_t)sums[1];
    }
    r.commMs = g->takeCommSeconds() * 1e3;
  }
  return true;
}

void Trainer::report(const StepRecord &r, int64_t first,
                     double seconds) const {
  static const bool tty = isatty(STDOUT_FILENO);
  bool last = r.step == options_.steps;
  if (!options_.progress ||
      !(tty || last || r.step % 10 == 0 || r.step == 1 || r.evalLoss))
    return;
  std::string line;
  if (tty) { // a drawn bar on a terminal, updated in place
    int filled = (int)(24 * r.step / options_.steps);
    line = "\r[" + std::string(filled, '#') + std::string(24 - filled, '.') +
           "] ";
  }
  int ranks = options_.group ? options_.group->size() : 1;
  line += format("step %lld/%lld  loss %.6f  %.0f samples/s",
                 (long long)r.step, (long long)options_.steps, r.loss,
                 (r.step - first) * options_.batch * microBatches() * ranks /
                     std::max(seconds, 1e-9));
  if (scaling_)
    line += format("  scale %g%s", r.lossScale, r.skipped ? " (skipped)" : "");
  auto accuracy = [&](const std::optional<double> &a,
                      const std::optional<double> &topK) {
    return (a ? format(" accuracy %.4f", *a) : std::string()) +
           (topK ? format(" top-%lld %.4f", (long long)r.evalTopK, *topK)
                 : std::string());
  };
  if (r.evalLoss) // stays on a terminal: the bar moves on below it
    line += format(
        "  eval loss %.6f%s%s (%lld samples)", *r.evalLoss,
        accuracy(r.evalAccuracy, r.evalTopKAccuracy).c_str(),
        r.evalLossEma
            ? format(", average %.6f%s", *r.evalLossEma,
                     accuracy(r.evalAccuracyEma, r.evalTopKAccuracyEma).c_str())
                  .c_str()
            : "",
        (long long)r.evalRows);
  options_.print(line + (tty && !last && !r.evalLoss ? "" : "\n"));
}

bool Trainer::evaluate(StepRecord &r, std::string &error) {
  if (!options_.evaluate ||
      !(r.step == options_.steps ||
        (options_.evalEvery > 0 && r.step % options_.evalEvery == 0)))
    return true;
  auto t0 = std::chrono::steady_clock::now();
  // The model, then its moving average (--ema), summed over the ranks.
  TrainerOptions::EvalSums of[2];
  bool average = !protocol_.emaState.empty();
  constexpr int kSums = 5;
  double sums[2 * kSums];
  if (!options_.evaluate(session_, "", of[0], error) ||
      (average && !options_.evaluate(session_, "mpc.ema.", of[1], error)))
    return (error = "evaluating after step " + std::to_string(r.step) + ": " +
                    error,
            false);
  for (int k = 0; k < 2; ++k) {
    double *at = sums + kSums * k;
    at[0] = of[k].lossSum;
    at[1] = of[k].rows;
    at[2] = of[k].correct;
    at[3] = of[k].counted;
    at[4] = of[k].correctTopK;
  }
  if (options_.group && !options_.group->allReduce(sums, 2 * kSums, error))
    return (error = "evaluating after step " + std::to_string(r.step) + ": " +
                    error,
            false);
  r.evalTopK = of[0].topK;
  for (int k = 0; k < (average ? 2 : 1); ++k) {
    const double *at = sums + kSums * k;
    (k ? r.evalLossEma : r.evalLoss) = at[0] / std::max(at[1], 1.0);
    if (at[3] > 0)
      (k ? r.evalAccuracyEma : r.evalAccuracy) = at[2] / at[3];
    if (at[3] > 0 && r.evalTopK > 0)
      (k ? r.evalTopKAccuracyEma : r.evalTopKAccuracy) = at[4] / at[3];
  }
  r.evalRows = (int64_t)sums[1];
  evalSeconds_ +=
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
          .count();
  return true;
}

bool Trainer::train(const std::map<std::string, Tensor> &data,
                    std::map<std::string, Tensor> &params,
                    std::string &error) {
  Batches batches(data, options_);
  if (!batches.check(error))
    return false;
  int64_t first;
  if (!setUp(data, params, first, error))
    return false;
  double firstScale = scale_;
  std::string log;
  int64_t skipped = 0, skippedInARow = 0, underflowTotal = 0;
  auto start = std::chrono::steady_clock::now();
  // The next step's batch is gathered and prefetched while a step runs
  // (on a GPU its copy overlaps the step); its scalars wait for the step's
  // outcome (a skipped step does not advance the optimizer's count).
  // Under gradient accumulation a step is `micro` runs, micro-batch m
  // = s * micro + k taking the data loop's m-th batch and drawing its
  // dropout masks at m.
  const int64_t micro = microBatches();
  bool batchPrefetched = false;
  auto prefetchNext = [&](int64_t m) -> WhileRunning {
    if (m + 1 >= options_.steps * micro)
      return nullptr;
    return [&, m](std::string &e) {
      return batchPrefetched = prefetchToSession(batches.at(m + 1), e);
    };
  };
  for (int64_t s = first; s < options_.steps; ++s) {
    auto t0 = std::chrono::steady_clock::now();
    // Per-step inputs: the optimizer's scalars and the batch (weights and
    // state already live in the session).
    StepRecord r;
    std::map<std::string, Tensor> scalars;
    if (!algorithm_)
      addOptimizerScalars(scalars, r, s);
    double lossSum = 0;
    int64_t overflow = 0, underflow = 0;
    for (int64_t k = 0; k < micro; ++k) {
      const int64_t m = s * micro + k;
      const bool apply = k + 1 == micro;
      std::map<std::string, Tensor> feeds;
      if (!batchPrefetched)
        feeds = batches.at(m);
      batchPrefetched = false;
      feeds.merge(randomScalars(
          plan_, m, options_.group ? options_.group->rank() : 0));
      feeds.insert(scalars.begin(), scalars.end());
      if (micro > 1) {
        auto flag = [](bool on) {
          Tensor t(DType::I1, {});
          t.data<uint8_t>()[0] = on;
          return t;
        };
        feeds["mpc.accum.apply"] = flag(apply);
        feeds["mpc.accum.first"] = flag(k == 0);
      }
      if (!step(s, feeds, r, error, prefetchNext(m), apply))
        return false;
      lossSum += r.loss;
      overflow += r.overflow;
      underflow += r.underflow;
    }
    // The group's loss is its micro-batches' mean (the loss of the batch
    // they make up), as a loop logging loss / N summed over them reports.
    r.loss = (float)(lossSum / micro);
    r.overflow = overflow;
    r.underflow = underflow;
    auto t1 = std::chrono::steady_clock::now();
    r.ms = std::chrono::duration<double, std::milli>(t1 - t0).count();
    double seconds = // training alone
        std::chrono::duration<double>(t1 - start).count() - evalSeconds_;
    if (!evaluate(r, error))
      return false;
    history_.push_back(r);
    skipped += r.skipped;
    skippedInARow = r.skipped ? skippedInARow + 1 : 0;
    underflowTotal += r.underflow;
    log += metricsLine(r, options_.group != nullptr);
    report(r, first, seconds);
    if (!sample(r.step, error))
      return false;
    if (options_.onStep)
      options_.onStep(r, (r.step - first) * options_.batch * micro /
                             std::max(seconds, 1e-9));
    // Rank 0 writes the checkpoints: every rank holds the same state.
    bool lead = !options_.group || options_.group->rank() == 0;
    if (lead && !options_.checkpointDir.empty() &&
        ((s + 1) % options_.checkpointEvery == 0 || s + 1 == options_.steps) &&
        (!fromSession(params, error) || !fromSession(state_, error) ||
         !saveCheckpoint(options_.checkpointDir, s + 1, params, state_,
                         plan_.layouts, error)))
      return false;
    if (scaling_ && skippedInARow >= 20 && r.lossScale <= 1.0)
      return (error = "gradients overflowed in 20 steps in a row with the "
                      "loss scale at its minimum; the model overflows " +
                      options_.precision +
                      " by itself: try --precision bf16, or keep the "
                      "overflowing ops in fp32 (--amp-deny, --amp-keep-fp32)",
              false);
    if (!scaling_ && !std::isfinite(r.loss))
      return (error = "loss is " +
                      std::string(std::isnan(r.loss) ? "NaN" : "inf") +
                      " at step " + std::to_string(s + 1) + "; lower --lr" +
                      (options_.precision != "fp32"
                           ? " or use --loss-scale dynamic"
                           : ""),
              false);
  }
  if (options_.progress &&
      (options_.precision != "fp32" || scaling_ || skipped))
    options_.print(format(
        "precision %s: %lld of %lld steps skipped for inf/NaN gradients; "
        "loss scale %g -> %g; %lld gradient elements flushed to zero\n",
        options_.precision.c_str(), (long long)skipped,
        (long long)(options_.steps - first), firstScale, scale_,
        (long long)underflowTotal));
  return checkRanksAgree(error) &&
         (options_.metricsPath.empty() ||
          writeFileAtomically(options_.metricsPath, log, error));
}

bool Trainer::sample(int64_t step, std::string &error) {
  if (!options_.onSample || options_.sampleEvery <= 0 ||
      (step != 1 && step % options_.sampleEvery != 0 &&
       step != options_.steps))
    return true;
  for (const std::string &name : options_.sampleOutputs)
    for (size_t i = 0; i < plan_.outputs.size(); ++i)
      if (plan_.outputs[i].name == name) {
        Tensor t;
        if (!session_.output(i, t, error) ||
            !options_.onSample(step, name, t, error))
          return false;
      }
  return true;
}

bool Trainer::readWeights(std::map<std::string, Tensor> &params,
                          std::string &error) {
  return fromSession(params, error);
}

bool Trainer::readAverage(std::map<std::string, Tensor> &average,
                          std::string &error) {
  for (const auto &[index, name] : protocol_.emaState) {
    Tensor t;
    if (!session_.get(name, t, error))
      return false;
    average[name.substr(std::strlen("mpc.ema."))] =
        toOnnxLayout(plan_.layouts, name, t);
  }
  return true;
}

} // namespace mpc::rt
