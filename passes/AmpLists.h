//===- AmpLists.h - the AMP op classes (allow/infer/clear/deny) --*- C++ -*-===//

#ifndef MPC_PASSES_AMPLISTS_H
#define MPC_PASSES_AMPLISTS_H

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"

#include <optional>

namespace mlir::mpc {

enum class AmpClass {
  Allow, // tensor-core ops: always low precision
  Infer, // low precision when fed by low precision, FP32 when fed by FP32
  Clear, // exact in any precision: follows its neighbours
  Deny,  // always FP32
  None,  // no class: no float arithmetic, or FP32 by default
};

struct AmpOpInfo {
  llvm::StringRef mnemonic; // mpc op, e.g. "matmul"
  llvm::StringRef onnx;     // ONNX op type, e.g. "MatMul"
  AmpClass cls;
  llvm::StringRef why;      // one phrase: why this class
};

/// The default class of an mpc op (by mnemonic), or none for ops that do
/// no float computation (shape, cast, constant...) or are not on the lists.
const AmpOpInfo *ampInfo(llvm::StringRef mnemonic);

/// The row of any mpc op (its class may be None), or null for a mnemonic
/// that is no mpc op.
const AmpOpInfo *opFacts(llvm::StringRef mnemonic);

/// The rows for an ONNX op type (several mpc ops can share one, e.g.
/// BatchNormalization); empty when the name is unknown.
llvm::SmallVector<const AmpOpInfo *> ampInfoForOnnx(llvm::StringRef onnx);

llvm::StringRef className(AmpClass c);

} // namespace mlir::mpc

#endif // MPC_PASSES_AMPLISTS_H
