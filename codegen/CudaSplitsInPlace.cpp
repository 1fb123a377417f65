//===- CudaSplitsInPlace.cpp - splits and concats of aligned runs --------===//
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
// A concat of the step's inputs into such runs launches nothing either:
// the inputs live in its output's buffer, each where the copy would have
// put it. BERT's and ViT's query, key and value weights merged into one
// GEMM (mpc-merge-sibling-linears) stay separate parameters, whose fp16
// copies the updates write at the step's end (mpc-half-weights-in-
// optimizer): they are written into the merged weight, which the next
// step's GEMMs read as it is, where a concat copied them every step. The
// concat's result must be read before any step makes the value fed back
// into one of its parts (so an update writing that in place runs after
// every read; the plan reader checks the same, runtime/UpdatesInPlace.cpp).
//
// A concat of values the step computes into such runs launches nothing
// too: each part's buffer moves into the concat's (BufferPlacement), so
// the kernel writing the part writes it there (an unrolled RNN's outputs
// stacked over time, their gradients' concat over time; torch.stack's
// unsqueezed parts, through the reshapes that alias them; a concat of
// concats in place). Only parts a kernel writes whole and row-major as a
// buffer of their own: no view of another buffer, no attention result
// (whose layouts may be views), no plan output.
//
//===----------------------------------------------------------------------===//

#include "codegen/CudaKernels.h"
#include "runtime/PlanFusionChecks.h"
#include "runtime/Session.h"
#include "runtime/TrainProtocol.h"
#include "runtime/cuda/MemoryPlan.h"

#include <algorithm>

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

/// The last step reading `v` or a reshape or transpose of it (a view of
/// its buffer once aliased); -1 when none does.
static int lastRead(const Plan &plan,
                    const std::map<int, std::vector<size_t>> &readers, int v,
                    int depth = 0) {
  int last = -1;
  auto r = readers.find(v);
  if (r == readers.end() || depth > 8)
    return last;
  for (size_t j : r->second) {
    last = std::max(last, (int)j);
    const Step &s = plan.steps[j];
    if ((reshapesOnly(s.op) || s.op == OpId::Transpose) && !s.outputs.empty())
      last = std::max(last, lastRead(plan, readers, s.outputs[0], depth + 1));
  }
  return last;
}

void concatsOfInputsInPlace(Plan &plan,
                            const std::map<int, std::vector<size_t>> &readers,
                            const std::map<int, size_t> &producer,
                            const std::set<int> &outputs) {
  std::set<int> stepInputs;
  for (const ::mpc::rt::Binding &b : plan.inputs)
    stepInputs.insert(b.value);
  for (const ::mpc::rt::Parameter &p : plan.params)
    stepInputs.insert(p.value);
  // Where each input's next value is made (the train protocol feeds the
  // output back into it): the earliest step that may write it in place.
  std::map<int, size_t> written;
  ::mpc::rt::TrainProtocol protocol(plan);
  for (const auto *list : protocol.fedBack())
    for (const auto &[index, name] : *list) {
      int input = ::mpc::rt::valueOfName(plan, name);
      auto p = producer.find(plan.outputs[index].value);
      if (input >= 0 && p != producer.end())
        written[input] = std::min(written.count(input) ? written[input]
                                                        : p->second,
                                  p->second);
    }
  std::set<int> placed; // parts of a concat already in place
  for (Step &s : plan.steps) {
    if (s.op != OpId::Concat || s.cuda.inOtherKernel() || s.cuda.isChain() ||
        s.outputs.size() != 1 || outputs.count(s.outputs[0]) ||
        !contiguousParts(plan, s))
      continue;
    std::set<int> parts(s.inputs.begin(), s.inputs.end());
    int last = lastRead(plan, readers, s.outputs[0]);
    bool ok = parts.size() == s.inputs.size();
    for (int v : s.inputs)
      ok = ok && stepInputs.count(v) && !outputs.count(v) &&
           !placed.count(v) &&
           (!written.count(v) || (int)written[v] > last);
    if (!ok)
      continue;
    s.cuda.inPlace = true;
    placed.insert(parts.begin(), parts.end());
  }
}

/// The value whose buffer holds `v` when a kernel writes `v` whole,
/// row-major, in a buffer of its own (its producer's kernel, the chain
/// kernel storing it, the parts of a concat in place), through the
/// reshapes that will alias it (Emitter::emitStep); -1 otherwise.
static int writtenBuffer(const Plan &plan, const std::map<int, size_t> &producer,
                         const std::set<int> &outputs, int v) {
  for (size_t hops = 0; hops <= plan.steps.size(); ++hops) {
    auto p = producer.find(v);
    if (p == producer.end() || outputs.count(v))
      return -1; // an input of the step, a constant, or bound by the plan
    const Step &s = plan.steps[p->second];
    if (reshapesOnly(s.op) && s.outputs.size() == 1 && !s.inputs.empty() &&
        !s.cuda.inOtherKernel() && !s.cuda.isChain()) {
      v = s.inputs[0]; // an alias of its input once emitted
      continue;
    }
    if (s.op == OpId::Concat && s.cuda.inPlace && s.outputs.size() == 1)
      return v; // its parts written where it lies
    if (s.cuda.alias >= 0 || s.cuda.inPlace || s.op == OpId::Attention ||
        s.op == OpId::AttentionGrad || s.cuda.libraryFusedInto >= 0 ||
        s.cuda.storedAs == v || !s.cuda.updatesInPlace.empty())
      return -1;
    if (s.cuda.fusedInto >= 0) { // a chain member the kernel stores
      const Step &k = plan.steps[::mpc::rt::kernelStep(plan, (int)p->second)];
      bool stored = k.cuda.isChain() && k.cuda.updatesInPlace.empty() &&
                    std::find(k.cuda.stores.begin(), k.cuda.stores.end(), v) !=
                        k.cuda.stores.end();
      return stored ? v : -1;
    }
    std::vector<int> out = ::mpc::rt::kernelOutputs(s);
    return std::find(out.begin(), out.end(), v) != out.end() ? v : -1;
  }
  return -1;
}

void concatsOfResultsInPlace(Plan &plan, const std::set<int> &outputs) {
  std::map<int, size_t> producer;
  for (size_t i = 0; i < plan.steps.size(); ++i)
    for (int v : plan.steps[i].outputs)
      producer[v] = i;
  // Parts another concat already places: not moved again.
  std::set<int> placed;
  for (const Step &s : plan.steps)
    if (s.op == OpId::Concat && s.cuda.inPlace)
      placed.insert(s.inputs.begin(), s.inputs.end());
  for (Step &s : plan.steps) {
    if (s.op != OpId::Concat || s.cuda.inOtherKernel() || s.cuda.isChain() ||
        s.outputs.size() != 1 || !contiguousParts(plan, s))
      continue;
    // Each part's own buffer, distinct (torch.stack's unsqueezed parts:
    // the values they reshape) and placed by no other concat.
    std::set<int> buffers;
    bool ok = true;
    for (int v : s.inputs) {
      int b = writtenBuffer(plan, producer, outputs, v);
      ok = ok && b >= 0 && !placed.count(v) && !placed.count(b) &&
           buffers.insert(b).second;
    }
    if (!ok)
      continue;
    s.cuda.inPlace = true;
    placed.insert(s.inputs.begin(), s.inputs.end());
    placed.insert(buffers.begin(), buffers.end());
  }
}

} // namespace mlir::mpc::cuda
