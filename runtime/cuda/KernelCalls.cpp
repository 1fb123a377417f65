//===- KernelCalls.cpp - the kernel launches of a plan step ----------------===//

#include "runtime/cuda/KernelCalls.h"

#include "runtime/Tensor.h"
#include "runtime/cuda/FoldOps.h"
#include "runtime/cuda/KernelConfig.h"
#include "runtime/cuda/MemoryPlan.h"

#include <algorithm>

namespace mpc::rt {

namespace {

/// The per-tensor groups of a multi-tensor step's inputs or outputs.
int groups(const TensorLists &l, size_t operands, int lead, int trail) {
  int64_t rest = (int64_t)operands - lead - trail;
  return l.tensors > 0 && rest >= 0 && rest % l.tensors == 0
             ? (int)(rest / l.tensors)
             : -1;
}

/// One launch of a multi-tensor step, its arguments one struct: the shared
/// inputs (leading, trailing), the shared outputs alike, the kernel
/// scratch where the step takes it, then per slot its
/// operand of each input group, of each output group, and its count
/// (empty slots: null and 0).
KernelCall listCall(const Plan &plan, const Step &s, size_t k,
                    const std::function<uint64_t(int)> &address,
                    uint64_t scratch) {
  const TensorLists &l = s.cuda.lists;
  KernelCall c{&l.kernels[k], {}, {kListThreads, 1, 1}, {}, /*packed=*/true};
  auto ptr = [&](int v) { return v >= 0 ? address(v) : 0; };
  auto shared = [&](const std::vector<int> &values, int lead, int trail) {
    for (int j = 0; j < lead; ++j)
      c.args.push_back(ptr(values[j]));
    for (int j = (int)values.size() - trail; j < (int)values.size(); ++j)
      c.args.push_back(ptr(values[j]));
  };
  shared(s.inputs, l.shared[0], l.shared[1]);
  shared(s.outputs, l.shared[2], l.shared[3]);
  if (s.cuda.scratch > 0)
    c.args.push_back(scratch);
  int in = groups(l, s.inputs.size(), l.shared[0], l.shared[1]);
  int out = groups(l, s.outputs.size(), l.shared[2], l.shared[3]);
  int64_t largest = 0;
  for (int t : l.slots[k]) {
    for (int g = 0; g < in; ++g)
      c.args.push_back(t >= 0 ? ptr(s.inputs[l.shared[0] + g * l.tensors + t]) : 0);
    for (int g = 0; g < out; ++g)
      c.args.push_back(t >= 0 ? ptr(s.outputs[l.shared[2] + g * l.tensors + t]) : 0);
    // A slot's count: its first per-tensor output's elements (its first
    // input's in a step that only reads its tensors).
    int64_t n = t < 0 ? 0
                : numElements(plan.values[out ? s.outputs[l.shared[2] + t]
                                              : s.inputs[l.shared[0] + t]]
                                  .shape);
    largest = std::max(largest, n);
    c.args.push_back((uint64_t)n);
  }
  c.grid = {tensorListBlocks(largest), 1, 1};
  return c;
}

/// A step's own launch (no batch, no lists).
KernelCall ownCall(const Step &s, const std::function<uint64_t(int)> &address,
                   uint64_t counter, uint64_t scratch = 0) {
  KernelCall c{&s.cuda.kernel, s.cuda.grid, s.cuda.block, {}};
  c.smem = s.cuda.smem;
  for (int v : kernelInputs(s))
    c.args.push_back(v >= 0 ? address(v) : 0);
  for (int v : kernelOutputs(s))
    c.args.push_back(address(v));
  for (int v : s.cuda.stores)
    c.args.push_back(address(v));
  if (s.cuda.underflowCounter)
    c.args.push_back(counter);
  if (s.cuda.scratch > 0)
    c.args.push_back(scratch);
  if (s.cuda.count >= 0)
    c.args.push_back((uint64_t)s.cuda.count);
  return c;
}

/// A batch's launches: each slot a step's own arguments (its count last),
/// empty slots zeros.
std::vector<KernelCall> batchCalls(const Plan &plan, const StepBatch &b,
                                   const std::function<uint64_t(int)> &address,
                                   uint64_t counter) {
  std::vector<KernelCall> calls;
  size_t per = (size_t)b.perLaunch;
  for (size_t first = 0; first < b.steps.size(); first += per) {
    KernelCall c{&b.kernel, {}, {kListThreads, 1, 1}, {}, /*packed=*/true};
    size_t width = 0;
    int64_t largest = 0;
    for (size_t k = first; k < first + per; ++k) {
      if (k >= b.steps.size()) { // empty: as wide as the others
        c.args.insert(c.args.end(), width, 0);
        continue;
      }
      const Step &s = plan.steps[b.steps[k]];
      KernelCall own = ownCall(s, address, counter);
      width = own.args.size();
      largest = std::max(largest, s.cuda.count);
      c.args.insert(c.args.end(), own.args.begin(), own.args.end());
    }
    // A thread per perThread elements of the largest slot.
    c.grid = {tensorListBlocks((largest + b.perThread - 1) / b.perThread), 1, 1};
    calls.push_back(std::move(c));
  }
  return calls;
}

} // namespace

std::vector<KernelCall> kernelCalls(const Plan &plan, const Step &s,
                                    const std::function<uint64_t(int)> &address,
                                    uint64_t counter, uint64_t scratch) {
  std::vector<KernelCall> calls;
  if (s.cuda.batchedInto >= 0)
    return calls; // launched with its batch
  if (s.cuda.batch.valid())
    calls = batchCalls(plan, s.cuda.batch, address, counter);
  else if (s.cuda.lists.valid())
    for (size_t k = 0; k < s.cuda.lists.kernels.size(); ++k)
      calls.push_back(listCall(plan, s, k, address, scratch));
  else
    calls.push_back(ownCall(s, address, counter, scratch));
  if (!s.cuda.prologue.empty() && !calls.empty()) // the same arguments
    calls.insert(calls.begin(),
                 {&s.cuda.prologue, s.cuda.prologueGrid, s.cuda.prologueBlock,
                  calls.front().args, calls.front().packed,
                  s.cuda.prologueSmem});
  return calls;
}

int64_t kernelScratchBytes(const Plan &plan) {
  int64_t bytes = 0;
  for (const Step &s : plan.steps)
    bytes = std::max(bytes, s.cuda.scratch);
  return bytes;
}

std::string checkKernelScratch(const Plan &plan, const Step &s) {
  bool train = s.op == OpId::BatchNormTrain, grad = s.op == OpId::BatchNormGrad;
  // Only a split batch norm's or fold's kernels, the accumulating
  // attention backward's and a sorted gather gradient's take the scratch: an argument that no other
  // kernel declares would shift the ones after it (a count).
  const char *none = "scratch on a step whose kernel takes none";
  if (s.op == OpId::AttentionGrad && !s.cuda.prologue.empty()) {
    if (s.inputs.size() < 2 || s.inputs[1] < 0 ||
        s.inputs[1] >= (int)plan.values.size() ||
        plan.values[s.inputs[1]].shape.size() < 2)
      return "attention gradient without a [..., queries, head] query";
    const Shape &q = plan.values[s.inputs[1]].shape;
    int64_t heads = 1;
    for (size_t k = 0; k + 2 < q.size(); ++k)
      heads *= q[k];
    // dQ recomputed or added atomically: the key blocks are the step's
    // kernel, after a prologue that computes D (`_rowd`), or zeroes one
    // FP32 dQ and its chunks' counts and computes D (`_zero`).
    const std::string &pro = s.cuda.prologue;
    auto endsWith = [&](const char *suffix) {
      size_t n = std::char_traits<char>::length(suffix);
      return pro.size() > n && pro.compare(pro.size() - n, n, suffix) == 0;
    };
    const int64_t queries = q[q.size() - 2];
    if (endsWith("_rowd")) {
      int64_t need = attentionRowDBytes(heads, queries);
      if (s.cuda.scratch < need)
        return "attention gradient keeps D in " +
               std::to_string(s.cuda.scratch) + " bytes of scratch (needs " +
               std::to_string(need) + ")";
      return "";
    }
    if (endsWith("_zero")) {
      int64_t need = attentionAtomicDqBytes(heads, queries, q.back()) +
                     attentionRowDBytes(heads, queries);
      if (s.cuda.grid[0] != heads)
        return "attention gradient's key blocks are not heads x key tiles";
      if (s.cuda.scratch < need)
        return "attention gradient adds dQ atomically in " +
               std::to_string(s.cuda.scratch) + " bytes of scratch (needs " +
               std::to_string(need) + ")";
      return "";
    }
    int64_t splits = s.cuda.prologueGrid[1];
    int64_t need = splits * heads * q[q.size() - 2] * q.back() * 4;
    if (splits < 1 || s.cuda.prologueGrid[0] != heads)
      return "attention gradient's key blocks are not heads x splits";
    if (s.cuda.scratch < need)
      return "attention gradient sums dQ over " + std::to_string(splits) +
             " splits with " + std::to_string(s.cuda.scratch) +
             " bytes of scratch (needs " + std::to_string(need) + ")";
    return "";
  }
  // An embedding's gradient whose prologue sorts its tokens: their rows
  // and positions, an int32 each.
  if (s.op == OpId::GatherGrad && !s.cuda.prologue.empty()) {
    if (s.inputs.size() < 2 || s.inputs[1] < 0 ||
        s.inputs[1] >= (int)plan.values.size())
      return "gather gradient without indices";
    int64_t need = 8 * numElements(plan.values[s.inputs[1]].shape);
    if (s.cuda.scratch < need)
      return "gather gradient sorts its tokens in " +
             std::to_string(s.cuda.scratch) + " bytes of scratch (needs " +
             std::to_string(need) + ")";
    return "";
  }
  // A loss over spatial scores [N, C, d1, ...] (CudaSpatialLossKernels.cpp):
  // a double a row for the rows' losses, or one for the gradient's
  // denominator.
  // (Over [N, C] scores a loss's prologue writes the log-probabilities
  // and takes no scratch.)
  bool loss = s.op == OpId::SoftmaxCrossEntropyLoss ||
              s.op == OpId::NegativeLogLikelihoodLoss;
  size_t scores = loss ? 0 : 1;
  if ((loss || s.op == OpId::SoftmaxCrossEntropyLossGrad ||
       s.op == OpId::NegativeLogLikelihoodLossGrad) &&
      !s.cuda.prologue.empty() && s.inputs.size() > scores &&
      s.inputs[scores] >= 0 && s.inputs[scores] < (int)plan.values.size() &&
      plan.values[s.inputs[scores]].shape.size() > 2) {
    const Shape &shape = plan.values[s.inputs[scores]].shape;
    int64_t need = loss ? 8 * numElements(shape) / std::max<int64_t>(1, shape[1]) : 8;
    if (s.cuda.scratch < need)
      return "loss over [N, C, d1, ...] scores keeps " +
             std::string(loss ? "its rows' losses" : "its denominator") + " in " +
             std::to_string(s.cuda.scratch) + " bytes of scratch (needs " +
             std::to_string(need) + ")";
    return "";
  }
  // The global norm's launches: a double a slot and block, and 16 bytes.
  if (s.op == OpId::GlobalNorm && s.cuda.lists.valid()) {
    int64_t need = globalNormScratchBytes(s.cuda.lists.perLaunch);
    if (s.cuda.scratch < need)
      return "global norm keeps its partial sums in " +
             std::to_string(s.cuda.scratch) + " bytes of scratch (needs " +
             std::to_string(need) + ")";
    return "";
  }
  // A fold split over blocks (grid outputs x parts for its prologue): a
  // double a part for its value and each sibling sum it stores.
  if (cuda::isFoldOp(s.op) && !s.cuda.prologue.empty()) {
    int64_t outs = s.cuda.prologueGrid[0], parts = s.cuda.prologueGrid[1];
    if (s.cuda.grid[0] != outs || s.cuda.grid[1] != 1 || parts < 2)
      return "split fold's grids are not outputs and outputs x parts";
    int64_t need = outs * parts * (int64_t)(1 + s.cuda.stores.size()) * 8;
    if (s.cuda.scratch < need)
      return "fold splits " + std::to_string(outs) + " outputs over " +
             std::to_string(parts) + " blocks with " +
             std::to_string(s.cuda.scratch) +
             " bytes of scratch for their partials (needs " +
             std::to_string(need) + ")";
    return "";
  }
  if ((!train && !grad) || s.cuda.kernel.empty())
    return s.cuda.scratch > 0 ? none : "";
  size_t x = train ? 0 : 1;
  if (s.inputs.size() <= x || s.inputs[x] < 0 ||
      s.inputs[x] >= (int)plan.values.size() ||
      plan.values[s.inputs[x]].shape.size() < 2)
    return "batch norm without an [N, C, ...] input";
  // Channels first, a block a channel; last, a group of channels
  // (batchNormChannelBlocks).
  const ValueInfo &xv = plan.values[s.inputs[x]];
  const Shape &shape = xv.shape;
  bool last = s.getInt("channels_last", 0);
  int64_t C = last ? shape.back() : shape[1], split = s.cuda.grid[1];
  bool channels = last ? cuda::batchNormChannelBlocks(
                             C, (int64_t)dtypeSize(xv.dtype), s.cuda.grid[0])
                       : s.cuda.grid[0] == C;
  if (!channels || split < 1)
    return "batch norm kernel's grid is not its channels";
  int64_t need = split > 1 ? C * split * (train ? 2 : 4) * 8 : 0;
  if (split == 1 && s.cuda.scratch > 0)
    return none;
  if (s.cuda.scratch < need)
    return "batch norm splits a channel over " + std::to_string(split) +
           " blocks with " + std::to_string(s.cuda.scratch) +
           " bytes of scratch for their sums (needs " + std::to_string(need) +
           ")";
  return "";
}

std::string checkTensorLists(const Step &s) {
  const TensorLists &l = s.cuda.lists;
  if (!l.valid())
    return "";
  if (l.tensors < 1 || l.kernels.empty() || l.kernels.size() != l.slots.size())
    return "tensor lists without launches";
  for (int x : l.shared)
    if (x < 0)
      return "tensor lists with a negative operand count";
  int in = groups(l, s.inputs.size(), l.shared[0], l.shared[1]);
  int out = groups(l, s.outputs.size(), l.shared[2], l.shared[3]);
  if (in < 0 || out < 0 || in + out < 1)
    return "tensor lists that do not divide the step's operands";
  std::vector<bool> seen(l.tensors, false);
  for (const std::vector<int> &slots : l.slots)
    for (int t : slots) {
      if (t < -1 || t >= l.tensors || (t >= 0 && seen[t]))
        return "tensor lists with a slot out of range or repeated";
      if (t >= 0)
        seen[t] = true;
    }
  if (std::find(seen.begin(), seen.end(), false) != seen.end())
    return "tensor lists that leave a tensor out";
  return "";
}

std::string checkStepBatches(const Plan &plan) {
  const std::vector<Step> &steps = plan.steps;
  auto name = [&](size_t i) { return "step " + std::to_string(i); };
  for (size_t i = 0; i < steps.size(); ++i) {
    const CudaLaunch &c = steps[i].cuda;
    if (int j = c.batchedInto; j >= 0) {
      const std::vector<int> *owner =
          j < (int)steps.size() ? &steps[j].cuda.batch.steps : nullptr;
      if (!owner || (int)i >= j ||
          std::find(owner->begin(), owner->end(), (int)i) == owner->end())
        return name(i) + " is batched into a step whose batch does not list it";
    }
    if (!c.batch.valid())
      continue;
    const std::vector<int> &members = c.batch.steps;
    if (members.back() != (int)i || c.batchedInto >= 0 || c.lists.valid())
      return name(i) + "'s batch does not end with it";
    size_t width = 0;
    for (size_t k = 0; k < members.size(); ++k) {
      int m = members[k];
      if (m < 0 || m > (int)i || (k && m <= members[k - 1]))
        return name(i) + "'s batch names steps out of order";
      const CudaLaunch &mc = steps[m].cuda;
      size_t w = ownCall(steps[m], [](int) { return 0; }, 0).args.size();
      if (mc.count < 0 || mc.kernel.empty() || !mc.prologue.empty() ||
          mc.lists.valid() || (m != (int)i && mc.batchedInto != (int)i) ||
          (k && w != width))
        return name(i) + "'s batch names " + name(m) +
               ", which is not a counted kernel launched with it";
      width = w;
    }
  }
  return "";
}

} // namespace mpc::rt
