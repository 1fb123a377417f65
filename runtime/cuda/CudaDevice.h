//===- CudaDevice.h - run an artifact on an NVIDIA GPU ------------*- C++ -*-===//
//
// The CUDA driver is loaded at run time (dlopen libcuda.so.1): mpc links no
// CUDA library, so it builds, runs and tests on machines without a GPU and
// says so in one line when asked to use one.
//
//===----------------------------------------------------------------------===//

#ifndef MPC_RUNTIME_CUDA_CUDADEVICE_H
#define MPC_RUNTIME_CUDA_CUDADEVICE_H

#include "runtime/Plan.h"
#include "runtime/Session.h"

#include <map>
#include <string>
#include <vector>

namespace mpc::rt {

struct CudaInfo {
  bool available = false;
  std::string reason;        // why not, in one line
  int driverVersion = 0;     // e.g. 13000
  std::vector<std::string> devices; // "NVIDIA H200 (sm_90)"
  // The driver runs kernels.cu itself (the host emulation double): device
  // code need not be built for it.
  bool runsKernelSource = false;
};

/// Looks for the driver and a device; never fails loudly.
CudaInfo probeCuda();

/// One line per NVIDIA library mpc loads at run time (cuBLASLt, cuDNN,
/// NCCL): its version and path, or why it does not load (`mpc doctor`).
std::vector<std::string> describeCudaLibraries();

/// The sm_XY of a device description ("NVIDIA H200 (sm_90)").
std::string deviceArch(const std::string &device);

/// Whether device code built for `built` (SASS for each, PTX for the
/// newest) runs on a GPU of architecture `device`: SASS of the same major
/// version and no newer minor one, or PTX the driver can compile for it.
bool archRuns(const std::vector<std::string> &built, const std::string &device);

/// "DIR has no code for this GPU (sm_XY): built for ..., compile it with
/// --arch sm_XY", or "" when it runs.
std::string archMismatch(const Plan &plan, const std::string &dir,
                         const std::string &device);

/// A session on GPU 0 for an artifact's plan: loads `<dir>/kernels*.fatbin`,
/// places every value in one arena (planDeviceMemory) and uploads the
/// parameters' initial values and the constants. With `graph`, runs launch
/// one captured CUDA graph of the whole step. Null with `error` without a
/// GPU.
std::unique_ptr<Session> openCudaSession(const Plan &plan,
                                         const std::string &dir, bool graph,
                                         std::string &error);

/// Runs an artifact's plan once on GPU 0 with `inputs` (by name) and copies
/// the outputs back. `milliseconds`, when given, receives the median time
/// of `repeat` more runs (a captured CUDA graph each); `describe`, the
/// session's line on who runs the GEMMs.
bool runPlanCuda(const Plan &plan, const std::string &dir,
                 const std::map<std::string, Tensor> &inputs,
                 std::vector<Tensor> &outputs, std::string &error,
                 int repeat = 0, double *milliseconds = nullptr,
                 std::string *describe = nullptr);

} // namespace mpc::rt

#endif // MPC_RUNTIME_CUDA_CUDADEVICE_H
