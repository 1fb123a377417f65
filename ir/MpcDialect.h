//===- MpcDialect.h - the mpc dialect -----------------------------*- C++ -*-===//

#ifndef MPC_IR_MPCDIALECT_H
#define MPC_IR_MPCDIALECT_H

#include "mlir/IR/Dialect.h"

#include "ir/MpcDialect.h.inc"

#endif // MPC_IR_MPCDIALECT_H
