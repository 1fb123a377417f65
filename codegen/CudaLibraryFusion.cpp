//===- CudaLibraryFusion.cpp - steps a library epilogue computes ---------===//
//
// After the kernels are emitted: which steps cuBLASLt's epilogues compute
// with the GEMM beside them (the bias gradient with the weight gradient,
// the tanh GELU and its gradient, the ReLU mask and the ReLU gradient).
// Each marks the GEMM's LibraryGemm record and the step it computes
// (`libraryFusedInto`), whose own kernel stays for when the library runs
// the GEMM without the epilogue; runtime/PlanFusionChecks.cpp checks the
// pairing when a plan is read, runtime/cuda/LibraryGemms.cpp falls back.
//
//===----------------------------------------------------------------------===//

#include "codegen/CudaKernels.h"
#include "runtime/cuda/MemoryPlan.h"

#include <map>
#include <set>

using namespace ::mpc::rt;

namespace mlir::mpc::cuda {
namespace {

/// Per buffer (values, not through reshapes: a linear over a sequence
/// reshapes the GEMM's rows): its root, the step writing each value, and
/// how many steps and plan outputs read the buffer.
struct BufferUse {
  std::vector<int> root, producer;
  std::vector<size_t> readers;
  explicit BufferUse(const Plan &plan)
      : root(bufferRoots(plan)), producer(plan.values.size(), -1),
        readers(plan.values.size(), 0) {
    for (size_t i = 0; i < plan.steps.size(); ++i)
      for (int v : plan.steps[i].outputs)
        producer[v] = (int)i;
    auto steps = bufferReaders(plan, root);
    for (size_t v = 0; v < steps.size(); ++v)
      readers[v] = steps[v].size();
    for (const Binding &b : plan.outputs)
      ++readers[root[b.value]];
  }
};

} // namespace

/// A train step's bias gradient, reduce_sum(dY) over every axis but the
/// last, is what cuBLASLt computes alongside the weight gradient from the
/// same dY, as PyTorch's fused linear and Transformer Engine do: for a
/// Gemm-exported linear dW = dY^T X, the sums over k of op(A) (BGRADB);
/// for a MatMul-exported one dW = X^T dY (its rows flattened by the
/// gradient rule), the sums over k of op(B) (BGRADA). The GEMM step records
/// it (LibraryGemm::biasGrad, biasGradOfB) and the reduction is marked
/// computed there (libraryFusedInto), its own kernel kept for when the
/// library runs the GEMM without it. The reduction may come first in the
/// step order (the bias's Add is differentiated before its MatMul) when
/// nothing reads its result before the GEMM.
void fuseBiasGradients(Plan &plan) {
  std::vector<int> root = ::mpc::rt::bufferRoots(plan);
  auto readers = ::mpc::rt::bufferReaders(plan, root); // a reshape reads nothing
  // dY's buffer -> the weight-gradient GEMMs that could sum it.
  std::map<int, std::vector<size_t>> gemmsOf;
  for (size_t j = 0; j < plan.steps.size(); ++j) {
    const LibraryGemm &g = plan.steps[j].cuda.gemm;
    if (g.valid() && g.batch == 1 && g.alpha == 1.0 && g.c < 0 && g.bias < 0 &&
        !g.relu && g.biasGrad < 0) {
      if (g.transA)
        gemmsOf[root[g.a]].push_back(j);
      if (!g.transB)
        gemmsOf[root[g.b]].push_back(j);
    }
  }
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    Step &r = plan.steps[i];
    if (r.op != OpId::ReduceSum || r.inputs.size() != 1 ||
        r.outputs.size() != 1 || r.cuda.kernel.empty() ||
        r.cuda.inOtherKernel() || r.cuda.batchedInto >= 0 ||
        r.cuda.storedAs >= 0) // its kernel stores a cast's result
      continue;
    const ValueInfo &x = plan.values[r.inputs[0]];
    int64_t rank = x.shape.size();
    auto axes = r.getInts("axes").value_or(std::vector<int64_t>{});
    std::set<int64_t> red;
    for (int64_t a : axes)
      red.insert(a < 0 ? a + rank : a);
    if (rank < 2 || (int64_t)red.size() != rank - 1 || red.count(rank - 1))
      continue; // every axis but the last
    int out = r.outputs[0];
    int64_t n = x.shape.back(), size = numElements(x.shape);
    auto it = gemmsOf.find(root[r.inputs[0]]);
    if (it == gemmsOf.end())
      continue;
    for (size_t j : it->second) {
      Step &gemm = plan.steps[j];
      LibraryGemm &g = gemm.cuda.gemm;
      // dY as op(A) = [m, k] stored [k, m], or as B = [k, n]: its rows
      // are the k the GEMM sums over.
      bool ofA = g.transA && root[g.a] == root[r.inputs[0]] && g.m == n &&
                 g.k * g.m == size;
      bool ofB = !ofA && !g.transB && root[g.b] == root[r.inputs[0]] &&
                 g.n == n && g.k * g.n == size;
      bool unread = true; // nothing reads the result before the GEMM
      for (size_t k : readers[root[out]])
        unread &= k > j;
      if (g.biasGrad >= 0 || j == i || (!ofA && !ofB) || !unread ||
          plan.values[out].dtype != plan.values[gemm.outputs[0]].dtype ||
          numElements(plan.values[out].shape) != n)
        continue;
      g.biasGrad = out;
      g.biasGradOfB = ofB;
      r.cuda.libraryFusedInto = (int)j;
      break;
    }
  }
}

/// A tanh GELU after a GEMM (with its bias: an addmm-style linear) and its
/// gradient after the GEMM that computes dY are what cuBLASLt's GELU_AUX
/// and DGELU epilogues compute, as PyTorch's _addmm_activation and apex's
/// fused dense use them: the forward GEMM writes the GELU's result and the
/// pre-activation beside it (where the gradient reads it; inference
/// writes the GELU's result alone); the backward one multiplies its product by
/// gelu'(pre-activation) before the one rounding. The GEMM step records
/// it (LibraryGemm::geluOut, dgeluOut + geluAux), the GELU step is marked
/// computed there (libraryFusedInto), its own kernel kept for when the
/// library runs the GEMM without it. Only cuBLASLt's GELU (the tanh
/// approximation) qualifies: the erf form would change the results.
void fuseGeluEpilogues(Plan &plan) {
  BufferUse use(plan);
  const std::vector<int> &root = use.root, &producer = use.producer;
  const std::vector<size_t> &readers = use.readers;
  for (Step &s : plan.steps) {
    const CudaLaunch &c = s.cuda;
    bool gelu = s.op == OpId::Gelu && s.inputs.size() == 1,
         grad = s.op == OpId::GeluGrad && s.inputs.size() == 2;
    if ((!gelu && !grad) || s.getString("approximate", "none") != "tanh" ||
        c.kernel.empty() || c.inOtherKernel() || c.isChain() ||
        c.batchedInto >= 0 || c.storedAs >= 0 || c.libraryFusedInto >= 0)
      continue;
    int y = root[s.inputs[0]], j = producer[y];
    if (j < 0)
      continue;
    Step &gs = plan.steps[j];
    LibraryGemm &g = gs.cuda.gemm;
    DType t = plan.values[y].dtype;
    if (!g.valid() || gs.outputs[0] != y || g.batch != 1 || g.alpha != 1.0 ||
        g.c >= 0 || g.relu || g.biasGrad >= 0 || g.geluOut >= 0 ||
        g.dgeluOut >= 0 || g.n % 8 != 0 ||
        plan.values[s.outputs[0]].dtype != t)
      continue;
    if (gelu) {
      g.geluOut = s.outputs[0];
      g.geluAux = readers[y] > 1 ? y : -1; // kept for the gradient
    } else {
      int aux = s.inputs[1];
      if (g.bias >= 0 || readers[y] != 1 || producer[root[aux]] < 0 ||
          producer[root[aux]] >= j || plan.values[aux].dtype != t ||
          numElements(plan.values[aux].shape) != g.m * g.n)
        continue;
      g.dgeluOut = s.outputs[0];
      g.geluAux = aux;
    }
    s.cuda.libraryFusedInto = j;
  }
}


/// A Relu fused into its GEMM (`cuda.fusedRelu`) and the relu_grad of its
/// result after the GEMM that computes the incoming gradient are what
/// cuBLASLt's RELU_AUX and DRELU epilogues compute: the forward GEMM also
/// writes a bit mask of where its result is positive, the backward one
/// keeps its product only there, before its one rounding. The mask is a
/// buffer of codegen's own (LibraryGemm::reluMask, 1/16 of a fp16 result);
/// the relu_grad step is marked computed by the backward GEMM
/// (libraryFusedInto), its own kernel kept for when the library runs
/// either GEMM without its epilogue.
void fuseReluEpilogues(Plan &plan) {
  BufferUse use(plan);
  const std::vector<int> &root = use.root, &producer = use.producer;
  const std::vector<size_t> &readers = use.readers;
  auto plainGemm = [](const LibraryGemm &g) {
    return g.valid() && g.batch == 1 && g.alpha == 1.0 && g.c < 0 &&
           g.biasGrad < 0 && g.geluOut < 0 && g.dgeluOut < 0 &&
           g.dreluOut < 0;
  };
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    Step &s = plan.steps[i];
    const CudaLaunch &c = s.cuda;
    if (s.op != OpId::ReluGrad || s.inputs.size() != 2 || c.kernel.empty() ||
        c.inOtherKernel() || c.isChain() || c.batchedInto >= 0 ||
        c.storedAs >= 0 || c.libraryFusedInto >= 0)
      continue;
    int dy = root[s.inputs[0]], y = root[s.inputs[1]];
    int j = producer[dy], w = producer[y];
    if (j < 0 || w < 0 || w >= j)
      continue;
    Step &back = plan.steps[j], &fwd = plan.steps[w];
    LibraryGemm &g = back.cuda.gemm, &f = fwd.cuda.gemm;
    DType t = plan.values[dy].dtype;
    if (!plainGemm(g) || g.relu || g.bias >= 0 || g.reluMask >= 0 ||
        back.outputs[0] != dy || readers[dy] != 1 || !plainGemm(f) ||
        !f.relu || fwd.outputs[0] != y || f.m != g.m || f.n != g.n ||
        plan.values[s.outputs[0]].dtype != t)
      continue;
    if (f.reluMask < 0) {
      f.reluMask = (int)plan.values.size();
      plan.values.push_back(
          {DType::I1, {f.m, ::mpc::rt::reluMaskLd(f.n) / 8}});
    }
    g.reluMask = f.reluMask;
    g.dreluOut = s.outputs[0];
    s.cuda.libraryFusedInto = (int)j;
  }
}

} // namespace mlir::mpc::cuda
