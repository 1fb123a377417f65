//===- CublasLt.h - cuBLASLt, loaded at run time ------------------*- C++ -*-===//
//
// Private to runtime/cuda/. The cuBLASLt entry points and constants mpc
// uses, looked up with dlsym so that mpc has no link-time dependency on
// the CUDA toolkit: the library MPC_CUBLASLT names (the tests point it at a
// host implementation, test/codegen/FakeCublasLt.cpp), else
// libcublasLt.so.13 on the loader's path, in the toolkit, or in NVIDIA's
// pip wheel. The constants are cublasLt.h's (CUDA 13);
// test/codegen/cublaslt-abi.test compiles them against the real header.
//
//===----------------------------------------------------------------------===//

#ifndef MPC_RUNTIME_CUDA_CUBLASLT_H
#define MPC_RUNTIME_CUDA_CUBLASLT_H

#include <cstddef>
#include <cstdint>
#include <string>

namespace mpc::rt::lt {

using Status = int; // cublasStatus_t
using Handle = void *;

// cudaDataType_t, cublasComputeType_t, cublasOperation_t.
constexpr int kR16F = 2, kR16BF = 14, kR32F = 0;
constexpr int kCompute32F = 68, kCompute32FFastTf32 = 77;
constexpr int kOpN = 0, kOpT = 1;
// cublasLtMatmulDescAttributes_t.
constexpr int kDescTransA = 3, kDescTransB = 4, kDescEpilogue = 7,
              kDescBiasPointer = 8, kDescEpilogueAuxPointer = 11,
              kDescEpilogueAuxLd = 12, kDescBiasDataType = 26;
// cublasLtMatrixLayoutAttribute_t.
constexpr int kLayoutBatchCount = 5, kLayoutStridedBatchOffset = 6;
// cublasLtMatmulPreferenceAttributes_t.
constexpr int kPrefMaxWorkspaceBytes = 1;
// cublasLtEpilogue_t.
constexpr int kEpilogueDefault = 1, kEpilogueRelu = 2, kEpilogueBias = 4,
              kEpilogueReluBias = 6, kEpilogueGelu = 32,
              kEpilogueGeluBias = 36, kEpilogueGeluAux = 160,
              kEpilogueGeluAuxBias = 164, kEpilogueDGelu = 192,
              kEpilogueReluAux = 130, kEpilogueReluAuxBias = 134,
              kEpilogueDRelu = 136,
              kEpilogueBgradA = 256, kEpilogueBgradB = 512;

/// cublasLtMatmulHeuristicResult_t.
struct HeuristicResult {
  uint64_t algo[8];
  size_t workspaceSize;
  Status state;
  float wavesCount;
  int reserved[4];
};

struct Library {
  void *lib = nullptr;
  std::string path; // where it was loaded from
  size_t (*getVersion)();
  const char *(*statusString)(Status);
  Status (*create)(Handle *);
  Status (*destroy)(Handle);
  Status (*descCreate)(Handle *, int computeType, int scaleType);
  Status (*descSetAttribute)(Handle, int, const void *, size_t);
  Status (*descDestroy)(Handle);
  Status (*layoutCreate)(Handle *, int type, uint64_t rows, uint64_t cols,
                         int64_t ld);
  Status (*layoutSetAttribute)(Handle, int, const void *, size_t);
  Status (*layoutDestroy)(Handle);
  Status (*prefCreate)(Handle *);
  Status (*prefSetAttribute)(Handle, int, const void *, size_t);
  Status (*prefDestroy)(Handle);
  Status (*heuristic)(Handle, Handle desc, Handle a, Handle b, Handle c,
                      Handle d, Handle pref, int requested,
                      HeuristicResult *results, int *returned);
  Status (*matmul)(Handle, Handle desc, const void *alpha, const void *a,
                   Handle aDesc, const void *b, Handle bDesc,
                   const void *beta, const void *c, Handle cDesc, void *d,
                   Handle dDesc, const void *algo, void *workspace,
                   size_t workspaceBytes, void *stream);

  /// Loads the library and its symbols once; "" on success, else why not.
  std::string load();
  /// "cuBLASLt 13.0.2 (PATH)".
  std::string describe() const;
  /// cuBLASLt's name for `s`.
  std::string statusName(Status s) const;
};

/// The process's cuBLASLt (loaded on first use by load()).
Library &library();

} // namespace mpc::rt::lt

#endif // MPC_RUNTIME_CUDA_CUBLASLT_H
