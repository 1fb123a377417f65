//===- FakeCudaHostBuild.h - an artifact's kernels.cu built for the host -*- C++ -*-===//
//
// The CUDA driver double's module loader: builds DIR/kernels.cu with g++
// and test/codegen/Inputs/cuda_host_shim.h into host libraries whose
// emu_<kernel> launchers run the emulated kernels.
//
// With MPC_FAKE_CUDA_CACHE (the tests set it) the build is shared by every
// process of a test run kernel by kernel, as `mpc compile`'s device code
// cache is (tools/mpc/KernelBuild.cpp): kernels.cu is taken apart at the
// emitter's `// kernel NAME` and `// launcher NAME` lines; each kernel's
// key hashes the preprocessed prelude (and with it the shim and its
// headers), the kernel's code and its launcher; only the kernels not in
// the cache are compiled, together, into one library that the cache then
// holds under each of their keys (hard links, made after the library is
// complete: concurrent processes never load half a library; processes
// that need the same kernels at once wait for one to build them). The
// same kernel in many artifacts is compiled once a test run.
// MPC_FAKE_CUDA_BUILD_LOG (a file) gets a line a build: kernels compiled,
// the time they took, kernels found in the cache. MPC_FAKE_CUDA_MMA_GEMM=1
// builds the GEMMs' tensor-core tiles (tc_gemm_mma) instead of the shim's
// plain product (a define, so a key of its own).
//
//===----------------------------------------------------------------------===//

#ifndef MPC_TEST_CODEGEN_FAKECUDAHOSTBUILD_H
#define MPC_TEST_CODEGEN_FAKECUDAHOSTBUILD_H

#include <map>
#include <string>

namespace mpc::fake {

/// The host libraries of one artifact, and the one holding each launcher.
struct HostBuild {
  std::map<std::string, void *> launchers; // "emu_NAME" -> dlopen handle
  void *whole = nullptr; // a kernels.cu without kernel lines: one library

  /// The launcher's library, or null when no library holds it.
  void *libraryOf(const std::string &launcher) const;
};

/// Whether the switch `name` is on in the environment: set, not empty,
/// not "0" (MPC_FAKE_CUDA_RACECHECK, MPC_FAKE_CUDA_MMA_GEMM).
bool envFlag(const char *name);

/// Appends the bytes of the file at `path` to `text`; false when unreadable.
bool readFile(const std::string &path, std::string &text);

/// Builds and loads DIR/kernels.cu; `src` is the mpc source tree, `tsan`
/// builds with ThreadSanitizer (the race check). False, with the reason on
/// stderr, when g++ or dlopen fails.
bool buildHost(const std::string &src, const std::string &dir, bool tsan,
               HostBuild &out);

} // namespace mpc::fake

#endif // MPC_TEST_CODEGEN_FAKECUDAHOSTBUILD_H
