//===- CudaEmitter.h - CUDA C++ for an execution plan -------------*- C++ -*-===//
//
// Emits one CUDA kernel per plan step (reshape-like steps alias their input
// and get none): tensor-core GEMMs (WMMA m16n16k16, fp16/bf16 in, FP32
// accumulate, fused bias/scale/cast epilogue) for MatMul, Gemm and Conv
// (implicit GEMM), SIMT FP32 GEMMs for fp32 ones, and elementwise,
// reduction, pooling and data-movement kernels that follow the numerics
// contract (compute in FP32, round once). Launch configurations and buffer
// aliases are recorded on the steps (`cuda.*` attributes) for the runtime.
//
//===----------------------------------------------------------------------===//

#ifndef MPC_CODEGEN_CUDAEMITTER_H
#define MPC_CODEGEN_CUDAEMITTER_H

#include "runtime/Plan.h"

#include <string>
#include <vector>

namespace mlir::mpc {

/// One distinct kernel: named after what it computes (its op and a hash of
/// its code), so identical layers share it and a later compile finds it in
/// the kernel cache.
struct CudaKernel {
  std::string name;
  std::string code;     // the kernel and the structs it uses
  std::string launcher; // its host-emulation launcher (MPC_HOST_EMULATION)
};

struct CudaModule {
  std::string source;  // the .cu file: prelude, kernels, launchers
  std::string prelude; // what every translation unit starts with
  std::vector<CudaKernel> kernels;      // distinct, in first-use order
  std::vector<std::string> launches;    // kernel names, in launch order
  size_t libraryLaunches = 0; // launches with cuBLASLt and cuDNN present
  /// Under gradient accumulation, the launches of a micro-batch that does
  /// not end its group (the applied-only steps skipped); else launches'.
  size_t microLaunches = 0;
  std::vector<std::string> gemmKernels; // distinct; must use tensor cores
  std::vector<std::string> fp32GemmKernels;
  double flops = 0, tensorCoreFlops = 0;
};

/// Emits `plan`'s kernels and annotates its steps. False with a one-line
/// `error` naming the step for an op without a CUDA kernel. `fuse` false:
/// one kernel per step (no epilogue or chain fusion), for comparison.
/// How the CUDA backend runs `op` (from the emitter table): "kernel",
/// "fusable" (an elementwise expression), "alias" (no kernel: the input's
/// buffer), or "no kernel yet" with the reason.
std::string cudaSupport(::mpc::rt::OpId op);

bool emitCuda(::mpc::rt::Plan &plan, CudaModule &out, std::string &error,
              bool fuse = true);

} // namespace mlir::mpc

#endif // MPC_CODEGEN_CUDAEMITTER_H
