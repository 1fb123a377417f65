//===- LrSchedule.h - learning-rate schedules -------------------*- C++ -*-===//
//
// The schedules Hugging Face's get_*_schedule_with_warmup and
// torch.optim.lr_scheduler give transformer and CNN training, as factors of
// the base learning rate at each optimizer step (a step skipped for
// inf/NaN gradients does not advance it, as Hugging Face's Trainer does
// not step its scheduler then).
//
//===----------------------------------------------------------------------===//

#ifndef MPC_RUNTIME_LRSCHEDULE_H
#define MPC_RUNTIME_LRSCHEDULE_H

#include <cstdint>
#include <string>

namespace mpc::rt {

/// KIND[,warmup=N][,total=N][,min=F] with KIND constant, linear or cosine,
/// or step,every=N[,gamma=G][,warmup=N].
struct LrSchedule {
  std::string kind = "constant";
  int64_t warmup = 0;     // linear warmup from 0 over this many steps
  int64_t total = 0;      // steps the decay spans (0: the run's)
  double minFactor = 0.0; // cosine's floor, a fraction of the base rate
  int64_t every = 0;      // step: decay every this many steps
  double gamma = 0.1;     // step: by this factor
  std::string spec;       // as given (a plan records it)

  bool scheduled() const { return kind != "constant" || warmup > 0; }
  /// The base rate's factor at optimizer step t (1-based) of a run of
  /// `runSteps` steps: LambdaLR's lambda(t - 1).
  double factor(int64_t t, int64_t runSteps) const;
};

/// Parses a --lr-schedule spec; false with a one-line `error`.
bool parseLrSchedule(const std::string &spec, LrSchedule &out,
                     std::string &error);

} // namespace mpc::rt

#endif // MPC_RUNTIME_LRSCHEDULE_H
