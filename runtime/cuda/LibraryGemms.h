//===- LibraryGemms.h - a session's GEMM steps through cuBLASLt ---*- C++ -*-===//
//
// Private to runtime/cuda/. For the steps codegen marked with a
// LibraryGemm, when the plan's GEMM choice allows and cuBLASLt loads: one
// matmul descriptor, four matrix layouts and one algorithm per distinct
// GEMM (cublasLtMatmulAlgoGetHeuristic, once, when the session opens), and
// a cublasLtMatmul per step on the session's stream (captured in its CUDA
// graph like the kernels). Row-major Y = op(A) op(B) is computed as the
// column-major Y^T = op(B)^T op(A)^T, so no operand is copied.
//
//===----------------------------------------------------------------------===//

#ifndef MPC_RUNTIME_CUDA_LIBRARYGEMMS_H
#define MPC_RUNTIME_CUDA_LIBRARYGEMMS_H

#include "runtime/Plan.h"
#include "runtime/cuda/CublasLt.h"
#include "runtime/cuda/LibrarySteps.h"

#include <map>
#include <string>
#include <vector>

namespace mpc::rt {

class LibraryGemms : public LibrarySteps {
public:
  LibraryGemms() = default;
  LibraryGemms(const LibraryGemms &) = delete;
  ~LibraryGemms();

  /// Prepares the plan's library GEMMs. With plan.cudaGemm "auto", a
  /// missing cuBLASLt or a GEMM it has no algorithm for stays with mpc's
  /// kernel; with "cublaslt" either is an error naming the library or the
  /// step; "mpc" prepares nothing. `summary` gets one line: who runs the
  /// GEMMs.
  bool open(const Plan &plan, std::string &summary, std::string &error);

  /// Device workspace the chosen algorithms need (one, shared).
  size_t workspaceBytes() const { return workspace; }
  /// Enqueues step `i` on `stream`; `address(v)` is value v's device
  /// address.
  template <typename Address>
  bool launch(size_t i, const Address &address, unsigned long long work,
              void *stream, std::string &error) const {
    const LibraryGemm &g = plan->steps[i].cuda.gemm;
    int y = plan->steps[i].outputs[0];
    bool fused = computesFused(i);
    // Fused: BGRAD writes the bias pointer; GELU_AUX writes the GELU's
    // result as D and Y as aux (GELU: no aux); DGELU writes the gradient
    // as D from aux.
    int bias = fused && g.biasGrad >= 0 ? g.biasGrad : g.bias;
    int d = fused && g.geluOut >= 0    ? g.geluOut
            : fused && g.dgeluOut >= 0 ? g.dgeluOut
            : fused && g.dreluOut >= 0 ? g.dreluOut
                                       : y;
    // RELU_AUX writes the mask, DRELU reads it.
    int aux = !fused ? -1 : g.reluMask >= 0 ? g.reluMask : g.geluAux;
    return enqueue(i, address(g.a), address(g.b),
                   g.c >= 0 ? address(g.c) : 0, bias >= 0 ? address(bias) : 0,
                   aux >= 0 ? address(aux) : 0, address(d), work, stream,
                   error);
  }
  /// Whether the library runs GEMM step `i` with the epilogue that
  /// computes another step's result (then that step launches nothing).
  bool computesFused(size_t i) const {
    return runs(i) && prepared[byStep[i]].fused;
  }
  /// The step whose result GEMM step `i`'s library call computes, or -1.
  int fusedStep(size_t i) const {
    return computesFused(i) ? fusedFor[i] : -1;
  }
  /// Whether the ReLU mask DRELU GEMM step `i` reads is written: the GEMM
  /// with the mask's Relu runs through the library with RELU_AUX.
  bool maskWritten(size_t i) const;
  /// Also takes off the library the DRELU GEMMs whose mask that leaves
  /// unwritten.
  void useKernel(const std::string &key) override;
  /// Whether step `i` is computed by its GEMM's library call.
  bool fusedAway(size_t i) const {
    int j = plan ? plan->steps[i].cuda.libraryFusedInto : -1;
    return j >= 0 && computesFused((size_t)j);
  }

private:
  /// One distinct GEMM: descriptors and the algorithm picked for them.
  struct Prepared {
    lt::Handle desc = nullptr, a = nullptr, b = nullptr, c = nullptr,
               d = nullptr;
    lt::HeuristicResult algo{};
    float alpha = 1, beta = 0;
    bool bias = false;  // the bias pointer is set per call
    bool aux = false;   // so is the GELU/ReLU epilogue's aux pointer
    bool fused = false; // the epilogue computes another step's result
  };
  const Plan *plan = nullptr;
  lt::Library *lib = nullptr;
  lt::Handle handle = nullptr;
  std::vector<Prepared> prepared;
  std::vector<int> fusedFor; // GEMM step -> the step its epilogue computes
  std::vector<int> maskFrom; // DRELU GEMM step -> the GEMM writing its mask
  size_t workspace = 0;

  /// Descriptors and algorithm for step `s`'s GEMM; false with `why`.
  bool prepare(const Step &s, Prepared &p, std::string &why);
  bool prepare(const Step &s, bool withFused, Prepared &p, std::string &why);
  void release(Prepared &p);
  bool enqueue(size_t i, unsigned long long a, unsigned long long b,
               unsigned long long c, unsigned long long bias,
               unsigned long long aux, unsigned long long y,
               unsigned long long work, void *stream,
               std::string &error) const;
};

} // namespace mpc::rt

#endif // MPC_RUNTIME_CUDA_LIBRARYGEMMS_H
