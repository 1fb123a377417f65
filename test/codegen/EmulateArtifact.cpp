//===- EmulateArtifact.cpp - run an artifact's kernels on the host --------===//
//
// mpc-emulate-artifact DIR LIB.so [NAME=FILE.npy...]: loads the plan, lays
// out one host arena with the device memory plan, runs every step through
// the emulated kernel `emu_<kernel>` of LIB.so (kernels.cu built with g++
// and test/codegen/Inputs/cuda_host_shim.h), then runs the same plan on the
// CPU backend and prints, per output, the largest difference relative to
// the output's largest magnitude and the largest elementwise distance in
// ulps of the output's storage format (-1: NaN against a number); a
// micro-batch that does not apply its group's update (mpc.accum.apply
// false) skips the applied-only steps on both sides, and the outputs only
// they compute print as skipped. Tests
// the emitter's index arithmetic, launch shapes, aliases and buffer reuse
// without a GPU, and the count of gradient elements flushed to zero
// against the CPU backend's.
//
//===----------------------------------------------------------------------===//

#include "runtime/AppliedOnly.h"
#include "runtime/Executor.h"
#include "runtime/Npy.h"
#include "runtime/OpTrace.h"
#include "runtime/PlanIO.h"
#include "runtime/WeightCopies.h"
#include "runtime/cuda/KernelCalls.h"
#include "runtime/cuda/MemoryPlan.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <dlfcn.h>
#include <map>
#include <string>
#include <vector>

using namespace mpc::rt;

/// Element i of a float tensor as an integer ordered like the values, in
/// its storage format, so that two values' distance is their ulp distance.
static int64_t orderedBits(const Tensor &t, int64_t i) {
  if (t.dtype() == DType::F32) {
    uint32_t b;
    std::memcpy(&b, t.data<float>() + i, 4);
    return b & 0x80000000u ? -(int64_t)(b & 0x7fffffffu) : (int64_t)b;
  }
  uint16_t b = t.data<uint16_t>()[i]; // f16 / bf16 bits
  return b & 0x8000u ? -(int64_t)(b & 0x7fffu) : (int64_t)b;
}

int main(int argc, char **argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s ARTIFACT LIB.so [NAME=FILE.npy...]\n",
                 argv[0]);
    return 2;
  }
  std::string dir = argv[1], error;
  Plan plan;
  if (!loadPlan(dir, plan, error)) {
    std::fprintf(stderr, "error: %s\n", error.c_str());
    return 1;
  }
  void *lib = dlopen(argv[2], RTLD_NOW);
  if (!lib) {
    std::fprintf(stderr, "error: %s\n", dlerror());
    return 1;
  }
  std::map<std::string, Tensor> inputs;
  for (int i = 3; i < argc; ++i) {
    std::string spec = argv[i];
    size_t eq = spec.find('=');
    Tensor t;
    if (eq == std::string::npos || !readNpy(spec.substr(eq + 1), t, error)) {
      std::fprintf(stderr, "error: bad input '%s' %s\n", argv[i], error.c_str());
      return 1;
    }
    inputs[spec.substr(0, eq)] = std::move(t);
  }
  std::vector<int64_t> offsets;
  int64_t arena = planDeviceMemory(plan, offsets);
  // Poisoned, so a read of a buffer nothing wrote shows as a mismatch.
  std::vector<uint8_t> mem(arena + 256, 0xA5);
  auto put = [&](int id, const Tensor &t) {
    std::memcpy(mem.data() + offsets[id], t.raw(), t.bytes());
  };
  for (const Parameter &p : plan.params)
    put(p.value, p.init);
  for (const auto &[id, t] : plan.constants)
    put(id, t);
  // Weight copies as the sessions derive them (runtime/WeightCopies.h).
  for (const WeightCopy &c : weightCopies(plan))
    if (!inputs.count(c.input))
      inputs[c.input] = castCopy(inputs.count(c.master->name)
                                     ? inputs.at(c.master->name)
                                     : c.master->init,
                                 plan.values[c.value].dtype);
  for (const Binding &b : plan.inputs)
    put(b.value, inputs.at(b.name));
  int launched = 0;
  unsigned long long underflow = 0;
  const int flag = appliedOnlyFlag(plan);
  const bool skipping =
      flag >= 0 && inputs.at("mpc.accum.apply").getInt(0) == 0;
  // NaN, so a kernel reading partial sums no prologue wrote shows.
  std::vector<double> scratch(kernelScratchBytes(plan) / sizeof(double) + 1,
                              std::nan(""));
  for (const Step &s : plan.steps) {
    if (s.cuda.inOtherKernel() || (skipping && s.appliedOnly))
      continue;
    for (const KernelCall &c : kernelCalls(
             plan, s,
             [&](int v) { return (uint64_t)(uintptr_t)(mem.data() + offsets[v]); },
             (uint64_t)(uintptr_t)&underflow,
             (uint64_t)(uintptr_t)scratch.data())) {
      auto fn = (void (*)(void **))dlsym(lib, ("emu_" + *c.kernel).c_str());
      if (!fn) {
        std::fprintf(stderr, "error: no emulated kernel %s for step '%s' (%s)\n",
                     c.kernel->c_str(), s.name.c_str(), opName(s.op));
        return 1;
      }
      // Launchers get each parameter's value (as the driver copies it).
      std::vector<void *> args;
      for (uint64_t a : c.args)
        args.push_back((void *)(uintptr_t)a);
      fn(args.data());
      ++launched;
    }
  }
  std::vector<Tensor> cpu;
  RunStats stats;
  if (!runPlan(plan, inputs, cpu, error, &stats)) {
    std::fprintf(stderr, "error: CPU backend: %s\n", error.c_str());
    return 1;
  }
  traceOps("cuda", plan);
  std::printf("%d kernels emulated, arena %lld bytes\n", launched,
              (long long)arena);
  std::printf("gradient underflow: %llu emulated, %lld on the CPU backend\n",
              underflow, (long long)stats.underflow);
  if (skipping != stats.skippedApplied) {
    std::fprintf(stderr, "error: the CPU backend %s the update's steps\n",
                 stats.skippedApplied ? "skipped" : "ran");
    return 1;
  }
  std::vector<bool> skipped = appliedOnlyOutputs(plan);
  for (size_t k = 0; k < plan.outputs.size(); ++k) {
    if (skipping && skipped[k]) {
      std::printf("%s: skipped\n", plan.outputs[k].name.c_str());
      continue;
    }
    const ValueInfo &v = plan.values[plan.outputs[k].value];
    Tensor got(v.dtype, v.shape);
    std::memcpy(got.raw(), mem.data() + offsets[plan.outputs[k].value],
                got.bytes());
    double diff = 0, scale = 0;
    int64_t ulps = 0; // elementwise, in the output's storage format
    for (int64_t i = 0; i < got.size(); ++i) {
      if (!isFloat(v.dtype)) { // integers and bools: exactly
        diff = std::max(diff, got.getInt(i) == cpu[k].getInt(i) ? 0.0 : INFINITY);
        scale = 1;
        continue;
      }
      double a = got.getFloat(i), b = cpu[k].getFloat(i);
      diff = std::max(diff, std::isnan(a) != std::isnan(b) ? INFINITY
                                                           : std::fabs(a - b));
      scale = std::max(scale, std::fabs(b));
      if (std::isnan(a) != std::isnan(b))
        ulps = INT64_MAX;
      else if (!std::isnan(a))
        ulps = std::max(ulps, std::abs(orderedBits(got, i) -
                                       orderedBits(cpu[k], i)));
    }
    std::printf("%s: max relative difference %.3g\n",
                plan.outputs[k].name.c_str(), diff / std::max(scale, 1e-30));
    if (isFloat(v.dtype))
      std::printf("%s: max ulps %lld\n", plan.outputs[k].name.c_str(),
                  ulps == INT64_MAX ? -1LL : (long long)ulps);
  }
  return 0;
}
