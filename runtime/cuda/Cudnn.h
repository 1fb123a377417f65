//===- Cudnn.h - cuDNN's convolution API, loaded at run time ------*- C++ -*-===//
//
// Private to runtime/cuda/. The legacy convolution entry points of cuDNN 9
// mpc uses (forward, bias add, forward with bias and activation in one
// rounding, backward data and filter), looked up with
// dlsym in
// libcudnn.so.9 (which loads its sub-libraries itself): the library
// MPC_CUDNN names (the tests point it at a host implementation,
// test/codegen/FakeCudnn.cpp), else the loader's path, the toolkit, or
// NVIDIA's pip wheel. The constants are cuDNN 9's;
// test/codegen/cudnn-abi.test compiles them against the real headers.
//
//===----------------------------------------------------------------------===//

#ifndef MPC_RUNTIME_CUDA_CUDNN_H
#define MPC_RUNTIME_CUDA_CUDNN_H

#include <cstddef>
#include <string>

namespace mpc::rt::dnn {

using Status = int; // cudnnStatus_t
using Handle = void *;

// cudnnDataType_t, cudnnTensorFormat_t, cudnnConvolutionMode_t,
// cudnnMathType_t.
constexpr int kFloat = 0, kHalf = 2, kBfloat16 = 9;
constexpr int kNchw = 0, kNhwc = 1;
constexpr int kCrossCorrelation = 1;
constexpr int kDefaultMath = 0, kTensorOpMath = 1, kFmaMath = 3;
// cudnnActivationMode_t, cudnnNanPropagation_t, and the one forward
// algorithm cudnnConvolutionBiasActivationForward takes with IDENTITY.
constexpr int kActivationRelu = 1, kActivationIdentity = 5;
constexpr int kPropagateNan = 1;
constexpr int kFwdImplicitPrecompGemm = 1;

/// cudnnConvolutionFwdAlgoPerf_t, ...BwdDataAlgoPerf_t and
/// ...BwdFilterAlgoPerf_t (one layout).
struct AlgoPerf {
  int algo;
  Status status;
  float time;
  size_t memory;
  int determinism;
  int mathType;
  int reserved[3];
};

struct Library {
  void *lib = nullptr;
  std::string path;
  size_t (*getVersion)();
  const char *(*errorString)(Status);
  Status (*create)(Handle *);
  Status (*destroy)(Handle);
  Status (*setStream)(Handle, void *);
  Status (*createTensor)(Handle *);
  Status (*setTensor4d)(Handle, int format, int type, int n, int c, int h,
                        int w);
  Status (*destroyTensor)(Handle);
  Status (*createFilter)(Handle *);
  Status (*setFilter4d)(Handle, int type, int format, int k, int c, int h,
                        int w);
  Status (*destroyFilter)(Handle);
  Status (*createConv)(Handle *);
  Status (*setConv2d)(Handle, int padH, int padW, int u, int v, int dilH,
                      int dilW, int mode, int computeType);
  Status (*setConvGroups)(Handle, int);
  Status (*setConvMath)(Handle, int);
  Status (*destroyConv)(Handle);
  // Forward: (handle, xDesc, wDesc, conv, yDesc, ...).
  Status (*forwardAlgorithms)(Handle, Handle, Handle, Handle, Handle, int,
                              int *, AlgoPerf *);
  Status (*forwardWorkspace)(Handle, Handle, Handle, Handle, Handle, int,
                             size_t *);
  Status (*forward)(Handle, const void *alpha, Handle xDesc, const void *x,
                    Handle wDesc, const void *w, Handle conv, int algo,
                    void *workspace, size_t bytes, const void *beta,
                    Handle yDesc, void *y);
  /// y = act(alpha1 conv(x, w) + alpha2 z + bias), rounded once.
  Status (*biasActivationForward)(
      Handle, const void *alpha1, Handle xDesc, const void *x, Handle wDesc,
      const void *w, Handle conv, int algo, void *workspace, size_t bytes,
      const void *alpha2, Handle zDesc, const void *z, Handle biasDesc,
      const void *bias, Handle activation, Handle yDesc, void *y);
  Status (*createActivation)(Handle *);
  Status (*setActivation)(Handle, int mode, int nan, double coef);
  Status (*destroyActivation)(Handle);
  /// C = alpha A + beta C, A broadcast along C's size-1 dimensions.
  Status (*addTensor)(Handle, const void *alpha, Handle aDesc, const void *a,
                      const void *beta, Handle cDesc, void *c);
  // Backward data: (handle, wDesc, dyDesc, conv, dxDesc, ...).
  Status (*dataAlgorithms)(Handle, Handle, Handle, Handle, Handle, int, int *,
                           AlgoPerf *);
  Status (*dataWorkspace)(Handle, Handle, Handle, Handle, Handle, int,
                          size_t *);
  Status (*backwardData)(Handle, const void *alpha, Handle wDesc,
                         const void *w, Handle dyDesc, const void *dy,
                         Handle conv, int algo, void *workspace, size_t bytes,
                         const void *beta, Handle dxDesc, void *dx);
  // Backward filter: (handle, xDesc, dyDesc, conv, dwDesc, ...).
  Status (*filterAlgorithms)(Handle, Handle, Handle, Handle, Handle, int,
                             int *, AlgoPerf *);
  Status (*filterWorkspace)(Handle, Handle, Handle, Handle, Handle, int,
                            size_t *);
  Status (*backwardFilter)(Handle, const void *alpha, Handle xDesc,
                           const void *x, Handle dyDesc, const void *dy,
                           Handle conv, int algo, void *workspace,
                           size_t bytes, const void *beta, Handle dwDesc,
                           void *dw);

  /// Loads the library and its symbols once; "" on success, else why not.
  std::string load();
  /// "cuDNN 9.19.0 (PATH)".
  std::string describe() const;
  std::string statusName(Status s) const;
};

/// The process's cuDNN (loaded on first use by load()).
Library &library();

} // namespace mpc::rt::dnn

#endif // MPC_RUNTIME_CUDA_CUDNN_H
