//===- Nvrtc.h - kernels compiled in process: NVRTC and nvFatbin -*- C++ -*-===//
//
// NVRTC compiles a translation unit to SASS (and the newest architecture's
// PTX) without starting nvcc's driver, its host preprocessing and its
// fatbinary process (~0.7 s a unit on this project's build machine), so
// small units are cheap and a recompile of a few kernels is faster; large
// units cost the same (docs/performance.md, "Compile at scale"). nvFatbin packs the results into the fatbin the
// runtime loads, so artifacts are the same whichever compiler made them.
// Both libraries are opened at run time like every NVIDIA library mpc uses
// (runtime/cuda/LibraryLoader.h); without them mpc falls back to nvcc.
//
//===----------------------------------------------------------------------===//

#ifndef MPC_TOOLS_MPC_NVRTC_H
#define MPC_TOOLS_MPC_NVRTC_H

#include <string>
#include <vector>

namespace mpc {

/// The first line of a compiler's log that names an error (nvcc and NVRTC
/// warn before they fail), trimmed; `otherwise` when there is none.
std::string firstErrorLine(const std::string &log, const std::string &otherwise);

class Nvrtc {
public:
  /// The libraries, opened once per process; null with `why` when NVRTC,
  /// nvFatbin or the CUDA headers are not found.
  static const Nvrtc *open(std::string &why);

  /// "nvrtc 13.0 + nvfatbin 13.0": part of every kernel cache key.
  const std::string &version() const { return version_; }
  /// Where libnvrtc was found.
  const std::string &path() const { return path_; }

  /// A fatbin of `source`: SASS for each of `arch` (sm_80, sm_90a...) and
  /// PTX for the newest. False with the first error line of NVRTC's log.
  /// Thread-safe: units compile concurrently.
  bool compile(const std::string &source, const std::vector<std::string> &arch,
               std::string &fatbin, std::string &error) const;

  /// The architectures this NVRTC compiles for (sm_75...).
  std::vector<std::string> supportedArchs() const;

  /// The options every unit is compiled with (documented in the cache key).
  static const char *flags();

private:
  struct Api;
  const Api *api_ = nullptr;
  std::string version_, path_, include_;
};

} // namespace mpc

#endif // MPC_TOOLS_MPC_NVRTC_H
