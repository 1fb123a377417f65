//===- AppliedOnly.cpp - the steps only a group's update needs ------------===//

#include "runtime/AppliedOnly.h"
#include "runtime/TrainProtocol.h"

#include <algorithm>
#include <numeric>

namespace mpc::rt {
namespace {

/// Whether the plan accumulates with a group flag and a first-micro-batch
/// flag (the accumulator itself the summed gradient the updates read).
bool accumulates(const Plan &plan) {
  return plan.train && plan.train->accumulate > 1 &&
         valueOfName(plan, "mpc.accum.apply") >= 0 &&
         valueOfName(plan, "mpc.accum.first") >= 0;
}

/// The outputs that keep their old value unless the group's update
/// applies: trained weights (not statistics), their copies, optimizer
/// state, the moving average, the clipping norm.
std::vector<bool> heldOutputs(const Plan &plan) {
  TrainProtocol protocol(plan);
  std::vector<bool> held(plan.outputs.size(), false);
  for (const auto *list : {&protocol.weights, &protocol.weightCopies,
                           &protocol.optimizerState, &protocol.emaState})
    for (const auto &entry : *list)
      held[entry.first] = true;
  for (const auto &entry : protocol.statistics)
    held[entry.first] = false;
  if (protocol.gradNorm >= 0)
    held[protocol.gradNorm] = true;
  return held;
}

/// The steps that run in one kernel launch: fused into, batched with, or
/// computed by the library call of another.
std::vector<std::vector<size_t>> launchGroups(const Plan &plan,
                                              std::vector<size_t> &groupOf) {
  size_t n = plan.steps.size();
  std::vector<size_t> parent(n);
  std::iota(parent.begin(), parent.end(), 0);
  auto find = [&](size_t i) {
    while (parent[i] != i)
      i = parent[i] = parent[parent[i]];
    return i;
  };
  auto unite = [&](size_t a, int b) {
    if (b >= 0 && (size_t)b < n)
      parent[find(a)] = find((size_t)b);
  };
  for (size_t i = 0; i < n; ++i) {
    const CudaLaunch &c = plan.steps[i].cuda;
    unite(i, c.fusedInto);
    unite(i, c.batchedInto);
    unite(i, c.libraryFusedInto);
  }
  std::vector<std::vector<size_t>> groups(n);
  groupOf.resize(n);
  for (size_t i = 0; i < n; ++i)
    groups[groupOf[i] = find(i)].push_back(i);
  return groups;
}

/// The values step `s`'s kernel reads besides its inputs.
std::vector<int> kernelReads(const Step &s) {
  std::vector<int> reads = s.inputs;
  reads.insert(reads.end(), s.cuda.inputs.begin(), s.cuda.inputs.end());
  reads.push_back(s.cuda.epilogueAdd);
  reads.insert(reads.end(), s.cuda.prologueAdd.begin(),
               s.cuda.prologueAdd.end());
  return reads;
}

std::vector<int> producers(const Plan &plan) {
  std::vector<int> producer(plan.values.size(), -1);
  for (size_t i = 0; i < plan.steps.size(); ++i)
    for (int v : plan.steps[i].outputs)
      if (v >= 0)
        producer[v] = (int)i;
  return producer;
}

} // namespace

int appliedOnlyFlag(const Plan &plan) {
  if (!std::any_of(plan.steps.begin(), plan.steps.end(),
                   [](const Step &s) { return s.appliedOnly; }))
    return -1;
  return valueOfName(plan, "mpc.accum.apply");
}

void markAppliedOnlySteps(Plan &plan) {
  for (Step &s : plan.steps)
    s.appliedOnly = false;
  if (!accumulates(plan))
    return;
  std::vector<bool> held = heldOutputs(plan);
  std::vector<int> producer = producers(plan);
  std::vector<size_t> groupOf;
  std::vector<std::vector<size_t>> groups = launchGroups(plan, groupOf);
  std::vector<bool> needed(plan.steps.size(), false);
  std::vector<size_t> work;
  auto need = [&](int step) {
    if (step < 0 || needed[step])
      return;
    for (size_t m : groups[groupOf[step]])
      if (!needed[m]) {
        needed[m] = true;
        work.push_back(m);
      }
  };
  for (size_t i = 0; i < plan.outputs.size(); ++i)
    if (!held[i])
      need(producer[plan.outputs[i].value]);
  // A step of no outputs does whatever it does every run. (A collective
  // may be skipped: every rank skips the same ones, the flag being the
  // same on all.)
  for (size_t i = 0; i < plan.steps.size(); ++i)
    if (plan.steps[i].outputs.empty())
      need((int)i);
  while (!work.empty()) {
    size_t i = work.back();
    work.pop_back();
    for (int v : kernelReads(plan.steps[i]))
      if (v >= 0)
        need(producer[v]);
  }
  for (size_t i = 0; i < plan.steps.size(); ++i)
    plan.steps[i].appliedOnly = !needed[i];
}

std::vector<bool> appliedOnlyOutputs(const Plan &plan) {
  std::vector<int> producer = producers(plan);
  std::vector<bool> skipped(plan.outputs.size(), false);
  for (size_t i = 0; i < plan.outputs.size(); ++i) {
    int p = producer[plan.outputs[i].value];
    skipped[i] = p >= 0 && plan.steps[p].appliedOnly;
  }
  return skipped;
}

std::string checkAppliedOnly(const Plan &plan) {
  if (appliedOnlyFlag(plan) < 0) {
    for (const Step &s : plan.steps)
      if (s.appliedOnly)
        return "step '" + s.name +
               "' is applied-only in a plan without mpc.accum.apply";
    return "";
  }
  std::vector<int> producer = producers(plan);
  std::vector<size_t> groupOf;
  std::vector<std::vector<size_t>> groups = launchGroups(plan, groupOf);
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    const Step &s = plan.steps[i];
    if (s.appliedOnly)
      continue;
    for (size_t m : groups[groupOf[i]])
      if (plan.steps[m].appliedOnly)
        return "step " + std::to_string(m) +
               " is applied-only but shares a kernel with step " +
               std::to_string(i);
    for (int v : kernelReads(s))
      if (v >= 0 && producer[v] >= 0 && plan.steps[producer[v]].appliedOnly)
        return "step " + std::to_string(i) + " runs every micro-batch but " +
               "reads what applied-only step " + std::to_string(producer[v]) +
               " computes";
  }
  std::vector<bool> skipped = appliedOnlyOutputs(plan);
  std::vector<bool> held = heldOutputs(plan);
  for (size_t i = 0; i < plan.outputs.size(); ++i)
    if (skipped[i] && !held[i])
      return "output '" + plan.outputs[i].name +
             "' is computed by an applied-only step but is not an update";
  return "";
}

std::string skippedOutputError(const std::string &name) {
  return "output '" + name +
         "' is not computed on a micro-batch that does not apply the "
         "group's update";
}

} // namespace mpc::rt
