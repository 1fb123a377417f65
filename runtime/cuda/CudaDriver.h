//===- CudaDriver.h - the CUDA driver API, loaded at run time ----*- C++ -*-===//
//
// Private to runtime/cuda/. The entry points mpc uses, looked up with
// dlsym in libcuda.so.1 (or the library MPC_CUDA_DRIVER names: the tests
// point it at a host-emulating double of the driver).
//
//===----------------------------------------------------------------------===//

#ifndef MPC_RUNTIME_CUDA_CUDADRIVER_H
#define MPC_RUNTIME_CUDA_CUDADRIVER_H

#include <cstddef>
#include <string>

namespace mpc::rt::cu {

// The driver's C types.
using Result = int;
using Device = int;
using DevicePtr = unsigned long long;
using Handle = void *;

struct Driver {
  void *lib = nullptr;
  Result (*init)(unsigned);
  Result (*driverVersion)(int *);
  Result (*deviceCount)(int *);
  Result (*deviceGet)(Device *, int);
  Result (*deviceName)(char *, int, Device);
  Result (*deviceAttribute)(int *, int, Device);
  Result (*primaryCtxRetain)(Handle *, Device);
  Result (*ctxSetCurrent)(Handle);
  Result (*moduleLoad)(Handle *, const char *);
  Result (*moduleUnload)(Handle);
  Result (*moduleGetFunction)(Handle *, Handle, const char *);
  Result (*funcSetAttribute)(Handle, int, int);
  Result (*memAlloc)(DevicePtr *, size_t);
  Result (*memFree)(DevicePtr);
  Result (*memHostAlloc)(void **, size_t, unsigned);
  Result (*memFreeHost)(void *);
  Result (*memcpyHtoD)(DevicePtr, const void *, size_t, Handle);
  Result (*memcpyDtoH)(void *, DevicePtr, size_t, Handle);
  Result (*memcpyDtoD)(DevicePtr, DevicePtr, size_t, Handle);
  Result (*streamCreate)(Handle *, unsigned);
  Result (*streamDestroy)(Handle);
  Result (*streamSynchronize)(Handle);
  Result (*streamBeginCapture)(Handle, int);
  Result (*streamEndCapture)(Handle, Handle *);
  Result (*graphInstantiate)(Handle *, Handle, unsigned long long);
  Result (*graphLaunch)(Handle, Handle);
  Result (*graphExecDestroy)(Handle);
  Result (*graphDestroy)(Handle);
  Result (*launch)(Handle, unsigned, unsigned, unsigned, unsigned, unsigned,
                   unsigned, unsigned, Handle, void **, void **);
  Result (*errorString)(Result, const char **);
  // Events order a second stream (NCCL's) against the compute stream.
  Result (*eventCreate)(Handle *, unsigned);
  Result (*eventDestroy)(Handle);
  Result (*eventRecord)(Handle, Handle);
  Result (*streamWaitEvent)(Handle, Handle, unsigned);
  // ...and time the candidates of a library step (Tuning.cpp).
  Result (*eventSynchronize)(Handle);
  Result (*eventElapsedTime)(float *, Handle, Handle);
  // Optional: exported only by a driver that builds DIR/kernels.cu itself
  // when cuModuleLoad(DIR/kernels.fatbin) is called (the host emulation
  // double, test/codegen/FakeCudaDriver.cpp), which needs no device code.
  int (*runsKernelSource)() = nullptr;

  /// Loads the library and its symbols once; "" on success, else why not.
  std::string load();
  /// The driver's name for `r`.
  std::string describe(Result r) const;
  /// Whether `r` is success; else `error` says "`what`: <the error>".
  bool check(Result r, const std::string &what, std::string &error) const;
};

/// The process's driver (loaded on first use by load()).
Driver &driver();

} // namespace mpc::rt::cu

#endif // MPC_RUNTIME_CUDA_CUDADRIVER_H
