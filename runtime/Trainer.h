//===- Trainer.h - the training loop over a train-step plan ------*- C++ -*-===//
//
// What `mpc train` and `mpc-gpu-run --steps` share once a train step is
// compiled: batching (in file order, or shuffled by a seed so that the
// batch order is a function of the step), the step loop on a Session (CPU
// or CUDA), the loss-scale bookkeeping and skipped steps, step health
// metrics (JSONL), progress lines, and checkpoints that resume
// bit-exactly. No MLIR: it runs on the GPU machine too.
//
//===----------------------------------------------------------------------===//

#ifndef MPC_RUNTIME_TRAINER_H
#define MPC_RUNTIME_TRAINER_H

#include "runtime/StoredLayouts.h"
#include "runtime/TrainProtocol.h"

#include <cstdint>
#include <cstdio>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace mpc::rt {

namespace dist {
class ProcessGroup;
}
struct StepRecord;

struct TrainerOptions {
  int64_t steps = 100;
  int64_t batch = 32;
  bool shuffle = true; // else batches in file order
  uint64_t seed = 0;
  float lr = 0.01f; // for the per-step optimizer scalars
  /// JSONL, one object per step, written atomically at the end.
  std::string metricsPath;
  /// Parameters, optimizer and loss-scale state and the step, every
  /// `checkpointEvery` steps and at the end (empty: none).
  std::string checkpointDir;
  int64_t checkpointEvery = 100;
  bool resume = false;
  /// A progress line every 10 steps (redrawn in place on a terminal) and a
  /// summary of the step health.
  bool progress = true;
  /// "fp32", "fp16" or "bf16": named in advice when training fails.
  std::string precision = "fp32";
  /// The loss-scale mode the step was built with ("none" when unscaled).
  std::string lossScaleMode = "none";
  /// Phases: one dynamic loss scale for all of them, as PyTorch's
  /// multi-model AMP recipe uses one GradScaler: every phase runs at it, and
  /// it is updated once per step from whether any phase overflowed.
  bool sharedLossScale = false;
  /// Called after every step with its record and the samples per second
  /// since the run started (`mpc train --tensorboard`).
  std::function<void(const StepRecord &, double samplesPerSecond)> onStep;
  /// Data parallelism: this process is one rank of `group` (null: the only
  /// one). Each step takes its rank's `batch` rows of a global batch of
  /// ranks x batch, in the order one process with the global batch takes
  /// them; the loss logged is the global mean; only rank 0 writes
  /// checkpoints and metrics.
  dist::ProcessGroup *group = nullptr;
  /// After the first step, every `sampleEvery` and the last: `onSample(step, name,
  /// value)` for each plan output named in `sampleOutputs` (the image
  /// outputs `mpc train --samples` and `--tensorboard` show).
  std::vector<std::string> sampleOutputs;
  int64_t sampleEvery = 0;
  std::function<bool(int64_t, const std::string &, const Tensor &,
                     std::string &)>
      onSample;
  /// Evaluation on held-out data (`mpc train --eval-data`): after every
  /// `evalEvery` steps (0: none but the last) and after the last,
  /// `evaluate(session, prefix, sums, error)` with `session` holding the
  /// step's weights, parameter p read from `prefix` + p ("", and
  /// "mpc.ema." for the moving average under --ema), adds this rank's
  /// held-out rows to `sums`; the step's record gets the means over every
  /// rank's rows.
  int64_t evalEvery = 0;
  struct EvalSums {
    double lossSum = 0, rows = 0; // the loss times each batch's rows
    /// Top-1 predictions that match their label, of those counted
    /// (--eval-accuracy; counted stays 0 without it), and labels among
    /// the topK highest scores (--eval-top-k; 0: not counted).
    double correct = 0, counted = 0, correctTopK = 0;
    int64_t topK = 0;
  };
  std::function<bool(Session &, const std::string &, EvalSums &, std::string &)>
      evaluate;
  /// Where progress lines go (default: stdout, flushed).
  std::function<void(const std::string &)> print = [](const std::string &s) {
    std::fputs(s.c_str(), stdout);
    std::fflush(stdout);
  };
};

/// What one step did.
struct StepRecord {
  int64_t step; // 1-based
  float loss;
  double lossScale; // the scale this step ran at
  bool skipped;     // inf/NaN gradients: weights and optimizer state kept
  int64_t underflow, overflow;
  double ms; // wall time of the step (inputs in, kernels, scalars out)
  double commMs = 0; // of which in collectives (data-parallel ranks)
  /// The gradients' global norm before clipping (--clip-grad-norm).
  std::optional<float> gradNorm;
  /// The learning rate the step's update used, under a schedule.
  std::optional<double> lr;
  /// The moving average's decay this step, under --ema-warmup.
  std::optional<double> emaDecay;
  /// The held-out loss after the step, where the step evaluated; of the
  /// weights' moving average too under --ema.
  std::optional<double> evalLoss, evalLossEma;
  int64_t evalRows = 0;
  /// The share of held-out labels whose score is the highest
  /// (--eval-accuracy), of the model and of its moving average; and of
  /// those among the evalTopK highest (--eval-top-k).
  std::optional<double> evalAccuracy, evalAccuracyEma;
  int64_t evalTopK = 0;
  std::optional<double> evalTopKAccuracy, evalTopKAccuracyEma;
  /// Their name in --metrics and TensorBoard (and + "_ema").
  std::string topKAccuracyKey() const {
    return "eval_top" + std::to_string(evalTopK) + "_accuracy";
  }
};

class Trainer {
public:
  /// `plan` is a train step (TrainInfo set) that `session` runs.
  Trainer(const Plan &plan, Session &session, TrainerOptions options);

  /// Trains a TrainingInfoProto algorithm instead of mpc's own step: after
  /// each step, output `index` becomes initializer `name`; `lossOutput` is
  /// the output logged as the loss.
  void useBindings(std::vector<std::pair<std::string, size_t>> bindings,
                   int lossOutput);

  /// Runs options.steps steps on `data` (one array per graph input,
  /// samples along axis 0) starting from `params` (FP32 master weights by
  /// name; replaced by the checkpoint's on resume). False with a one-line
  /// `error`.
  bool train(const std::map<std::string, Tensor> &data,
             std::map<std::string, Tensor> &params, std::string &error);
  /// The weights now (from the device for a CUDA session: read back only
  /// when asked, for checkpoints and the trained model).
  bool readWeights(std::map<std::string, Tensor> &params, std::string &error);
  /// The weights' moving average (--ema) by parameter name, in ONNX's
  /// layout; nothing without one.
  bool readAverage(std::map<std::string, Tensor> &average, std::string &error);

  const std::vector<StepRecord> &history() const { return history_; }

  /// Phases (`mpc train --phase`): each trainer runs one train step over
  /// shared parameters (a GAN's discriminator step, then its generator
  /// step); every training step runs them in order on the same batch, and
  /// the parameters a phase updates are copied into the later phases'
  /// sessions before they run. The first trainer's options (steps, batch,
  /// order, metrics with a "phase" field, progress, checkpoints of every
  /// phase's parameters and state) drive the loop. `names` label the
  /// phases.
  static bool trainPhases(const std::vector<Trainer *> &phases,
                          const std::vector<std::string> &names,
                          const std::map<std::string, Tensor> &data,
                          std::map<std::string, Tensor> &params,
                          std::string &error);
  /// How the phases' plans hold what one checkpoint of them names:
  /// parameters by name (every phase holding one holds it alike, else
  /// false and `error`), each phase's other state as "phase<k>.<name>".
  static bool phaseLayouts(const std::vector<const Plan *> &plans,
                           StoredLayouts &layouts, std::string &error);

private:
  bool setUp(const std::map<std::string, Tensor> &data,
             std::map<std::string, Tensor> &params, int64_t &first,
             std::string &error);
  /// Host work done while step `s` runs (the next batch's prefetch).
  using WhileRunning = std::function<bool(std::string &error)>;
  /// The per-step scalars of update `s` (0-based; its optimizer's next
  /// step: optimizerScalars, emaScalars) into `feeds`, the rate of a
  /// schedule and a warmed-up average's decay recorded in `r`.
  void addOptimizerScalars(std::map<std::string, Tensor> &feeds, StepRecord &r,
                           int64_t s);
  /// Runs step `s` on `feeds`; under gradient accumulation one
  /// micro-batch of it, the group's last when `apply`.
  bool step(int64_t s, const std::map<std::string, Tensor> &feeds,
            StepRecord &record, std::string &error,
            const WhileRunning &whileRunning = nullptr, bool apply = true);
  bool runStep(int64_t s, const std::map<std::string, Tensor> &feeds,
               StepRecord &record, std::string &error,
               const WhileRunning &whileRunning, bool apply);
  /// Micro-batches an update sums (the plan's mpc-grad-accumulation).
  int64_t microBatches() const {
    return plan_.train ? plan_.train->accumulate : 1;
  }
  void report(const StepRecord &r, int64_t first, double seconds) const;
  /// options.evaluate after step `r`, when it is an evaluation step.
  bool evaluate(StepRecord &r, std::string &error);
  bool toSession(const std::map<std::string, Tensor> &m, std::string &error);
  /// toSession for the next run, while this one runs (Session::prefetch).
  bool prefetchToSession(const std::map<std::string, Tensor> &m,
                         std::string &error);
  /// The samples of step `step` (1-based), when it is a sampling step.
  bool sample(int64_t step, std::string &error);
  /// False when some rank's `weights` differ from rank 0's in any bit.
  bool sameWeights(const std::map<std::string, Tensor> &weights,
                   const char *when, std::string &error);
  /// After training: false when the ranks' weights differ in any bit.
  bool checkRanksAgree(std::string &error);
  bool fromSession(std::map<std::string, Tensor> &m, std::string &error);

  /// The one loss scale of --loss-scaler shared (GradScaler's update).
  struct SharedScaler {
    double scale = 1, growth = 2, backoff = 0.5, minScale = 1, maxScale = 1;
    int64_t good = 0, interval = 2000;
    bool init(const std::vector<Trainer *> &phases, std::string &error);
    /// The scale state phase `t` runs at.
    std::map<std::string, Tensor> state(Trainer &t) const;
    void update(const std::vector<Trainer *> &phases, bool overflow);
  };

  const Plan &plan_;
  Session &session_;
  TrainerOptions options_;
  TrainProtocol protocol_;
  std::vector<std::pair<std::string, size_t>> bindings_;
  bool algorithm_ = false;
  int lossOutput_ = -1;
  bool scaling_ = false;
  double scale_ = 1.0; // the loss scale the next step runs at
  /// Optimizer and loss-scale state (inputs fed back), with the optimizer
  /// step count `mpc.opt.t`; saved with checkpoints.
  std::map<std::string, Tensor> state_;
  std::vector<StepRecord> history_;
  /// Seconds spent evaluating (left out of samples/s).
  double evalSeconds_ = 0;
  /// Non-finite gradient elements so far in this group of micro-batches.
  int64_t groupOverflow_ = 0;
};

} // namespace mpc::rt

#endif // MPC_RUNTIME_TRAINER_H
