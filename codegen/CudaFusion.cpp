//===- CudaFusion.cpp - which steps share a kernel ------------------------===//
//
// Decided on the plan before any code is emitted, and recorded on the
// steps for the emitter, the memory plan and the runtime:
// - a GEMM/conv/batch norm whose result only a Relu reads (directly or
//   through a reshape) applies the Relu in its epilogue (`cuda.fusedRelu`;
//   the Relu step aliases its buffer); the gradient of another Relu may
//   read its input instead of its result (readReluInputs); a Relu gradient
//   only a batch norm gradient reads is taken inside its kernel
//   (foldReluGradsIntoBatchNorm);
// - a chain of elementwise steps computes in one kernel: its last step
//   (`cuda.chain`: the member steps in plan order, `cuda.inputs`: the
//   values they read from outside) keeps each intermediate in a register,
//   rounded to its own type as a store and load would (an Expand member
//   reads its data with broadcast strides); members record the last step
//   in `cuda.fusedInto`. Greedy, from the last step back: a producer joins when
//   its result has the chain's shape and every reader is in the chain or
//   comes after the last step; such a result, or a plan output, is also
//   stored (`cuda.stores`). A reader outside the chain that comes before
//   the last step would run before the kernel: it joins too when it can
//   (a sibling: same shape, chainable, its own result read only inside or
//   after), else the producer stays out. So an optimizer's moment updates,
//   their skip-step selects and the parameter update of one tensor become
//   one kernel with three stores (Adam: five launches to one). A split
//   whose parts have the chain's shape is a member: the kernel reads each
//   part at its offset in the split's input (chainExternals: the input
//   once a part). A concat of parts of one shape may be a chain's last
//   step: the kernel runs over one part and stores each at its offset
//   (an LSTM's gates forward, their gradients' Concat backward); an
//   elementwise step computing the split's input, read by it alone, is
//   computed once a part from its operands at the part's offsets (the
//   gates' x W + h R);
// - a reduction whose input only it reads, and which an elementwise chain
//   (or one elementwise step) of its own kernel computes, becomes that
//   chain's last step: it computes the chain as it loads each element, and
//   the chain's result is never stored (fuseChainsIntoReductions: a layer
//   norm's scale gradient reduces dy * xhat straight from dy and x); a
//   sum of one of that chain's inputs over the same axes (the bias
//   gradient, sum(dy)) is a second accumulator of the same kernel
//   (fuseSiblingSums);
// - a transpose around mma attention that keeps the innermost dim aliases
//   its input, the split of a fused QKV projection leaves its parts in
//   place and the concat of dQ, dK and dV finds them written there; the
//   attention kernels read or write the heads through the strides
//   (fuseAttentionLayouts, CudaAttentionLayouts.cpp);
// - row kernels storing the casts of their results and adding the
//   residual Add before them as they load (CudaRowFusion.cpp);
// - a cast widening fp16/bf16 to FP32 launches nothing when its readers
//   can load the narrow source themselves (readWideningCastSources);
// - a gradient cast counting what it flushes (count-underflow) chains
//   like any cast; the chain kernel takes the counter;
// - a dropout whose mask nothing reads (its gradient is the dropout of
//   dy with the same key, which draws the mask again) writes only its
//   result (`cuda.written`), and chains: the chain's kernel draws the
//   keep bits (Philox) for its elements and takes the [step, rank]
//   counter as a pointer.
//
//===----------------------------------------------------------------------===//

#include "codegen/CudaKernels.h"

#include <algorithm>
#include <map>
#include <queue>
#include <set>

namespace mlir::mpc::cuda {

using ::mpc::rt::Binding;

/// A step the chain kernel can compute: an elementwise expression on
/// floats (or a comparison's bool), an Expand (its data read with
/// broadcast strides), or a dropout drawing its keep bits where its mask
/// is not stored; not an alias. A cast counting underflowing
/// gradients counts in the chain's kernel (Emitter::chainMember).
static bool chainable(Emitter &e, const Step &s) {
  // A dropout whose mask nothing reads, its ratio and flag constants.
  bool dropout = s.op == OpId::Dropout && s.cuda.written == 1 &&
                 e.dropoutRatio(s).has_value();
  if ((s.outputs.size() != 1 && !dropout) || s.cuda.inOtherKernel() ||
      !(s.op == OpId::Expand || dropout || e.expr(s)))
    return false;
  if (s.op == OpId::Expand && !isFloat(e.val(s.inputs[0]).dtype))
    return false;
  DType t = e.val(s.outputs[0]).dtype;
  if (t != DType::F32 && t != DType::F16 && t != DType::BF16 &&
      t != DType::I1)
    return false;
  for (int v : chainOperands(s))
    if (v < 0)
      return false;
  return true;
}

std::vector<int> chainOperands(const Step &s) {
  if (s.op == OpId::Expand) // the target shape is baked in
    return {s.inputs[0]};
  if (s.op == OpId::Dropout) { // x and the [step, rank] counter
    std::vector<int> in{s.inputs[0]};
    if (s.inputs.size() > 3 && s.inputs[3] >= 0)
      in.push_back(s.inputs[3]);
    return in;
  }
  return s.inputs;
}

/// relu_grad(dy, y) reads the Relu's result y, which a GEMM's fused Relu
/// writes in place of its input. A standalone Relu's input x is a buffer of
/// its own when a kernel that cannot chain wrote it (a batch norm), while
/// y, read otherwise only by elementwise steps (a cast), may live in
/// registers: there relu_grad reads x instead (x > 0 exactly where y > 0,
/// so the result is the same), sparing the store of y.
static void readReluInputs(Emitter &e,
                           const std::map<int, std::vector<size_t>> &readers,
                           const std::map<int, size_t> &producer,
                           const std::set<int> &outputs) {
  Plan &plan = e.plan;
  for (Step &r : plan.steps) {
    if (r.op != OpId::ReluGrad || r.inputs.size() != 2)
      continue;
    int y = r.inputs[1];
    auto p = producer.find(y);
    if (p == producer.end() || outputs.count(y))
      continue;
    const Step &relu = plan.steps[p->second];
    if (relu.op != OpId::Relu || relu.cuda.alias >= 0)
      continue;
    int x = relu.inputs[0];
    auto xp = producer.find(x);
    bool xStored = xp == producer.end() ||
                   !(plan.steps[xp->second].outputs.size() == 1 &&
                     e.expr(plan.steps[xp->second]));
    bool yElementwise = true;
    for (size_t k : readers.at(y))
      yElementwise &= &plan.steps[k] == &r || e.expr(plan.steps[k]).has_value();
    if (xStored && yElementwise)
      r.inputs[1] = x;
  }
}

/// A relu_grad whose result only a batch_norm_grad reads (the Relu after
/// a batch norm, the first of a ResNet block) launches nothing: the batch
/// norm's kernel reads dy and the Relu's result y instead and takes the
/// gradient where y > 0 as it reads (inputs [dy, x, scale, y]; the
/// relu_grad records it in `cuda.fusedInto`). The same values: relu_grad
/// only selects.
static void
foldReluGradsIntoBatchNorm(Plan &plan,
                           const std::map<int, std::vector<size_t>> &readers,
                           const std::map<int, size_t> &producer,
                           const std::set<int> &outputs) {
  for (size_t j = 0; j < plan.steps.size(); ++j) {
    Step &bn = plan.steps[j];
    if (bn.op != OpId::BatchNormGrad || bn.inputs.size() != 3)
      continue;
    int g = bn.inputs[0];
    auto p = producer.find(g);
    if (p == producer.end() || outputs.count(g) || readers.at(g).size() != 1)
      continue;
    Step &r = plan.steps[p->second];
    if (r.op != OpId::ReluGrad || r.inputs.size() != 2 ||
        r.cuda.inOtherKernel() ||
        plan.values[r.inputs[0]].dtype != plan.values[g].dtype)
      continue;
    bn.inputs = {r.inputs[0], bn.inputs[1], bn.inputs[2], r.inputs[1]};
    r.cuda.fusedInto = (int)j;
  }
}

/// Whether step `r`'s kernel loads every operand through the typed `ld`
/// (any float type widened to FP32), so it may read an fp16/bf16 value
/// where it read that value widened: elementwise expressions and chains,
/// the row kernels of normalisation and softmax, the fold reductions.
static bool loadsAnyFloat(Emitter &e, const Step &r) {
  if (r.cuda.inOtherKernel() || r.cuda.libraryFusedInto >= 0)
    return false;
  switch (r.op) {
  case OpId::LayerNorm: case OpId::RmsNorm: case OpId::NormGrad:
  case OpId::Softmax: case OpId::LogSoftmax:
  case OpId::SoftmaxCrossEntropyLoss: case OpId::NegativeLogLikelihoodLoss:
    return true;
  default:
    return reducesChain(r) || (r.outputs.size() == 1 && e.expr(r));
  }
}

/// A cast widening fp16/bf16 to FP32 is exact, so readers that load any
/// float type read its source instead and the cast launches nothing: a
/// layer norm gradient reads the fp16 dX of the GEMM before it, the loss
/// the fp16 logits (the FP32 copy was a launch, a write and a read). The
/// cast records its first reader in `cuda.fusedInto`; every reader must
/// qualify, else the cast runs as before.
static void readWideningCastSources(
    Emitter &e, const std::map<int, std::vector<size_t>> &readers,
    const std::set<int> &outputs) {
  Plan &plan = e.plan;
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    Step &c = plan.steps[i];
    if (c.op != OpId::Cast || c.inputs.size() != 1 || c.outputs.size() != 1 ||
        c.cuda.inOtherKernel() || c.countUnderflow ||
        e.val(c.outputs[0]).dtype != DType::F32 ||
        (e.val(c.inputs[0]).dtype != DType::F16 &&
         e.val(c.inputs[0]).dtype != DType::BF16) ||
        outputs.count(c.outputs[0]))
      continue;
    auto rd = readers.find(c.outputs[0]);
    if (rd == readers.end() || rd->second.empty())
      continue;
    bool all = true;
    for (size_t r : rd->second)
      all = all && loadsAnyFloat(e, plan.steps[r]);
    if (!all)
      continue;
    for (size_t r : rd->second)
      std::replace(plan.steps[r].inputs.begin(), plan.steps[r].inputs.end(),
                   c.outputs[0], c.inputs[0]);
    c.cuda.fusedInto = (int)*std::min_element(rd->second.begin(),
                                              rd->second.end());
  }
}

/// Whether step `r` is a widening cast that readWideningCastSources had its
/// readers read through (fused into its first reader, not a chain member).
static bool readThroughCast(const Plan &plan, size_t r) {
  const Step &c = plan.steps[r];
  if (c.op != OpId::Cast || c.cuda.fusedInto < 0)
    return false;
  const std::vector<int> &chain = plan.steps[c.cuda.fusedInto].cuda.chain;
  return std::find(chain.begin(), chain.end(), (int)r) == chain.end();
}

static bool isBatchNorm(OpId op) {
  return op == OpId::BatchNormTrain || op == OpId::BatchNorm;
}

/// Whether batch norm (or norm gradient) `bn`'s kernel can compute `add`,
/// its result's only reader: an Add of two same-typed operands of the
/// result's shape (no broadcast), the other one written before `bn` runs.
static bool addsInKernel(const Plan &plan,
                         const std::map<int, size_t> &producer, size_t bnStep,
                         const Step &add) {
  int y = plan.steps[bnStep].outputs[0];
  if (add.op != OpId::Add || add.inputs.size() != 2 ||
      add.inputs[0] == add.inputs[1] || add.cuda.inOtherKernel() ||
      (add.inputs[0] != y && add.inputs[1] != y))
    return false;
  int z = add.inputs[add.inputs[0] == y ? 1 : 0];
  const ValueInfo &yv = plan.values[y];
  for (int v : {z, add.outputs[0]})
    if (plan.values[v].dtype != yv.dtype || plan.values[v].shape != yv.shape)
      return false;
  auto p = producer.find(z);
  return p == producer.end() || p->second < bnStep;
}

static void indexSteps(const Plan &plan,
                       std::map<int, std::vector<size_t>> &readers,
                       std::map<int, size_t> &producer) {
  readers.clear();
  producer.clear();
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    for (int v : plan.steps[i].inputs)
      readers[v].push_back(i);
    for (int v : plan.steps[i].outputs)
      producer[v] = i;
  }
}

/// See the file comment. The chain's members (and the single step) record
/// the reduction in `cuda.fusedInto`; it lists them, itself last, in
/// `cuda.chain`, and what they read from outside in `cuda.inputs`.
static void
fuseChainsIntoReductions(Emitter &e, Plan &plan,
                         const std::map<int, std::vector<size_t>> &readers,
                         const std::map<int, size_t> &producer,
                         const std::set<int> &outputs) {
  for (size_t r = 0; r < plan.steps.size(); ++r) {
    Step &red = plan.steps[r];
    if (!reducesChain(red) || red.inputs.empty() || red.cuda.isChain() ||
        red.cuda.inOtherKernel() || red.cuda.libraryFusedInto >= 0)
      continue;
    int v = red.inputs[0];
    auto p = producer.find(v);
    auto rd = readers.find(v);
    if (outputs.count(v) || p == producer.end() || rd == readers.end() ||
        rd->second.size() != 1)
      continue;
    Step &c = plan.steps[p->second];
    // (The fold kernels take no underflow counter. A reduction that holds
    // a chain itself, sum(sum(x * eye)) of an Einsum's trace, is no chain
    // member: its result is not an element of the chain.)
    if (reducesChain(c) || c.op == OpId::Concat || c.cuda.inOtherKernel() ||
        !c.cuda.stores.empty() ||
        e.countsUnderflow(c) || c.cuda.storedAs >= 0 || c.cuda.batch.valid() ||
        c.cuda.batchedInto >= 0 || (!c.cuda.isChain() && !chainable(e, c)))
      continue;
    std::vector<int> members =
        c.cuda.isChain() ? c.cuda.chain : std::vector<int>{(int)p->second};
    // (The fold kernels draw no dropout masks, nor read split parts.)
    if (std::any_of(members.begin(), members.end(), [&](int m) {
          return plan.steps[m].op == OpId::Dropout ||
                 plan.steps[m].op == OpId::Split;
        }))
      continue;
    std::vector<int> external =
        c.cuda.isChain() ? c.cuda.inputs : chainOperands(c);
    for (int m : members)
      plan.steps[m].cuda.fusedInto = (int)r;
    c.cuda.chain.clear();
    c.cuda.inputs.clear();
    members.push_back((int)r);
    red.cuda.chain = members;
    red.cuda.inputs = external;
  }
}

/// A sum (or mean) over the same axes of a value that a chain-reduction
/// (above) already reads from outside, and of the same shape, is added up
/// in that kernel too (a second accumulator; its result one of the
/// kernel's `cuda.stores`), when nothing reads it before that kernel: a
/// layer norm's bias gradient, sum(dy), beside its scale gradient.
static void
fuseSiblingSums(Plan &plan, const std::map<int, std::vector<size_t>> &readers) {
  auto linear = [](OpId op) {
    return op == OpId::ReduceSum || op == OpId::ReduceMean;
  };
  for (size_t r = 0; r < plan.steps.size(); ++r) {
    Step &red = plan.steps[r];
    if (!linear(red.op) || !red.cuda.isChain())
      continue;
    const Shape &shape = plan.values[red.inputs[0]].shape;
    std::vector<size_t> candidates; // the readers of the chain's inputs
    for (int v : red.cuda.inputs)
      if (auto rd = readers.find(v); rd != readers.end())
        candidates.insert(candidates.end(), rd->second.begin(), rd->second.end());
    for (size_t k : candidates) {
      Step &sib = plan.steps[k];
      if (k == r || sib.op != red.op || sib.inputs.size() != 1 ||
          sib.outputs.size() != 1 || sib.cuda.isChain() ||
          sib.cuda.inOtherKernel() || sib.cuda.libraryFusedInto >= 0 ||
          sib.getInts("axes") != red.getInts("axes") ||
          sib.getInt("keepdims", 1) != red.getInt("keepdims", 1) ||
          sib.getInt("noop_with_empty_axes", 0) !=
              red.getInt("noop_with_empty_axes", 0) ||
          plan.values[sib.inputs[0]].shape != shape ||
          red.cuda.stores.size() >= 2)
        continue;
      bool early = false; // a reader runs before the kernel
      if (auto rd = readers.find(sib.outputs[0]); rd != readers.end())
        for (size_t reader : rd->second)
          early = early || reader <= r;
      if (early)
        continue;
      sib.cuda.fusedInto = (int)r;
      red.cuda.chain.push_back((int)k);
      red.cuda.stores.push_back(sib.outputs[0]);
    }
  }
}


void fuseSteps(Emitter &e) {
  Plan &plan = e.plan;
  std::map<int, std::vector<size_t>> readers;
  std::map<int, size_t> producer;
  std::set<int> outputs;
  indexSteps(plan, readers, producer);
  for (const Binding &b : plan.outputs)
    outputs.insert(b.value);
  // A dropout mask nothing reads (the backward draws it again) is never
  // stored, and the dropout may chain.
  for (Step &s : plan.steps)
    if (s.op == OpId::Dropout && s.outputs.size() == 2 &&
        !readers.count(s.outputs[1]) && !outputs.count(s.outputs[1]))
      s.cuda.written = 1;

  for (size_t i = 0; i < plan.steps.size(); ++i) {
    Step &s = plan.steps[i];
    if (s.op != OpId::Gemm && s.op != OpId::MatMul && s.op != OpId::Conv &&
        !isBatchNorm(s.op) && s.op != OpId::NormGrad)
      continue;
    // The Relu reads the result directly, or through the reshape of a
    // linear over a sequence (mpc-fold-linear-bias).
    int v = s.outputs[0];
    auto only = [&](int value) -> Step * {
      auto &r = readers[value];
      return r.size() == 1 && !outputs.count(value) ? &plan.steps[r[0]]
                                                    : nullptr;
    };
    Step *relu = only(v);
    if (relu && relu->op == OpId::Reshape && relu->inputs[0] == v)
      relu = only(relu->outputs[0]);
    if (Step *add = relu; add && (isBatchNorm(s.op) || s.op == OpId::NormGrad) &&
                          addsInKernel(plan, producer, i, *add)) {
      // The residual Add goes into the batch norm, and its Relu after it;
      // the residual stream's gradient into a pre-norm block's norm
      // gradient (GPT-2: dx of ln_1 plus the gradient from above).
      s.cuda.epilogueAdd = add->inputs[add->inputs[0] == v ? 1 : 0];
      add->cuda.alias = v;
      v = add->outputs[0];
      relu = only(v);
    }
    if (relu && relu->op == OpId::Relu && s.op != OpId::NormGrad &&
        plan.values[relu->outputs[0]].dtype == plan.values[v].dtype) {
      s.cuda.fusedRelu = true;
      relu->cuda.alias = relu->inputs[0];
    }
  }
  readReluInputs(e, readers, producer, outputs);
  indexSteps(plan, readers, producer);
  fuseAttentionLayouts(e, readers, producer, outputs);
  splitsInPlace(plan, producer);
  concatsOfInputsInPlace(plan, readers, producer, outputs);
  foldReluGradsIntoBatchNorm(plan, readers, producer, outputs);
  indexSteps(plan, readers, producer);
  readWideningCastSources(e, readers, outputs);
  indexSteps(plan, readers, producer);

  std::vector<bool> taken(plan.steps.size(), false);
  // (An LSTM cell: c, tanh c, h and its three sigmoid gates and tanh.)
  constexpr size_t kMaxStores = 8, kMaxMembers = 32;
  for (size_t root = plan.steps.size(); root-- > 0;) {
    Step &last = plan.steps[root];
    const bool concat = concatOfParts(e, last);
    if (taken[root] || !(concat || chainable(e, last)))
      continue;
    // (A concat's chain runs over one part: each stored at its offset.)
    const Shape shape = e.val(concat ? last.inputs[0] : last.outputs[0]).shape;
    std::set<size_t> chain = {root};
    std::set<int> stored; // member results the kernel also writes
    std::priority_queue<size_t> candidates; // latest first: readers decided
    std::set<int> pinned; // operands of members computed once a part
    // Whether step `m` computes the input of a split in the chain, read
    // by nothing else, so the chain may compute it once a part: an
    // elementwise step of operands from outside the chain (no dropout,
    // whose draws follow the element, nor a broadcast Expand).
    auto wholeOfSplit = [&](size_t m) {
      const Step &s = plan.steps[m];
      if (s.outputs.size() != 1 || outputs.count(s.outputs[0]) ||
          readers[s.outputs[0]].size() != 1 || !chainable(e, s) ||
          s.op == OpId::Dropout || s.op == OpId::Expand || s.countUnderflow)
        return false;
      size_t r = readers[s.outputs[0]][0];
      if (!chain.count(r) || plan.steps[r].op != OpId::Split)
        return false;
      for (int v : chainOperands(s))
        if (auto p = producer.find(v); p != producer.end() && chain.count(p->second))
          return false;
      return true;
    };
    auto consider = [&](const Step &s) {
      for (int v : chainOperands(s))
        if (auto p = producer.find(v); p != producer.end())
          candidates.push(p->second);
    };
    // Whether step `m` may compute in the chain; `early`: its readers
    // outside the chain that run before the kernel; `store`: the results
    // read after the kernel (a split's parts: each, where read later).
    auto fits = [&](size_t m, std::set<size_t> &early, std::vector<int> &store) {
      const Step &s = plan.steps[m];
      // A micro-batch that skips the update runs the accumulation's kernel
      // alone (runtime/AppliedOnly.h); scalars share one either way.
      if (chain.count(m) || taken[m] ||
          (s.appliedOnly != last.appliedOnly &&
           ::mpc::rt::numElements(shape) > 1) ||
          (!splitReadInChain(e, s, shape) && !wholeOfSplit(m) &&
           (!chainable(e, s) || e.val(s.outputs[0]).shape != shape)))
        return false;
      for (int v : s.outputs)
        if (pinned.count(v))
          return false; // a whole member's operand: read part by part
      for (int v : s.outputs) {
        bool later = outputs.count(v) != 0;
        for (size_t r : readers[v]) {
          // A widening cast read through (readWideningCastSources) reads
          // nothing: its readers read v themselves. (A cast that is a
          // member of another chain does read v: that kernel loads it.)
          if (chain.count(r) || readThroughCast(plan, r))
            continue;
          if (r > root)
            later = true;
          else
            early.insert(r);
        }
        if (later)
          store.push_back(v);
      }
      return true;
    };
    consider(last);
    while (!candidates.empty() && chain.size() < kMaxMembers) {
      size_t p = candidates.top();
      candidates.pop();
      std::set<size_t> early;
      std::vector<int> store;
      if (!fits(p, early, store))
        continue;
      // Each early reader joins as a sibling, or the producer stays out.
      std::vector<std::pair<size_t, std::vector<int>>> siblings;
      bool ok = true;
      size_t stores = stored.size() + store.size();
      for (size_t r : early) {
        std::set<size_t> further;
        std::vector<int> rStore;
        ok = ok && fits(r, further, rStore) && further.empty();
        stores += rStore.size();
        siblings.push_back({r, rStore});
      }
      if (!ok || stores > kMaxStores ||
          chain.size() + 1 + siblings.size() > kMaxMembers)
        continue;
      if (wholeOfSplit(p))
        for (int v : chainOperands(plan.steps[p]))
          pinned.insert(v);
      chain.insert(p);
      stored.insert(store.begin(), store.end());
      consider(plan.steps[p]);
      for (auto &[r, rStore] : siblings) {
        chain.insert(r);
        stored.insert(rStore.begin(), rStore.end());
        consider(plan.steps[r]);
      }
    }
    if (chain.size() < 2)
      continue;
    std::vector<int> members(chain.begin(), chain.end()), external;
    for (size_t m : chain) {
      taken[m] = true;
      if (m != root)
        plan.steps[m].cuda.fusedInto = (int)root;
    }
    for (const ChainOperand &o : chainExternals(e.plan, members))
      external.push_back(o.value);
    last.cuda.chain = members;
    last.cuda.inputs = external;
    last.cuda.stores.assign(stored.begin(), stored.end());
  }
  fuseChainsIntoReductions(e, plan, readers, producer, outputs);
  fuseSiblingSums(plan, readers);
  fuseOutputCasts(plan, readers, outputs);
  addIntoRowKernels(plan, producer, outputs);
  concatsOfResultsInPlace(plan, outputs);
}


} // namespace mlir::mpc::cuda
