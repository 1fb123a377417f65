//===- mpc-gpu-run.cpp - run an artifact on the GPU, no MLIR needed -------===//
//
// mpc-gpu-run DIR [--repeat N] [--expect NAME=FILE.npy]... NAME=FILE.npy...
// Runs an `mpc compile` artifact with the CUDA runtime (or says in one line
// that there is no GPU, exit 1), prints each output's largest difference
// from an expected .npy (relative to its largest magnitude) and the median
// time of N more runs. Built alone with -DMPC_RUNTIME_ONLY=ON.
//
//===----------------------------------------------------------------------===//

#include "runtime/Npy.h"
#include "runtime/PlanIO.h"
#include "runtime/cuda/CudaDevice.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>

using namespace mpc::rt;

int main(int argc, char **argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: mpc-gpu-run DIR [--repeat N] "
                         "[--expect NAME=FILE.npy]... NAME=FILE.npy...\n");
    return 2;
  }
  std::string dir = argv[1], error;
  int repeat = 0;
  std::map<std::string, Tensor> inputs, expected;
  for (int i = 2; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--repeat" && i + 1 < argc) {
      repeat = std::atoi(argv[++i]);
      continue;
    }
    bool expect = a == "--expect" && i + 1 < argc;
    std::string spec = expect ? argv[++i] : a;
    size_t eq = spec.find('=');
    Tensor t;
    if (eq == std::string::npos || !readNpy(spec.substr(eq + 1), t, error)) {
      std::fprintf(stderr, "mpc-gpu-run: error: bad argument '%s' %s\n",
                   spec.c_str(), error.c_str());
      return 1;
    }
    (expect ? expected : inputs)[spec.substr(0, eq)] = std::move(t);
  }
  CudaInfo gpu = probeCuda();
  if (!gpu.available) {
    std::fprintf(stderr, "mpc-gpu-run: error: no CUDA GPU here (%s)\n",
                 gpu.reason.c_str());
    return 1;
  }
  Plan plan;
  std::vector<Tensor> outputs;
  double ms = 0;
  if (!loadPlan(dir, plan, error) ||
      !runPlanCuda(plan, dir, inputs, outputs, error, repeat, &ms)) {
    std::fprintf(stderr, "mpc-gpu-run: error: %s\n", error.c_str());
    return 1;
  }
  std::printf("gpu: %s\n", gpu.devices[0].c_str());
  for (size_t k = 0; k < plan.outputs.size(); ++k) {
    auto it = expected.find(plan.outputs[k].name);
    if (it == expected.end())
      continue;
    double diff = 0, scale = 0;
    for (int64_t i = 0; i < outputs[k].size(); ++i) {
      double a = outputs[k].getFloat(i), b = it->second.getFloat(i);
      diff = std::max(diff, std::isfinite(a) ? std::fabs(a - b) : INFINITY);
      scale = std::max(scale, std::fabs(b));
    }
    std::printf("%s: max relative difference vs CPU backend %.3g\n",
                plan.outputs[k].name.c_str(), diff / std::max(scale, 1e-30));
  }
  if (repeat > 0)
    std::printf("time: median %.4f ms over %d runs\n", ms, repeat);
  return 0;
}
