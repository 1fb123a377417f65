//===- Tuning.h - library or mpc kernel, chosen by timing ---------*- C++ -*-===//
//
// Private to runtime/cuda/. With `--gemm auto` / `--conv auto`, the session
// times each distinct GEMM (convolution) on cuBLASLt (cuDNN) and on mpc's
// kernel once, when it opens on a GPU, keeps the faster and records the
// choice next to the artifact (tuning.txt), so later sessions start
// without timing - as cuDNN's benchmark mode and TVM's tuning logs do.
//
//===----------------------------------------------------------------------===//

#ifndef MPC_RUNTIME_CUDA_TUNING_H
#define MPC_RUNTIME_CUDA_TUNING_H

#include "runtime/cuda/LibrarySteps.h"

#include <functional>
#include <string>

namespace mpc::rt {

/// Milliseconds one run of a candidate for step `step` takes on the GPU;
/// negative with `error` set when it cannot run.
using TimeCandidate = std::function<double(size_t step, std::string &error)>;

/// The file a session's choices go to: `dir`/tuning.txt, one line a shape:
/// "<kind> <key> <library>|mpc <library ms> <mpc ms>".
std::string tuningFile(const std::string &dir);

/// What is chosen between: "gemm" and "cublaslt" (named "cuBLASLt" in
/// the summary), or "conv" and "cudnn" ("cuDNN").
struct TuningKind {
  const char *kind, *library, *libraryName;
};
inline constexpr TuningKind kGemmTuning{"gemm", "cublaslt", "cuBLASLt"},
    kConvTuning{"conv", "cudnn", "cuDNN"};

/// For each distinct shape `steps` runs on its library, the faster of
/// `library` and `kernel`: read from `file`, else timed now and written
/// there (atomically, the other kinds' lines kept; an unwritable file
/// costs the saving, not the session). Appends a clause to `summary`;
/// false with `error` only when a candidate fails to run.
bool chooseFastest(LibrarySteps &steps, const TuningKind &what,
                   const std::string &file, const TimeCandidate &library,
                   const TimeCandidate &kernel, std::string &summary,
                   std::string &error);

} // namespace mpc::rt

#endif // MPC_RUNTIME_CUDA_TUNING_H
