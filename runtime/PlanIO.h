//===- PlanIO.h - save and load an execution plan (artifact) ------*- C++ -*-===//
//
// An artifact directory holds `plan.txt` (values, bindings, steps and their
// attributes, one per line) and `weights.bin` (parameters, constants and
// tensor attributes, referenced by offset). Both are written atomically.
// No MLIR: the GPU machine loads artifacts compiled elsewhere.
//
//===----------------------------------------------------------------------===//

#ifndef MPC_RUNTIME_PLANIO_H
#define MPC_RUNTIME_PLANIO_H

#include "runtime/Plan.h"

#include <istream>
#include <string>

namespace mpc::rt {

bool savePlan(const Plan &plan, const std::string &dir, std::string &error);
bool loadPlan(const std::string &dir, Plan &plan, std::string &error);
/// The same from plan.txt's text and weights.bin's bytes; `dir` names the
/// artifact in errors.
bool parsePlan(std::istream &planText, std::string weights,
               const std::string &dir, Plan &plan, std::string &error);

/// Writes `text` to `path` through a temporary file and a rename.
bool writeFileAtomically(const std::string &path, const std::string &text,
                         std::string &error);

} // namespace mpc::rt

#endif // MPC_RUNTIME_PLANIO_H
