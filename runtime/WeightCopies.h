//===- WeightCopies.h - the fp16/bf16 weight copies a step keeps -*- C++ -*-===//
//
// A GPU train step keeps the compute-type copy of each FP32 master as step
// state (mpc-half-weights-in-optimizer): input `mpc.half.<p>`, written by
// the update as an output of the same name. It is always the cast of the
// master, so the runtime derives it whenever the master is set from outside
// (initial weights, a checkpoint, another phase's update) and never saves
// it: sessions and runPlan fill it in, callers never provide it.
//
//===----------------------------------------------------------------------===//

#ifndef MPC_RUNTIME_WEIGHTCOPIES_H
#define MPC_RUNTIME_WEIGHTCOPIES_H

#include "runtime/Plan.h"

#include <string>
#include <vector>

namespace mpc::rt {

struct WeightCopy {
  std::string input; // `mpc.half.<p>`
  int value;         // the input's value id
  const Parameter *master;
};

/// The weight copies `plan` keeps, by input.
std::vector<WeightCopy> weightCopies(const Plan &plan);

/// Whether input `name` is a weight copy (derived, never fed).
bool isWeightCopy(const Plan &plan, const std::string &name);

/// Why `plan`'s weight copies are not fp16/bf16 tensors of their masters'
/// shapes, or "".
std::string checkWeightCopies(const Plan &plan);

/// `master` cast to `to` as mpc.cast rounds (to nearest even).
Tensor castCopy(const Tensor &master, DType to);

} // namespace mpc::rt

#endif // MPC_RUNTIME_WEIGHTCOPIES_H
