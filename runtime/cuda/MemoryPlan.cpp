//===- MemoryPlan.cpp - device buffer offsets for a plan ------------------===//

#include "runtime/cuda/MemoryPlan.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <set>

namespace mpc::rt {

int allReduceWait(const Plan &plan, size_t step) {
  const std::vector<int> &outs = plan.steps[step].outputs;
  for (size_t j = step + 1; j < plan.steps.size(); ++j) {
    const Step &s = plan.steps[j];
    if (s.cuda.fusedInto >= 0)
      continue; // its chain's last step reads for it
    const std::vector<int> kernelReads = kernelInputs(s);
    for (const std::vector<int> *reads : {&s.inputs, &kernelReads})
      for (int v : *reads)
        if (v >= 0 && std::find(outs.begin(), outs.end(), v) != outs.end())
          return (int)j;
  }
  return (int)plan.steps.size();
}

std::vector<int64_t> inPlaceOffsets(const Plan &plan, const Step &s) {
  bool split = s.op == OpId::Split;
  if ((!split && s.op != OpId::Concat) || s.inputs.empty() || s.outputs.empty())
    return {};
  const std::vector<int> &parts = split ? s.outputs : s.inputs;
  int whole = split ? s.inputs[0] : s.outputs[0];
  auto known = [&](int v) { return v >= 0 && v < (int)plan.values.size(); };
  if (!known(whole))
    return {};
  const Shape &w = plan.values[whole].shape;
  int64_t axis = s.getInt("axis", 0);
  if (axis < 0)
    axis += (int64_t)w.size();
  if (axis < 0 || axis >= (int64_t)w.size())
    return {};
  int64_t inner = dtypeSize(plan.values[whole].dtype);
  for (size_t d = axis + 1; d < w.size(); ++d)
    inner *= w[d];
  std::vector<int64_t> at;
  int64_t offset = 0;
  for (int v : parts) {
    if (!known(v) || plan.values[v].shape.size() != w.size())
      return {};
    for (size_t d = 0; d < w.size(); ++d)
      if ((int64_t)d != axis && plan.values[v].shape[d] != w[d])
        return {};
    at.push_back(offset * inner);
    offset += plan.values[v].shape[axis];
  }
  return offset == w[axis] ? at : std::vector<int64_t>{};
}

bool contiguousParts(const Plan &plan, const Step &s) {
  std::vector<int64_t> at = inPlaceOffsets(plan, s);
  if (at.empty())
    return false;
  const Shape &w =
      plan.values[s.op == OpId::Split ? s.inputs[0] : s.outputs[0]].shape;
  int64_t axis = s.getInt("axis", 0);
  if (axis < 0)
    axis += (int64_t)w.size();
  for (int64_t d = 0; d < axis; ++d)
    if (w[d] != 1)
      return false;
  return std::all_of(at.begin(), at.end(),
                     [](int64_t offset) { return offset % 256 == 0; });
}

BufferPlacement bufferPlacement(const Plan &plan) {
  size_t n = plan.values.size();
  // Each value's parent buffer and its offset there; the root is where
  // the parents end.
  std::vector<int> parent(n, -1);
  std::vector<int64_t> offset(n, 0);
  auto top = [&](int v, int64_t &delta) {
    delta = 0;
    for (size_t hops = 0; parent[v] >= 0 && hops < n; ++hops)
      delta += offset[v], v = parent[v];
    return v;
  };
  auto known = [&](int v) { return v >= 0 && v < (int)n; };
  for (const Step &s : plan.steps) {
    if (s.cuda.alias >= 0 && !s.outputs.empty() && known(s.outputs[0]) &&
        known(s.cuda.alias))
      parent[s.outputs[0]] = s.cuda.alias;
    // State updated in place: the result lives in its input's buffer.
    const std::vector<int> &pairs = s.cuda.updatesInPlace;
    for (size_t p = 0; p + 1 < pairs.size(); p += 2)
      if (known(pairs[p]) && known(pairs[p + 1]))
        parent[pairs[p]] = pairs[p + 1];
    if (!s.cuda.inPlace)
      continue;
    std::vector<int64_t> at = inPlaceOffsets(plan, s);
    if (at.empty())
      continue;
    if (s.op == OpId::Split) {
      for (size_t k = 0; k < s.outputs.size(); ++k)
        parent[s.outputs[k]] = s.inputs[0], offset[s.outputs[k]] = at[k];
      continue;
    }
    // A concat's parts were written before it: their buffers move into
    // the whole's.
    for (size_t k = 0; k < s.inputs.size(); ++k) {
      int64_t within;
      int r = top(s.inputs[k], within);
      int64_t ignored;
      if (r != top(s.outputs[0], ignored))
        parent[r] = s.outputs[0], offset[r] = at[k] - within;
    }
  }
  BufferPlacement p;
  p.root.resize(n);
  p.delta.resize(n);
  for (size_t v = 0; v < n; ++v)
    p.root[v] = top((int)v, p.delta[v]);
  return p;
}

std::vector<int> bufferRoots(const Plan &plan) {
  return bufferPlacement(plan).root;
}

std::vector<std::vector<size_t>> bufferReaders(const Plan &plan,
                                               const std::vector<int> &root) {
  std::vector<std::vector<size_t>> readers(plan.values.size());
  for (size_t i = 0; i < plan.steps.size(); ++i)
    if (plan.steps[i].cuda.alias < 0)
      for (int v : plan.steps[i].inputs)
        if (v >= 0)
          readers[root[v]].push_back(i);
  return readers;
}

int64_t planDeviceMemory(const Plan &plan, std::vector<int64_t> &offsets) {
  size_t n = plan.values.size();
  BufferPlacement placement = bufferPlacement(plan);
  const std::vector<int> &root = placement.root;
  std::vector<int> lastUse(n, -1);
  std::vector<bool> inRegisters(n, false);
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    if (plan.steps[i].cuda.storedAs >= 0) // its cast's result instead
      inRegisters[plan.steps[i].outputs[0]] = true;
    const std::vector<int> &outs = plan.steps[i].outputs;
    if (int w = plan.steps[i].cuda.written; w >= 0) // never written or read
      for (size_t k = w; k < outs.size(); ++k)
        inRegisters[outs[k]] = true;
    if (int root = plan.steps[i].cuda.fusedInto; root >= 0) {
      const std::vector<int> &stores = plan.steps[root].cuda.stores;
      for (int v : plan.steps[i].outputs) // unless the kernel stores it
        inRegisters[v] =
            std::find(stores.begin(), stores.end(), v) == stores.end() &&
            plan.steps[root].cuda.storedAs != v;
      continue; // read by the chain's kernel, at its last step
    }
    // A batched step reads when its batch launches.
    int at = std::max((int)i, plan.steps[i].cuda.batchedInto);
    for (int v : kernelInputs(plan.steps[i]))
      if (v >= 0)
        lastUse[root[v]] = std::max(lastUse[root[v]], at);
    // A ReLU mask lives from the GEMM writing it to the last reading it.
    if (int mask = plan.steps[i].cuda.gemm.reluMask; mask >= 0)
      lastUse[root[mask]] = std::max(lastUse[root[mask]], (int)i);
  }
  // An all_reduce runs on NCCL's stream until the first step reading its
  // results: its inputs stay untouched until then.
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    const Step &s = plan.steps[i];
    if (s.op != OpId::AllReduce)
      continue;
    int wait = allReduceWait(plan, i);
    for (int v : s.inputs)
      lastUse[root[v]] = std::max(lastUse[root[v]], wait);
  }
  std::vector<bool> pinned(n, false);
  for (const Binding &b : plan.inputs)
    pinned[root[b.value]] = true;
  for (const Binding &b : plan.outputs)
    pinned[root[b.value]] = true;
  for (const Parameter &p : plan.params)
    pinned[root[p.value]] = true;
  for (const auto &[id, t] : plan.constants)
    pinned[root[id]] = true;
  auto bytes = [&](int v) {
    int64_t b = (int64_t)plan.values[v].bytes();
    return (std::max<int64_t>(b, 1) + 255) / 256 * 256;
  };
  offsets.assign(n, -1);
  int64_t top = 0;
  for (size_t v = 0; v < n; ++v)
    if (pinned[v] && root[v] == (int)v) {
      offsets[v] = top;
      top += bytes(v);
    }
  // First fit over the free ranges above the pinned area: the lowest
  // offset among the ranges large enough, found per distinct size (a
  // model has few) rather than by a scan of every range (13k-node models
  // free thousands).
  std::map<int64_t, int64_t> freeRanges;                 // offset -> size
  std::map<int64_t, std::set<int64_t>> freeBySize;      // size -> offsets
  auto release = [&](int64_t at, int64_t size) {
    if (auto old = freeRanges.find(at); old != freeRanges.end()) {
      auto &same = freeBySize[old->second];
      same.erase(at);
      if (same.empty())
        freeBySize.erase(old->second);
    }
    freeRanges[at] = size;
    freeBySize[size].insert(at);
  };
  int64_t arena = top;
  auto allocate = [&](int v) {
    int64_t size = bytes(v);
    int64_t at = -1;
    for (auto it = freeBySize.lower_bound(size); it != freeBySize.end(); ++it)
      if (at < 0 || *it->second.begin() < at)
        at = *it->second.begin();
    if (at < 0) {
      at = arena;
      arena += size;
      return at;
    }
    int64_t have = freeRanges[at];
    freeRanges.erase(at);
    auto &same = freeBySize[have];
    same.erase(at);
    if (same.empty())
      freeBySize.erase(have);
    if (have > size)
      release(at + size, have - size);
    return at;
  };
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    const Step &s = plan.steps[i];
    std::vector<int> written = kernelOutputs(s);
    // A kernel's other stores: chain members' results (allocated at the
    // member already) and sums fused in from later steps (fuseSiblingSums).
    written.insert(written.end(), s.cuda.stores.begin(), s.cuda.stores.end());
    const LibraryGemm &g = s.cuda.gemm;
    for (int v : {g.biasGrad, g.geluOut, g.dgeluOut, g.dreluOut, g.reluMask})
      if (v >= 0) // the library may write it here
        written.push_back(v);
    for (int v : written) // the whole buffer, at the first part written
      if (offsets[root[v]] < 0 && !inRegisters[v] && !inRegisters[root[v]])
        offsets[root[v]] = allocate(root[v]);
    std::vector<int> readers{(int)i}; // a batch: every member reads here
    if (s.cuda.batch.valid())
      readers = s.cuda.batch.steps;
    for (int r : readers)
      for (int v : kernelInputs(plan.steps[r]))
        if (v >= 0 && lastUse[root[v]] == (int)i && !pinned[root[v]] &&
            offsets[root[v]] >= 0)
          release(offsets[root[v]], bytes(root[v]));
    if (g.reluMask >= 0 && lastUse[root[g.reluMask]] == (int)i &&
        !pinned[root[g.reluMask]] && offsets[root[g.reluMask]] >= 0)
      release(offsets[root[g.reluMask]], bytes(root[g.reluMask]));
  }
  for (size_t v = 0; v < n; ++v) // roots nothing wrote
    if (root[v] == (int)v && offsets[v] < 0 && !inRegisters[v])
      offsets[v] = allocate((int)v);
  for (size_t v = 0; v < n; ++v)
    if (root[v] != (int)v && !inRegisters[v])
      offsets[v] = offsets[root[v]] >= 0 ? offsets[root[v]] + placement.delta[v]
                                         : allocate((int)v);
  return arena;
}

std::vector<int> kernelInputs(const Step &s) {
  std::vector<int> in = s.cuda.isChain() ? s.cuda.inputs : s.inputs;
  if (s.cuda.epilogueAdd >= 0)
    in.push_back(s.cuda.epilogueAdd);
  if (s.cuda.hasPrologueAdd() && !in.empty()) {
    in[0] = s.cuda.prologueAdd[0];
    in.push_back(s.cuda.prologueAdd[1]);
    if (const auto &d = s.cuda.prologueDropout; d[0] >= 0) {
      (d[1] == 0 ? in[0] : in.back()) = d[2];
      if (d[3] >= 0)
        in.push_back(d[3]);
    }
  }
  return in;
}

int kernelStep(const Plan &plan, int i) {
  // fusedInto points forward, so this ends (a plan read from disk may
  // point past its end: where it stops).
  while (plan.steps[i].cuda.fusedInto > i &&
         plan.steps[i].cuda.fusedInto < (int)plan.steps.size())
    i = plan.steps[i].cuda.fusedInto;
  return i;
}

std::vector<int> kernelOutputs(const Step &s) {
  std::vector<int> out = s.outputs;
  if (s.cuda.written >= 0 && s.cuda.written < (int)out.size())
    out.resize(s.cuda.written);
  if (s.cuda.storedAs >= 0 && !out.empty())
    out[0] = s.cuda.storedAs;
  return out;
}

} // namespace mpc::rt
