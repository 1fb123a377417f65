//===- CudaAttentionLayouts.cpp - attention reading heads in place --------===//
//
// Exports split heads with transposes around attention: Q, K and V go
// [B, S, H, D] -> [B, H, S, D] before it, its output comes back after it,
// and the backward mirrors all of them. The mma.sync attention kernels
// take any operand whose innermost dim is contiguous, so such a transpose
// launches nothing: it aliases its input (`cuda.alias`), and the attention
// kernels address that buffer with the transpose's strides. Forward and
// backward must both use the mma kernels, and every reader of the view
// side must be one of their operands. The plan reader checks the same
// pairing (checkAttentionViews).
//
//===----------------------------------------------------------------------===//

#include "codegen/CudaAttention.h"
#include "runtime/PlanFusionChecks.h"

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
         g.d % 16 == 0 && g.dv % 16 == 0 && g.d <= 128 && g.dv <= 128 &&
         (!fwd || mmaKeys(g) > 0);
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

namespace {

/// The strides, over its own dims, of the view side of aliased transpose
/// t: its result read from its input's buffer, or (`outputSide`) its input
/// written where its result lives.
Shape viewStrides(const Plan &plan, const Step &t, bool outputSide) {
  const Shape &is = plan.values[t.inputs[0]].shape;
  std::vector<int64_t> perm = permOf(t, is.size());
  Shape st(is.size());
  if (!outputSide) {
    Shape phys = stridesOf(is);
    for (size_t d = 0; d < perm.size(); ++d)
      st[d] = phys[perm[d]];
  } else {
    Shape phys = stridesOf(plan.values[t.outputs[0]].shape);
    for (size_t d = 0; d < perm.size(); ++d)
      st[perm[d]] = phys[d];
  }
  return st;
}

} // namespace

std::string rowOffset(const Shape &shape, const Shape &st, const std::string &b,
                      const std::string &r) {
  size_t n = shape.size();
  auto L = [](int64_t x) { return std::to_string(x) + "LL"; };
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

std::string Emitter::operandRow(const Step &s, const std::string &operand,
                                const std::string &row) {
  bool in = operand.rfind("in", 0) == 0;
  size_t k = std::stoul(operand.substr(in ? 2 : 3));
  int v = in ? s.inputs[k] : s.outputs[k];
  auto view = attentionViews.find(v);
  return rowOffset(val(v).shape, view == attentionViews.end() ? Shape{} : view->second,
                   "b", row);
}

bool Emitter::readsViews(const Step &s) const {
  for (const std::vector<int> *vs : {&s.inputs, &s.outputs})
    for (int v : *vs)
      if (attentionViews.count(v))
        return true;
  return false;
}

void fuseAttentionLayouts(Emitter &e,
                          const std::map<int, std::vector<size_t>> &readers,
                          const std::map<int, size_t> &producer,
                          const std::set<int> &outputs) {
  Plan &plan = e.plan;
  // Whether every reader of `v` (but `except`) reads it as a view operand.
  auto viewReaders = [&](int v, size_t except) {
    auto rd = readers.find(v);
    if (rd == readers.end())
      return true;
    for (size_t r : rd->second) {
      if (r == except)
        continue;
      const Step &s = plan.steps[r];
      bool found = false, ok = true;
      for (size_t k = 0; k < s.inputs.size(); ++k)
        if (s.inputs[k] == v) {
          found = true;
          ok = ok && attentionOperandView(plan, s, k, false);
        }
      if (!found || !ok)
        return false;
    }
    return true;
  };
  std::set<int> taken; // both sides of every aliased transpose
  auto isView = [&](int v) { return taken.count(v) != 0; };
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    Step &t = plan.steps[i];
    if (t.op != OpId::Transpose || t.inputs.size() != 1 ||
        t.outputs.size() != 1 || t.cuda.inOtherKernel() || t.cuda.isChain())
      continue;
    int in = t.inputs[0], out = t.outputs[0];
    const Shape &is = plan.values[in].shape;
    std::vector<int64_t> perm = permOf(t, is.size());
    if (is.size() < 3 || perm.back() != (int64_t)is.size() - 1 ||
        outputs.count(in) || outputs.count(out) || isView(in) || isView(out))
      continue;
    // Output side: an attention result that comes back through it.
    bool outputSide = false;
    if (auto p = producer.find(in); p != producer.end()) {
      const Step &a = plan.steps[p->second];
      for (size_t k = 0; k < a.outputs.size(); ++k)
        if (a.outputs[k] == in)
          outputSide = attentionOperandView(plan, a, k, true);
    }
    if (outputSide ? viewReaders(in, i) : viewReaders(out, plan.steps.size())) {
      auto rd = readers.find(outputSide ? in : out);
      if (!outputSide && (rd == readers.end() || rd->second.empty()))
        continue; // nothing reads the view
      t.cuda.alias = in;
      e.attentionViews[outputSide ? in : out] = viewStrides(plan, t, outputSide);
      taken.insert(in);
      taken.insert(out);
    }
  }
}

} // namespace mlir::mpc::cuda
