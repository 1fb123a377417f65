//===- CudaSplitsInPlace.cpp - splits into aligned runs of their input ----===//
//
// A split along an axis with only unit dims before it cuts its input into
// consecutive runs: each part is bytes the input's buffer already holds.
// Where every part starts a multiple of 256 bytes in (the arena's
// alignment, which the kernels' 16-byte accesses and cuBLASLt's default
// heuristics assume), the split launches nothing and its parts live in
// its input's buffer (Step::inPlace, runtime/cuda/MemoryPlan.cpp): a merged
// QKV projection's bias gradient (mpc-merge-sibling-linears; a concat's
// gradient is a Split) is read by the updates where the GEMM's BGRAD
// epilogue wrote it. A step-computed value is never written after its
// producer, so the parts stay what the copy would have made while any is
// read (the whole's buffer lives as long as its parts). Splits of the
// step's inputs (a parameter an update may overwrite in place) and of
// strided views (attention's in-place operands) keep their kernel.
//
//===----------------------------------------------------------------------===//

#include "codegen/CudaKernels.h"
#include "runtime/PlanFusionChecks.h"
#include "runtime/cuda/MemoryPlan.h"

namespace mlir::mpc::cuda {

/// Whether `v` is a row-major buffer some step wrote: back through
/// reshapes to a producer that is not a view.
static bool writtenRowMajor(const Plan &plan,
                            const std::map<int, size_t> &producer, int v) {
  for (size_t hops = 0; hops <= plan.steps.size(); ++hops) {
    auto p = producer.find(v);
    if (p == producer.end())
      return false; // an input of the step, or a constant
    const Step &m = plan.steps[p->second];
    if (m.cuda.inPlace)
      return false; // a part of another split, or a concat attention wrote
    if (m.cuda.alias < 0)
      return true;
    if (!reshapesOnly(m.op) || m.inputs.empty() || m.cuda.alias != m.inputs[0])
      return m.op != OpId::Transpose; // an epilogue's result: the GEMM's buffer
    v = m.inputs[0];
  }
  return false;
}

void splitsInPlace(Plan &plan, const std::map<int, size_t> &producer) {
  for (Step &s : plan.steps)
    if (s.op == OpId::Split && !s.cuda.inOtherKernel() && !s.cuda.isChain() &&
        s.inputs.size() == 1 && contiguousParts(plan, s) &&
        writtenRowMajor(plan, producer, s.inputs[0]))
      s.cuda.inPlace = true;
}

} // namespace mlir::mpc::cuda
