//===- KernelBuild.h - device code for an artifact: cache, parallel units -*- C++ -*-===//
//
// The distinct kernels of a CudaModule become device code in DIR as one or
// more modules (kernels.<i>.fatbin; the runtime loads them all). Each
// kernel is looked up first in a persistent cache, keyed by its code, the
// prelude, the architectures, the compiler's version and flags; the
// missing ones are split into translation units compiled in parallel (by
// NVRTC on threads, or nvcc processes where NVRTC is absent: Nvrtc.h), and
// their modules stored in the cache for the next compile.
//
//===----------------------------------------------------------------------===//

#ifndef MPC_TOOLS_MPC_KERNELBUILD_H
#define MPC_TOOLS_MPC_KERNELBUILD_H

#include "codegen/CudaEmitter.h"

#include <string>
#include <vector>

namespace mpc {

namespace rt {
struct Plan;
struct CudaInfo;
} // namespace rt

struct KernelBuildOptions {
  std::vector<std::string> arch; // sm_80, ...: code for each, PTX for the newest
  std::string cacheDir;          // empty: no cache
  unsigned jobs = 1;             // units compiled at once
  std::string compiler = "auto"; // auto (NVRTC when found), nvrtc, nvcc
};

struct KernelBuildResult {
  std::string compiler;        // "nvrtc" or "nvcc"; empty when neither is here
  std::string compilerVersion; // its version (part of the cache key)
  std::string nvcc;            // the nvcc used, when it is nvcc
  size_t modules = 0;   // kernels.<i>.fatbin written
  size_t compiled = 0;  // kernels compiled now
  size_t cached = 0;    // kernels found in the cache
  size_t units = 0;     // translation units compiled
  double seconds = 0;  // device compilation, cache included
  std::vector<std::string> warnings; // the cache could not be used...
};

/// The default cache: $XDG_CACHE_HOME/mpc, else ~/.cache/mpc ("" when
/// neither is known).
std::string defaultKernelCacheDir();

/// The architectures the installed nvcc compiles for (sm_75, ...), empty
/// without nvcc.
std::vector<std::string> supportedArchs();

/// Writes DIR/kernels.<i>.fatbin for `module`'s kernels. Without NVRTC
/// or nvcc it writes nothing and succeeds (result.compiler empty). False
/// with a one-line `error` when the compiler fails.
bool buildKernels(const mlir::mpc::CudaModule &module, const std::string &dir,
                  const KernelBuildOptions &options, KernelBuildResult &result,
                  std::string &error);

/// `mpc train --device cuda`: the plan's kernels built for this GPU's arch
/// in a fresh directory (through the kernel cache), `dir`; a driver that
/// runs kernels.cu itself (the host emulation) gets it and an empty
/// kernels.fatbin. Prints the "training on" line ("evaluating on" for
/// `evaluation`'s forward plans).
bool buildDeviceCode(rt::Plan &plan, const rt::CudaInfo &gpu, std::string &dir,
                     std::string &error, bool evaluation = false);

} // namespace mpc

#endif // MPC_TOOLS_MPC_KERNELBUILD_H
