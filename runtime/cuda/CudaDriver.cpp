//===- CudaDriver.cpp - dlopen the CUDA driver ----------------------------===//

#include "runtime/cuda/CudaDriver.h"

#include <cstdlib>
#include <dlfcn.h>
#include <type_traits>

namespace mpc::rt::cu {

std::string Driver::load() {
  if (lib)
    return "";
  const char *override = std::getenv("MPC_CUDA_DRIVER");
  const char *path = override && *override ? override : "libcuda.so.1";
  lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!lib)
    return std::string("no CUDA driver (") + path + " not found)";
  auto sym = [&](auto &fn, const char *name) {
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(
        dlsym(lib, name));
    return fn != nullptr;
  };
  bool ok =
      sym(init, "cuInit") && sym(driverVersion, "cuDriverGetVersion") &&
      sym(deviceCount, "cuDeviceGetCount") && sym(deviceGet, "cuDeviceGet") &&
      sym(deviceName, "cuDeviceGetName") &&
      sym(deviceAttribute, "cuDeviceGetAttribute") &&
      sym(primaryCtxRetain, "cuDevicePrimaryCtxRetain") &&
      sym(ctxSetCurrent, "cuCtxSetCurrent") &&
      sym(moduleLoad, "cuModuleLoad") &&
      sym(moduleUnload, "cuModuleUnload") &&
      sym(moduleGetFunction, "cuModuleGetFunction") &&
      sym(funcSetAttribute, "cuFuncSetAttribute") &&
      sym(memAlloc, "cuMemAlloc_v2") && sym(memFree, "cuMemFree_v2") &&
      sym(memHostAlloc, "cuMemHostAlloc") &&
      sym(memFreeHost, "cuMemFreeHost") &&
      sym(memcpyHtoD, "cuMemcpyHtoDAsync_v2") &&
      sym(memcpyDtoH, "cuMemcpyDtoHAsync_v2") &&
      sym(memcpyDtoD, "cuMemcpyDtoDAsync_v2") &&
      sym(streamCreate, "cuStreamCreate") &&
      sym(streamDestroy, "cuStreamDestroy_v2") &&
      sym(streamSynchronize, "cuStreamSynchronize") &&
      sym(streamBeginCapture, "cuStreamBeginCapture_v2") &&
      sym(streamEndCapture, "cuStreamEndCapture") &&
      sym(graphInstantiate, "cuGraphInstantiateWithFlags") &&
      sym(graphLaunch, "cuGraphLaunch") &&
      sym(graphExecDestroy, "cuGraphExecDestroy") &&
      sym(graphDestroy, "cuGraphDestroy") && sym(launch, "cuLaunchKernel") &&
      sym(errorString, "cuGetErrorString") &&
      sym(eventCreate, "cuEventCreate") &&
      sym(eventDestroy, "cuEventDestroy_v2") &&
      sym(eventRecord, "cuEventRecord") &&
      sym(streamWaitEvent, "cuStreamWaitEvent") &&
      sym(eventSynchronize, "cuEventSynchronize") &&
      sym(eventElapsedTime, "cuEventElapsedTime");
  if (!ok) {
    dlclose(lib);
    lib = nullptr;
    return std::string("the CUDA driver ") + path +
           " lacks a required entry point";
  }
  sym(runsKernelSource, "mpcRunsKernelSource");
  return "";
}

std::string Driver::describe(Result r) const {
  const char *s = nullptr;
  if (errorString && errorString(r, &s) == 0 && s)
    return s;
  return "CUDA error " + std::to_string(r);
}

bool Driver::check(Result r, const std::string &what,
                   std::string &error) const {
  if (r)
    error = what + ": " + describe(r);
  return r == 0;
}

Driver &driver() {
  static Driver d;
  return d;
}

} // namespace mpc::rt::cu
