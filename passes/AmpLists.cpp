//===- AmpLists.cpp - the AMP op classes ----------------------------------===//
//
// The classes are declared with the ops, as Mpc_Amp traits in their ODS
// (ir/MpcDialect.td); mpc-tblgen lists every op in ir/MpcOpFacts.h.inc,
// sorted by mnemonic. Ops with none (None) either do no float arithmetic or
// stay FP32 by default.
//
//===----------------------------------------------------------------------===//

#include "passes/AmpLists.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"

using namespace mlir::mpc;

namespace {

const AmpOpInfo kTable[] = {
#define MPC_OP_FACTS(Mnemonic, Onnx, Class, Reason)                          \
  {Mnemonic, Onnx, AmpClass::Class, Reason},
#include "ir/MpcOpFacts.h.inc"
};

} // namespace

const AmpOpInfo *mlir::mpc::opFacts(llvm::StringRef mnemonic) {
  const AmpOpInfo *row = llvm::lower_bound(
      kTable, mnemonic,
      [](const AmpOpInfo &r, llvm::StringRef m) { return r.mnemonic < m; });
  return row != std::end(kTable) && row->mnemonic == mnemonic ? row : nullptr;
}

const AmpOpInfo *mlir::mpc::ampInfo(llvm::StringRef mnemonic) {
  const AmpOpInfo *row = opFacts(mnemonic);
  return row && row->cls != AmpClass::None ? row : nullptr;
}

llvm::SmallVector<const AmpOpInfo *>
mlir::mpc::ampInfoForOnnx(llvm::StringRef onnx) {
  llvm::SmallVector<const AmpOpInfo *> rows;
  for (const AmpOpInfo &row : kTable)
    if (row.onnx == onnx && row.cls != AmpClass::None)
      rows.push_back(&row);
  return rows;
}

llvm::StringRef mlir::mpc::className(AmpClass c) {
  switch (c) {
  case AmpClass::Allow:
    return "allow";
  case AmpClass::Infer:
    return "infer";
  case AmpClass::Clear:
    return "clear";
  case AmpClass::Deny:
    return "deny";
  case AmpClass::None:
    return "none";
  }
  return "";
}
