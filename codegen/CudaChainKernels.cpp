//===- CudaChainKernels.cpp - fused elementwise chains --------------------===//
//
// The kernel of a chain CudaFusion.cpp formed: each member in plan order
// into a register, with the thread-per-element functions of
// CudaElementwiseKernels.cpp; a split's parts read at their offsets and a
// concat's parts stored at theirs (CudaChainViews.h).
//
//===----------------------------------------------------------------------===//

#include "codegen/CudaKernels.h"
#include "runtime/Philox.h"
#include "runtime/cuda/KernelCalls.h"

#include <algorithm>
#include <map>
#include <set>
#include <sstream>

using namespace ::mpc::rt;

namespace mlir::mpc::cuda {

/// A fused elementwise chain (CudaFusion.cpp): each member in plan order
/// into a register, rounded to its type unless FP32; the last one stored,
/// and the members in `cuda.stores` as they are computed.
std::string Emitter::chainMember(const Step &member,
                                 std::map<int, std::string> &regs, size_t k,
                                 const std::string &keep) {
  std::string t = "t" + std::to_string(k);
  std::ostringstream os;
  os << "  float " << t << ";\n  { ";
  std::vector<int> operands = chainOperands(member);
  if (member.op == OpId::Dropout)
    operands.resize(1); // x; the counter is the draw's
  for (size_t j = 0; j < operands.size(); ++j)
    os << "float " << kOperandNames[j] << " = " << regs.at(operands[j]) << "; ";
  std::string e = member.op == OpId::Expand ? "a" : "";
  if (member.op == OpId::Dropout) {
    float ratio = dropoutRatio(member).value_or(0.0f);
    e = "(" + keep + " ? a * " + flt(::mpc::philox::mpc_dropout_scale(ratio)) +
        " : 0.0f)";
  } else if (e.empty()) {
    e = *expr(member);
  }
  os << t << " = " << roundedAs(val(member.outputs[0]).dtype, e) << ";";
  if (member.countUnderflow) // as a cast's own kernel counts (elementwise)
    os << " if (a != 0.0f && " << t << " == 0.0f) atomicAdd(underflow, 1ULL);";
  os << " }\n";
  regs[member.outputs[0]] = t;
  return os.str();
}

bool Emitter::chain(Step &s, const std::string &name) {
  const ValueInfo &y = val(s.outputs[0]);
  // A concat's chain runs over one part's elements and stores each part
  // at its offset in the result (parts of one shape, fuseSteps).
  const bool concat = s.op == OpId::Concat;
  const Shape shape = concat ? val(s.inputs[0]).shape : y.shape;
  std::vector<ResultView> views;
  if (concat) {
    std::vector<int64_t> at = ::mpc::rt::inPlaceOffsets(plan, s);
    if (at.size() != s.inputs.size())
      return fail(s, "a fused concat whose parts do not tile its result");
    for (int64_t bytes : at)
      views.push_back({0, stridesOf(y.shape), bytes / dtypeSize(y.dtype)});
    for (size_t k = 0; k < s.cuda.stores.size(); ++k)
      views.push_back({1 + k, stridesOf(shape), 0});
  }
  const std::vector<int> ext = ::mpc::rt::kernelInputs(s);
  // The dropout members' [step, rank] counters: pointers, not operands.
  std::set<int> counters;
  for (int m : s.cuda.chain)
    if (plan.steps[m].op == OpId::Dropout && plan.steps[m].inputs.size() > 3 &&
        plan.steps[m].inputs[3] >= 0)
      counters.insert(plan.steps[m].inputs[3]);
  std::map<int, std::string> reg; // value -> C++ expression holding it
  std::vector<Shape> strides;
  std::vector<std::string> names;
  std::vector<int64_t> offsets(ext.size(), 0);
  // A split the chain computes: its input once a part, or the operands
  // of the member computing that input once a part, from the part's
  // offset (chainExternals).
  std::vector<ChainOperand> parts = chainExternals(plan, s.cuda.chain);
  if (parts.size() != ext.size())
    return fail(s, "a fused chain whose operands do not match its members");
  std::map<std::pair<int, int>, std::map<int, std::string>> pieces;
  // Split member -> the member computing its input, and those members.
  std::map<int, int> wholeOf = splitWholes(plan, s.cuda.chain);
  std::set<int> wholes;
  for (auto [split, whole] : wholeOf)
    wholes.insert(whole);
  for (size_t k = 0; k < ext.size(); ++k) {
    const ChainOperand &o = parts[k];
    bool counter = counters.count(ext[k]) != 0;
    strides.push_back(counter ? Shape(shape.size(), 0)
                      : !o.strides.empty()
                          ? o.strides
                          : broadcastStrides(val(ext[k]).shape, shape));
    std::string x = "x" + std::to_string(k);
    names.push_back(counter ? "" : x);
    offsets[k] = o.offset;
    if (o.whole >= 0) {
      pieces[{o.whole, o.piece}][o.operand] = x;
    } else {
      reg[o.part >= 0 ? o.part : ext[k]] = x;
    }
  }
  int64_t n = numElements(shape);
  double computed = 0; // elements a member computes, per chain element
  for (int m : s.cuda.chain) {
    const Step &member = plan.steps[m];
    if (member.op == OpId::Split)
      computed += wholeOf.count(m) ? (double)member.outputs.size() : 0.0;
    else if (member.op != OpId::Concat)
      computed += !wholes.count(m);
  }
  mod.flops += (double)n * computed;
  std::vector<Draw> draws;
  std::map<int, std::string> keepOf; // dropout member -> its keep bit
  for (int m : s.cuda.chain) {
    const Step &d = plan.steps[m];
    if (d.op != OpId::Dropout)
      continue;
    int slot = d.inputs.size() > 3 && d.inputs[3] >= 0
                   ? (int)(std::find(ext.begin(), ext.end(), d.inputs[3]) -
                           ext.begin())
                   : -1;
    std::optional<Draw> draw = dropoutDraw(d, slot);
    if (!draw)
      return false;
    keepOf[m] = "k" + std::to_string(draws.size());
    draws.push_back(*draw);
  }
  elementFunctions(
      s, name, n, shape, strides, names,
      [&](const Store &st) {
        std::map<int, std::string> regs = reg;
        std::ostringstream os;
        size_t t = 0;
        // Results: output 0 (a concat's parts), then the stores.
        size_t first = concat ? s.inputs.size()
                              : ::mpc::rt::kernelOutputs(s).size();
        for (int m : s.cuda.chain) {
          const Step &member = plan.steps[m];
          if (auto w = wholeOf.find(m); w != wholeOf.end()) {
            // The split's input computed once a part, from its operands
            // read at the part's offset.
            const Step &whole = plan.steps[w->second];
            std::vector<int> ops = chainOperands(whole);
            for (size_t j = 0; j < member.outputs.size(); ++j) {
              std::map<int, std::string> at = regs;
              for (size_t o = 0; o < ops.size(); ++o)
                at[ops[o]] = pieces[{w->second, (int)j}].at(o);
              os << chainMember(whole, at, t++, "");
              regs[member.outputs[j]] = at.at(whole.outputs[0]);
            }
          } else if (member.op != OpId::Split && !wholes.count(m) &&
                     !(concat && &member == &s)) {
            // (A split's parts are operands, a concat's its results.)
            os << chainMember(member, regs, t++,
                              keepOf.count(m) ? keepOf[m] : "");
          }
          const std::vector<int> &stores = s.cuda.stores;
          for (int out : member.outputs)
            if (auto at = std::find(stores.begin(), stores.end(), out);
                at != stores.end())
              os << st(first + (at - stores.begin()), regs.at(out));
        }
        if (!concat)
          return os.str() + st(0, regs.at(s.outputs[0]));
        for (size_t j = 0; j < s.inputs.size(); ++j)
          os << st(j, regs.at(s.inputs[j]));
        return os.str();
      },
      draws, offsets, views);
  launch1d(s, name, n);
  return true;
}

} // namespace mlir::mpc::cuda
