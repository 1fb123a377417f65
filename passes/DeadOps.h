//===- DeadOps.h - erase what nothing reads ------------------------*- C++ -*-===//

#ifndef MPC_PASSES_DEADOPS_H
#define MPC_PASSES_DEADOPS_H

#include "mlir/IR/Block.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace mlir::mpc {

/// Erases the ops of `block` whose results nothing reads and that have no
/// side effects, last first so chains of them go in one sweep.
inline void eraseDeadOps(Block &block) {
  for (Operation &op : llvm::make_early_inc_range(llvm::reverse(block)))
    if (isOpTriviallyDead(&op))
      op.erase();
}

} // namespace mlir::mpc

#endif // MPC_PASSES_DEADOPS_H
