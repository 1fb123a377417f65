//===- Passes.h - mpc passes ---------------------------------------*- C++ -*-===//

#ifndef MPC_PASSES_PASSES_H
#define MPC_PASSES_PASSES_H

#include "mlir/Pass/Pass.h"

namespace mlir::mpc {

#define GEN_PASS_DECL
#include "passes/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/Passes.h.inc"

} // namespace mlir::mpc

#endif // MPC_PASSES_PASSES_H
