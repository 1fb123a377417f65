//===- UpdatesInPlace.cpp - state a kernel overwrites where it read it ----===//
//
// A train step returns each weight and optimizer moment it updates as an
// output that the runtime feeds back into the input for the next step
// (runtime/TrainProtocol.cpp): a device-to-device copy of every weight,
// and of Adam's two moments, each step, unless the output lives in the
// input's buffer. The update is an elementwise chain, so it may: the
// thread that writes an element has read it (or never reads it: a weight
// copy is cast from the master), and no other thread reads it. codegen
// (CudaStateInPlace.cpp) marks such pairs on the chain's step
// (CudaLaunch::updatesInPlace) where nothing reads the input after the
// kernel; the memory plan then places the result in the input's buffer.
// A plan read from disk is checked the same way.
//
//===----------------------------------------------------------------------===//

#include "runtime/PlanFusionChecks.h"
#include "runtime/TrainProtocol.h"
#include "runtime/cuda/MemoryPlan.h"

#include <algorithm>
#include <set>

namespace mpc::rt {

namespace {

/// Where step `i`'s work runs: the kernel of the chain it is fused into,
/// at the launch of the batch that kernel is in.
int runsAt(const Plan &plan, int i) {
  i = kernelStep(plan, i);
  return std::max(i, plan.steps[i].cuda.batchedInto);
}

bool contains(const std::vector<int> &vs, int v) {
  return std::find(vs.begin(), vs.end(), v) != vs.end();
}

} // namespace

InPlaceUpdates::InPlaceUpdates(const Plan &plan)
    : plan(plan), readers(plan.values.size()) {
  TrainProtocol protocol(plan);
  for (const auto *list : protocol.fedBack())
    for (const auto &[index, name] : *list)
      fedBack.insert({plan.outputs[index].value, valueOfName(plan, name)});
  for (size_t j = 0; j < plan.steps.size(); ++j) {
    std::set<int> read(plan.steps[j].inputs.begin(),
                       plan.steps[j].inputs.end());
    for (int v : kernelInputs(plan.steps[j]))
      read.insert(v);
    for (int v : read)
      if (v >= 0 && v < (int)plan.values.size())
        readers[v].push_back((int)j);
  }
  // A concat in place holds its parts in its result's buffer: what reads
  // the result, or a value aliasing it, reads the parts.
  for (const Step &c : plan.steps) {
    if (!c.cuda.inPlace || c.op != OpId::Concat || c.outputs.size() != 1 ||
        c.outputs[0] < 0 || c.outputs[0] >= (int)plan.values.size())
      continue;
    std::vector<int> whole{c.outputs[0]};
    for (size_t k = 0; k < whole.size() && k < plan.values.size(); ++k)
      for (const Step &a : plan.steps)
        if (a.cuda.alias == whole[k] && a.outputs.size() == 1 &&
            a.outputs[0] >= 0 && a.outputs[0] < (int)plan.values.size())
          whole.push_back(a.outputs[0]);
    for (int v : c.inputs)
      if (v >= 0 && v < (int)plan.values.size())
        for (int w : whole)
          readers[v].insert(readers[v].end(), readers[w].begin(),
                            readers[w].end());
  }
}

std::string InPlaceUpdates::problem(size_t k, int result, int input) const {
  auto known = [&](int v) { return v >= 0 && v < (int)plan.values.size(); };
  if (k >= plan.steps.size() || !known(result) || !known(input) ||
      result == input)
    return "names values the plan does not have";
  const Step &s = plan.steps[k];
  const CudaLaunch &c = s.cuda;
  if (!c.isChain() || c.count < 0 || c.lists.valid() || c.inOtherKernel() ||
      s.outputs.empty())
    return "is not an elementwise chain's kernel";
  if (!contains(kernelOutputs(s), result) && !contains(c.stores, result))
    return "names a result its kernel does not write";
  // The runtime feeds the result into the input (runtime/TrainProtocol.h);
  // the kernel need not read it (a weight copy is cast from the master).
  if (!fedBack.count({result, input}))
    return "names an input its result is not fed back into";
  const ValueInfo &in = plan.values[input];
  if (plan.values[result].shape != in.shape ||
      plan.values[result].dtype != in.dtype)
    return "writes a value of another type or shape than its input";
  // Each thread reads and writes its own elements: everything the chain
  // writes has the input's shape (a reduction's result has another).
  for (int v : c.stores)
    if (plan.values[v].shape != in.shape)
      return "is not an elementwise chain's kernel";
  if (plan.values[s.outputs[0]].shape != in.shape)
    return "is not an elementwise chain's kernel";
  bool state = std::any_of(plan.inputs.begin(), plan.inputs.end(),
                           [&](const Binding &b) { return b.value == input; }) ||
               std::any_of(plan.params.begin(), plan.params.end(),
                           [&](const Parameter &p) { return p.value == input; });
  if (!state || std::any_of(plan.outputs.begin(), plan.outputs.end(),
                            [&](const Binding &b) { return b.value == input; }))
    return "overwrites a value that is not a step input or parameter";
  int at = runsAt(plan, (int)k);
  for (int j : readers[input]) {
    // The chain's own members read it in its kernel, element by element;
    // an all_reduce reads on NCCL's stream until a step waits for it.
    bool ownKernel = j == (int)k || contains(c.chain, j);
    int until = plan.steps[j].op == OpId::AllReduce ? allReduceWait(plan, j)
                                                    : runsAt(plan, j);
    if (!ownKernel && until >= at)
      return "overwrites a value step " + std::to_string(j) +
             " reads after it";
  }
  return "";
}

std::string checkUpdatesInPlace(const Plan &plan) {
  InPlaceUpdates allowed(plan);
  std::set<int> overwritten;
  for (size_t k = 0; k < plan.steps.size(); ++k) {
    const std::vector<int> &pairs = plan.steps[k].cuda.updatesInPlace;
    for (size_t p = 0; p + 1 < pairs.size(); p += 2) {
      std::string why = allowed.problem(k, pairs[p], pairs[p + 1]);
      if (why.empty() && !overwritten.insert(pairs[p + 1]).second)
        why = "overwrites a value another step overwrites";
      if (!why.empty())
        return "step " + std::to_string(k) + "'s in-place update " + why;
    }
  }
  return "";
}

} // namespace mpc::rt
