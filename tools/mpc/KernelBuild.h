//===- KernelBuild.h - device code for an artifact: cache, nvcc in parallel -*- C++ -*-===//
//
// The distinct kernels of a CudaModule become device code in DIR as one or
// more modules (kernels.<i>.fatbin; the runtime loads them all). Each
// kernel is looked up first in a persistent cache, keyed by its code, the
// prelude, the architectures, nvcc's version and flags; the missing ones
// are split into translation units compiled by parallel nvcc processes,
// and their modules stored in the cache for the next compile.
//
//===----------------------------------------------------------------------===//

#ifndef MPC_TOOLS_MPC_KERNELBUILD_H
#define MPC_TOOLS_MPC_KERNELBUILD_H

#include "codegen/CudaEmitter.h"

#include <string>
#include <vector>

namespace mpc {

struct KernelBuildOptions {
  std::vector<std::string> arch; // sm_80, ...: code for each, PTX for the newest
  std::string cacheDir;          // empty: no cache
  unsigned jobs = 1;             // nvcc processes at once
};

struct KernelBuildResult {
  std::string nvcc;     // the nvcc used; empty when there is none
  size_t modules = 0;   // kernels.<i>.fatbin written
  size_t compiled = 0;  // kernels compiled now
  size_t cached = 0;    // kernels found in the cache
  size_t units = 0;     // translation units compiled
  double nvccSeconds = 0;
  std::vector<std::string> warnings; // the cache could not be used...
};

/// The default cache: $XDG_CACHE_HOME/mpc, else ~/.cache/mpc ("" when
/// neither is known).
std::string defaultKernelCacheDir();

/// The architectures the installed nvcc compiles for (sm_75, ...), empty
/// without nvcc.
std::vector<std::string> supportedArchs();

/// Writes DIR/kernels.<i>.fatbin for `module`'s kernels. Without nvcc it
/// writes nothing and succeeds (result.nvcc empty). False with a one-line
/// `error` when nvcc fails.
bool buildKernels(const mlir::mpc::CudaModule &module, const std::string &dir,
                  const KernelBuildOptions &options, KernelBuildResult &result,
                  std::string &error);

} // namespace mpc

#endif // MPC_TOOLS_MPC_KERNELBUILD_H
