//===- CudaRowFusion.cpp - what the row kernels take in ------------------===//
//
// Decided after the chains (CudaFusion.cpp), on the row kernels of
// normalisation, softmax and the classification losses:
// - a row kernel whose result only a cast reads stores the cast's result
//   instead (`cuda.storedAs`; the cast records the producer in
//   `cuda.fusedInto`): a mixed-precision graph's FP32 layer norm feeding
//   fp16 GEMMs writes fp16 once, with the same bits; read by others too,
//   it stores both (`cuda.stores`, storeCastBeside); a gradient cast's
//   flushes are counted there; a norm gradient computing the residual
//   Add after it stores the cast of the sum beside it;
// - a layer/RMS norm or norm gradient whose input an Add computes takes
//   the sum as it loads, storing it where others read it later
//   (addIntoRowKernels: the residual Add before a norm), and a dropout
//   chained into that Add too (its keep bits drawn as it loads: a
//   residual branch's dropout).
//
//===----------------------------------------------------------------------===//

#include "codegen/CudaKernels.h"

#include <algorithm>
#include <map>
#include <set>

namespace mlir::mpc::cuda {

/// Producers whose kernels compute their output 0 in FP32 and store it
/// through st(), so any float type takes the same value rounded once.
/// Not reductions: their results are small, and a bias gradient's is
/// better computed by its weight-gradient GEMM (fuseBiasGradients).
static bool storesAnyFloat(OpId op) {
  switch (op) {
  case OpId::LayerNorm: case OpId::RmsNorm: case OpId::NormGrad:
  case OpId::Softmax: case OpId::LogSoftmax:
  case OpId::SoftmaxCrossEntropyLossGrad:
  case OpId::NegativeLogLikelihoodLossGrad:
    return true;
  default:
    return false;
  }
}

/// A loss gradient over [N, C, d1, ...] scores: its kernel
/// (CudaSpatialLossKernels.cpp) strides the classes and stores output 0
/// itself, neither beside a cast nor counting what a cast flushes.
static bool spatialLossGrad(const Plan &plan, const Step &s) {
  return (s.op == OpId::SoftmaxCrossEntropyLossGrad ||
          s.op == OpId::NegativeLogLikelihoodLossGrad) &&
         s.inputs.size() > 1 && s.inputs[1] >= 0 &&
         plan.values[s.inputs[1]].shape.size() > 2;
}

/// Gradient producers whose row kernel stores output 0 through rowEach,
/// which counts what a stored gradient cast flushes (Emitter::rowEach).
static bool countsStoredCast(OpId op) {
  return op == OpId::NormGrad || op == OpId::SoftmaxCrossEntropyLossGrad ||
         op == OpId::NegativeLogLikelihoodLossGrad;
}

/// Row kernel `i`'s output 0 has other readers besides a cast: the kernel
/// stores the cast's result too (`cuda.stores`; the cast `fused-into` it),
/// each rounded once from the same FP32 value, counting what a gradient
/// cast flushes as the cast's kernel would (Emitter::rowEach). A post-norm
/// Transformer's FP32 layer norm feeds the residual Add and, as fp16, the
/// next GEMM; its gradient feeds the residual sum and the fp16 GEMM.
static void storeCastBeside(Plan &plan, size_t i, int y,
                            const std::vector<size_t> &readers) {
  Step &s = plan.steps[i];
  const ValueInfo &x = plan.values[s.inputs[0]];
  int64_t axis = s.getInt("axis", -1);
  axis = axis < 0 ? axis + (int64_t)x.shape.size() : axis;
  bool rows = true; // softmax: only its contiguous-row kernel (rowEach)
  if (s.op == OpId::Softmax || s.op == OpId::LogSoftmax)
    for (size_t d = axis + 1; d < x.shape.size(); ++d)
      rows = rows && x.shape[d] == 1;
  // FP32: the cast reads exactly the value the kernel rounds.
  if (!rows || !s.cuda.stores.empty() || plan.values[y].dtype != DType::F32)
    return;
  for (size_t k : readers) {
    Step &cast = plan.steps[k];
    if (k <= i || cast.op != OpId::Cast || cast.outputs.size() != 1 ||
        cast.cuda.inOtherKernel() || cast.cuda.isChain() ||
        !isFloat(plan.values[cast.outputs[0]].dtype))
      continue;
    s.cuda.stores.push_back(cast.outputs[0]);
    cast.cuda.fusedInto = (int)i;
    return;
  }
}

void fuseOutputCasts(Plan &plan,
                     const std::map<int, std::vector<size_t>> &readers,
                     const std::set<int> &outputs) {
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    Step &s = plan.steps[i];
    if (!storesAnyFloat(s.op) || spatialLossGrad(plan, s) ||
        s.cuda.inOtherKernel() || s.cuda.isChain() || s.outputs.empty() ||
        outputs.count(s.outputs[0]))
      continue;
    // What the kernel stores as output 0: the sum of the Add it computes
    // (cuda.epilogueAdd; the Add aliases output 0), or output 0.
    int y = s.outputs[0];
    if (s.cuda.epilogueAdd >= 0) {
      auto a = readers.find(y);
      if (a == readers.end() || a->second.size() != 1 ||
          plan.steps[a->second[0]].cuda.alias != y)
        continue;
      y = plan.steps[a->second[0]].outputs[0];
      if (outputs.count(y))
        continue;
    }
    auto r = readers.find(y);
    if (r == readers.end())
      continue;
    if (r->second.size() > 1) {
      storeCastBeside(plan, i, y, r->second);
      continue;
    }
    if (y != s.outputs[0])
      continue; // (the sum read by a cast alone: not stored as the cast's)
    Step &cast = plan.steps[r->second[0]];
    if (cast.op != OpId::Cast || cast.cuda.inOtherKernel() ||
        cast.cuda.isChain() ||
        (cast.countUnderflow && !countsStoredCast(s.op)) ||
        !isFloat(plan.values[cast.outputs[0]].dtype) ||
        !isFloat(plan.values[s.outputs[0]].dtype))
      continue;
    s.cuda.storedAs = cast.outputs[0];
    cast.cuda.fusedInto = (int)i;
  }
}

int64_t prologueAddRepeat(const Step &s, const Shape &x, const Shape &v) {
  Shape tail(std::find_if(v.begin(), v.end(), [](int64_t d) { return d != 1; }),
             v.end());
  int64_t rank = (int64_t)x.size(), axis = s.getInt("axis", -1);
  axis = axis < 0 ? axis + rank : axis;
  if (tail.size() > x.size() || axis < 0 || axis >= rank ||
      !std::equal(tail.begin(), tail.end(), x.end() - tail.size()))
    return -1;
  int64_t row = 1, n = 1;
  for (int64_t d = axis; d < rank; ++d)
    row *= x[d];
  for (int64_t d : tail)
    n *= d;
  return n % row == 0 ? n : -1;
}

/// The dropout step chained into `add` (step `a`), the chain nothing but
/// the two (its mask unread, its result read by the Add alone, of the
/// Add's shape), which a row kernel can draw as it loads; else -1.
static int dropoutChainedInto(const Plan &plan, const Step &add, size_t a) {
  const std::vector<int> &chain = add.cuda.chain;
  if (chain.size() != 2 || chain[1] != (int)a || !add.cuda.stores.empty() ||
      add.cuda.underflowCounter || add.outputs.size() != 1)
    return -1;
  const Step &d = plan.steps[chain[0]];
  if (d.op != OpId::Dropout || d.cuda.written != 1 || d.outputs.empty() ||
      d.cuda.fusedInto != (int)a ||
      std::count(add.inputs.begin(), add.inputs.end(), d.outputs[0]) != 1 ||
      plan.values[d.outputs[0]].shape != plan.values[add.outputs[0]].shape)
    return -1;
  return chain[0];
}

/// A layer/RMS norm or norm gradient whose input 0 an Add computes, of
/// two float operands of its shape, takes the sum as it loads
/// (`cuda.prologueAdd`; the Add `fused-into` it, its kernel gone): a
/// residual Add and the layer norm after it, the two gradients of a layer
/// norm's output (its reader GEMM's and the residual's) and the norm
/// gradient. Steps reading the sum besides must run after the kernel,
/// which then stores it (`cuda.stores`) in its first pass over the row:
/// the residual stream, the norm gradient's input. One launch less, and
/// the sum written but not read back from memory. A dropout of one
/// operand, chained into the Add, is drawn as it loads too
/// (`cuda.prologueDropout`): the branch's dropout, the residual Add and
/// the layer norm in one kernel.
void addIntoRowKernels(Plan &plan, const std::map<int, size_t> &producer,
                       const std::set<int> &outputs) {
  // Who reads each value, a kernel's own operands included (a chain's or
  // a batch norm's addend), indexed once: plans have 10^4-10^5 steps.
  std::map<int, std::vector<size_t>> reads;
  for (size_t r = 0; r < plan.steps.size(); ++r) {
    std::vector<int> in = ::mpc::rt::kernelInputs(plan.steps[r]);
    in.insert(in.end(), plan.steps[r].inputs.begin(), plan.steps[r].inputs.end());
    for (int v : in)
      reads[v].push_back(r);
  }
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    Step &s = plan.steps[i];
    if ((s.op != OpId::LayerNorm && s.op != OpId::RmsNorm &&
         s.op != OpId::NormGrad) ||
        s.inputs.empty() || s.inputs[0] < 0 || s.cuda.inOtherKernel() ||
        s.cuda.isChain() || s.cuda.hasPrologueAdd() ||
        s.cuda.epilogueAdd >= 0 || s.cuda.libraryFusedInto >= 0)
      continue;
    int x = s.inputs[0];
    auto p = producer.find(x);
    if (p == producer.end() || p->second >= i ||
        std::count(s.inputs.begin(), s.inputs.end(), x) != 1)
      continue;
    Step &add = plan.steps[p->second];
    const ValueInfo &xv = plan.values[x];
    // A residual branch's dropout chained into the Add: drawn here too.
    int drop = add.op == OpId::Add && add.inputs.size() == 2
                   ? dropoutChainedInto(plan, add, p->second)
                   : -1;
    bool fits = add.op == OpId::Add && add.inputs.size() == 2 &&
                add.outputs.size() == 1 && !add.cuda.inOtherKernel() &&
                (!add.cuda.isChain() || drop >= 0) && add.cuda.stores.empty() &&
                add.cuda.storedAs < 0 && !add.cuda.batch.valid() &&
                add.cuda.batchedInto < 0 && isFloat(xv.dtype);
    // (An operand may be narrower: a widening cast's source, read through.
    // One may repeat along the rows, a position embedding added to the
    // token embeddings: prologueAddRepeat.)
    int repeating = 0;
    for (int v : add.inputs) {
      fits = fits && v >= 0 && isFloat(plan.values[v].dtype);
      if (fits && plan.values[v].shape != xv.shape) {
        fits = prologueAddRepeat(s, xv.shape, plan.values[v].shape) > 0;
        ++repeating;
      }
    }
    fits = fits && repeating < 2;
    // Who else reads the sum: none before this kernel. (A widening cast
    // of it is read through by this kernel, fused into it.)
    bool store = outputs.count(x) != 0;
    for (size_t r : reads[x]) {
      if (!fits || r == i || plan.steps[r].cuda.fusedInto == (int)i)
        continue;
      fits = r > i;
      store = true;
    }
    if (!fits)
      continue;
    s.cuda.prologueAdd = {add.inputs[0], add.inputs[1]};
    add.cuda.fusedInto = (int)i;
    if (drop >= 0) { // the chain undone: this kernel computes both
      Step &d = plan.steps[drop];
      int counter = d.inputs.size() > 3 ? d.inputs[3] : -1;
      s.cuda.prologueDropout = {drop, add.inputs[0] == d.outputs[0] ? 0 : 1,
                                d.inputs[0], counter};
      d.cuda.fusedInto = (int)i;
      add.cuda.chain.clear();
      add.cuda.inputs.clear();
      for (int v : {d.inputs[0], counter})
        reads[v].push_back(i);
    }
    for (int v : add.inputs) // now read here
      reads[v].push_back(i);
    if (store)
      s.cuda.stores.push_back(x);
  }
}

} // namespace mlir::mpc::cuda
