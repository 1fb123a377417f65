//===- CudaChainViews.cpp - splits and concats inside fused chains --------===//
//
// Which splits and concats a chain kernel computes, and the operands it
// then reads (CudaChainViews.h). A split's parts tile its input, so the
// chain reads each part with the input's strides from the part's offset;
// where a member computes the split's input (read by the split alone) the
// chain computes it once a part from its operands, read with their
// strides over the split's input from the part's offset along the axis.
//
//===----------------------------------------------------------------------===//

#include "codegen/CudaKernels.h"

#include <set>

namespace mlir::mpc::cuda {

/// A split the chain computes by reading its input at each part's
/// offset: one input, every part of the chain's shape (an LSTM's or
/// GRU's gates, a GLU's halves), not already parts in place.
bool splitReadInChain(Emitter &e, const Step &s, const Shape &shape) {
  if (s.op != OpId::Split || s.inputs.size() != 1 || s.inputs[0] < 0 ||
      s.outputs.size() < 2 || s.cuda.inOtherKernel() ||
      !isFloat(e.val(s.inputs[0]).dtype) ||
      ::mpc::rt::inPlaceOffsets(e.plan, s).size() != s.outputs.size())
    return false;
  for (int v : s.outputs)
    if (e.val(v).shape != shape || e.val(v).dtype != e.val(s.inputs[0]).dtype)
      return false;
  return true;
}

/// A concat the chain computes as its last step, storing each part at
/// its offset: parts of one shape and of the result's type (an LSTM's or
/// GRU's gate gradients, a split's gradient), not already in place.
bool concatOfParts(Emitter &e, const Step &s) {
  if (s.op != OpId::Concat || s.inputs.size() < 2 || s.outputs.size() != 1 ||
      s.cuda.inOtherKernel() || s.cuda.isChain() ||
      ::mpc::rt::inPlaceOffsets(e.plan, s).size() != s.inputs.size())
    return false;
  DType t = e.val(s.outputs[0]).dtype;
  if (t != DType::F32 && t != DType::F16 && t != DType::BF16)
    return false;
  for (int v : s.inputs)
    if (v < 0 || e.val(v).shape != e.val(s.inputs[0]).shape ||
        e.val(v).dtype != t)
      return false;
  return true;
}

std::map<int, int> splitWholes(const Plan &plan,
                               const std::vector<int> &members) {
  std::map<int, int> producer, wholes; // split -> whole
  for (int m : members)
    for (int v : plan.steps[m].outputs)
      producer[v] = m;
  for (int m : members)
    if (const Step &s = plan.steps[m]; s.op == OpId::Split)
      if (auto p = producer.find(s.inputs[0]); p != producer.end())
        wholes[m] = p->second;
  return wholes;
}

std::vector<ChainOperand> chainExternals(const Plan &plan,
                                         const std::vector<int> &members) {
  std::set<int> made, seen;
  for (int m : members)
    made.insert(plan.steps[m].outputs.begin(), plan.steps[m].outputs.end());
  std::map<int, int> wholeOfSplit = splitWholes(plan, members);
  std::set<int> wholes;
  for (auto [split, whole] : wholeOfSplit)
    wholes.insert(whole);
  std::vector<ChainOperand> ext;
  for (int m : members) {
    const Step &s = plan.steps[m];
    if (wholes.count(m))
      continue; // read part by part through its split
    if (s.op == OpId::Split) { // its input once a part, at the part's offset
      const Shape &w = plan.values[s.inputs[0]].shape;
      int64_t axis = s.getInt("axis", 0);
      axis += axis < 0 ? (int64_t)w.size() : 0;
      int64_t start = 0;
      for (size_t j = 0; j < s.outputs.size(); ++j) {
        if (auto p = wholeOfSplit.find(m); p != wholeOfSplit.end()) {
          std::vector<int> ops = chainOperands(plan.steps[p->second]);
          for (size_t o = 0; o < ops.size(); ++o) {
            Shape st = broadcastStrides(plan.values[ops[o]].shape, w);
            ext.push_back({ops[o], -1, start * st[axis], st, p->second,
                           (int)j, (int)o});
          }
        } else {
          Shape st = stridesOf(w);
          ext.push_back({s.inputs[0], s.outputs[j], start * st[axis], st});
        }
        start += plan.values[s.outputs[j]].shape[axis];
      }
      continue;
    }
    for (int v : chainOperands(s))
      if (!made.count(v) && seen.insert(v).second)
        ext.push_back({v});
  }
  return ext;
}

} // namespace mlir::mpc::cuda
