//===- TrainProtocol.h - how a train step hands state to the next -*- C++ -*-===//
//
// A train-step plan (mpc-autodiff, mpc-loss-scaling, mpc-optimizer) names
// its state: output `mpc.new.<p>` is parameter <p> after the step; an
// output named like an input carries that input to the next step
// (optimizer state `mpc.opt.*`, loss-scale state `mpc.loss_scale*`, the
// fp16/bf16 weight copies `mpc.half.*`: runtime/WeightCopies.h);
// `mpc.found_inf` says the step must be skipped. Under gradient
// accumulation the step also carries its accumulators (`mpc.accum.*`) to
// the next micro-batch, and reads `mpc.accum.apply`; under --ema it carries
// the weights' moving average (`mpc.ema.<p>`). `mpc train` and mpc-gpu-run
// both drive steps with this.
//
//===----------------------------------------------------------------------===//

#ifndef MPC_RUNTIME_TRAINPROTOCOL_H
#define MPC_RUNTIME_TRAINPROTOCOL_H

#include "runtime/Session.h"

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace mpc::rt {

struct TrainProtocol {
  explicit TrainProtocol(const Plan &plan);

  /// (output index, input name) pairs.
  std::vector<std::pair<size_t, std::string>> weights, weightCopies,
      optimizerState, scaleState, accumState, emaState;
  /// The entries of `weights` without a gradient: statistics the forward
  /// moves (batch norm's running mean and variance).
  std::vector<std::pair<size_t, std::string>> statistics;
  int foundInf = -1; // output index, or -1
  int gradNorm = -1; // mpc.grad_norm (--clip-grad-norm), or -1

  bool isTrainStep() const { return !weights.empty(); }
  /// Every list above: the outputs fed back into an input of their name.
  std::vector<const std::vector<std::pair<size_t, std::string>> *>
  fedBack() const {
    return {&weights,    &weightCopies, &optimizerState,
            &scaleState, &accumState,   &emaState};
  }
  /// Feeds a finished run's outputs back into the session's inputs:
  /// loss-scale state, accumulators and (where the step has an all-finite
  /// flag, else when `moved`) the moving average always: the step decides
  /// what they become; trained weights, their copies and optimizer state
  /// when `taken`, statistics when `moved` (every micro-batch of a group
  /// whose own gradients were finite, as torch's forward moves them each
  /// micro-batch).
  bool advance(Session &s, bool taken, bool moved, std::string &error) const;
};

/// The per-step optimizer inputs `plan` reads for optimizer step `t`
/// (1-based): `mpc.opt.first`, the rate `lr` of the step (`mpc.opt.lr`,
/// under a schedule), and Adam's `mpc.opt.step_size` and `mpc.opt.bc2_sqrt`
/// (torch's bias corrections, in double from the FP32 betas, rounded to
/// float).
std::map<std::string, Tensor> optimizerScalars(const Plan &plan, int64_t t,
                                               double lr);

/// The moving average's decay at update `update` (1-based, skipped steps
/// counted: the average moves after those too) under the plan's warmup,
/// as timm's ModelEmaV3.get_decay and diffusers' EMAModel.get_decay: 0 at
/// the first, then min(decay, 1 - (1 + (update - 1) / gamma)^-power), or
/// under num_updates' form min(decay, update / (9 + update)), in double;
/// absent without a warmup.
std::optional<double> emaDecay(const Plan &plan, int64_t update);

/// `mpc.ema_rate`, 1 - `decay` (emaDecay's) rounded to FP32, when `plan`
/// reads it and there is a decay.
std::map<std::string, Tensor> emaScalars(const Plan &plan,
                                         std::optional<double> decay);

/// The learning rate of optimizer step `t` (1-based) of a run of `runSteps`
/// steps: `baseLr` times the factor of the plan's schedule (in double, as
/// torch's LambdaLR; `baseLr` itself without one).
double scheduledLr(const Plan &plan, int64_t t, float baseLr,
                   int64_t runSteps);

/// `mpc.rng.step`, what its dropouts draw masks at (mpc-dropout-steps),
/// when `plan` reads it: [step, rank], the data loop's 0-based step number
/// (the counter's step half) and the data-parallel rank (0 alone), whose
/// rows of the global batch the step draws for: rank r's element i is
/// element r * n + i of its tensor's n, as one process over the whole
/// batch would number it.
std::map<std::string, Tensor> randomScalars(const Plan &plan, int64_t step,
                                            int64_t rank = 0);

} // namespace mpc::rt

#endif // MPC_RUNTIME_TRAINPROTOCOL_H
