//===- FakeCublasLt.cpp - cuBLASLt's matmul API on the host -----------------===//
//
// libmpc-fake-cublaslt.so exports the cuBLASLt entry points mpc's runtime
// uses (runtime/cuda/CublasLt.h), computing on the host memory the CUDA
// driver double (FakeCudaDriver.cpp) hands out as device memory. Pointed
// at with MPC_CUBLASLT, it lets the tests run the GEMM steps through the
// library path without a GPU: column-major layouts with their leading
// dimensions, transposes, strided batches, alpha/beta, the C matrix, and
// the DEFAULT/RELU/BIAS/RELU_BIAS epilogues, BGRADB (the bias gradient:
// op(B)'s sums over k, as Transformer Engine's weight-gradient GEMM asks
// for it: B transposed, one batch) and BGRADA (op(A)'s sums over k: A not
// transposed, one batch), GELU/GELU_BIAS (D = gelu(Y), the tanh
// approximation), GELU_AUX/GELU_AUX_BIAS (the same, aux = Y) and DGELU
// (D = gelu'(aux) * Y), the GELU from
// mpc's own formulas (runtime/Formulas.h), RELU_AUX/RELU_AUX_BIAS (aux: a
// bit per element of D, set where the FP32 result before rounding is
// positive, column j's bits from bit j * ld) and DRELU (D = Y where the
// bit is set, else 0), with FP32 accumulation. It is
// strict where cuBLASLt is: attribute sizes, operand shapes and types that
// do not agree are INVALID_VALUE, so a layout mistake in mpc fails a test
// rather than the first GPU run. MPC_FAKE_CUBLASLT_FAIL makes every matmul
// fail as a GPU fault would; MPC_FAKE_CUBLASLT_NO_BGRAD makes the
// heuristic find no algorithm for BGRADA/BGRADB, MPC_FAKE_CUBLASLT_NO_GELU
// none for the GELU epilogues, MPC_FAKE_CUBLASLT_NO_RELU_AUX none for
// RELU_AUX[_BIAS] and MPC_FAKE_CUBLASLT_NO_DRELU none for DRELU. A
// matmul is enqueued on the driver
// double's stream (mpcFakeCudaEnqueue), so graph capture records it and
// each replay computes it again.
//
//===----------------------------------------------------------------------===//

#include "runtime/Formulas.h"
#include "runtime/Half.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <initializer_list>
#include <utility>
#include <vector>

namespace {

using Status = int;
constexpr Status kOk = 0, kInvalidValue = 7, kExecutionFailed = 13,
                 kNotSupported = 15;
constexpr int kR16F = 2, kR16BF = 14, kR32F = 0, kCompute32F = 68,
              kCompute32FFastTf32 = 77;
constexpr uint32_t kGelu = 32, kGeluBias = 36, kGeluAux = 160,
                   kGeluAuxBias = 164, kDGelu = 192,
                   kReluAux = 130, kReluAuxBias = 134, kDRelu = 136,
                   kBgradA = 256, kBgradB = 512;
constexpr uint64_t kAlgoMark = 0x6d70632d6c74ull; // "mpc-lt"
constexpr size_t kWorkspace = 4096; // what every "algorithm" asks for

struct Desc {
  bool tf32 = false; // FAST_TF32: operands rounded to a 10-bit mantissa
  int32_t transA = 0, transB = 0;
  uint32_t epilogue = 1;
  const void *bias = nullptr;
  int32_t biasType = -1;
  void *aux = nullptr;
  int64_t auxLd = 0;
};

/// The epilogues with an aux matrix (the ReLU ones: a bit mask), and all
/// the GELU ones.
bool maskEpilogue(uint32_t e) {
  return e == kReluAux || e == kReluAuxBias || e == kDRelu;
}
bool auxEpilogue(uint32_t e) {
  return e == kGeluAux || e == kGeluAuxBias || e == kDGelu || maskEpilogue(e);
}
bool biasEpilogue(uint32_t e) {
  return e == 4 || e == 6 || e == kGeluAuxBias || e == kGeluBias ||
         e == kReluAuxBias;
}
bool geluEpilogue(uint32_t e) {
  return (auxEpilogue(e) && !maskEpilogue(e)) || e == kGelu || e == kGeluBias;
}
struct Layout {
  int type;
  uint64_t rows, cols;
  int64_t ld;
  int32_t batch = 1;
  int64_t stride = 0;
};
struct Pref {
  uint64_t maxWorkspace = 0;
};
struct Algo {
  uint64_t data[8];
};
struct HeuristicResult {
  Algo algo;
  size_t workspaceSize;
  Status state;
  float wavesCount;
  int reserved[4];
};

bool knownType(int t) { return t == kR16F || t == kR16BF || t == kR32F; }

float load(int type, const void *p, int64_t i) {
  if (type == kR32F)
    return static_cast<const float *>(p)[i];
  uint16_t h = static_cast<const uint16_t *>(p)[i];
  return type == kR16F ? mpc::rt::halfToFloat(h) : mpc::rt::bf16ToFloat(h);
}
void store(int type, void *p, int64_t i, float v) {
  if (type == kR32F)
    static_cast<float *>(p)[i] = v;
  else
    static_cast<uint16_t *>(p)[i] =
        type == kR16F ? mpc::rt::floatToHalf(v) : mpc::rt::floatToBf16(v);
}

/// op(L) as a rows x cols matrix.
struct View {
  const Layout &l;
  const void *p;
  bool trans;
  uint64_t rows() const { return trans ? l.cols : l.rows; }
  uint64_t cols() const { return trans ? l.rows : l.cols; }
  float at(int32_t b, uint64_t r, uint64_t c) const {
    if (trans)
      std::swap(r, c);
    return load(l.type, p, b * l.stride + (int64_t)c * l.ld + (int64_t)r);
  }
};

/// Whether the operands agree with each other and with cuBLASLt's rules.
bool consistent(const Desc &d, const Layout &a, const Layout &b,
                const Layout &c, const Layout &o) {
  View va{a, nullptr, d.transA != 0}, vb{b, nullptr, d.transB != 0};
  bool bgradA = d.epilogue == kBgradA, bgradB = d.epilogue == kBgradB;
  bool bias = biasEpilogue(d.epilogue) || bgradA || bgradB;
  bool gelu = geluEpilogue(d.epilogue), aux = auxEpilogue(d.epilogue),
       mask = maskEpilogue(d.epilogue);
  bool layoutsOk = true;
  for (const Layout *l : {&a, &b, &c, &o})
    layoutsOk &= knownType(l->type) && l->ld >= (int64_t)l->rows &&
                 l->batch >= 1 && l->stride >= 0;
  return layoutsOk && a.type == b.type && c.type == o.type &&
         va.rows() == o.rows && vb.cols() == o.cols && va.cols() == vb.rows() &&
         c.rows == o.rows && c.cols == o.cols && a.batch == o.batch &&
         b.batch == o.batch && c.batch == o.batch &&
         (d.epilogue == 1 || d.epilogue == 2 || bias || gelu || mask) &&
         (!aux || (d.auxLd >= (int64_t)o.rows &&
                   d.auxLd % (mask ? 128 : 8) == 0)) &&
         (!gelu || o.batch == 1) && (!mask || o.batch == 1) &&
         (!bgradB || (d.transB != 0 && o.batch == 1)) &&
         (!bgradA || (d.transA == 0 && o.batch == 1)) &&
         (!bias || d.biasType == o.type) &&
         (a.type == kR32F ? o.type == kR32F : !d.tf32);
}

/// One matmul's arguments, read when it is called (host pointer mode).
struct Call {
  Desc desc;
  Layout a, b, c, d;
  const void *pa, *pb, *pc;
  void *pd;
  float alpha, beta;
};

/// An FP32 value rounded to TF32 (8-bit exponent, 10-bit mantissa; to
/// nearest, ties to even), as tensor cores read FAST_TF32 operands.
float tf32(float v) {
  uint32_t u;
  std::memcpy(&u, &v, sizeof u);
  if ((u & 0x7f800000u) != 0x7f800000u) // finite
    u = (u + 0xfffu + ((u >> 13) & 1u)) & ~0x1fffu;
  std::memcpy(&v, &u, sizeof v);
  return v;
}

void compute(void *arg) {
  const Call &k = *static_cast<const Call *>(arg);
  View a{k.a, k.pa, k.desc.transA != 0}, b{k.b, k.pb, k.desc.transB != 0};
  uint32_t e = k.desc.epilogue;
  bool bias = biasEpilogue(e);
  bool relu = e == 2 || e == 6 || e == kReluAux || e == kReluAuxBias;
  bool writeMask = e == kReluAux || e == kReluAuxBias, readMask = e == kDRelu;
  auto *bits = static_cast<uint8_t *>(k.desc.aux);
  bool gelu = geluEpilogue(e) && e != kDGelu, dgelu = e == kDGelu,
       keep = e == kGeluAux || e == kGeluAuxBias; // the GELU's input to aux
  if (k.desc.epilogue == kBgradB) // into the bias pointer, D's type
    for (uint64_t j = 0; j < k.d.cols; ++j) {
      float sum = 0;
      for (uint64_t p = 0; p < b.rows(); ++p)
        sum += b.at(0, p, j);
      store(k.d.type, const_cast<void *>(k.desc.bias), (int64_t)j, sum);
    }
  if (k.desc.epilogue == kBgradA) // the sums over k of op(A): D's rows
    for (uint64_t i = 0; i < k.d.rows; ++i) {
      float sum = 0;
      for (uint64_t p = 0; p < a.cols(); ++p)
        sum += a.at(0, i, p);
      store(k.d.type, const_cast<void *>(k.desc.bias), (int64_t)i, sum);
    }
  // Each batch's op(A) rows and op(B) columns as FP32 (TF32-rounded where
  // asked), converted once rather than at every product.
  uint64_t depth = a.cols();
  std::vector<float> rowsA(k.d.rows * depth), colsB(k.d.cols * depth);
  auto operand = [&](float v) { return k.desc.tf32 ? tf32(v) : v; };
  for (int32_t z = 0; z < k.d.batch; ++z) {
    for (uint64_t i = 0; i < k.d.rows; ++i)
      for (uint64_t p = 0; p < depth; ++p)
        rowsA[i * depth + p] = operand(a.at(z, i, p));
    for (uint64_t j = 0; j < k.d.cols; ++j)
      for (uint64_t p = 0; p < depth; ++p)
        colsB[j * depth + p] = operand(b.at(z, p, j));
    for (uint64_t j = 0; j < k.d.cols; ++j)
      for (uint64_t i = 0; i < k.d.rows; ++i) {
        const float *ra = &rowsA[i * depth], *cb = &colsB[j * depth];
        float acc = 0;
        for (uint64_t p = 0; p < depth; ++p)
          acc += ra[p] * cb[p];
        float v = k.alpha * acc;
        if (k.beta != 0)
          v += k.beta * load(k.c.type, k.pc,
                             z * k.c.stride + (int64_t)j * k.c.ld + i);
        if (bias)
          v += load(k.d.type, k.desc.bias, (int64_t)i);
        int64_t at = (int64_t)j * k.desc.auxLd + (int64_t)i;
        uint8_t bit = (uint8_t)(1u << (at & 7));
        if (writeMask)
          bits[at >> 3] = v > 0 ? bits[at >> 3] | bit : bits[at >> 3] & ~bit;
        if (readMask && !(bits[at >> 3] & bit))
          v = 0;
        if (relu)
          v = v > 0 ? v : 0;
        if (keep)
          store(k.d.type, k.desc.aux, at, v);
        if (gelu)
          v = mpc::formulas::mpc_gelu_tanh(v);
        if (dgelu)
          v = mpc::formulas::mpc_gelu_tanh_grad(v, load(k.d.type, k.desc.aux, at));
        store(k.d.type, k.pd, z * k.d.stride + (int64_t)j * k.d.ld + i, v);
      }
  }
}

template <typename T> Status setValue(T &field, const void *buf, size_t size) {
  if (!buf || size != sizeof(T))
    return kInvalidValue;
  std::memcpy(&field, buf, sizeof(T));
  return kOk;
}

} // namespace

extern "C" {

size_t cublasLtGetVersion() { return 130000; }
const char *cublasLtGetStatusString(Status s) {
  return s == kOk             ? "the operation completed successfully"
         : s == kInvalidValue ? "an invalid value was used as an argument"
         : s == kNotSupported ? "the functionality requested is not supported"
         : s == kExecutionFailed ? "the GPU program failed to execute"
                              : "an unknown cuBLAS status";
}
Status cublasLtCreate(void **h) { return *h = new int(0), kOk; }
Status cublasLtDestroy(void *h) { return delete (int *)h, kOk; }

Status cublasLtMatmulDescCreate(void **d, int compute, int scale) {
  if ((compute != kCompute32F && compute != kCompute32FFastTf32) ||
      scale != kR32F)
    return kNotSupported;
  Desc *desc = new Desc;
  desc->tf32 = compute == kCompute32FFastTf32;
  return *d = desc, kOk;
}
Status cublasLtMatmulDescSetAttribute(void *h, int attr, const void *buf,
                                      size_t size) {
  Desc &d = *static_cast<Desc *>(h);
  switch (attr) {
  case 3: return setValue(d.transA, buf, size);
  case 4: return setValue(d.transB, buf, size);
  case 7: return setValue(d.epilogue, buf, size);
  case 8: return setValue(d.bias, buf, size);
  case 11: return setValue(d.aux, buf, size);
  case 12: return setValue(d.auxLd, buf, size);
  case 26: return setValue(d.biasType, buf, size);
  default: return kInvalidValue;
  }
}
Status cublasLtMatmulDescDestroy(void *d) { return delete (Desc *)d, kOk; }

Status cublasLtMatrixLayoutCreate(void **l, int type, uint64_t rows,
                                  uint64_t cols, int64_t ld) {
  if (!knownType(type))
    return kNotSupported;
  return *l = new Layout{type, rows, cols, ld}, kOk;
}
Status cublasLtMatrixLayoutSetAttribute(void *h, int attr, const void *buf,
                                        size_t size) {
  Layout &l = *static_cast<Layout *>(h);
  switch (attr) {
  case 5: return setValue(l.batch, buf, size);
  case 6: return setValue(l.stride, buf, size);
  default: return kInvalidValue;
  }
}
Status cublasLtMatrixLayoutDestroy(void *l) { return delete (Layout *)l, kOk; }

Status cublasLtMatmulPreferenceCreate(void **p) { return *p = new Pref, kOk; }
Status cublasLtMatmulPreferenceSetAttribute(void *h, int attr, const void *buf,
                                            size_t size) {
  if (attr != 1)
    return kInvalidValue;
  return setValue(static_cast<Pref *>(h)->maxWorkspace, buf, size);
}
Status cublasLtMatmulPreferenceDestroy(void *p) { return delete (Pref *)p, kOk; }

Status cublasLtMatmulAlgoGetHeuristic(void *, void *desc, void *a, void *b,
                                      void *c, void *d, void *pref,
                                      int requested, HeuristicResult *results,
                                      int *returned) {
  if (requested < 1 || !results || !returned)
    return kInvalidValue;
  *returned = 0;
  if (!consistent(*(Desc *)desc, *(Layout *)a, *(Layout *)b, *(Layout *)c,
                  *(Layout *)d))
    return kInvalidValue;
  if (static_cast<Pref *>(pref)->maxWorkspace < kWorkspace ||
      ((static_cast<Desc *>(desc)->epilogue == kBgradA ||
        static_cast<Desc *>(desc)->epilogue == kBgradB) &&
       std::getenv("MPC_FAKE_CUBLASLT_NO_BGRAD")) ||
      (geluEpilogue(static_cast<Desc *>(desc)->epilogue) &&
       std::getenv("MPC_FAKE_CUBLASLT_NO_GELU")) ||
      ((static_cast<Desc *>(desc)->epilogue == kReluAux ||
        static_cast<Desc *>(desc)->epilogue == kReluAuxBias) &&
       std::getenv("MPC_FAKE_CUBLASLT_NO_RELU_AUX")) ||
      (static_cast<Desc *>(desc)->epilogue == kDRelu &&
       std::getenv("MPC_FAKE_CUBLASLT_NO_DRELU")))
    return kNotSupported;
  results[0] = HeuristicResult{};
  results[0].algo.data[0] = kAlgoMark;
  results[0].workspaceSize = kWorkspace;
  results[0].wavesCount = 1;
  *returned = 1;
  return kOk;
}

Status cublasLtMatmul(void *, void *desc, const void *alpha, const void *pa,
                      void *a, const void *pb, void *b, const void *beta,
                      const void *pc, void *c, void *pd, void *d,
                      const void *algo, void *workspace, size_t workspaceBytes,
                      void *stream) {
  const Desc &ds = *static_cast<Desc *>(desc);
  if (std::getenv("MPC_FAKE_CUBLASLT_FAIL")) // a library failing at run time
    return kExecutionFailed;
  if (!consistent(ds, *(Layout *)a, *(Layout *)b, *(Layout *)c, *(Layout *)d) ||
      !algo || static_cast<const Algo *>(algo)->data[0] != kAlgoMark ||
      !workspace || workspaceBytes < kWorkspace || !pa || !pb || !pd ||
      ((biasEpilogue(ds.epilogue) || ds.epilogue == kBgradB ||
        ds.epilogue == kBgradA) &&
       !ds.bias) ||
      (auxEpilogue(ds.epilogue) && !ds.aux))
    return kInvalidValue;
  auto *call = new Call{ds,  *(Layout *)a, *(Layout *)b, *(Layout *)c,
                        *(Layout *)d, pa, pb, pc, pd,
                        *(const float *)alpha, *(const float *)beta};
  if (call->beta != 0 && !pc)
    return delete call, kInvalidValue;
  // On the driver double's stream (recorded while it captures); the call
  // lives as long as any graph may replay it.
  using Enqueue = int (*)(void *, void (*)(void *), void *);
  const char *driver = std::getenv("MPC_CUDA_DRIVER");
  void *lib = driver ? dlopen(driver, RTLD_NOW | RTLD_NOLOAD) : nullptr;
  auto enqueue = lib ? (Enqueue)dlsym(lib, "mpcFakeCudaEnqueue") : nullptr;
  if (!enqueue)
    return kNotSupported; // only the driver double's memory is host memory
  return enqueue(stream, compute, call) == 0 ? kOk : kInvalidValue;
}

} // extern "C"
