//===- LibraryConvs.cpp - a session's convolutions through cuDNN -----------===//

#include "runtime/cuda/LibraryConvs.h"

#include <algorithm>

namespace mpc::rt {
namespace {

/// The most workspace an algorithm may take.
constexpr size_t kMaxWorkspace = 64ull << 20;

int dataType(DType t) {
  return t == DType::F16 ? dnn::kHalf : t == DType::BF16 ? dnn::kBfloat16 : dnn::kFloat;
}

std::string where(const Step &s) {
  return "node '" + s.name + "' (" + opName(s.op) + ")";
}

/// The output size cuDNN computes for a spatial dimension.
int64_t outSize(int64_t in, int64_t pad, int64_t k, int64_t stride,
                int64_t dil) {
  return (in + 2 * pad - dil * (k - 1) - 1) / stride + 1;
}

/// A forward step's bias (-1 when none).
int biasOf(const Step &s) {
  return s.cuda.conv.kind == LibraryConv::Forward && s.inputs.size() > 2
             ? s.inputs[2]
             : -1;
}

/// Whether a forward step runs as cudnnConvolutionBiasActivationForward:
/// with a fused Relu, or a fp16/bf16 bias (added before the one rounding,
/// as mpc's kernel and the CPU backend do; after cuDNN's forward it would
/// round twice). An FP32 bias alone is added by cudnnAddTensor.
bool fusedForward(const Plan &plan, const Step &s) {
  int bias = biasOf(s);
  return bias >= 0 && (s.cuda.fusedRelu ||
                       plan.values[bias].dtype != DType::F32);
}

std::string keyOf(const Plan &plan, const Step &s) {
  const LibraryConv &v = s.cuda.conv;
  std::string k;
  for (int64_t x : {(int64_t)v.kind, v.n, v.c, v.h, v.w, v.k, v.r, v.s, v.padH,
                    v.padW, v.strideH, v.strideW, v.dilH, v.dilW, v.groups,
                    (int64_t)v.nhwc, (int64_t)plan.values[s.outputs[0]].dtype,
                    (int64_t)(biasOf(s) >= 0), (int64_t)s.cuda.fusedRelu})
    k += std::to_string(x) + ",";
  return k;
}

/// Whether the record agrees with its operands' shapes and types.
bool fits(const Plan &plan, const Step &s) {
  const LibraryConv &v = s.cuda.conv;
  if (v.c % v.groups || v.k % v.groups)
    return false;
  int64_t oh = outSize(v.h, v.padH, v.r, v.strideH, v.dilH),
          ow = outSize(v.w, v.padW, v.s, v.strideW, v.dilW);
  Shape x = {v.n, v.c, v.h, v.w}, w = {v.k, v.c / v.groups, v.r, v.s};
  Shape dy = {v.n, v.k, oh, ow};
  if (v.nhwc) // NHWC data, KRSC filters
    x = {v.n, v.h, v.w, v.c}, w = {v.k, v.r, v.s, v.c / v.groups},
    dy = {v.n, oh, ow, v.k};
  if (v.nhwc != (s.getInt("channels_last", 0) != 0))
    return false;
  const ValueInfo &a = plan.values[s.inputs[0]], &b = plan.values[s.inputs[1]],
                  &o = plan.values[s.outputs[0]];
  bool types = a.dtype == b.dtype && a.dtype == o.dtype;
  if (v.kind == LibraryConv::Forward) {
    int bias = biasOf(s); // a Relu only with the bias (one fused call)
    return types && a.shape == x && b.shape == w && o.shape == dy &&
           (!s.cuda.fusedRelu || bias >= 0) &&
           (bias < 0 || (numElements(plan.values[bias].shape) == v.k &&
                         plan.values[bias].dtype == o.dtype));
  }
  bool data = v.kind == LibraryConv::BackwardData;
  return types && a.shape == dy && b.shape == (data ? w : x) &&
         o.shape == (data ? x : w);
}

} // namespace

LibraryConvs::~LibraryConvs() {
  for (Prepared &p : prepared) {
    for (dnn::Handle t : {p.x, p.dy, p.bias})
      if (t)
        lib->destroyTensor(t);
    if (p.activation)
      lib->destroyActivation(p.activation);
    if (p.filter)
      lib->destroyFilter(p.filter);
    if (p.conv)
      lib->destroyConv(p.conv);
  }
  if (handle)
    lib->destroy(handle);
}

bool LibraryConvs::open(const Plan &plan, void *stream, std::string &summary,
                        std::string &error) {
  this->plan = &plan;
  byStep.assign(plan.steps.size(), -1);
  size_t total = 0;
  for (const Step &s : plan.steps)
    total += s.cuda.conv.valid();
  if (total == 0)
    return true;
  std::string count = std::to_string(total) + " convolution" +
                      (total == 1 ? "" : "s");
  if (plan.cudaConv == "mpc")
    return summary = count + " on mpc's kernels (--conv mpc)", true;
  bool required = plan.cudaConv == "cudnn";
  lib = &dnn::library();
  std::string why = lib->load();
  if (why.empty()) {
    if (dnn::Status st = lib->create(&handle); st != 0)
      handle = nullptr, why = "cudnnCreate: " + lib->statusName(st);
    else if (dnn::Status st = lib->setStream(handle, stream); st != 0)
      why = "cudnnSetStream: " + lib->statusName(st);
  }
  if (!why.empty()) {
    if (required)
      return (error = "--conv cudnn: " + why, false);
    if (!handle)
      lib = nullptr;
    return summary = count + " on mpc's kernels (cuDNN: " + why + ")", true;
  }
  size_t onLibrary = 0;
  std::string firstRefusal;
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    const Step &s = plan.steps[i];
    if (!s.cuda.conv.valid())
      continue;
    if (!fits(plan, s))
      return (error = where(s) + ": its conv record does not fit its operands",
              false);
    std::string key = keyOf(plan, s);
    auto it = byKey.find(key);
    if (it == byKey.end()) {
      Prepared p;
      std::string refusal;
      bool ok = prepare(s, p, refusal);
      prepared.push_back(p);
      if (!ok && required)
        return (error = where(s) + ": cuDNN " + refusal, false);
      if (!ok && firstRefusal.empty())
        firstRefusal = where(s) + ": " + refusal;
      it = byKey.emplace(key, ok ? (int)prepared.size() - 1 : -1).first;
      if (ok)
        workspace = std::max(workspace, p.workspace);
    }
    byStep[i] = it->second;
    onLibrary += it->second >= 0;
  }
  summary = std::to_string(onLibrary) + " of " + count + " through " +
            lib->describe() + ", " + std::to_string(byKey.size()) + " distinct";
  if (!firstRefusal.empty())
    summary += "; the rest on mpc's kernels (" + firstRefusal + ")";
  return true;
}

bool LibraryConvs::prepare(const Step &s, Prepared &p, std::string &why) {
  const LibraryConv &v = s.cuda.conv;
  DType t = plan->values[s.outputs[0]].dtype;
  int type = dataType(t);
  auto ok = [&](dnn::Status st, const char *what) {
    if (st != 0)
      why = std::string(what) + ": " + lib->statusName(st);
    return st == 0;
  };
  // Channels last: NHWC data and KRSC filters, cuDNN's tensor-core layout.
  int format = v.nhwc ? dnn::kNhwc : dnn::kNchw;
  int oh = (int)outSize(v.h, v.padH, v.r, v.strideH, v.dilH),
      ow = (int)outSize(v.w, v.padW, v.s, v.strideW, v.dilW);
  if (!ok(lib->createTensor(&p.x), "cudnnCreateTensorDescriptor") ||
      !ok(lib->setTensor4d(p.x, format, type, (int)v.n, (int)v.c,
                           (int)v.h, (int)v.w),
          "describing the input") ||
      !ok(lib->createTensor(&p.dy), "cudnnCreateTensorDescriptor") ||
      !ok(lib->setTensor4d(p.dy, format, type, (int)v.n, (int)v.k, oh, ow),
          "describing the output gradient") ||
      !ok(lib->createFilter(&p.filter), "cudnnCreateFilterDescriptor") ||
      !ok(lib->setFilter4d(p.filter, type, format, (int)v.k,
                           (int)(v.c / v.groups), (int)v.r, (int)v.s),
          "describing the filter") ||
      !ok(lib->createConv(&p.conv), "cudnnCreateConvolutionDescriptor") ||
      !ok(lib->setConv2d(p.conv, (int)v.padH, (int)v.padW, (int)v.strideH,
                         (int)v.strideW, (int)v.dilH, (int)v.dilW,
                         dnn::kCrossCorrelation, dnn::kFloat),
          "describing the convolution") ||
      !ok(lib->setConvGroups(p.conv, (int)v.groups), "setting the groups") ||
      !ok(lib->setConvMath(p.conv, t == DType::F32 ? dnn::kFmaMath
                                                   : dnn::kTensorOpMath),
          "setting the math type"))
    return false;
  if (biasOf(s) >= 0 &&
      (!ok(lib->createTensor(&p.bias), "cudnnCreateTensorDescriptor") ||
       !ok(lib->setTensor4d(p.bias, format, type, 1, (int)v.k, 1, 1),
           "describing the bias")))
    return false;
  // The fused call: Relu propagates NaN as mpc's relu does; without one,
  // IDENTITY, which cuDNN runs only with IMPLICIT_PRECOMP_GEMM.
  bool relu = s.cuda.fusedRelu;
  if (fusedForward(*plan, s) &&
      (!ok(lib->createActivation(&p.activation),
           "cudnnCreateActivationDescriptor") ||
       !ok(lib->setActivation(p.activation,
                              relu ? dnn::kActivationRelu
                                   : dnn::kActivationIdentity,
                              dnn::kPropagateNan, 0.0),
           "describing the activation")))
    return false;
  if (p.activation && !relu) {
    size_t bytes = 0;
    if (!ok(lib->forwardWorkspace(handle, p.x, p.filter, p.conv, p.dy,
                                  dnn::kFwdImplicitPrecompGemm, &bytes),
            "sizing the workspace"))
      return false;
    if (bytes > kMaxWorkspace)
      return why = "has no algorithm for this convolution", false;
    p.algo = dnn::kFwdImplicitPrecompGemm;
    p.workspace = bytes;
    return true;
  }
  // cuDNN's heuristics rank the algorithms; the first that runs within the
  // workspace limit is kept.
  dnn::AlgoPerf perf[8];
  int returned = 0;
  auto rank = [&] {
    switch (v.kind) {
    case LibraryConv::Forward:
      return lib->forwardAlgorithms(handle, p.x, p.filter, p.conv, p.dy, 8,
                                    &returned, perf);
    case LibraryConv::BackwardData:
      return lib->dataAlgorithms(handle, p.filter, p.dy, p.conv, p.x, 8,
                                 &returned, perf);
    default:
      return lib->filterAlgorithms(handle, p.x, p.dy, p.conv, p.filter, 8,
                                   &returned, perf);
    }
  };
  auto size = [&](int algo, size_t *bytes) {
    switch (v.kind) {
    case LibraryConv::Forward:
      return lib->forwardWorkspace(handle, p.x, p.filter, p.conv, p.dy, algo,
                                   bytes);
    case LibraryConv::BackwardData:
      return lib->dataWorkspace(handle, p.filter, p.dy, p.conv, p.x, algo,
                                bytes);
    default:
      return lib->filterWorkspace(handle, p.x, p.dy, p.conv, p.filter, algo,
                                  bytes);
    }
  };
  if (!ok(rank(), "ranking the algorithms"))
    return false;
  for (int i = 0; i < returned; ++i)
    if (perf[i].status == 0 && perf[i].memory <= kMaxWorkspace) {
      size_t bytes = 0;
      if (!ok(size(perf[i].algo, &bytes), "sizing the workspace"))
        return false;
      if (bytes > kMaxWorkspace)
        continue;
      p.algo = perf[i].algo;
      p.workspace = bytes;
      return true;
    }
  return why = "has no algorithm for this convolution", false;
}

bool LibraryConvs::enqueue(size_t i, unsigned long long in0,
                           unsigned long long in1, unsigned long long bias,
                           unsigned long long out, unsigned long long work,
                           std::string &error) const {
  const Prepared &p = prepared[byStep[i]];
  const Step &s = plan->steps[i];
  const float one = 1.0f, zero = 0.0f;
  void *ws = p.workspace ? (void *)work : nullptr;
  if (p.activation) { // y = act(conv + bias); z is y, weighted 0
    dnn::Status st = lib->biasActivationForward(
        handle, &one, p.x, (const void *)in0, p.filter, (const void *)in1,
        p.conv, p.algo, ws, p.workspace, &zero, p.dy, (const void *)out,
        p.bias, (const void *)bias, p.activation, p.dy, (void *)out);
    if (st != 0)
      error = where(s) + ": cuDNN: " + lib->statusName(st);
    return st == 0;
  }
  dnn::Status st =
      s.cuda.conv.kind == LibraryConv::Forward
          ? lib->forward(handle, &one, p.x, (const void *)in0, p.filter,
                         (const void *)in1, p.conv, p.algo, ws, p.workspace,
                         &zero, p.dy, (void *)out)
      : s.cuda.conv.kind == LibraryConv::BackwardData
          ? lib->backwardData(handle, &one, p.filter, (const void *)in1, p.dy,
                              (const void *)in0, p.conv, p.algo, ws,
                              p.workspace, &zero, p.x, (void *)out)
          : lib->backwardFilter(handle, &one, p.x, (const void *)in1, p.dy,
                                (const void *)in0, p.conv, p.algo, ws,
                                p.workspace, &zero, p.filter, (void *)out);
  if (st == 0 && p.bias) // y += bias, broadcast over images and positions
    st = lib->addTensor(handle, &one, p.bias, (const void *)bias, &one, p.dy,
                        (void *)out);
  if (st != 0)
    error = where(s) + ": cuDNN: " + lib->statusName(st);
  return st == 0;
}

} // namespace mpc::rt
