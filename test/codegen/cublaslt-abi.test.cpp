// Checked by cublaslt-abi.test (not a lit test itself: lit reads *.test).
#include "runtime/cuda/CublasLt.h"

#include <cstddef>
#include <cublasLt.h>

namespace lt = mpc::rt::lt;
static_assert(lt::kR16F == CUDA_R_16F && lt::kR16BF == CUDA_R_16BF &&
              lt::kR32F == CUDA_R_32F);
static_assert(lt::kCompute32F == CUBLAS_COMPUTE_32F);
static_assert(lt::kCompute32FFastTf32 == CUBLAS_COMPUTE_32F_FAST_TF32);
static_assert(lt::kOpN == CUBLAS_OP_N && lt::kOpT == CUBLAS_OP_T);
static_assert(lt::kDescTransA == CUBLASLT_MATMUL_DESC_TRANSA &&
              lt::kDescTransB == CUBLASLT_MATMUL_DESC_TRANSB &&
              lt::kDescEpilogue == CUBLASLT_MATMUL_DESC_EPILOGUE &&
              lt::kDescBiasPointer == CUBLASLT_MATMUL_DESC_BIAS_POINTER &&
              lt::kDescEpilogueAuxPointer ==
                  CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER &&
              lt::kDescEpilogueAuxLd == CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD &&
              lt::kDescBiasDataType == CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE);
static_assert(lt::kLayoutBatchCount == CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT &&
              lt::kLayoutStridedBatchOffset ==
                  CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET);
static_assert(lt::kPrefMaxWorkspaceBytes ==
              CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES);
static_assert(lt::kEpilogueDefault == CUBLASLT_EPILOGUE_DEFAULT &&
              lt::kEpilogueRelu == CUBLASLT_EPILOGUE_RELU &&
              lt::kEpilogueBias == CUBLASLT_EPILOGUE_BIAS &&
              lt::kEpilogueReluBias == CUBLASLT_EPILOGUE_RELU_BIAS &&
              lt::kEpilogueGelu == CUBLASLT_EPILOGUE_GELU &&
              lt::kEpilogueGeluBias == CUBLASLT_EPILOGUE_GELU_BIAS &&
              lt::kEpilogueGeluAux == CUBLASLT_EPILOGUE_GELU_AUX &&
              lt::kEpilogueGeluAuxBias == CUBLASLT_EPILOGUE_GELU_AUX_BIAS &&
              lt::kEpilogueDGelu == CUBLASLT_EPILOGUE_DGELU &&
              lt::kEpilogueReluAux == CUBLASLT_EPILOGUE_RELU_AUX &&
              lt::kEpilogueReluAuxBias == CUBLASLT_EPILOGUE_RELU_AUX_BIAS &&
              lt::kEpilogueDRelu == CUBLASLT_EPILOGUE_DRELU &&
              lt::kEpilogueBgradB == CUBLASLT_EPILOGUE_BGRADB &&
              lt::kEpilogueBgradA == CUBLASLT_EPILOGUE_BGRADA);
static_assert(sizeof(lt::HeuristicResult) ==
              sizeof(cublasLtMatmulHeuristicResult_t));
static_assert(offsetof(lt::HeuristicResult, workspaceSize) ==
                  offsetof(cublasLtMatmulHeuristicResult_t, workspaceSize) &&
              offsetof(lt::HeuristicResult, state) ==
                  offsetof(cublasLtMatmulHeuristicResult_t, state));
static_assert(sizeof(((lt::HeuristicResult *)nullptr)->algo) ==
              sizeof(cublasLtMatmulAlgo_t));
