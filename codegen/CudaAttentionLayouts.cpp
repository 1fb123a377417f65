//===- CudaAttentionLayouts.cpp - attention reading heads in place --------===//
//
// Exports move attention's operands around with copies that PyTorch's
// eager step keeps as strided views:
// - transposes split heads: Q, K and V go [B, S, H, D] -> [B, H, S, D]
//   before attention, its output comes back after it, and the backward
//   mirrors all of them (mpc-transposes-to-attention brings
//   nn.MultiheadAttention's batch-first <-> sequence-first turns here too);
// - a fused QKV projection (GPT-2's c_attn, nn.MultiheadAttention's
//   in_proj) is cut into Q, K and V by a Split (mpc-slices-to-split makes
//   one of torch's three Slices), and backward dQ, dK and dV are
//   concatenated for its GEMM.
// The mma.sync attention kernels take any operand whose rows are evenly
// strided and whose head dim is contiguous, so none of these launches: a
// transpose aliases its input (`cuda.alias`), a split leaves its parts in
// its input's buffer and a concat has its parts written into its result's
// (`cuda.in-place`, placed by the memory plan), and the attention kernels
// address the buffers through the views (StridedView.h; b over the
// leading dims, split where the buffer strides them apart). Forward and
// backward must both use the mma kernels, and every other step touching a
// view must be a reshape or transpose passing it on. The plan reader
// checks the same (checkAttentionViews).
//
//===----------------------------------------------------------------------===//

#include "codegen/CudaAttention.h"
#include "codegen/StridedView.h"
#include "runtime/PlanFusionChecks.h"
#include "runtime/cuda/MemoryPlan.h"

#include <algorithm>

using namespace ::mpc::rt;

namespace mlir::mpc::cuda {

namespace {

bool lowAttention(const Plan &plan, const Step &s) {
  bool fwd = s.op == OpId::Attention, grad = s.op == OpId::AttentionGrad;
  if (!fwd && !grad)
    return false;
  size_t q = fwd ? 0 : 1;
  if (s.inputs.size() < q + 3)
    return false;
  const ValueInfo &qv = plan.values[s.inputs[q]];
  Dims g = dimsOf(qv.shape, plan.values[s.inputs[q + 1]].shape,
                  plan.values[s.inputs[q + 2]].shape);
  bool same = true;
  for (size_t k = 0; k < (fwd ? 3u : 5u); ++k)
    same = same && s.inputs[k] >= 0 && plan.values[s.inputs[k]].dtype == qv.dtype;
  return (qv.dtype == DType::F16 || qv.dtype == DType::BF16) && same &&
         mmaHeadSizes(g) &&
         (fwd ? mmaForwardTiles(mmaDims(g), plan).keys > 0
              : mmaGradFits(mmaDims(g), plan));
}

/// The transpose's permutation (the reversal when it has none).
std::vector<int64_t> permOf(const Step &t, size_t rank) {
  std::vector<int64_t> perm = t.getInts("perm").value_or(std::vector<int64_t>{});
  if (perm.empty())
    for (size_t i = rank; i-- > 0;)
      perm.push_back((int64_t)i);
  return perm;
}

} // namespace

bool attentionOperandView(const Plan &plan, const Step &s, size_t slot,
                          bool output) {
  return lowAttention(plan, s) && slot < attentionViewSlots(s.op, output);
}

std::string rowOffset(const Shape &shape, const Shape &st, const std::string &b,
                      const std::string &r) {
  size_t n = shape.size();
  auto &L = i64Lit;
  if (st.empty())
    return "(" + b + " * " + L(shape[n - 2]) + " + " + r + ") * " + L(shape[n - 1]);
  // b runs over the leading dims in row-major order.
  std::string code = "(" + r + ") * " + L(st[n - 2]);
  int64_t inner = 1;
  for (size_t d = n - 2; d-- > 0;) {
    std::string idx = inner == 1 ? b : "(" + b + " / " + L(inner) + ")";
    if (d > 0)
      idx = "(" + idx + " % " + L(shape[d]) + ")";
    code += " + " + idx + " * " + L(st[d]);
    inner *= shape[d];
  }
  return "(" + code + ")";
}

namespace {
/// The value an attention kernel's operand ("inK" or "outK") names.
int operandValue(const Step &s, const std::string &operand) {
  bool in = operand.rfind("in", 0) == 0;
  size_t k = std::stoul(operand.substr(in ? 2 : 3));
  return in ? s.inputs[k] : s.outputs[k];
}
} // namespace

std::string Emitter::operandRow(const Step &s, const std::string &operand,
                                const std::string &row) {
  int v = operandValue(s, operand);
  // K and V (and dK, dV) of grouped-query attention: q head b reads
  // head b / group.
  const bool fwd = s.op == OpId::Attention;
  const size_t q = fwd ? 0 : 1;
  const bool kv = operand == "in" + std::to_string(q + 1) ||
                  operand == "in" + std::to_string(q + 2) ||
                  (!fwd && (operand == "out1" || operand == "out2"));
  const int64_t group = attentionGroup(val(s.inputs[q]).shape,
                                       val(s.inputs[q + 1]).shape);
  const std::string b = kv && group > 1 ? "(b / " + i64Lit(group) + ")" : "b";
  auto view = attentionViews.find(v);
  if (view == attentionViews.end())
    return rowOffset(val(v).shape, {}, b, row);
  return rowOffset(view->second.shape, view->second.strides, b, row);
}

int64_t Emitter::operandRowStride(const Step &s, const std::string &operand) {
  int v = operandValue(s, operand);
  auto view = attentionViews.find(v);
  if (view == attentionViews.end())
    return val(v).shape.back();
  return view->second.strides[view->second.strides.size() - 2];
}

int64_t Emitter::operandRowWidth(const Step &s, const std::string &operand) {
  return val(operandValue(s, operand)).shape.back();
}

bool Emitter::readsViews(const Step &s) const {
  for (const std::vector<int> *vs : {&s.inputs, &s.outputs})
    for (int v : *vs)
      if (attentionViews.count(v))
        return true;
  return false;
}

namespace {

/// What fusing one group of views changes: the transposes that alias, the
/// attention operands that are views.
struct Claim {
  std::vector<size_t> transposes;
  std::map<int, Emitter::OperandView> views;
};

class LayoutFusion {
public:
  LayoutFusion(Emitter &e, const std::map<int, std::vector<size_t>> &readers,
               const std::map<int, size_t> &producer,
               const std::set<int> &outputs)
      : e(e), plan(e.plan), readers(readers), producer(producer),
        outputs(outputs) {}

  void run() {
    for (size_t i = 0; i < plan.steps.size(); ++i)
      if (plan.steps[i].op == OpId::Split)
        splitInPlace(i);
    for (size_t i = 0; i < plan.steps.size(); ++i)
      if (plan.steps[i].op == OpId::Concat)
        concatInPlace(i);
    for (size_t i = 0; i < plan.steps.size(); ++i)
      transposeInPlace(i);
    for (size_t i = 0; i < plan.steps.size(); ++i)
      resultsInPlace(i);
  }

private:
  Emitter &e;
  Plan &plan;
  const std::map<int, std::vector<size_t>> &readers;
  const std::map<int, size_t> &producer;
  const std::set<int> &outputs;
  std::set<int> taken; // values some fused group made views or bases

  const Shape &shape(int v) const { return plan.values[v].shape; }
  const std::vector<size_t> &readersOf(int v) const {
    static const std::vector<size_t> none;
    auto r = readers.find(v);
    return r == readers.end() ? none : r->second;
  }
  static bool free(const Step &s) {
    return !s.cuda.inOtherKernel() && !s.cuda.isChain();
  }

  /// Attention operand `v` laid out as `view` (at `delta` bytes into its
  /// buffer): rows and the head dim each one stride, the head dim
  /// contiguous, and every row 16-byte aligned for the kernels' loads.
  bool operand(int v, const View &view, int64_t delta, Claim &c) const {
    size_t n = view.span.size();
    int64_t rows = view.stride(n - 2), inner = view.stride(n - 1);
    if (n < 3 || rows < 0 || inner != 1 || delta % 16 != 0)
      return false;
    Emitter::OperandView out;
    for (size_t d = 0; d + 2 < n; ++d)
      for (auto [size, st] : view.dim(d))
        out.shape.push_back(size), out.strides.push_back(st);
    out.shape.push_back(shape(v)[n - 2]);
    out.strides.push_back(rows);
    out.shape.push_back(shape(v)[n - 1]);
    out.strides.push_back(1);
    int64_t size = dtypeSize(plan.values[v].dtype);
    for (size_t d = 0; d + 1 < out.strides.size(); ++d)
      if (out.strides[d] * size % 16 != 0)
        return false;
    c.views[v] = out;
    return true;
  }

  void apply(const Claim &c) {
    for (size_t t : c.transposes) {
      Step &s = plan.steps[t];
      s.cuda.alias = s.inputs[0];
      taken.insert(s.inputs[0]);
      taken.insert(s.outputs[0]);
    }
    for (const auto &[v, view] : c.views) {
      e.attentionViews[v] = view;
      taken.insert(v);
    }
  }

  /// Whether every reader of `v` (laid out as `view`) takes it in place:
  /// an attention operand that can be a view, or a reshape or a transpose
  /// keeping the innermost dim whose result is read so in turn.
  bool readInPlace(int v, const View &view, int64_t delta, Claim &c,
                   size_t &operands) {
    if (outputs.count(v) || taken.count(v))
      return false;
    for (size_t r : readersOf(v)) {
      const Step &s = plan.steps[r];
      bool asOperand = false, other = false;
      for (size_t k = 0; k < s.inputs.size(); ++k)
        if (s.inputs[k] == v)
          (attentionOperandView(plan, s, k, false) ? asOperand : other) = true;
      if (asOperand && !other) {
        if (!operand(v, view, delta, c))
          return false;
        ++operands;
        continue;
      }
      if (!free(s) || s.inputs[0] != v || s.outputs.size() != 1 ||
          std::count(s.inputs.begin(), s.inputs.end(), v) != 1)
        return false;
      int out = s.outputs[0];
      View next;
      if (reshapesOnly(s.op)) {
        if (!view.reshape(shape(out), next))
          return false;
      } else if (keepsInnermostDim(plan, s)) {
        next = view.permuted(permOf(s, shape(v).size()));
        c.transposes.push_back(r);
      } else {
        return false;
      }
      if (!readInPlace(out, next, delta, c, operands))
        return false;
    }
    return true;
  }

  /// The layout of the value a chain of reshapes and transposes starts
  /// from, when its last result is laid out as `view`; false when a
  /// reshape cannot carry it back.
  bool backThrough(const std::vector<size_t> &chain, View &view, Claim &c) {
    for (size_t k = chain.size(); k-- > 0;) {
      const Step &s = plan.steps[chain[k]];
      int in = s.inputs[0];
      if (reshapesOnly(s.op)) {
        View back;
        if (!view.reshape(shape(in), back))
          return false;
        view = back;
      } else {
        view = view.unpermuted(permOf(s, shape(in).size()));
        c.transposes.push_back(chain[k]);
      }
    }
    return true;
  }

  /// Whether `v` is an attention result that can be a view.
  bool attentionResult(int v) const {
    auto p = producer.find(v);
    if (p == producer.end())
      return false;
    const Step &a = plan.steps[p->second];
    for (size_t k = 0; k < a.outputs.size(); ++k)
      if (a.outputs[k] == v && attentionOperandView(plan, a, k, true))
        return true;
    return false;
  }
  /// A reshape or a transpose keeping the innermost dim, of its own kernel.
  bool mover(const Step &s) const {
    return free(s) && !s.inputs.empty() && s.outputs.size() == 1 &&
           (reshapesOnly(s.op) || keepsInnermostDim(plan, s));
  }

  /// A split whose every part only attention reads (through reshapes and
  /// transposes) leaves its parts in its input: a fused QKV projection's
  /// Q, K and V are read where the GEMM wrote them.
  void splitInPlace(size_t i) {
    Step &s = plan.steps[i];
    if (!free(s) || s.inputs.empty() || taken.count(s.inputs[0]))
      return;
    std::vector<int64_t> at = inPlaceOffsets(plan, s);
    if (at.empty())
      return;
    Claim c;
    size_t operands = 0;
    Shape whole = stridesOf(shape(s.inputs[0]));
    for (size_t k = 0; k < s.outputs.size(); ++k)
      if (!readInPlace(s.outputs[k], View::of(shape(s.outputs[k]), whole),
                       at[k], c, operands))
        return;
    if (operands == 0)
      return;
    s.cuda.inPlace = true;
    apply(c);
    taken.insert(s.inputs[0]);
    for (int v : s.outputs)
      taken.insert(v);
  }

  /// A concat whose every part is an attention result (through reshapes
  /// and transposes, each the only reader of the value before it) has them
  /// written into its result: dQ, dK and dV land where the fused QKV
  /// projection's backward GEMM reads them.
  void concatInPlace(size_t i) {
    Step &s = plan.steps[i];
    if (!free(s) || s.outputs.size() != 1 || outputs.count(s.outputs[0]) ||
        taken.count(s.outputs[0]))
      return;
    std::vector<int64_t> at = inPlaceOffsets(plan, s);
    if (at.empty())
      return;
    Claim c;
    Shape whole = stridesOf(shape(s.outputs[0]));
    std::set<int> parts;
    for (size_t k = 0; k < s.inputs.size(); ++k) {
      int v = s.inputs[k];
      View view = View::of(shape(v), whole);
      std::vector<size_t> chain;
      for (;;) {
        auto p = producer.find(v);
        if (outputs.count(v) || taken.count(v) || parts.count(v) ||
            readersOf(v).size() != 1 || p == producer.end())
          return;
        parts.insert(v);
        if (attentionResult(v))
          break;
        const Step &m = plan.steps[p->second];
        if (!mover(m))
          return;
        chain.insert(chain.begin(), p->second);
        v = m.inputs[0];
      }
      if (!backThrough(chain, view, c) || !operand(v, view, at[k], c))
        return;
    }
    s.cuda.inPlace = true;
    apply(c);
    taken.insert(s.outputs[0]);
    taken.insert(parts.begin(), parts.end());
  }

  /// A transpose keeping the innermost dim whose result only attention
  /// reads (through reshapes and transposes) aliases its input.
  void transposeInPlace(size_t i) {
    Step &t = plan.steps[i];
    if (!free(t) || !keepsInnermostDim(plan, t) || taken.count(t.inputs[0]) ||
        readersOf(t.outputs[0]).empty())
      return;
    Claim c;
    c.transposes.push_back(i);
    View view = View::of(shape(t.inputs[0]), stridesOf(shape(t.inputs[0])))
                    .permuted(permOf(t, shape(t.inputs[0]).size()));
    size_t operands = 0;
    if (readInPlace(t.outputs[0], view, 0, c, operands) && operands > 0)
      apply(c);
  }

  /// An attention result that comes back through transposes (and
  /// reshapes, each the only reader of the value before it) is written
  /// where the last transpose's row-major result lies.
  void resultsInPlace(size_t i) {
    const Step &a = plan.steps[i];
    for (int x : a.outputs) {
      if (x < 0 || !attentionResult(x) || taken.count(x))
        continue;
      std::vector<size_t> chain;
      for (int v = x; !outputs.count(v) && !taken.count(v);) {
        std::vector<size_t> rest; // readers but attention operands of x
        for (size_t r : readersOf(v)) {
          const Step &s = plan.steps[r];
          bool asOperand = v == x;
          for (size_t k = 0; k < s.inputs.size(); ++k)
            if (s.inputs[k] == v)
              asOperand = asOperand && attentionOperandView(plan, s, k, false);
          if (!asOperand)
            rest.push_back(r);
        }
        if (rest.size() != 1 || !mover(plan.steps[rest[0]]) ||
            plan.steps[rest[0]].inputs[0] != v)
          break;
        chain.push_back(rest[0]);
        v = plan.steps[rest[0]].outputs[0];
      }
      // Past the last transpose the values are row-major anyway.
      while (!chain.empty() && !keepsInnermostDim(plan, plan.steps[chain.back()]))
        chain.pop_back();
      if (chain.empty())
        continue;
      const Shape &end = shape(plan.steps[chain.back()].outputs[0]);
      View view = View::of(end, stridesOf(end));
      Claim c;
      if (backThrough(chain, view, c) && operand(x, view, 0, c))
        apply(c);
    }
  }
};

} // namespace

void fuseAttentionLayouts(Emitter &e,
                          const std::map<int, std::vector<size_t>> &readers,
                          const std::map<int, size_t> &producer,
                          const std::set<int> &outputs) {
  LayoutFusion(e, readers, producer, outputs).run();
}

} // namespace mlir::mpc::cuda
