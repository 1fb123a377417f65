//===- PlanViewChecks.cpp - strided views only attention touches ---------===//
//
// codegen lets the mma attention kernels read and write Q, K, V, y and
// their gradients in place (codegen/CudaAttentionLayouts.cpp): an aliased
// transpose launches nothing, an in-place split leaves its parts in its
// input's buffer, an in-place concat finds its parts already written into
// its output's. Every other kernel addresses its operands row-major, so a
// plan read from disk must not hand it one of those strided views. (A
// split whose parts are whole aligned runs of its input, contiguousParts,
// leaves ordinary buffers: any step may read them.)
//
//===----------------------------------------------------------------------===//

#include "runtime/PlanFusionChecks.h"
#include "runtime/cuda/MemoryPlan.h"

#include <set>
#include <vector>

namespace mpc::rt {

size_t attentionViewSlots(OpId op, bool output) {
  if (op == OpId::Attention)
    return output ? 1 : 3;
  if (op == OpId::AttentionGrad)
    return output ? 3 : 5;
  return 0;
}

bool reshapesOnly(OpId op) {
  return op == OpId::Reshape || op == OpId::Flatten || op == OpId::Squeeze ||
         op == OpId::Unsqueeze;
}

bool keepsInnermostDim(const Plan &plan, const Step &t) {
  if (t.op != OpId::Transpose || t.inputs.size() != 1 || t.outputs.size() != 1 ||
      t.inputs[0] < 0 || t.inputs[0] >= (int)plan.values.size())
    return false;
  size_t rank = plan.values[t.inputs[0]].shape.size();
  std::vector<int64_t> perm = t.getInts("perm").value_or(std::vector<int64_t>{});
  return rank >= 3 && perm.size() == rank && perm.back() == (int64_t)rank - 1;
}

namespace {

/// An aliasing step that passes a view on: a reshape or a transpose.
bool movesViews(const Step &s) {
  return s.cuda.alias >= 0 && (reshapesOnly(s.op) || s.op == OpId::Transpose) &&
         s.inputs.size() >= 1 && s.outputs.size() == 1 &&
         s.cuda.alias == s.inputs[0];
}

std::string name(size_t i, const Step &s) {
  return "step " + std::to_string(i) + " (" + opName(s.op) + ")";
}

} // namespace

std::string checkAttentionViews(const Plan &plan) {
  size_t n = plan.values.size();
  auto known = [&](int v) { return v >= 0 && v < (int)n; };
  std::vector<int> producer(n, -1); // of an attention result that may be a view
  std::vector<bool> written(n, false); // by a step (not an input of the plan)
  for (size_t i = 0; i < plan.steps.size(); ++i)
    for (size_t k = 0; k < plan.steps[i].outputs.size(); ++k)
      if (int v = plan.steps[i].outputs[k]; known(v)) {
        written[v] = true;
        if (k < attentionViewSlots(plan.steps[i].op, true))
          producer[v] = (int)i;
      }
  // What reshapes and transposes make of such a result: a transpose there
  // brings it back to a row-major value, its input side the view.
  std::vector<bool> fromResult(n, false);
  for (size_t i = 0; i < n; ++i)
    fromResult[i] = producer[i] >= 0;
  for (const Step &s : plan.steps)
    if (movesViews(s) && known(s.inputs[0]) && known(s.outputs[0]) &&
        fromResult[s.inputs[0]])
      fromResult[s.outputs[0]] = true;
  // Each view's origin: the step that made it one (for the messages).
  std::vector<int> origin(n, -1);
  std::vector<int> placedBy(n, -1); // the in-place concat writing into it
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    const Step &t = plan.steps[i];
    if (t.op == OpId::Transpose && t.cuda.alias >= 0) {
      std::string bad = name(i, t) + " aliases its input, ";
      if (t.inputs.size() != 1 || t.outputs.size() != 1 ||
          t.cuda.alias != t.inputs[0] || !known(t.inputs[0]) ||
          !known(t.outputs[0]))
        return bad + "which is not its one operand";
      if (!keepsInnermostDim(plan, t))
        return bad + "but moves its innermost dim";
      // The view side: the attention result it brings back, else its output.
      int view = fromResult[t.inputs[0]] ? t.inputs[0] : t.outputs[0];
      if (origin[view] < 0)
        origin[view] = (int)i;
      bool read = false;
      for (const Step &s : plan.steps)
        for (int v : s.inputs)
          read = read || (v == view && &s != &t);
      if (view == t.outputs[0] && !read)
        return bad + "but nothing reads its view";
    }
    if (!t.cuda.inPlace)
      continue;
    std::string bad = name(i, t) + " runs in place, ";
    if (t.op != OpId::Split && t.op != OpId::Concat)
      return bad + "which only a split or concat can";
    if (inPlaceOffsets(plan, t).empty())
      return bad + "but its parts do not tile its whole along its axis";
    bool split = t.op == OpId::Split;
    int whole = split ? t.inputs[0] : t.outputs[0];
    bool plain = contiguousParts(plan, t); // row-major parts: no views
    if (plain && !written[whole]) // an update may write it over in place
      return bad + "but its whole is an input of the step";
    for (int v : split ? t.outputs : t.inputs) {
      if (plan.values[v].dtype != plan.values[whole].dtype)
        return bad + "but its parts' type differs from its whole's";
      if (origin[v] >= 0 || placedBy[v] >= 0)
        return bad + "but one of its parts is already a view";
      if (plain)
        continue;
      origin[v] = (int)i;
      if (!split)
        placedBy[v] = (int)i;
    }
  }
  // A concat's parts are written where they will lie: so is whatever
  // they alias, back to the result that writes them.
  for (size_t i = plan.steps.size(); i-- > 0;) {
    const Step &s = plan.steps[i];
    if (!movesViews(s) || !known(s.outputs[0]) || placedBy[s.outputs[0]] < 0)
      continue;
    int v = s.inputs[0];
    if (placedBy[v] >= 0 && placedBy[v] != placedBy[s.outputs[0]])
      return name(placedBy[v], plan.steps[placedBy[v]]) +
             " runs in place, but another concat places the same buffer";
    placedBy[v] = placedBy[s.outputs[0]];
    if (origin[v] < 0)
      origin[v] = placedBy[v];
  }
  // What reshapes and transposes make of a view is one (but a transpose
  // bringing an attention result back is row-major); a reshape's input is
  // one when its output is.
  for (bool changed = true; changed;) {
    changed = false;
    for (const Step &s : plan.steps) {
      if (!movesViews(s) || !known(s.outputs[0]))
        continue;
      int in = s.inputs[0], out = s.outputs[0];
      bool back = s.op == OpId::Transpose && fromResult[in];
      if (origin[in] >= 0 && origin[out] < 0 && !back)
        origin[out] = origin[in], changed = true;
      if (reshapesOnly(s.op) && origin[out] >= 0 && origin[in] < 0)
        origin[in] = origin[out], changed = true;
    }
  }
  auto whose = [&](int v) {
    const Step &o = plan.steps[origin[v]];
    return name(origin[v], o) +
           (o.op == OpId::Transpose ? " aliases its input, " : " runs in place, ");
  };
  for (size_t r = 0; r < plan.steps.size(); ++r) {
    const Step &s = plan.steps[r];
    if (movesViews(s))
      continue;
    if (s.cuda.inPlace) {
      int whole = s.op == OpId::Split ? s.inputs[0] : s.outputs[0];
      if (origin[whole] >= 0)
        return whose(whole) + "but " + name(r, s) +
               " runs in place on it as its whole";
      continue;
    }
    for (size_t k = 0; k < s.inputs.size(); ++k)
      if (known(s.inputs[k]) && origin[s.inputs[k]] >= 0 &&
          k >= attentionViewSlots(s.op, false))
        return whose(s.inputs[k]) + "but step " + std::to_string(r) +
               " reads the view as no attention operand can";
    for (size_t k = 0; k < s.outputs.size(); ++k)
      if (known(s.outputs[k]) && origin[s.outputs[k]] >= 0 &&
          k >= attentionViewSlots(s.op, true))
        return whose(s.outputs[k]) + "but step " + std::to_string(r) +
               " writes the view as no attention result can";
  }
  std::set<int> bound;
  for (const std::vector<Binding> *bs : {&plan.inputs, &plan.outputs})
    for (const Binding &b : *bs)
      bound.insert(b.value);
  for (const Parameter &p : plan.params)
    bound.insert(p.value);
  for (const auto &[id, t] : plan.constants)
    bound.insert(id);
  for (int v : bound)
    if (known(v) && origin[v] >= 0)
      return whose(v) + "but the plan binds the view (an input, output, "
                        "parameter or constant)";
  return "";
}

} // namespace mpc::rt
