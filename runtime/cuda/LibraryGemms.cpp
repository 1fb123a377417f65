//===- LibraryGemms.cpp - a session's GEMM steps through cuBLASLt ---------===//

#include "runtime/cuda/LibraryGemms.h"

#include <algorithm>
#include <array>

namespace mpc::rt {
namespace {

/// The most workspace an algorithm may ask for (PyTorch gives cuBLASLt 32
/// MiB on Hopper).
constexpr uint64_t kMaxWorkspace = 32ull << 20;

int dataType(DType t) {
  return t == DType::F16 ? lt::kR16F : t == DType::BF16 ? lt::kR16BF : lt::kR32F;
}

std::string where(const Step &s) {
  return "node '" + s.name + "' (" + opName(s.op) + ")";
}

/// The key of a distinct GEMM: everything but its buffers.
std::string keyOf(const Plan &plan, const Step &s) {
  const LibraryGemm &g = s.cuda.gemm;
  std::string k;
  for (int64_t v : {g.m, g.n, g.k, g.batch, (int64_t)g.transA,
                    (int64_t)g.transB, (int64_t)g.relu, g.strideA, g.strideB,
                    (int64_t)(g.c >= 0), (int64_t)(g.bias >= 0),
                    (int64_t)(g.biasGrad >= 0), (int64_t)g.biasGradOfB,
                    (int64_t)(g.geluOut >= 0), (int64_t)(g.dgeluOut >= 0),
                    (int64_t)(g.geluAux >= 0), (int64_t)(g.reluMask >= 0),
                    (int64_t)(g.dreluOut >= 0),
                    (int64_t)plan.values[g.a].dtype,
                    (int64_t)plan.values[s.outputs[0]].dtype})
    k += std::to_string(v) + ",";
  return k + std::to_string(g.alpha) + "," + std::to_string(g.beta);
}

/// Whether the record fits its operands' buffers (a plan from elsewhere
/// must not make the library read or write past them).
bool fits(const Plan &plan, const Step &s) {
  const LibraryGemm &g = s.cuda.gemm;
  // The ReLU mask (codegen's buffer) and the DRELU epilogue's conditions.
  bool masks =
      (g.reluMask < 0 ||
       (g.batch == 1 && plan.values[g.reluMask].dtype == DType::I1 &&
        numElements(plan.values[g.reluMask].shape) ==
            g.m * reluMaskLd(g.n) / 8 &&
        (g.relu || g.dreluOut >= 0))) &&
      (g.dreluOut < 0 ||
       (g.reluMask >= 0 && g.c < 0 && g.bias < 0 && !g.relu &&
        g.alpha == 1.0 && g.biasGrad < 0 && g.geluOut < 0 &&
        g.dgeluOut < 0 && g.geluAux < 0 &&
        numElements(plan.values[g.dreluOut].shape) == g.m * g.n &&
        plan.values[g.dreluOut].dtype == plan.values[s.outputs[0]].dtype)) &&
      (g.reluMask < 0 || (g.geluOut < 0 && g.dgeluOut < 0));
  if (!masks)
    return false;
  std::array<int, 3> gelus{g.geluOut, g.dgeluOut, g.geluAux};
  auto size = [&](int v) { return numElements(plan.values[v].shape); };
  DType t = plan.values[g.a].dtype;
  return plan.values[g.b].dtype == t && g.strideA >= 0 && g.strideB >= 0 &&
         size(g.a) >= g.strideA * (g.batch - 1) + g.m * g.k &&
         size(g.b) >= g.strideB * (g.batch - 1) + g.k * g.n &&
         size(s.outputs[0]) == g.batch * g.m * g.n &&
         (g.c < 0 || (g.batch == 1 && size(g.c) == g.m * g.n &&
                      plan.values[g.c].dtype == plan.values[s.outputs[0]].dtype)) &&
         (g.bias < 0 || (size(g.bias) == g.n &&
                         plan.values[g.bias].dtype == plan.values[s.outputs[0]].dtype)) &&
         (g.biasGrad < 0 ||
          (g.batch == 1 && g.c < 0 && g.bias < 0 && !g.relu &&
           g.alpha == 1.0 &&
           (g.biasGradOfB ? !g.transB && size(g.biasGrad) == g.n
                          : g.transA && size(g.biasGrad) == g.m) &&
           plan.values[g.biasGrad].dtype == plan.values[s.outputs[0]].dtype)) &&
         ((g.geluOut < 0 && g.dgeluOut < 0) ||
          (g.batch == 1 && g.c < 0 && !g.relu && g.alpha == 1.0 &&
           g.n % 8 == 0 && g.biasGrad < 0 && (g.geluOut < 0 || g.dgeluOut < 0) &&
           (g.dgeluOut < 0 || (g.bias < 0 && g.geluAux >= 0)) &&
           (g.geluOut < 0 || g.geluAux < 0 || g.geluAux == s.outputs[0]) &&
           std::all_of(gelus.begin(), gelus.end(), [&](int v) {
             return v < 0 || (size(v) == g.m * g.n &&
                              plan.values[v].dtype ==
                                  plan.values[s.outputs[0]].dtype);
           })));
}

} // namespace

LibraryGemms::~LibraryGemms() {
  for (Prepared &p : prepared)
    release(p);
  if (handle)
    lib->destroy(handle);
}

bool LibraryGemms::open(const Plan &plan, std::string &summary,
                        std::string &error) {
  this->plan = &plan;
  byStep.assign(plan.steps.size(), -1);
  fusedFor.assign(plan.steps.size(), -1);
  maskFrom.assign(plan.steps.size(), -1);
  std::map<int, int> maskWriter;
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    if (int j = plan.steps[i].cuda.libraryFusedInto; j >= 0)
      fusedFor[j] = (int)i;
    const LibraryGemm &g = plan.steps[i].cuda.gemm;
    if (g.reluMask >= 0 && g.dreluOut < 0)
      maskWriter[g.reluMask] = (int)i;
    else if (g.dreluOut >= 0 && maskWriter.count(g.reluMask))
      maskFrom[i] = maskWriter[g.reluMask];
  }
  size_t total = 0;
  for (const Step &s : plan.steps)
    total += s.cuda.gemm.valid();
  if (total == 0)
    return true;
  std::string count = std::to_string(total) + " GEMM step" +
                      (total == 1 ? "" : "s");
  if (plan.cudaGemm == "mpc")
    return summary = count + " on mpc's kernels (--gemm mpc)", true;
  bool required = plan.cudaGemm == "cublaslt";
  lib = &lt::library();
  if (std::string why = lib->load(); !why.empty()) {
    if (required)
      return (error = "--gemm cublaslt: " + why, false);
    lib = nullptr;
    return summary = count + " on mpc's kernels (cuBLASLt: " + why + ")", true;
  }
  if (lt::Status st = lib->create(&handle); st != 0) {
    handle = nullptr;
    std::string why = "cublasLtCreate: " + lib->statusName(st);
    if (required)
      return (error = why, false);
    return summary = count + " on mpc's kernels (" + why + ")", true;
  }
  size_t onLibrary = 0;
  std::string firstRefusal;
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    const Step &s = plan.steps[i];
    if (!s.cuda.gemm.valid())
      continue;
    if (!fits(plan, s))
      return (error = where(s) + ": its gemm record does not fit its "
                                 "operands",
              false);
    // DRELU only where the GEMM writing the mask runs with RELU_AUX.
    const LibraryGemm &g = s.cuda.gemm;
    bool maskOk = g.dreluOut < 0 || maskWritten(i);
    std::string key = keyOf(plan, s) + (maskOk ? "" : ",unmasked");
    auto it = byKey.find(key);
    if (it == byKey.end()) {
      Prepared p;
      std::string why;
      bool ok = maskOk ? prepare(s, p, why) : prepare(s, false, p, why);
      prepared.push_back(p); // destroyed with the rest, usable or not
      int index = ok ? (int)prepared.size() - 1 : -1;
      if (!ok && required)
        return (error = where(s) + ": cuBLASLt " + why, false);
      if (!ok && firstRefusal.empty())
        firstRefusal = where(s) + ": " + why;
      it = byKey.emplace(key, index).first;
      if (ok)
        workspace = std::max(workspace, p.algo.workspaceSize);
    }
    byStep[i] = it->second;
    onLibrary += it->second >= 0;
  }
  size_t biasGrads = 0, gelus = 0, masks = 0, reluGrads = 0;
  for (size_t i = 0; i < plan.steps.size(); ++i)
    if (computesFused(i)) {
      const LibraryGemm &g = plan.steps[i].cuda.gemm;
      (g.biasGrad >= 0   ? biasGrads
       : g.dreluOut >= 0 ? reluGrads
       : g.reluMask >= 0 ? masks
                         : gelus) += 1;
    }
  summary = std::to_string(onLibrary) + " of " + count + " through " +
            lib->describe() + ", " + std::to_string(byKey.size()) +
            " distinct" + (plan.cudaTf32 ? ", FP32 ones in TF32" : "") +
            (biasGrads ? ", " + std::to_string(biasGrads) +
                             " with the bias gradient (BGRADA/BGRADB)"
                       : "") +
            (gelus ? ", " + std::to_string(gelus) +
                         " with the GELU or its gradient (GELU_AUX/DGELU)"
                   : "") +
            (masks ? ", " + std::to_string(masks) +
                         " writing the ReLU mask (RELU_AUX)"
                   : "") +
            (reluGrads ? ", " + std::to_string(reluGrads) +
                             " with the ReLU gradient (DRELU)"
                       : "");
  if (!firstRefusal.empty())
    summary += "; the rest on mpc's kernels (" + firstRefusal + ")";
  return true;
}

bool LibraryGemms::maskWritten(size_t i) const {
  return maskFrom[i] >= 0 && computesFused((size_t)maskFrom[i]);
}

void LibraryGemms::useKernel(const std::string &key) {
  LibrarySteps::useKernel(key);
  for (size_t i = 0; i < byStep.size(); ++i)
    if (plan->steps[i].cuda.gemm.dreluOut >= 0 && computesFused(i) &&
        !maskWritten(i))
      byStep[i] = -1; // mpc's GEMM, then the relu_grad kernel
}

bool LibraryGemms::prepare(const Step &s, Prepared &p, std::string &why) {
  // With the epilogue computing another step's result (bias gradient,
  // GELU, GELU or ReLU gradient) or the ReLU mask a later DRELU reads,
  // where cuBLASLt has an algorithm for it, else the plain GEMM (that
  // step's own kernel then runs; a mask goes unwritten).
  const LibraryGemm &g = s.cuda.gemm;
  if (g.biasGrad >= 0 || g.geluOut >= 0 || g.dgeluOut >= 0 ||
      g.reluMask >= 0) {
    if (prepare(s, true, p, why))
      return true;
    release(p);
    p = Prepared{};
  }
  return prepare(s, false, p, why);
}

void LibraryGemms::release(Prepared &p) {
  for (lt::Handle l : {p.a, p.b, p.c, p.d})
    if (l)
      lib->layoutDestroy(l);
  if (p.desc)
    lib->descDestroy(p.desc);
}

bool LibraryGemms::prepare(const Step &s, bool withFused, Prepared &p,
                           std::string &why) {
  const LibraryGemm &g = s.cuda.gemm;
  bool withBiasGrad = withFused && g.biasGrad >= 0,
       withGelu = withFused && g.geluOut >= 0,
       withGeluGrad = withFused && g.dgeluOut >= 0,
       withMask = withFused && g.reluMask >= 0 && g.dreluOut < 0,
       withReluGrad = withFused && g.dreluOut >= 0,
       withAux = (withGelu && g.geluAux >= 0) || withGeluGrad || withMask ||
                 withReluGrad;
  DType in = plan->values[g.a].dtype, out = plan->values[s.outputs[0]].dtype;
  auto ok = [&](lt::Status st, const char *what) {
    if (st != 0)
      why = std::string(what) + ": " + lib->statusName(st);
    return st == 0;
  };
  // Column-major: D (N x M) = op(B view) (N x K) * op(A view) (K x M).
  int32_t opA = g.transB ? lt::kOpT : lt::kOpN,
          opB = g.transA ? lt::kOpT : lt::kOpN;
  // The bias gradient: the sums over k of op(A) (cuBLASLt's B operand:
  // BGRADB) or of B (its A operand: BGRADA).
  // GELU_AUX: D = gelu(Y), aux = Y (GELU: no aux); DGELU: D = gelu'(aux) * Y.
  // RELU_AUX: D = relu(Y), aux = the mask Y > 0; DRELU: D = mask ? Y : 0.
  int32_t epilogue = withBiasGrad ? (g.biasGradOfB ? lt::kEpilogueBgradA
                                                   : lt::kEpilogueBgradB)
                     : withGelu && withAux
                         ? (g.bias >= 0 ? lt::kEpilogueGeluAuxBias
                                        : lt::kEpilogueGeluAux)
                     : withGelu   ? (g.bias >= 0 ? lt::kEpilogueGeluBias
                                                 : lt::kEpilogueGelu)
                     : withGeluGrad ? lt::kEpilogueDGelu
                     : withMask ? (g.bias >= 0 ? lt::kEpilogueReluAuxBias
                                               : lt::kEpilogueReluAux)
                     : withReluGrad ? lt::kEpilogueDRelu
                     : g.relu     ? (g.bias >= 0 ? lt::kEpilogueReluBias
                                                 : lt::kEpilogueRelu)
                                  : (g.bias >= 0 ? lt::kEpilogueBias
                                                 : lt::kEpilogueDefault);
  // The aux matrix is laid out as D: elements, or bits for the ReLU mask.
  int64_t auxLd = g.reluMask >= 0 ? reluMaskLd(g.n) : g.n;
  int32_t biasType = dataType(out);
  int compute = in == DType::F32 && plan->cudaTf32 ? lt::kCompute32FFastTf32
                                                   : lt::kCompute32F;
  if (!ok(lib->descCreate(&p.desc, compute, lt::kR32F),
          "cublasLtMatmulDescCreate") ||
      !ok(lib->descSetAttribute(p.desc, lt::kDescTransA, &opA, sizeof opA),
          "setting TRANSA") ||
      !ok(lib->descSetAttribute(p.desc, lt::kDescTransB, &opB, sizeof opB),
          "setting TRANSB") ||
      !ok(lib->descSetAttribute(p.desc, lt::kDescEpilogue, &epilogue,
                                sizeof epilogue),
          "setting the epilogue") ||
      ((g.bias >= 0 || withBiasGrad) &&
       !ok(lib->descSetAttribute(p.desc, lt::kDescBiasDataType, &biasType,
                                 sizeof biasType),
           "setting the bias type")) ||
      (withAux &&
       !ok(lib->descSetAttribute(p.desc, lt::kDescEpilogueAuxLd, &auxLd,
                                 sizeof auxLd),
           "setting the aux leading dimension")))
    return false;
  auto layout = [&](lt::Handle &l, DType t, int64_t rows, int64_t cols,
                    int64_t ld, int64_t stride) {
    int32_t batch = (int32_t)g.batch;
    return ok(lib->layoutCreate(&l, dataType(t), rows, cols, ld),
              "cublasLtMatrixLayoutCreate") &&
           (g.batch == 1 ||
            (ok(lib->layoutSetAttribute(l, lt::kLayoutBatchCount, &batch,
                                        sizeof batch),
                "setting the batch count") &&
             ok(lib->layoutSetAttribute(l, lt::kLayoutStridedBatchOffset,
                                        &stride, sizeof stride),
                "setting the batch stride")));
  };
  if (!layout(p.a, in, g.transB ? g.k : g.n, g.transB ? g.n : g.k,
              g.transB ? g.k : g.n, g.strideB) ||
      !layout(p.b, in, g.transA ? g.m : g.k, g.transA ? g.k : g.m,
              g.transA ? g.m : g.k, g.strideA) ||
      !layout(p.c, out, g.n, g.m, g.n, g.m * g.n) ||
      !layout(p.d, out, g.n, g.m, g.n, g.m * g.n))
    return false;
  lt::Handle pref = nullptr;
  uint64_t maxWorkspace = kMaxWorkspace;
  int returned = 0;
  bool found =
      ok(lib->prefCreate(&pref), "cublasLtMatmulPreferenceCreate") &&
      ok(lib->prefSetAttribute(pref, lt::kPrefMaxWorkspaceBytes, &maxWorkspace,
                               sizeof maxWorkspace),
         "setting the workspace limit") &&
      ok(lib->heuristic(handle, p.desc, p.a, p.b, p.c, p.d, pref, 1, &p.algo,
                        &returned),
         "cublasLtMatmulAlgoGetHeuristic");
  if (pref)
    lib->prefDestroy(pref);
  if (found && (returned < 1 || p.algo.state != 0))
    return why = "has no algorithm for this GEMM", false;
  p.alpha = (float)g.alpha;
  p.beta = g.c >= 0 ? (float)g.beta : 0.0f;
  p.bias = g.bias >= 0 || withBiasGrad;
  p.aux = withAux;
  p.fused = withFused;
  return found;
}

bool LibraryGemms::enqueue(size_t i, unsigned long long a,
                           unsigned long long b, unsigned long long c,
                           unsigned long long bias, unsigned long long aux,
                           unsigned long long y, unsigned long long work,
                           void *stream, std::string &error) const {
  const Prepared &p = prepared[byStep[i]];
  const Step &s = plan->steps[i];
  void *biasPtr = (void *)bias, *auxPtr = (void *)aux;
  lt::Status st =
      p.bias ? lib->descSetAttribute(p.desc, lt::kDescBiasPointer, &biasPtr,
                                     sizeof biasPtr)
             : 0;
  if (st == 0 && p.aux)
    st = lib->descSetAttribute(p.desc, lt::kDescEpilogueAuxPointer, &auxPtr,
                               sizeof auxPtr);
  if (st == 0)
    st = lib->matmul(handle, p.desc, &p.alpha, (const void *)b, p.a,
                     (const void *)a, p.b, &p.beta,
                     (const void *)(c ? c : y), p.c, (void *)y, p.d,
                     p.algo.algo, (void *)work, p.algo.workspaceSize, stream);
  if (st != 0)
    error = where(s) + ": cublasLtMatmul: " + lib->statusName(st);
  return st == 0;
}

} // namespace mpc::rt
