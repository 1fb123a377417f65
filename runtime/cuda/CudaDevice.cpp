//===- CudaDevice.cpp - run an artifact on an NVIDIA GPU ------------------===//

#include "runtime/cuda/CudaDevice.h"
#include "runtime/cuda/CublasLt.h"
#include "runtime/cuda/Cudnn.h"
#include "runtime/cuda/Nccl.h"
#include "runtime/cuda/CudaDriver.h"
#include "runtime/WeightCopies.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>

namespace mpc::rt {

using namespace cu;

CudaInfo probeCuda() {
  CudaInfo info;
  Driver &d = driver();
  if (std::string why = d.load(); !why.empty()) {
    info.reason = why;
    return info;
  }
  if (Result r = d.init(0)) {
    info.reason = "no CUDA device (" + d.describe(r) + ")";
    return info;
  }
  d.driverVersion(&info.driverVersion);
  int count = 0;
  if (d.deviceCount(&count) || count == 0) {
    info.reason = "no CUDA device (the driver sees none)";
    return info;
  }
  for (int i = 0; i < count; ++i) {
    Device dev;
    char name[256] = {0};
    int major = 0, minor = 0;
    d.deviceGet(&dev, i);
    d.deviceName(name, sizeof name, dev);
    d.deviceAttribute(&major, 75, dev); // COMPUTE_CAPABILITY_MAJOR
    d.deviceAttribute(&minor, 76, dev); // COMPUTE_CAPABILITY_MINOR
    info.devices.push_back(std::string(name) + " (sm_" +
                           std::to_string(major * 10 + minor) + ")");
  }
  info.available = true;
  info.runsKernelSource = d.runsKernelSource && d.runsKernelSource();
  return info;
}

std::string deviceArch(const std::string &device) {
  size_t at = device.rfind("(sm_");
  return at == std::string::npos ? "" : device.substr(at + 1, device.size() - at - 2);
}

bool archRuns(const std::vector<std::string> &built,
              const std::string &device) {
  auto number = [](const std::string &a) { return std::atoi(a.c_str() + 3); };
  int dev = number(device), newest = 0;
  for (const std::string &a : built) {
    int n = number(a);
    newest = std::max(newest, n);
    bool specific = a.back() == 'a'; // sm_90a: that GPU only
    if (specific ? n == dev : (n / 10 == dev / 10 && n <= dev))
      return true;
  }
  return newest > 0 && newest <= dev; // PTX for the newest, JIT-compiled
}

std::string archMismatch(const Plan &plan, const std::string &dir,
                         const std::string &device) {
  if (plan.cudaArch.empty() || device.empty() ||
      archRuns(plan.cudaArch, device))
    return "";
  std::string built;
  for (const std::string &a : plan.cudaArch)
    built += (built.empty() ? "" : ",") + a;
  return dir + " has no code for this GPU (" + device + "): it was built for " +
         built + "; compile it again with --arch " + device + " (or native)";
}

bool runPlanCuda(const Plan &plan, const std::string &dir,
                 const std::map<std::string, Tensor> &inputs,
                 std::vector<Tensor> &outputs, std::string &error, int repeat,
                 double *milliseconds, std::string *describe) {
  std::unique_ptr<Session> s =
      openCudaSession(plan, dir, /*graph=*/repeat > 0, error);
  if (!s)
    return false;
  if (describe)
    *describe = s->describe();
  for (const auto &[name, t] : inputs)
    if (valueOfName(plan, name) >= 0 && !s->set(name, t, error))
      return false;
  for (const Binding &b : plan.inputs)
    if (!inputs.count(b.name) && !isWeightCopy(plan, b.name))
      return (error = "missing input '" + b.name + "'", false);
  if (!s->run(error))
    return false;
  if (milliseconds) {
    std::vector<double> ms;
    for (int r = 0; r < repeat; ++r) {
      auto t0 = std::chrono::steady_clock::now();
      if (!s->run(error))
        return false;
      ms.push_back(std::chrono::duration<double, std::milli>(
                       std::chrono::steady_clock::now() - t0)
                       .count());
    }
    std::sort(ms.begin(), ms.end());
    *milliseconds = ms.empty() ? 0 : ms[ms.size() / 2];
  }
  outputs.assign(plan.outputs.size(), Tensor());
  for (size_t k = 0; k < plan.outputs.size(); ++k)
    if (!s->skipped(k) && !s->output(k, outputs[k], error))
      return false; // (a skipped one stays empty)
  return true;
}

std::vector<std::string> describeCudaLibraries() {
  std::vector<std::string> lines;
  auto line = [&](const char *role, auto &lib) {
    std::string why = lib.load(); // describe() needs it loaded
    lines.push_back(std::string(role) + ": " +
                    (why.empty() ? lib.describe() : why));
  };
  line("GEMMs", lt::library());
  line("convolutions", dnn::library());
  line("GPU ranks' gradients", nccl::library());
  return lines;
}

} // namespace mpc::rt
