//===- FakeCudnn.cpp - cuDNN's convolutions on the host ---------------------===//
//
// libmpc-fake-cudnn.so exports the cuDNN 9 legacy entry points mpc's
// runtime uses (runtime/cuda/Cudnn.h), computing on the host memory the
// CUDA driver double (FakeCudaDriver.cpp) hands out: NCHW tensors,
// grouped 2-D cross-correlation with padding, strides and dilations, its
// data and filter gradients with FP32 accumulation and alpha/beta, and
// cudnnAddTensor's broadcast add (a [1, C, 1, 1] bias into NCHW), and
// cudnnConvolutionBiasActivationForward (alpha1 conv + alpha2 z + bias,
// then RELU or IDENTITY, rounded once; IDENTITY only with
// IMPLICIT_PRECOMP_GEMM, as cuDNN documents). Strict
// where cuDNN is: a gradient tensor whose size is not the one the
// convolution gives, mismatched types or channels, a missing workspace
// are CUDNN_STATUS_BAD_PARAM; MPC_FAKE_CUDNN_FAIL makes every call fail
// as a GPU fault would. Calls are enqueued on the driver double's
// stream (mpcFakeCudaEnqueue), so graph capture records them.
//
//===----------------------------------------------------------------------===//

#include "runtime/Half.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <vector>

namespace {

using Status = int;
constexpr Status kOk = 0, kBadParam = 3, kNotSupported = 9,
                 kExecutionFailed = 8;
constexpr int kFloat = 0, kHalf = 2, kBfloat16 = 9;
constexpr size_t kWorkspace = 4096; // what the first "algorithm" asks for

/// A 4-d tensor or filter; `nhwc` (CUDNN_TENSOR_NHWC, a filter KRSC)
/// moves c innermost.
struct Tensor {
  int type = -1, n = 0, c = 0, h = 0, w = 0;
  bool nhwc = false;
  int64_t at(int64_t in, int64_t ic, int64_t ih, int64_t iw) const {
    return nhwc ? ((in * h + ih) * w + iw) * c + ic
                : ((in * c + ic) * h + ih) * w + iw;
  }
  int64_t channel(int64_t i) const {
    return nhwc ? i % c : i / ((int64_t)h * w) % c;
  }
};
struct Conv {
  int padH = 0, padW = 0, u = 1, v = 1, dilH = 1, dilW = 1, groups = 1;
  int math = -1;
  bool set = false;
};
struct Activation {
  int mode = -1, nan = 0;
};
constexpr int kRelu = 1, kIdentity = 5, kImplicitPrecompGemm = 1;
struct Perf {
  int algo;
  Status status;
  float time;
  size_t memory;
  int determinism, mathType, reserved[3];
};

float load(int type, const void *p, int64_t i) {
  if (type == kFloat)
    return static_cast<const float *>(p)[i];
  uint16_t h = static_cast<const uint16_t *>(p)[i];
  return type == kHalf ? mpc::rt::halfToFloat(h) : mpc::rt::bf16ToFloat(h);
}
void store(int type, void *p, int64_t i, float v) {
  if (type == kFloat)
    static_cast<float *>(p)[i] = v;
  else
    static_cast<uint16_t *>(p)[i] =
        type == kHalf ? mpc::rt::floatToHalf(v) : mpc::rt::floatToBf16(v);
}

/// x, filter (as a Tensor: k, c per group, r, s), dy agree with `conv`.
bool consistent(const Tensor &x, const Tensor &f, const Conv &cv,
                const Tensor &dy) {
  auto out = [](int in, int pad, int k, int stride, int dil) {
    return (in + 2 * pad - dil * (k - 1) - 1) / stride + 1;
  };
  // One layout for all three, as cuDNN's NHWC kernels want.
  return cv.set && cv.math >= 0 && x.type >= 0 && x.type == f.type &&
         x.nhwc == f.nhwc && x.nhwc == dy.nhwc &&
         x.type == dy.type && x.n == dy.n && f.n == dy.c &&
         x.c == f.c * cv.groups && f.n % cv.groups == 0 &&
         dy.h == out(x.h, cv.padH, f.h, cv.u, cv.dilH) &&
         dy.w == out(x.w, cv.padW, f.w, cv.v, cv.dilW) && dy.h > 0 && dy.w > 0;
}

/// One convolution call's arguments.
struct Call {
  enum Kind { Forward, Data, Filter } kind;
  Tensor x, f, dy;
  Conv cv;
  const void *a, *b; // forward: x, w; data: w, dy; filter: x, dy
  void *out;
  float alpha, beta;
  // The fused forward: + alpha2 z (beta above) + bias[channel], then
  // `activation` (-1: none, the plain forward).
  const void *z = nullptr, *bias = nullptr;
  int activation = -1;
};

/// Visits every (image, output channel, output position, input channel in
/// the group, kernel tap) with its x and w indices.
template <typename F> void forEachTap(const Call &k, F f) {
  int cg = k.f.c, mg = k.f.n / k.cv.groups;
  for (int b = 0; b < k.x.n; ++b)
    for (int m = 0; m < k.f.n; ++m) {
      int g = m / mg;
      for (int oh = 0; oh < k.dy.h; ++oh)
        for (int ow = 0; ow < k.dy.w; ++ow) {
          int64_t dyi = k.dy.at(b, m, oh, ow);
          for (int ci = 0; ci < cg; ++ci)
            for (int r = 0; r < k.f.h; ++r)
              for (int s = 0; s < k.f.w; ++s) {
                int ih = oh * k.cv.u - k.cv.padH + r * k.cv.dilH,
                    iw = ow * k.cv.v - k.cv.padW + s * k.cv.dilW;
                if (ih < 0 || ih >= k.x.h || iw < 0 || iw >= k.x.w)
                  continue;
                int64_t xi = k.x.at(b, g * cg + ci, ih, iw),
                        wi = k.f.at(m, ci, r, s);
                f(dyi, xi, wi);
              }
        }
    }
}

void compute(void *arg) {
  const Call &k = *static_cast<const Call *>(arg);
  const Tensor &o = k.kind == Call::Forward ? k.dy
                    : k.kind == Call::Data  ? k.x
                                            : k.f;
  std::vector<float> acc((size_t)o.n * o.c * o.h * o.w, 0.0f);
  int t = k.x.type;
  forEachTap(k, [&](int64_t dyi, int64_t xi, int64_t wi) {
    if (k.kind == Call::Forward) {
      acc[dyi] += load(t, k.a, xi) * load(t, k.b, wi);
      return;
    }
    float g = load(t, k.b, dyi);
    if (k.kind == Call::Data)
      acc[xi] += g * load(t, k.a, wi);
    else
      acc[wi] += g * load(t, k.a, xi);
  });
  if (k.activation >= 0) { // one rounding after the bias and Relu
    for (size_t i = 0; i < acc.size(); ++i) {
      float v = k.alpha * acc[i] +
                (k.beta != 0 ? k.beta * load(t, k.z, i) : 0.0f) +
                load(t, k.bias, o.channel((int64_t)i));
      store(t, k.out, i, k.activation == kRelu && v < 0.0f ? 0.0f : v);
    }
    return;
  }
  for (size_t i = 0; i < acc.size(); ++i)
    store(t, k.out, i,
          k.alpha * acc[i] + (k.beta != 0 ? k.beta * load(t, k.out, i) : 0.0f));
}

/// cudnnAddTensor's arguments: c = alpha a + beta c, a [1, C, 1, 1].
struct Add {
  Tensor a, c;
  const void *pa;
  void *pc;
  float alpha, beta;
};

void add(void *arg) {
  const Add &k = *static_cast<const Add *>(arg);
  int64_t plane = (int64_t)k.c.h * k.c.w;
  for (int64_t i = 0; i < (int64_t)k.c.n * k.c.c * plane; ++i)
    store(k.c.type, k.pc, i,
          k.alpha * load(k.a.type, k.pa, k.c.channel(i)) +
              k.beta * load(k.c.type, k.pc, i));
}

template <typename C> Status enqueue(void *stream, C *call,
                                     void (*run)(void *)) {
  if (std::getenv("MPC_FAKE_CUDNN_FAIL")) // a library failing at run time
    return delete call, kExecutionFailed;
  using Enqueue = int (*)(void *, void (*)(void *), void *);
  const char *driver = std::getenv("MPC_CUDA_DRIVER");
  void *lib = driver ? dlopen(driver, RTLD_NOW | RTLD_NOLOAD) : nullptr;
  auto fn = lib ? (Enqueue)dlsym(lib, "mpcFakeCudaEnqueue") : nullptr;
  if (!fn)
    return delete call, kNotSupported;
  return fn(stream, run, call) == 0 ? kOk : kBadParam;
}

struct Handle {
  void *stream = nullptr;
};

/// The "algorithms" for a convolution of x, filter f and dy (its output or
/// output gradient), once they agree.
Status perf(const void *x, const void *f, const void *conv, const void *dy,
            int requested, int *returned, Perf *results) {
  if (!consistent(*(const Tensor *)x, *(const Tensor *)f, *(const Conv *)conv,
                  *(const Tensor *)dy) ||
      requested < 1 || !returned || !results)
    return kBadParam;
  results[0] = Perf{};
  results[0].algo = 1; // the one that needs a workspace
  results[0].memory = kWorkspace;
  *returned = 1;
  if (requested > 1) {
    results[1] = Perf{};
    results[1].algo = 0;
    *returned = 2;
  }
  return kOk;
}

} // namespace

extern "C" {

size_t cudnnGetVersion() { return 91900; }
const char *cudnnGetErrorString(Status s) {
  return s == kOk         ? "CUDNN_STATUS_SUCCESS"
         : s == kBadParam ? "CUDNN_STATUS_BAD_PARAM"
         : s == kExecutionFailed ? "CUDNN_STATUS_EXECUTION_FAILED"
                          : "CUDNN_STATUS_NOT_SUPPORTED";
}
Status cudnnCreate(void **h) { return *h = new Handle, kOk; }
Status cudnnDestroy(void *h) { return delete (Handle *)h, kOk; }
Status cudnnSetStream(void *h, void *s) {
  return static_cast<Handle *>(h)->stream = s, kOk;
}

Status cudnnCreateTensorDescriptor(void **t) { return *t = new Tensor, kOk; }
Status cudnnSetTensor4dDescriptor(void *t, int format, int type, int n, int c,
                                  int h, int w) {
  if ((format != 0 && format != 1) ||
      (type != kFloat && type != kHalf && type != kBfloat16) || n < 1 ||
      c < 1 || h < 1 || w < 1)
    return kBadParam;
  *static_cast<Tensor *>(t) = Tensor{type, n, c, h, w, format == 1};
  return kOk;
}
Status cudnnDestroyTensorDescriptor(void *t) { return delete (Tensor *)t, kOk; }
Status cudnnCreateFilterDescriptor(void **f) { return *f = new Tensor, kOk; }
Status cudnnSetFilter4dDescriptor(void *f, int type, int format, int k, int c,
                                  int h, int w) {
  return cudnnSetTensor4dDescriptor(f, format, type, k, c, h, w);
}
Status cudnnDestroyFilterDescriptor(void *f) { return delete (Tensor *)f, kOk; }

Status cudnnCreateConvolutionDescriptor(void **c) { return *c = new Conv, kOk; }
Status cudnnSetConvolution2dDescriptor(void *c, int padH, int padW, int u,
                                       int v, int dilH, int dilW, int mode,
                                       int computeType) {
  if (padH < 0 || padW < 0 || u < 1 || v < 1 || dilH < 1 || dilW < 1 ||
      mode != 1 || computeType != kFloat)
    return kBadParam;
  Conv &cv = *static_cast<Conv *>(c);
  cv.padH = padH, cv.padW = padW, cv.u = u, cv.v = v, cv.dilH = dilH,
  cv.dilW = dilW, cv.set = true;
  return kOk;
}
Status cudnnSetConvolutionGroupCount(void *c, int groups) {
  if (groups < 1)
    return kBadParam;
  return static_cast<Conv *>(c)->groups = groups, kOk;
}
Status cudnnSetConvolutionMathType(void *c, int math) {
  if (math < 0 || math > 3)
    return kBadParam;
  return static_cast<Conv *>(c)->math = math, kOk;
}
Status cudnnDestroyConvolutionDescriptor(void *c) { return delete (Conv *)c, kOk; }

Status cudnnGetConvolutionForwardAlgorithm_v7(void *, void *x, void *w,
                                              void *conv, void *y,
                                              int requested, int *returned,
                                              Perf *results) {
  return perf(x, w, conv, y, requested, returned, results);
}
Status cudnnGetConvolutionForwardWorkspaceSize(void *, void *, void *, void *,
                                               void *, int algo,
                                               size_t *bytes) {
  return *bytes = algo == 1 ? kWorkspace : 0, kOk;
}
Status cudnnConvolutionForward(void *h, const void *alpha, void *x,
                               const void *xp, void *w, const void *wp,
                               void *conv, int algo, void *ws, size_t wsBytes,
                               const void *beta, void *y, void *yp) {
  if (!consistent(*(Tensor *)x, *(Tensor *)w, *(Conv *)conv, *(Tensor *)y) ||
      (algo == 1 && (!ws || wsBytes < kWorkspace)) || !xp || !wp || !yp)
    return kBadParam;
  return enqueue(static_cast<Handle *>(h)->stream,
                 new Call{Call::Forward, *(Tensor *)x, *(Tensor *)w,
                          *(Tensor *)y, *(Conv *)conv, xp, wp, yp,
                          *(const float *)alpha, *(const float *)beta},
                 compute);
}
Status cudnnCreateActivationDescriptor(void **a) {
  return *a = new Activation, kOk;
}
Status cudnnSetActivationDescriptor(void *a, int mode, int nan, double) {
  if (mode != kRelu && mode != kIdentity) // what the fake implements
    return kNotSupported;
  *static_cast<Activation *>(a) = Activation{mode, nan};
  return kOk;
}
Status cudnnDestroyActivationDescriptor(void *a) {
  return delete (Activation *)a, kOk;
}
Status cudnnConvolutionBiasActivationForward(
    void *h, const void *alpha1, void *x, const void *xp, void *w,
    const void *wp, void *conv, int algo, void *ws, size_t wsBytes,
    const void *alpha2, void *z, const void *zp, void *bias, const void *bp,
    void *act, void *y, void *yp) {
  const Tensor &ty = *(Tensor *)y, &tz = *(Tensor *)z, &tb = *(Tensor *)bias;
  const Activation &a = *(Activation *)act;
  if (!consistent(*(Tensor *)x, *(Tensor *)w, *(Conv *)conv, ty) ||
      (algo == 1 && (!ws || wsBytes < kWorkspace)) || !xp || !wp || !yp ||
      !zp || !bp || tz.type != ty.type || tz.n != ty.n || tz.c != ty.c ||
      tz.h != ty.h || tz.w != ty.w || tb.type != ty.type || tb.n != 1 ||
      tb.c != ty.c || tb.h != 1 || tb.w != 1 || a.mode < 0)
    return kBadParam;
  if (a.mode == kIdentity && algo != kImplicitPrecompGemm)
    return kNotSupported;
  Call *call = new Call{Call::Forward, *(Tensor *)x, *(Tensor *)w, ty,
                        *(Conv *)conv, xp, wp, yp, *(const float *)alpha1,
                        *(const float *)alpha2};
  call->z = zp, call->bias = bp, call->activation = a.mode;
  return enqueue(static_cast<Handle *>(h)->stream, call, compute);
}
Status cudnnAddTensor(void *h, const void *alpha, void *a, const void *ap,
                      const void *beta, void *c, void *cp) {
  const Tensor &ta = *(Tensor *)a, &tc = *(Tensor *)c;
  // The broadcast mpc asks for: a per-channel [1, C, 1, 1] of C's type.
  if (ta.type != tc.type || ta.n != 1 || ta.c != tc.c || ta.h != 1 ||
      ta.w != 1 || !ap || !cp)
    return kBadParam;
  return enqueue(static_cast<Handle *>(h)->stream,
                 new Add{ta, tc, ap, cp, *(const float *)alpha,
                         *(const float *)beta},
                 add);
}

Status cudnnGetConvolutionBackwardDataAlgorithm_v7(void *, void *w, void *dy,
                                                   void *conv, void *dx,
                                                   int requested, int *returned,
                                                   Perf *results) {
  return perf(dx, w, conv, dy, requested, returned, results);
}
Status cudnnGetConvolutionBackwardFilterAlgorithm_v7(void *, void *x, void *dy,
                                                     void *conv, void *dw,
                                                     int requested,
                                                     int *returned,
                                                     Perf *results) {
  return perf(x, dw, conv, dy, requested, returned, results);
}
Status cudnnGetConvolutionBackwardDataWorkspaceSize(void *, void *, void *,
                                                    void *, void *, int algo,
                                                    size_t *bytes) {
  return *bytes = algo == 1 ? kWorkspace : 0, kOk;
}
Status cudnnGetConvolutionBackwardFilterWorkspaceSize(void *, void *, void *,
                                                      void *, void *, int algo,
                                                      size_t *bytes) {
  return *bytes = algo == 1 ? kWorkspace : 0, kOk;
}

Status cudnnConvolutionBackwardData(void *h, const void *alpha, void *w,
                                    const void *wp, void *dy, const void *dyp,
                                    void *conv, int algo, void *ws,
                                    size_t wsBytes, const void *beta, void *dx,
                                    void *dxp) {
  if (!consistent(*(Tensor *)dx, *(Tensor *)w, *(Conv *)conv, *(Tensor *)dy) ||
      (algo == 1 && (!ws || wsBytes < kWorkspace)) || !wp || !dyp || !dxp)
    return kBadParam;
  return enqueue(static_cast<Handle *>(h)->stream,
                 new Call{Call::Data, *(Tensor *)dx, *(Tensor *)w, *(Tensor *)dy,
                          *(Conv *)conv, wp, dyp, dxp, *(const float *)alpha,
                          *(const float *)beta},
                 compute);
}
Status cudnnConvolutionBackwardFilter(void *h, const void *alpha, void *x,
                                      const void *xp, void *dy, const void *dyp,
                                      void *conv, int algo, void *ws,
                                      size_t wsBytes, const void *beta,
                                      void *dw, void *dwp) {
  if (!consistent(*(Tensor *)x, *(Tensor *)dw, *(Conv *)conv, *(Tensor *)dy) ||
      (algo == 1 && (!ws || wsBytes < kWorkspace)) || !xp || !dyp || !dwp)
    return kBadParam;
  return enqueue(static_cast<Handle *>(h)->stream,
                 new Call{Call::Filter, *(Tensor *)x, *(Tensor *)dw, *(Tensor *)dy,
                          *(Conv *)conv, xp, dyp, dwp, *(const float *)alpha,
                          *(const float *)beta},
                 compute);
}

} // extern "C"
