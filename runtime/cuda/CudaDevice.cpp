//===- CudaDevice.cpp - run an artifact on an NVIDIA GPU ------------------===//

#include "runtime/cuda/CudaDevice.h"
#include "runtime/cuda/MemoryPlan.h"

#include <algorithm>
#include <chrono>
#include <dlfcn.h>
#include <fstream>
#include <iterator>

namespace mpc::rt {
namespace {

// The few driver API entry points used, with the driver's C types.
using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
using Handle = void *;

struct Driver {
  void *lib = nullptr;
  CUresult (*init)(unsigned);
  CUresult (*driverVersion)(int *);
  CUresult (*deviceCount)(int *);
  CUresult (*deviceGet)(CUdevice *, int);
  CUresult (*deviceName)(char *, int, CUdevice);
  CUresult (*deviceAttribute)(int *, int, CUdevice);
  CUresult (*primaryCtxRetain)(Handle *, CUdevice);
  CUresult (*ctxSetCurrent)(Handle);
  CUresult (*ctxSynchronize)();
  CUresult (*moduleLoadData)(Handle *, const void *);
  CUresult (*moduleGetFunction)(Handle *, Handle, const char *);
  CUresult (*memAlloc)(CUdeviceptr *, size_t);
  CUresult (*memFree)(CUdeviceptr);
  CUresult (*memcpyHtoD)(CUdeviceptr, const void *, size_t);
  CUresult (*memcpyDtoH)(void *, CUdeviceptr, size_t);
  CUresult (*launch)(Handle, unsigned, unsigned, unsigned, unsigned, unsigned,
                     unsigned, unsigned, Handle, void **, void **);
  CUresult (*errorString)(CUresult, const char **);

  /// Loads libcuda and its symbols; empty string on success.
  std::string load() {
    lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib)
      return "no CUDA driver (libcuda.so.1 not found)";
    auto sym = [&](auto &fn, const char *name) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(
          dlsym(lib, name));
      return fn != nullptr;
    };
    bool ok = sym(init, "cuInit") && sym(driverVersion, "cuDriverGetVersion") &&
              sym(deviceCount, "cuDeviceGetCount") &&
              sym(deviceGet, "cuDeviceGet") &&
              sym(deviceName, "cuDeviceGetName") &&
              sym(deviceAttribute, "cuDeviceGetAttribute") &&
              sym(primaryCtxRetain, "cuDevicePrimaryCtxRetain") &&
              sym(ctxSetCurrent, "cuCtxSetCurrent") &&
              sym(ctxSynchronize, "cuCtxSynchronize") &&
              sym(moduleLoadData, "cuModuleLoadData") &&
              sym(moduleGetFunction, "cuModuleGetFunction") &&
              sym(memAlloc, "cuMemAlloc_v2") && sym(memFree, "cuMemFree_v2") &&
              sym(memcpyHtoD, "cuMemcpyHtoD_v2") &&
              sym(memcpyDtoH, "cuMemcpyDtoH_v2") &&
              sym(launch, "cuLaunchKernel") &&
              sym(errorString, "cuGetErrorString");
    return ok ? "" : "the CUDA driver lacks a required entry point";
  }

  std::string describe(CUresult r) {
    const char *s = nullptr;
    if (errorString && errorString(r, &s) == 0 && s)
      return s;
    return "CUDA error " + std::to_string(r);
  }
};

Driver &driver() {
  static Driver d;
  return d;
}

} // namespace

CudaInfo probeCuda() {
  CudaInfo info;
  Driver &d = driver();
  if (!d.lib) {
    std::string why = d.load();
    if (!why.empty()) {
      info.reason = why;
      return info;
    }
  }
  if (CUresult r = d.init(0)) {
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
    CUdevice dev;
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
  return info;
}

bool runPlanCuda(const Plan &plan, const std::string &dir,
                 const std::map<std::string, Tensor> &inputs,
                 std::vector<Tensor> &outputs, std::string &error, int repeat,
                 double *milliseconds) {
  CudaInfo info = probeCuda();
  if (!info.available) {
    error = info.reason;
    return false;
  }
  Driver &d = driver();
  auto check = [&](CUresult r, const std::string &what) {
    if (r)
      error = what + ": " + d.describe(r);
    return r == 0;
  };
  CUdevice dev;
  Handle ctx, module;
  if (!check(d.deviceGet(&dev, 0), "cuDeviceGet") ||
      !check(d.primaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain") ||
      !check(d.ctxSetCurrent(ctx), "cuCtxSetCurrent"))
    return false;
  std::ifstream f(dir + "/kernels.fatbin", std::ios::binary);
  if (!f) {
    error = dir + "/kernels.fatbin is missing (compile with nvcc present)";
    return false;
  }
  std::string image((std::istreambuf_iterator<char>(f)),
                    std::istreambuf_iterator<char>());
  if (!check(d.moduleLoadData(&module, image.data()), "loading kernels.fatbin"))
    return false;
  // Functions, in step order.
  std::vector<Handle> fns(plan.steps.size(), nullptr);
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    const Step &s = plan.steps[i];
    std::string name = s.getString("cuda.kernel", "");
    if (name.empty()) {
      if (s.has("cuda.alias"))
        continue;
      error = "step '" + s.name + "' (" + s.op + ") has no CUDA kernel";
      return false;
    }
    if (!check(d.moduleGetFunction(&fns[i], module, name.c_str()), name))
      return false;
  }
  std::vector<int64_t> offsets;
  int64_t arena = planDeviceMemory(plan, offsets);
  CUdeviceptr base = 0;
  if (!check(d.memAlloc(&base, (size_t)std::max<int64_t>(arena, 256)),
             "allocating " + std::to_string(arena) + " bytes"))
    return false;
  auto upload = [&](int id, const Tensor &t) {
    return check(d.memcpyHtoD(base + offsets[id], t.raw(), t.bytes()),
                 "upload");
  };
  bool ok = true;
  for (const Parameter &p : plan.params) {
    auto it = inputs.find(p.name);
    ok = ok && upload(p.value, it != inputs.end() ? it->second : p.init);
  }
  for (const auto &[id, t] : plan.constants)
    ok = ok && upload(id, t);
  for (const Binding &b : plan.inputs) {
    auto it = inputs.find(b.name);
    if (it == inputs.end()) {
      error = "missing input '" + b.name + "'";
      ok = false;
      break;
    }
    ok = ok && upload(b.value, it->second);
  }
  auto runOnce = [&]() {
    for (size_t i = 0; i < plan.steps.size() && ok; ++i) {
      if (!fns[i])
        continue;
      const Step &s = plan.steps[i];
      std::vector<CUdeviceptr> ptrs;
      for (int v : s.inputs)
        ptrs.push_back(v >= 0 ? base + offsets[v] : 0);
      for (int v : s.outputs)
        ptrs.push_back(base + offsets[v]);
      std::vector<void *> args;
      for (CUdeviceptr &p : ptrs)
        args.push_back(&p);
      auto grid = *s.getInts("cuda.grid"), block = *s.getInts("cuda.block");
      ok = check(d.launch(fns[i], grid[0], grid[1], grid[2], block[0],
                          block[1], block[2], 0, nullptr, args.data(), nullptr),
                 "launching " + s.getString("cuda.kernel", ""));
    }
    ok = ok && check(d.ctxSynchronize(), "running the kernels");
  };
  runOnce();
  if (ok && milliseconds) {
    std::vector<double> ms;
    for (int r = 0; r < repeat && ok; ++r) {
      auto t0 = std::chrono::steady_clock::now();
      runOnce();
      ms.push_back(std::chrono::duration<double, std::milli>(
                       std::chrono::steady_clock::now() - t0)
                       .count());
    }
    std::sort(ms.begin(), ms.end());
    *milliseconds = ms.empty() ? 0 : ms[ms.size() / 2];
  }
  outputs.clear();
  for (const Binding &b : plan.outputs) {
    const ValueInfo &v = plan.values[b.value];
    Tensor t(v.dtype, v.shape);
    ok = ok && check(d.memcpyDtoH(t.raw(), base + offsets[b.value], t.bytes()),
                     "download");
    outputs.push_back(std::move(t));
  }
  d.memFree(base);
  return ok;
}

} // namespace mpc::rt
