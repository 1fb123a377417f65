//===- mpc-tblgen.cpp - op tables generated from the mpc ODS --------------===//
//
// mlir-tblgen's driver with two mpc backends, so every fact about an op is
// written once, in its ODS definition:
//
//   -gen-mpc-op-list   MpcOpList.h.inc, free of MLIR: one
//                      MPC_OP(Id, "mnemonic", InPlans) row per op, from
//                      which the runtime and codegen build their op
//                      identifier (runtime/OpId.h) and check that every op
//                      that reaches an execution plan has a CPU kernel and
//                      a CUDA emitter.
//   -gen-mpc-op-facts  MpcOpFacts.h.inc, for the passes and tools: one
//                      MPC_OP_FACTS("mnemonic", "Onnx", Class, "reason")
//                      row per op: its ONNX name and its precision class
//                      (Mpc_Amp trait; None without one).
//
//===----------------------------------------------------------------------===//

#include "mlir/TableGen/GenInfo.h"
#include "mlir/TableGen/Operator.h"
#include "mlir/Tools/mlir-tblgen/MlirTblgenMain.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/TableGen/Error.h"
#include "llvm/TableGen/Record.h"
#include "llvm/TableGen/TableGenBackend.h"

#include <algorithm>
#include <vector>

using namespace llvm;
using mlir::tblgen::Operator;

namespace {

/// The mpc dialect's ops, sorted by mnemonic (a stable order for the ids).
std::vector<Operator> mpcOps(const RecordKeeper &records) {
  std::vector<const Record *> defs;
  for (const Record *def : records.getAllDerivedDefinitions("Op"))
    if (def->getValueAsDef("opDialect")->getValueAsString("name") == "mpc")
      defs.push_back(def);
  std::sort(defs.begin(), defs.end(), [](const Record *a, const Record *b) {
    return a->getValueAsString("opName") < b->getValueAsString("opName");
  });
  return std::vector<Operator>(defs.begin(), defs.end());
}

/// "ExpOp" -> "Exp": the op's identifier in the MLIR-free tables.
StringRef idOf(const Operator &op) {
  StringRef name = op.getCppClassName();
  name.consume_back("Op");
  return name;
}

StringRef mnemonicOf(const Operator &op) {
  return StringRef(op.getDef().getValueAsString("opName"));
}

/// An op reaches execution plans unless its ODS says `inPlans = 0`
/// (constants, parameters, ONNX Gradient before lowering).
bool inPlans(const Operator &op) {
  const RecordVal *v = op.getDef().getValue("inPlans");
  return !v || op.getDef().getValueAsBit("inPlans");
}

/// The op's Mpc_Amp trait, or null.
const Record *ampTrait(const Operator &op) {
  const Record *found = nullptr;
  for (const auto &trait : op.getTraits())
    if (trait.getDef().isSubClassOf("Mpc_Amp")) {
      if (found)
        PrintFatalError(op.getLoc(), op.getOperationName() +
                                         " has two precision classes");
      found = &trait.getDef();
    }
  return found;
}

bool emitOpList(const RecordKeeper &records, raw_ostream &os) {
  emitSourceFileHeader("mpc ops: MPC_OP(Id, mnemonic, InPlans)", os);
  os << "#ifndef MPC_OP\n#define MPC_OP(Id, Mnemonic, InPlans)\n#endif\n";
  for (const Operator &op : mpcOps(records))
    os << "MPC_OP(" << idOf(op) << ", \"" << mnemonicOf(op) << "\", "
       << (inPlans(op) ? "true" : "false") << ")\n";
  os << "#undef MPC_OP\n";
  return false;
}

bool emitOpFacts(const RecordKeeper &records, raw_ostream &os) {
  emitSourceFileHeader(
      "mpc precision classes: MPC_OP_FACTS(mnemonic, onnx, class, reason)",
      os);
  os << "#ifndef MPC_OP_FACTS\n#define MPC_OP_FACTS(Mnemonic, Onnx, Class, "
        "Reason)\n#endif\n";
  for (const Operator &op : mpcOps(records)) {
    const Record *amp = ampTrait(op);
    const RecordVal *field = op.getDef().getValue("onnxName");
    StringRef onnx = field ? op.getDef().getValueAsString("onnxName") : "";
    if (amp && onnx.empty())
      PrintFatalError(op.getLoc(), op.getOperationName() +
                                       " has a precision class but no "
                                       "onnxName");
    os << "MPC_OP_FACTS(\"" << mnemonicOf(op) << "\", \"" << onnx << "\", "
       << (amp ? amp->getValueAsString("ampClass") : "None") << ", \""
       << (amp ? amp->getValueAsString("ampReason") : "") << "\")\n";
  }
  os << "#undef MPC_OP_FACTS\n";
  // Attributes an op cannot be built without: inference reads them, so
  // createInferred checks them first (ODS checks them only in the verifier).
  os << "#ifndef MPC_OP_REQUIRED_ATTRS\n#define MPC_OP_REQUIRED_ATTRS("
        "Mnemonic, Names)\n#endif\n";
  for (const Operator &op : mpcOps(records)) {
    std::string names;
    for (const mlir::tblgen::NamedAttribute &attr : op.getAttributes())
      if (!attr.attr.isOptional() && !attr.attr.hasDefaultValue() &&
          !attr.attr.isDerivedAttr())
        names += (names.empty() ? "" : " ") + attr.name.str();
    if (!names.empty())
      os << "MPC_OP_REQUIRED_ATTRS(\"" << mnemonicOf(op) << "\", \"" << names
         << "\")\n";
  }
  os << "#undef MPC_OP_REQUIRED_ATTRS\n";
  return false;
}

mlir::GenRegistration genOpList("gen-mpc-op-list",
                                "MLIR-free list of the mpc ops", emitOpList);
mlir::GenRegistration genOpFacts("gen-mpc-op-facts",
                                 "precision classes of the mpc ops",
                                 emitOpFacts);

} // namespace

int main(int argc, char **argv) { return mlir::MlirTblgenMain(argc, argv); }
