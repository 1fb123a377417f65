// Checked by cudnn-abi.test (not a lit test itself: lit reads *.test).
#include "runtime/cuda/Cudnn.h"

#include <cstddef>
#include <cudnn.h>

namespace dnn = mpc::rt::dnn;
static_assert(dnn::kFloat == CUDNN_DATA_FLOAT && dnn::kHalf == CUDNN_DATA_HALF &&
              dnn::kBfloat16 == CUDNN_DATA_BFLOAT16);
static_assert(dnn::kNchw == CUDNN_TENSOR_NCHW);
static_assert(dnn::kCrossCorrelation == CUDNN_CROSS_CORRELATION);
static_assert(dnn::kActivationRelu == CUDNN_ACTIVATION_RELU &&
              dnn::kActivationIdentity == CUDNN_ACTIVATION_IDENTITY &&
              dnn::kPropagateNan == CUDNN_PROPAGATE_NAN &&
              dnn::kFwdImplicitPrecompGemm ==
                  CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM);
static_assert(dnn::kDefaultMath == CUDNN_DEFAULT_MATH &&
              dnn::kTensorOpMath == CUDNN_TENSOR_OP_MATH &&
              dnn::kFmaMath == CUDNN_FMA_MATH);
template <typename P> constexpr bool sameLayout() {
  return sizeof(dnn::AlgoPerf) == sizeof(P) &&
         offsetof(dnn::AlgoPerf, status) == offsetof(P, status) &&
         offsetof(dnn::AlgoPerf, memory) == offsetof(P, memory) &&
         offsetof(dnn::AlgoPerf, mathType) == offsetof(P, mathType);
}
static_assert(sameLayout<cudnnConvolutionBwdDataAlgoPerf_t>());
static_assert(sameLayout<cudnnConvolutionBwdFilterAlgoPerf_t>());
static_assert(sameLayout<cudnnConvolutionFwdAlgoPerf_t>());
