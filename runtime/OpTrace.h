//===- OpTrace.h - which ops a backend ran, for test coverage ----*- C++ -*-===//
//
// With MPC_TRACE_OPS=DIR in the environment, each backend records the ops
// of the plans it runs in DIR/<backend>-<pid>.txt, one name per line, once
// per process. The test suite sets it; scripts/check_op_coverage.py then
// fails when an op `mpc ops` lists was reached by no test on a backend that
// claims it. Without the variable this is one getenv per plan.
//
//===----------------------------------------------------------------------===//

#ifndef MPC_RUNTIME_OPTRACE_H
#define MPC_RUNTIME_OPTRACE_H

#include "runtime/Plan.h"

namespace mpc::rt {

/// Records the ops of `plan`'s steps as run by `backend` ("cpu", "cuda").
void traceOps(const char *backend, const Plan &plan);

} // namespace mpc::rt

#endif // MPC_RUNTIME_OPTRACE_H
