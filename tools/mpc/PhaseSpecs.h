//===- PhaseSpecs.h - the phases of a GAN-style train step ------*- C++ -*-===//
//
// What `mpc train --phase` and `--recipe` describe: per phase, the loss (a
// model output), the parameters it updates (a regular expression) and,
// optionally, its own optimizer and hyper-parameters, and a moving average
// of its weights (a GAN generator's G_ema).
//
//===----------------------------------------------------------------------===//

#ifndef MPC_TOOLS_MPC_PHASESPECS_H
#define MPC_TOOLS_MPC_PHASESPECS_H

#include <optional>
#include <string>
#include <vector>

namespace mpc {

struct PhaseSpec {
  std::string loss, params;
  /// Optional: overrides of the shared optimizer flags for this phase.
  std::string optimizer;
  std::optional<double> lr, momentum, weightDecay;
  /// The decay of this phase's weights' moving average (mpc-ema), and its
  /// warmup (--ema-warmup's forms; empty: --ema-warmup's, if given).
  std::optional<double> ema;
  std::string emaWarmup;
  std::vector<double> betas;
};

/// One --phase value: loss=OUTPUT,params=REGEX[,optimizer=K][,lr=X]
/// [,momentum=X][,weight-decay=X][,betas=B1/B2][,ema=DECAY]
/// [,ema-warmup=POWER[,GAMMA]|num-updates].
bool parsePhase(const std::string &spec, PhaseSpec &out, std::string &error);

/// A recipe file (JSON):
///   {"loss_scaler": "shared" | "per-phase",
///    "phases": [{"loss": "d_loss", "params": "D\\..*",
///                "optimizer": "adam", "lr": 2e-4, "betas": [0.5, 0.999],
///                "momentum": 0.9, "weight_decay": 0, "ema": 0.999,
///                "ema_warmup": "0.75,10" | "num-updates"}, ...]}
/// False with a one-line `error` naming the file and the field.
bool readRecipe(const std::string &path, std::vector<PhaseSpec> &phases,
                std::string &lossScaler, std::string &error);

/// The phases given to a command: `flags` (each --phase) or `recipe` (a
/// file), never both; `scaler` is --loss-scaler when `scalerGiven`, else
/// the recipe's or "per-phase". `spelled[k]` names phase k in messages.
struct PhaseList {
  std::vector<PhaseSpec> specs;
  std::vector<std::string> spelled;
  std::string scaler = "per-phase";
};
bool readPhaseList(const std::vector<std::string> &flags,
                   const std::string &recipe, const std::string &scaler,
                   bool scalerGiven, PhaseList &out, std::string &error);

/// With phases, --ema-warmup (`warmup`, if given) warms up each phase's
/// ema= average that has no ema-warmup= of its own: at least one phase
/// must keep an average.
bool checkPhaseEmaWarmup(const PhaseList &phases, const std::string &warmup,
                         std::string &error);

/// Each parameter belongs to one phase: two optimizers over one weight
/// would each keep their own state of it. `gradients[k]` lists the
/// parameters phase k trains.
bool checkPhaseOwners(const PhaseList &phases,
                      const std::vector<std::vector<std::string>> &gradients,
                      std::string &error);

} // namespace mpc

#endif // MPC_TOOLS_MPC_PHASESPECS_H
