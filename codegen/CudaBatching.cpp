//===- CudaBatching.cpp - one launch for many steps of one kernel ---------===//
//
// After every step has its kernel: the launches of one thread-per-element
// kernel (its size an argument) among consecutive steps that do not read
// each other's results - an optimizer's update of each parameter, one
// fused chain per tensor - become multi-tensor launches of a batched
// kernel, as apex's multi_tensor_apply and torch's fused Adam do: each
// launch runs the kernel's element function for up to `perLaunch` steps,
// a grid-strided loop per slot. Recorded on the run's last step
// (`cuda.batch`); the others get `cuda.batchedInto`, and the memory plan
// keeps every member's inputs until the batch launches.
//
//===----------------------------------------------------------------------===//

#include "codegen/CudaKernels.h"
#include "runtime/cuda/KernelCalls.h"
#include "runtime/cuda/MemoryPlan.h"

#include <algorithm>
#include <set>

namespace mlir::mpc::cuda {

using ::mpc::rt::CudaLaunch;

/// Slots a batched launch takes at most, and the parameter bytes its
/// slots may fill (the 4 KiB every CUDA architecture accepts).
constexpr int kMaxSlots = 32;
constexpr int64_t kParamBytes = 4096;

namespace {

/// The batched kernel `name` with `slots` slots: the element function
/// (renamed) and a kernel taking one struct (KernelCall::packed) whose
/// slots - each a step's own arguments, its count last - it walks, running
/// the element function grid-strided over each.
CudaKernel batchedKernel(const std::string &name, const Emitter::ElementFn &fn,
                         int slots) {
  auto named = [&](std::string text) {
    const std::string from = Emitter::kKernelName;
    for (size_t at = 0; (at = text.find(from, at)) != std::string::npos;
         at += name.size())
      text.replace(at, from.size(), name);
    return text;
  };
  std::string threads = std::to_string(::mpc::rt::kListThreads);
  std::string fields, call;
  size_t w = fn.params.size();
  for (const auto &[decl, pname] : fn.params) {
    // A field of the parameter's type ("const T *__restrict__ x" loses the
    // qualifier a field cannot use; the count is a plain i64).
    size_t star = decl.find('*');
    fields += "    " +
              (star == std::string::npos ? std::string("i64 ")
                                         : decl.substr(0, star + 1)) +
              pname + ";\n";
    call += ", q." + pname;
  }
  std::string args = name + "_args";
  // Each slot's elements: one at a time, or as the element function's
  // vector groups.
  std::string loop =
      fn.vector > 1 ? "    " + name + "_run(first, stride" + call
                    : "    for (i64 i = first; i < q.count; i += stride) " +
                          name + "_at(i" + call;
  CudaKernel k;
  k.name = name;
  k.code = named(fn.code) + "struct " + args + " {\n  struct {\n" + fields +
           "  } s[" + std::to_string(slots) + "];\n};\n\n" +
           "extern \"C\" __global__ void __launch_bounds__(" + threads + ") " +
           name + "(const __grid_constant__ " + args + " a) {\n" +
           "  const i64 first = (i64)blockIdx.x * " + threads +
           " + threadIdx.x, stride = (i64)gridDim.x * " + threads + ";\n" +
           "#pragma unroll 1\n  for (int t = 0; t < " + std::to_string(slots) +
           "; ++t) {\n    const auto &q = a.s[t];\n" +
           loop + ");\n  }\n}\n\n";
  std::vector<size_t> counts; // every slot's last word
  for (int t = 0; t < slots; ++t)
    counts.push_back(t * w + w - 1);
  k.launcher = packedLauncher(name, args, slots * w, counts,
                              ::mpc::rt::kListThreads, fn.vector);
  return k;
}

} // namespace

void batchLaunches(Emitter &e) {
  Plan &plan = e.plan;
  std::vector<int> launches; // steps with a kernel launch, in order
  for (size_t i = 0; i < plan.steps.size(); ++i)
    if (!plan.steps[i].cuda.inOtherKernel() && !plan.steps[i].cuda.kernel.empty())
      launches.push_back((int)i);
  auto batchable = [&](int i) {
    const CudaLaunch &c = plan.steps[i].cuda;
    return c.count >= 0 && c.prologue.empty() && !c.lists.valid() &&
           c.libraryFusedInto < 0 && e.elements.count(c.kernel);
  };
  // Windows: consecutive batchable launches, nothing but their own fused
  // members between them, none reading what an earlier one writes. Within
  // one the launches may run in any order, so each kernel's launches in it
  // are a run, launched at its last member: an optimizer's updates of fp16
  // and FP32 gradients interleave in plan order but batch apart.
  std::vector<std::vector<int>> runs;
  for (size_t k = 0; k < launches.size();) {
    std::vector<int> window{launches[k]};
    std::set<int> written;
    auto write = [&](int i) {
      const Step &s = plan.steps[i];
      written.insert(s.outputs.begin(), s.outputs.end());
      written.insert(s.cuda.stores.begin(), s.cuda.stores.end());
    };
    write(window[0]);
    size_t next = k + 1;
    for (; batchable(window[0]) && next < launches.size(); ++next) {
      int j = launches[next];
      bool ok = batchable(j) &&
                plan.steps[j].appliedOnly == plan.steps[window[0]].appliedOnly;
      for (int t = window.back() + 1; ok && t < j; ++t)
        ok = ::mpc::rt::kernelStep(plan, t) == j;
      for (int v : ::mpc::rt::kernelInputs(plan.steps[j]))
        ok = ok && !written.count(v);
      if (!ok)
        break;
      window.push_back(j);
      write(j);
    }
    std::vector<std::string> order; // kernels by first launch
    std::map<std::string, std::vector<int>> byKernel;
    for (int j : window) {
      const std::string &name = plan.steps[j].cuda.kernel;
      if (!byKernel.count(name))
        order.push_back(name);
      byKernel[name].push_back(j);
    }
    for (const std::string &name : order)
      if (byKernel[name].size() > 1)
        runs.push_back(byKernel[name]);
    k = next;
  }
  // Slots per kernel: as many as its longest run and its parameters allow.
  std::map<std::string, int> slots;
  for (const std::vector<int> &run : runs) {
    const std::string &k = plan.steps[run[0]].cuda.kernel;
    int64_t bytes = 8 * (int64_t)e.elements[k].params.size();
    int cap = (int)std::max<int64_t>(1, std::min<int64_t>(kMaxSlots, kParamBytes / bytes));
    slots[k] = std::max(slots[k], std::min(cap, (int)run.size()));
  }
  std::map<std::string, std::string> batchedName;
  for (const auto &[k, n] : slots) {
    std::string name = k + "_x" + std::to_string(n);
    batchedName[k] = name;
    e.mod.kernels.push_back(batchedKernel(name, e.elements[k], n));
  }
  for (const std::vector<int> &run : runs) {
    Step &owner = plan.steps[run.back()];
    const std::string &k = owner.cuda.kernel;
    owner.cuda.batch = {batchedName[k], slots[k], run,
                        std::max(1, e.elements[k].vector)};
    for (int m : run)
      if (m != run.back())
        plan.steps[m].cuda.batchedInto = run.back();
  }
}

std::vector<std::string> launchedKernels(const Plan &plan, bool libraries,
                                         bool skipAppliedOnly) {
  std::vector<std::string> names;
  for (const Step &s : plan.steps) {
    const CudaLaunch &c = s.cuda;
    if (c.inOtherKernel() || c.kernel.empty() || c.batchedInto >= 0 ||
        (libraries && c.libraryFusedInto >= 0) ||
        (skipAppliedOnly && s.appliedOnly))
      continue;
    if (!c.prologue.empty())
      names.push_back(c.prologue);
    if (c.batch.valid())
      names.insert(names.end(),
                   (c.batch.steps.size() + c.batch.perLaunch - 1) / c.batch.perLaunch,
                   c.batch.kernel);
    else if (c.lists.valid())
      names.insert(names.end(), c.lists.kernels.begin(), c.lists.kernels.end());
    else
      names.push_back(c.kernel);
  }
  return names;
}

} // namespace mlir::mpc::cuda
