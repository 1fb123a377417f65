//===- PlanFusionChecks.cpp - steps computed in another step's call -------===//
//
// A plan read from disk may pair steps wrongly: a step fused into a GEMM
// that does not compute its result, a result read before it is written, a
// cast stored by a producer that others read. Each check returns "" or one
// line saying what is inconsistent; runtime/PlanReader.cpp reports it with
// the file.
//
//===----------------------------------------------------------------------===//

#include "runtime/PlanFusionChecks.h"
#include "runtime/AppliedOnly.h"
#include "runtime/WeightCopies.h"
#include "runtime/cuda/KernelCalls.h"
#include "runtime/cuda/MemoryPlan.h"

#include <algorithm>
#include <map>
#include <vector>

namespace mpc::rt {
namespace {

/// The value GEMM step `g` computes for the step fused into it (its bias
/// gradient, GELU or GELU gradient), or -1; -2 when it names more than one.
int libraryResult(const LibraryGemm &g) {
  int n = (g.biasGrad >= 0) + (g.geluOut >= 0) + (g.dgeluOut >= 0) +
          (g.dreluOut >= 0);
  return n > 1 ? -2
         : g.biasGrad >= 0 ? g.biasGrad
         : g.geluOut >= 0  ? g.geluOut
         : g.dgeluOut >= 0 ? g.dgeluOut
                           : g.dreluOut;
}

/// The step before `before` whose GEMM writes ReLU mask `mask` (its Relu
/// fused), -1 when none does, -2 when more than one.
int maskWriter(const Plan &plan, int mask, size_t before) {
  int found = -1;
  for (size_t k = 0; k < before; ++k) {
    const LibraryGemm &g = plan.steps[k].cuda.gemm;
    if (g.reluMask == mask && g.dreluOut < 0)
      found = found == -1 ? (int)k : -2;
  }
  return found;
}

/// "" or what is wrong with ReLU gradient step `i` computed by GEMM step
/// `j` (DRELU): it must read the GEMM's result, which nothing else reads
/// (the library never writes it), and the result of the GEMM that wrote
/// the mask, whose shape is this GEMM's.
std::string checkReluFusion(const Plan &plan, size_t i, size_t j,
                            const std::vector<int> &root,
                            const std::vector<std::vector<size_t>> &readers) {
  const Step &s = plan.steps[i];
  const LibraryGemm &g = plan.steps[j].cuda.gemm;
  int y = plan.steps[j].outputs[0];
  int w = maskWriter(plan, g.reluMask, j);
  if (w < 0)
    return "its ReLU mask has no single earlier GEMM writing it";
  const LibraryGemm &f = plan.steps[w].cuda.gemm;
  if (s.op != OpId::ReluGrad || s.inputs.size() != 2 || root[s.inputs[0]] != y ||
      root[s.inputs[1]] != root[plan.steps[w].outputs[0]] || f.m != g.m ||
      f.n != g.n)
    return "is not the ReLU gradient of its GEMM's result at the mask's Relu";
  for (size_t k : readers[y])
    if (k != i)
      return "shares its GEMM's result, which the library never writes";
  for (const Binding &b : plan.outputs)
    if (root[b.value] == y)
      return "shares its GEMM's result, which the library never writes";
  return "";
}

/// "" or what is wrong with tanh GELU (gradient) step `i` computed by
/// GEMM step `j`: it must read what the library reads, and
/// (the gradient) the GEMM's result must have no other reader, since the
/// library never writes it.
std::string checkGeluFusion(const Plan &plan, size_t i, size_t j,
                            const std::vector<int> &root,
                            const std::vector<std::vector<size_t>> &readers) {
  const Step &s = plan.steps[i];
  const Step &gs = plan.steps[j];
  const LibraryGemm &g = gs.cuda.gemm;
  int y = gs.outputs[0];
  bool tanh = s.getString("approximate", "none") == "tanh";
  const char *shared =
      "shares its GEMM's result, which the library never writes";
  auto onlyReader = [&]() -> std::string {
    for (size_t k : readers[y])
      if (k != i)
        return shared;
    for (const Binding &b : plan.outputs)
      if (root[b.value] == y)
        return shared;
    return "";
  };
  if (g.geluOut >= 0) {
    if (s.op != OpId::Gelu || !tanh || s.inputs.size() != 1 ||
        root[s.inputs[0]] != y)
      return "is not the tanh GELU of its GEMM's result";
    if (g.geluAux >= 0 && g.geluAux != y)
      return "keeps a GELU input that is not its GEMM's result";
    return g.geluAux >= 0 ? "" : onlyReader(); // else Y is never written
  }
  if (s.op != OpId::GeluGrad || !tanh || s.inputs.size() != 2 ||
      root[s.inputs[0]] != y || root[s.inputs[1]] != root[g.geluAux])
    return "is not the tanh GELU gradient of its GEMM's result";
  for (size_t k = j; k < plan.steps.size(); ++k)
    for (int v : plan.steps[k].outputs)
      if (root[v] == root[g.geluAux] && plan.steps[k].cuda.alias < 0)
        return "reads a GELU input written after its GEMM";
  return onlyReader();
}

} // namespace

/// "" or what is inconsistent in the results a library computes for
/// other steps: a step fused into a GEMM step that does not compute that
/// step's single result, a result read before a later GEMM computes it, a
/// GELU or ReLU gradient step that is not the GEMM's, or a result no step
/// is fused for.
std::string checkLibraryFusions(const Plan &plan) {
  std::vector<int> fusedFor(plan.steps.size(), -1);
  std::vector<int> root = bufferRoots(plan);
  auto readers = bufferReaders(plan, root); // a reshape reads nothing
  for (size_t j = 0; j < plan.steps.size(); ++j) {
    const LibraryGemm &g = plan.steps[j].cuda.gemm;
    if (g.geluAux >= (int)plan.values.size() ||
        (g.dgeluOut >= 0 && g.geluAux < 0) ||
        (g.geluAux >= 0 && g.geluOut < 0 && g.dgeluOut < 0))
      return "step " + std::to_string(j) +
             "'s GEMM names a GELU aux matrix without a GELU, or a GELU "
             "gradient without one";
    if (g.reluMask >= (int)plan.values.size() ||
        g.dreluOut >= (int)plan.values.size() ||
        (g.dreluOut >= 0 && g.reluMask < 0) ||
        (g.reluMask >= 0 && g.dreluOut < 0 && !g.relu))
      return "step " + std::to_string(j) +
             "'s GEMM names a ReLU mask without a Relu, or a ReLU gradient "
             "without one";
  }
  // A ReLU mask is the library's alone: no step or binding touches it.
  std::vector<bool> isMask(plan.values.size(), false);
  for (const Step &s : plan.steps)
    if (s.cuda.gemm.reluMask >= 0)
      isMask[s.cuda.gemm.reluMask] = true;
  auto touched = [&](int v) { return v >= 0 && isMask[v]; };
  for (size_t i = 0; i < plan.steps.size(); ++i)
    for (const std::vector<int> *vs :
         {&plan.steps[i].inputs, &plan.steps[i].outputs})
      for (int v : *vs)
        if (touched(v))
          return "step " + std::to_string(i) + " reads or writes a ReLU mask";
  for (const std::vector<Binding> *bs : {&plan.inputs, &plan.outputs})
    for (const Binding &b : *bs)
      if (touched(b.value))
        return "a ReLU mask is bound as '" + b.name + "'";
  for (const Parameter &p : plan.params)
    if (touched(p.value))
      return "a ReLU mask is the parameter '" + p.name + "'";
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    const Step &s = plan.steps[i];
    int j = s.cuda.libraryFusedInto;
    if (j < 0)
      continue;
    auto fused = [&] {
      return "step " + std::to_string(i) + " is fused into step " +
             std::to_string(j);
    };
    if (j == (int)i || j >= (int)plan.steps.size() || s.outputs.size() != 1 ||
        libraryResult(plan.steps[j].cuda.gemm) != s.outputs[0] ||
        fusedFor[j] >= 0)
      return fused() + ", whose GEMM does not compute its result";
    for (size_t k : readers[root[s.outputs[0]]])
      if (k > i && (int)k <= j)
        return fused() + ", after step " + std::to_string(k) +
               " reads its result";
    const LibraryGemm &g = plan.steps[j].cuda.gemm;
    if (g.geluOut >= 0 || g.dgeluOut >= 0)
      if (std::string why = checkGeluFusion(plan, i, j, root, readers);
          !why.empty())
        return fused() + ", but " + why;
    if (g.dreluOut >= 0)
      if (std::string why = checkReluFusion(plan, i, j, root, readers);
          !why.empty())
        return fused() + ", but " + why;
    fusedFor[j] = (int)i;
  }
  for (size_t j = 0; j < plan.steps.size(); ++j) {
    const LibraryGemm &g = plan.steps[j].cuda.gemm;
    if (libraryResult(g) == -2)
      return "step " + std::to_string(j) +
             "'s GEMM computes more than one other step's result";
    if (libraryResult(g) >= 0 && fusedFor[j] < 0)
      return "step " + std::to_string(j) +
             "'s GEMM computes a result no step is fused for";
  }
  return "";
}

/// "" or what is inconsistent in a cast fused into its producer: the
/// producer must store as the cast's result, the cast read the producer's
/// output 0 and nothing else read it (or, a row kernel, store the cast's
/// result beside output 0). (A sum fused into an earlier
/// chain-reduction's kernel must be listed in its chain, read there and
/// stored by it.)
std::string checkStoredCasts(const Plan &plan) {
  // A kernel's output 0 -> the sum of the Add it computes there
  // (cuda.epilogueAdd, the Add aliasing output 0; checkEpilogueAdds).
  std::map<int, int> sumIn;
  for (const Step &a : plan.steps)
    if (a.op == OpId::Add && a.cuda.alias >= 0 && a.outputs.size() == 1)
      sumIn[a.cuda.alias] = a.outputs[0];
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    const Step &s = plan.steps[i];
    int j = s.cuda.fusedInto;
    bool castIntoEarlier = j >= 0 && j < (int)i;
    if (s.cuda.storedAs < 0 && !castIntoEarlier)
      continue;
    std::string bad = "step " + std::to_string(i) +
                      " stores as a cast's result that is not its own";
    if (castIntoEarlier) { // the cast: its producer stores its result
      const Step &p = plan.steps[j];
      auto has = [](const std::vector<int> &list, int v) {
        return std::find(list.begin(), list.end(), v) != list.end();
      };
      // Or a sum the earlier chain-reduction adds up beside its own
      // (fuseSiblingSums): listed in its chain, its operand read by that
      // kernel, its result among the kernel's stores.
      if (has(p.cuda.chain, (int)i) && s.inputs.size() == 1 &&
          s.outputs.size() == 1 && has(p.cuda.inputs, s.inputs[0]) &&
          has(p.cuda.stores, s.outputs[0]))
        continue;
      // Or a cast a row kernel stores beside its own output 0 (or the sum
      // of the Add it computes there), which it reads (storeCastBeside).
      // (Its other store, if any, the sum it adds as it loads.)
      bool besideSum = p.cuda.stores.size() == 2 && p.cuda.hasPrologueAdd() &&
                       has(p.cuda.stores, p.inputs[0]);
      int kept = p.outputs.empty() ? -1 : p.outputs[0];
      if (auto sum = sumIn.find(kept);
          p.cuda.epilogueAdd >= 0 && sum != sumIn.end())
        kept = sum->second;
      if (s.op == OpId::Cast && s.inputs.size() == 1 && s.outputs.size() == 1 &&
          !p.cuda.isChain() && !p.outputs.empty() && s.inputs[0] == kept &&
          p.cuda.storedAs < 0 &&
          (p.cuda.stores.size() == 1 || besideSum) &&
          has(p.cuda.stores, s.outputs[0]))
        continue;
      if (s.op != OpId::Cast || s.inputs.size() != 1 || s.outputs.size() != 1 ||
          p.outputs.empty() || s.inputs[0] != p.outputs[0] ||
          p.cuda.storedAs != s.outputs[0])
        return "step " + std::to_string(i) + " is fused into step " +
               std::to_string(j) + ", which does not store its result";
      continue;
    }
    int readers = 0, cast = -1; // the producer: one reader, the cast
    for (size_t k = 0; k < plan.steps.size(); ++k)
      for (int v : plan.steps[k].inputs)
        if (!s.outputs.empty() && v == s.outputs[0]) {
          ++readers;
          cast = (int)k;
        }
    if (readers != 1 || plan.steps[cast].cuda.fusedInto != (int)i ||
        plan.steps[cast].outputs[0] != s.cuda.storedAs ||
        s.cuda.libraryFusedInto >= 0) // a library would write output 0
      return bad;
    for (const Binding &b : plan.outputs)
      if (b.value == s.outputs[0])
        return bad;
  }
  return "";
}

/// "" or what is inconsistent in a step computed in a later step's kernel:
/// a chain's member, a relu_grad folded into the batch_norm_grad that
/// alone read its result (which then reads dy and the Relu's result), or
/// an fp16/bf16 -> FP32 cast whose readers read its source (the first of
/// them named).
std::string checkLaterFusions(const Plan &plan) {
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    const Step &s = plan.steps[i];
    int j = s.cuda.fusedInto;
    if (j <= (int)i)
      continue;
    std::string bad = "step " + std::to_string(i) + " is fused into step " +
                      std::to_string(j) + ", ";
    if (j >= (int)plan.steps.size())
      return bad + "which does not exist";
    const Step &k = plan.steps[j];
    bool listed = std::find(k.cuda.chain.begin(), k.cuda.chain.end(),
                            (int)i) != k.cuda.chain.end();
    if (listed)
      continue;
    if (s.op == OpId::Add && k.cuda.hasPrologueAdd() && !k.inputs.empty() &&
        s.outputs.size() == 1 && k.inputs[0] == s.outputs[0])
      continue; // checkPrologueAdds
    if (s.op == OpId::Dropout && k.cuda.prologueDropout[0] == (int)i)
      continue; // checkPrologueAdds
    if (s.op == OpId::Cast) { // a widening cast its readers read through
      DType from = s.inputs.size() == 1 ? plan.values[s.inputs[0]].dtype
                                        : DType::F32;
      if (s.outputs.size() != 1 || plan.values[s.outputs[0]].dtype != DType::F32 ||
          (from != DType::F16 && from != DType::BF16) ||
          std::find(k.inputs.begin(), k.inputs.end(), s.inputs[0]) ==
              k.inputs.end())
        return bad + "which does not read the source of this widening cast";
    } else if (k.cuda.isChain()) {
      return bad + "whose chain does not list it";
    } else if (s.op != OpId::ReluGrad || k.op != OpId::BatchNormGrad ||
        s.inputs.size() != 2 || s.outputs.size() != 1 || k.inputs.size() != 4 ||
        k.inputs[0] != s.inputs[0] || k.inputs[3] != s.inputs[1])
      return bad + "which neither chains it nor reads its dy and Relu result";
    for (const Step &r : plan.steps)
      for (int v : r.inputs)
        if (v == s.outputs[0])
          return bad + "but another step reads its result";
    for (const Binding &b : plan.outputs)
      if (b.value == s.outputs[0])
        return bad + "but its result is a plan output";
  }
  return "";
}

std::string checkUnwrittenOutputs(const Plan &plan) {
  std::set<int> unwritten;
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    const Step &s = plan.steps[i];
    if (s.cuda.written < 0)
      continue;
    if (s.cuda.written == 0 || s.cuda.written > (int)s.outputs.size())
      return "step " + std::to_string(i) + " writes " +
             std::to_string(s.cuda.written) + " of its " +
             std::to_string(s.outputs.size()) + " outputs";
    unwritten.insert(s.outputs.begin() + s.cuda.written, s.outputs.end());
  }
  for (size_t i = 0; i < plan.steps.size(); ++i)
    for (int v : plan.steps[i].inputs)
      if (unwritten.count(v))
        return "step " + std::to_string(i) + " reads value " +
               std::to_string(v) + ", which no kernel writes";
  for (const Binding &b : plan.outputs)
    if (unwritten.count(b.value))
      return "output '" + b.name + "' is value " + std::to_string(b.value) +
             ", which no kernel writes";
  return "";
}

/// "" or what is inconsistent in a batch norm or norm gradient computing
/// its reader Add (`cuda.epilogueAdd`): the Add must read its result and
/// the addend and alias the result, nothing else read the result, and the
/// addend be written before the kernel runs.
std::string checkEpilogueAdds(const Plan &plan) {
  for (size_t j = 0; j < plan.steps.size(); ++j) {
    const Step &bn = plan.steps[j];
    int z = bn.cuda.epilogueAdd;
    if (z < 0)
      continue;
    std::string bad = "step " + std::to_string(j) + " adds value " +
                      std::to_string(z) + " in its kernel, ";
    if ((bn.op != OpId::BatchNormTrain && bn.op != OpId::BatchNorm &&
         bn.op != OpId::NormGrad) ||
        bn.outputs.empty() || z >= (int)plan.values.size())
      return bad + "but it is no batch norm or norm gradient";
    int y = bn.outputs[0], adds = 0;
    for (size_t k = 0; k < plan.steps.size(); ++k) {
      const Step &r = plan.steps[k];
      for (int v : r.outputs)
        if (v == z && k >= j)
          return bad + "which step " + std::to_string(k) + " writes after it";
      if (std::find(r.inputs.begin(), r.inputs.end(), y) == r.inputs.end())
        continue;
      bool add = r.op == OpId::Add && r.inputs.size() == 2 &&
                 r.cuda.alias == y &&
                 std::find(r.inputs.begin(), r.inputs.end(), z) != r.inputs.end();
      if (!add)
        return bad + "but step " + std::to_string(k) +
               " reads its result, which holds the sum";
      ++adds;
    }
    if (adds != 1)
      return bad + "but no Add aliasing its result reads it";
    for (const Binding &b : plan.outputs)
      if (b.value == y)
        return bad + "but its result, which holds the sum, is a plan output";
  }
  // An Add computes nothing of its own only inside such a kernel.
  for (size_t k = 0; k < plan.steps.size(); ++k) {
    const Step &a = plan.steps[k];
    if (a.op != OpId::Add || a.cuda.alias < 0)
      continue;
    bool ok = false;
    for (const Step &bn : plan.steps)
      ok |= bn.cuda.epilogueAdd >= 0 && !bn.outputs.empty() &&
            bn.outputs[0] == a.cuda.alias;
    if (!ok)
      return "step " + std::to_string(k) +
             " is an Add aliasing a value no kernel adds into";
  }
  return "";
}

/// "" or what is inconsistent in a row kernel adding its input 0 as it
/// loads (`cuda.prologueAdd`): input 0 must be the result of an Add of
/// exactly those operands, run before it and fused into it; a step reading
/// the sum besides must run after it, and the kernel store the sum for it
/// (as for a plan output).
std::string checkPrologueAdds(const Plan &plan) {
  for (size_t j = 0; j < plan.steps.size(); ++j) {
    const Step &k = plan.steps[j];
    if (!k.cuda.hasPrologueAdd())
      continue;
    std::string bad = "step " + std::to_string(j) + " adds its input as it loads, ";
    if ((k.op != OpId::LayerNorm && k.op != OpId::RmsNorm &&
         k.op != OpId::NormGrad) ||
        k.inputs.empty() || k.inputs[0] < 0 || k.cuda.isChain())
      return bad + "but it is no normalisation kernel";
    int x = k.inputs[0];
    auto stored = std::find(k.cuda.stores.begin(), k.cuda.stores.end(), x) !=
                  k.cuda.stores.end();
    int adds = 0;
    for (size_t i = 0; i < plan.steps.size(); ++i) {
      const Step &r = plan.steps[i];
      if (std::find(r.outputs.begin(), r.outputs.end(), x) != r.outputs.end()) {
        if (r.op != OpId::Add || r.inputs.size() != 2 || i >= j ||
            r.inputs[0] != k.cuda.prologueAdd[0] ||
            r.inputs[1] != k.cuda.prologueAdd[1] || r.cuda.fusedInto != (int)j)
          return bad + "but step " + std::to_string(i) +
                 " is not the Add of those operands fused into it";
        ++adds;
      }
      if (i == j || r.cuda.fusedInto == (int)j ||
          std::find(r.inputs.begin(), r.inputs.end(), x) == r.inputs.end())
        continue;
      if (i < j)
        return bad + "but step " + std::to_string(i) +
               " reads the sum before it is computed";
      if (!stored)
        return bad + "but step " + std::to_string(i) +
               " reads the sum, which it does not store";
    }
    if (adds != 1)
      return bad + "but no Add writes it";
    if (const auto &d = k.cuda.prologueDropout; d[0] >= 0) {
      const Step *drop =
          d[0] < (int)plan.steps.size() ? &plan.steps[d[0]] : nullptr;
      int counter = drop && drop->inputs.size() > 3 ? drop->inputs[3] : -1;
      if (!drop || drop->op != OpId::Dropout || d[0] >= (int)j ||
          drop->cuda.fusedInto != (int)j || drop->cuda.written != 1 ||
          drop->outputs.empty() || drop->inputs.empty() ||
          drop->outputs[0] != k.cuda.prologueAdd[d[1]] ||
          drop->inputs[0] != d[2] || counter != d[3])
        return bad + "but step " + std::to_string(d[0]) +
               " is not the dropout of that operand fused into it";
      // Its result, never stored, is read by the Add alone (a widening
      // cast fused into a later step is read through, computing nothing:
      // checkLaterFusions).
      for (size_t i = 0; i < plan.steps.size(); ++i) {
        const Step &r = plan.steps[i];
        if (std::find(r.inputs.begin(), r.inputs.end(), drop->outputs[0]) !=
                r.inputs.end() &&
            (r.op != OpId::Add || r.outputs.size() != 1 || r.outputs[0] != x) &&
            (r.op != OpId::Cast || r.cuda.fusedInto <= (int)i))
          return bad + "but a step other than the Add reads the result of "
                       "dropout step " + std::to_string(d[0]);
      }
      for (const Binding &b : plan.outputs)
        if (b.value == drop->outputs[0])
          return bad + "but the result of dropout step " +
                 std::to_string(d[0]) + " is a plan output";
    }
    for (const Binding &b : plan.outputs)
      if (b.value == x && !stored)
        return bad + "but the sum is a plan output it does not store";
  }
  return "";
}

std::string checkPlanFusions(const Plan &plan) {
  // Steps computed in another step's kernel or call must pair up; the
  // weight copies first (the in-place updates write them).
  for (auto check : {checkWeightCopies, checkStepBatches, checkLibraryFusions,
                     checkStoredCasts, checkLaterFusions, checkUnwrittenOutputs,
                     checkEpilogueAdds, checkPrologueAdds, checkAttentionViews,
                     checkUpdatesInPlace, checkAppliedOnly})
    if (std::string why = check(plan); !why.empty())
      return why;
  return "";
}

} // namespace mpc::rt
