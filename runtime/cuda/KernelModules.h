//===- KernelModules.h - an artifact's device code, loaded ------*- C++ -*-===//
//
// Private to runtime/cuda/. The kernels*.fatbin modules of an artifact
// and which holds each kernel (kernels.index), as a CUDA session loads
// them.
//
//===----------------------------------------------------------------------===//

#ifndef MPC_RUNTIME_CUDA_KERNELMODULES_H
#define MPC_RUNTIME_CUDA_KERNELMODULES_H

#include "runtime/Plan.h"
#include "runtime/cuda/CudaDriver.h"

#include <map>
#include <string>
#include <vector>

namespace mpc::rt::cu {

class KernelModules {
public:
  explicit KernelModules(Driver &d) : d(d) {}
  ~KernelModules();
  KernelModules(const KernelModules &) = delete;
  KernelModules &operator=(const KernelModules &) = delete;

  /// Loads every kernels*.fatbin of DIR (the kernel cache makes several;
  /// older artifacts have one kernels.fatbin) and reads kernels.index,
  /// which names each kernel's module.
  bool load(const std::string &dir, std::string &error);
  /// The kernel `name`: from the module kernels.index names, else (older
  /// artifacts) from whichever module has it.
  bool function(const std::string &name, Handle &fn, std::string &error);

private:
  Driver &d;
  std::vector<Handle> modules;                          // kernels*.fatbin
  std::map<std::string, Handle> moduleByFile, moduleOf; // file, kernel name
};

/// A kernel taking more dynamic shared memory than the 48 KiB every
/// kernel gets must opt in to it (cuFuncSetAttribute), up to what the GPU
/// allows a block: sm_80 163 KiB, sm_86/89 99 KiB, sm_90 227 KiB. Where
/// `bytes` (step `s`'s kernel `kernel`, loaded as `fn`) is more than the
/// GPU `dev` gives, one line naming the node, both sizes and the --arch
/// to build for.
bool optInSharedMemory(Driver &d, Device dev, const Plan &plan, const Step &s,
                       const std::string &kernel, Handle fn, int64_t bytes,
                       std::string &error);

} // namespace mpc::rt::cu

#endif // MPC_RUNTIME_CUDA_KERNELMODULES_H
