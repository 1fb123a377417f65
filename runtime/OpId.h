//===- OpId.h - one identifier per mpc op, generated from the ODS -*- C++ -*-===//
//
// The runtime and codegen name ops by OpId, an enumerator per op of the
// mpc dialect in the order of ir/MpcOpList.h.inc, which mpc-tblgen
// generates from ir/*.td. Kernel and emitter tables are indexed by it and
// checked complete against the ops that reach execution plans.
//
//===----------------------------------------------------------------------===//

#ifndef MPC_RUNTIME_OPID_H
#define MPC_RUNTIME_OPID_H

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string_view>

namespace mpc::rt {

enum class OpId : uint16_t {
#define MPC_OP(Id, Mnemonic, InPlans) Id,
#include "ir/MpcOpList.h.inc"
};

inline constexpr size_t kNumOps = 0
#define MPC_OP(Id, Mnemonic, InPlans) +1
#include "ir/MpcOpList.h.inc"
    ;

/// The op's mnemonic, as in the IR and in plan.txt ("gemm").
const char *opName(OpId op);
/// False for ops that never reach a plan (constants, parameters...).
bool inPlans(OpId op);
/// The op with mnemonic `name`, or none.
std::optional<OpId> opFromName(std::string_view name);

/// For a backend's table: stops the process naming every op that can
/// reach a plan and lacks `what` (`has` false), saying `where` to add it.
/// A build missing one must not run at all.
void requireEveryOp(const char *what, const char *where,
                    const std::function<bool(OpId)> &has);

} // namespace mpc::rt

#endif // MPC_RUNTIME_OPID_H
