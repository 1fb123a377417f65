//===- OpId.cpp - op names and kinds from the generated list --------------===//

#include "runtime/OpId.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <string>

namespace mpc::rt {
namespace {

struct OpInfo {
  const char *name;
  bool inPlans;
};

// In mnemonic order (mpc-tblgen sorts the list), so lookups can bisect.
constexpr OpInfo kOps[] = {
#define MPC_OP(Id, Mnemonic, InPlans) {Mnemonic, InPlans},
#include "ir/MpcOpList.h.inc"
};
static_assert(std::size(kOps) == kNumOps);

} // namespace

const char *opName(OpId op) { return kOps[static_cast<size_t>(op)].name; }

bool inPlans(OpId op) { return kOps[static_cast<size_t>(op)].inPlans; }

std::optional<OpId> opFromName(std::string_view name) {
  const OpInfo *it = std::lower_bound(
      std::begin(kOps), std::end(kOps), name,
      [](const OpInfo &a, std::string_view n) { return a.name < n; });
  if (it == std::end(kOps) || it->name != name)
    return std::nullopt;
  return static_cast<OpId>(it - std::begin(kOps));
}

void requireEveryOp(const char *what, const char *where,
                    const std::function<bool(OpId)> &has) {
  std::string missing;
  for (size_t i = 0; i < kNumOps; ++i)
    if (inPlans((OpId)i) && !has((OpId)i))
      missing += std::string(missing.empty() ? "" : ", ") + opName((OpId)i);
  if (missing.empty())
    return;
  std::fprintf(stderr, "mpc: internal error: no %s registered for mpc op(s) "
                       "%s (%s)\n",
               what, missing.c_str(), where);
  std::abort();
}

} // namespace mpc::rt
