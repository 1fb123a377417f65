//===- CudaKernels.h - the kernel emitters behind CudaEmitter ----*- C++ -*-===//
//
// Private to codegen/: one Emitter walks the plan; its kernel generators
// live in CudaEmitter.cpp (elementwise, data movement, dispatch),
// CudaGemmKernels.cpp (tensor-core GEMMs, convolutions and their
// gradients) and CudaNnKernels.cpp (reductions, pooling, losses, loss
// scaling).
//
//===----------------------------------------------------------------------===//

#ifndef MPC_CODEGEN_CUDAKERNELS_H
#define MPC_CODEGEN_CUDAKERNELS_H

#include "codegen/CudaEmitter.h"
#include "runtime/cuda/MemoryPlan.h"

#include <optional>
#include <sstream>
#include <string>
#include <vector>

namespace mlir::mpc::cuda {

using ::mpc::rt::DType;
using ::mpc::rt::Plan;
using ::mpc::rt::Shape;
using ::mpc::rt::Step;
using ::mpc::rt::Tensor;
using ::mpc::rt::ValueInfo;

/// The C++ type of a dtype in emitted code ("__half", "i64"...).
const char *ctype(::mpc::rt::DType t);
/// Row-major strides of `s`.
::mpc::rt::Shape stridesOf(const ::mpc::rt::Shape &s);
/// Strides of `in` read at the indices of `out` (numpy broadcasting: 0
/// along broadcast dims, right-aligned).
::mpc::rt::Shape broadcastStrides(const ::mpc::rt::Shape &in,
                                  const ::mpc::rt::Shape &out);
/// Literals that keep every bit: a float (`f` suffix) or a double.
std::string flt(double v);
std::string dbl(double v);
/// Code computing offsets `o<k>` of each input for flat output index `i`
/// given per-input strides over the output's dims.
std::string offsetsCode(const ::mpc::rt::Shape &out,
                        const std::vector<::mpc::rt::Shape> &strides);

/// Names of an elementwise expression's operands, in order.
inline constexpr const char *kOperandNames = "abcdefgh";
inline constexpr size_t kMaxOperands = 8;

struct Emitter {
  Plan &plan;
  CudaModule &mod;
  std::string &error;
  std::ostringstream cu;
  std::ostringstream emu; // host-emulation launchers (MPC_HOST_EMULATION)
  bool barrier = false;   // the next launched kernel uses __syncthreads

  const ValueInfo &val(int id) { return plan.values[id]; }
  const Tensor *constant(int id) {
    auto it = plan.constants.find(id);
    return it == plan.constants.end() ? nullptr : &it->second;
  }
  bool fail(const Step &s, const std::string &why) {
    error = "node '" + s.name + "' (" + s.op + "): " + why;
    return false;
  }

  /// Kernel header: extern "C" with typed pointer params for inputs then
  /// outputs (absent optional inputs are null pointers).
  std::string header(const Step &s, const std::string &name, int threads);
  /// Records the kernel and launch shape on the step, and its host
  /// launcher for the emulation test. A `prologue` kernel (`cuda.prologue`:
  /// one thread, the same arguments) runs before the step's kernel.
  void launch(Step &s, const std::string &name, Shape grid, Shape block,
              bool prologue = false);
  void launch1d(Step &s, const std::string &name, int64_t n) {
    launch(s, name, {std::max<int64_t>((n + 255) / 256, 1), 1, 1}, {256, 1, 1});
  }
  bool emitStep(Step &s, size_t index);

  // CudaEmitter.cpp
  /// The FP32 expression of an elementwise step over operands a, b, c...
  /// (CudaExpressions.cpp), as the CPU backend computes it; none for an op
  /// without one.
  std::optional<std::string> expr(const Step &s);
  bool elementwise(Step &s, const std::string &name, const std::string &e);
  bool chain(Step &s, const std::string &name);
  bool stridedCopy(Step &s, const std::string &name, int64_t offset,
                   const Shape &strides);
  bool transpose(Step &s, const std::string &name);
  bool slice(Step &s, const std::string &name);
  bool gather(Step &s, const std::string &name);
  bool gatherGrad(Step &s, const std::string &name);
  bool gatherElements(Step &s, const std::string &name);
  bool axisParts(Step &s, const std::string &name, bool concatenate);
  bool trilu(Step &s, const std::string &name);
  bool pad(Step &s, const std::string &name);

  // CudaGemmKernels.cpp
  void gemmKernel(Step &s, const std::string &name, DType t, int64_t M,
                  int64_t N, int64_t K, int64_t batch,
                  const std::string &prologue, const std::string &loadA,
                  const std::string &loadB, const std::string &epilogue,
                  const std::string &members);
  bool gemm(Step &s, const std::string &name);
  bool matmul(Step &s, const std::string &name);
  bool conv(Step &s, const std::string &name);
  bool convGrad(Step &s, const std::string &name, bool weight);

  // CudaNnKernels.cpp
  bool softmax(Step &s, const std::string &name, bool logForm);
  bool layerNorm(Step &s, const std::string &name);
  bool batchNorm(Step &s, const std::string &name, bool train);
  bool reduce(Step &s, const std::string &name, const std::string &kind);
  bool argExtreme(Step &s, const std::string &name, bool max);
  bool pool(Step &s, const std::string &name, bool max);
  bool globalAveragePool(Step &s, const std::string &name);
  bool crossEntropy(Step &s, const std::string &name, bool fromLogProb = false);
  bool poolGrad(Step &s, const std::string &name, bool max);
  bool crossEntropyGrad(Step &s, const std::string &name, bool withSoftmax);
  bool unscaleGrads(Step &s, const std::string &name);
  bool updateLossScale(Step &s, const std::string &name);
  bool onnxOptimizer(Step &s, const std::string &name);
};

/// The inputs a chain member computes from (an Expand's data, not its
/// target shape).
std::vector<int> chainOperands(const Step &s);
/// Marks the steps that share a kernel (CudaFusion.cpp): Relus into GEMM
/// epilogues, elementwise chains into their last step.
void fuseSteps(Emitter &e);

} // namespace mlir::mpc::cuda

#endif // MPC_CODEGEN_CUDAKERNELS_H
