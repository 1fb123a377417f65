//===- Elementwise.cpp - unary, binary and variadic elementwise kernels ---===//
//
// Numerics contract: low-precision elements are widened to FP32 exactly,
// computed in FP32, and rounded once (to nearest even) on store.
//
//===----------------------------------------------------------------------===//

#include "runtime/Formulas.h"
#include "runtime/Kernel.h"
#include "runtime/Parallel.h"
#include "runtime/kernels/Broadcast.h"

#include <cmath>
#include <cstring>
#include <limits>

namespace mpc::rt {
namespace {

constexpr int64_t kGrain = 1 << 14;

template <typename F> void unaryFloat(KernelContext &c, F f) {
  const Tensor &x = c.in(0);
  Tensor &y = c.output(0);
  if (x.dtype() == DType::F32) {
    const float *xp = x.data<float>();
    float *yp = y.data<float>();
    parallelFor(x.size(), kGrain, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i)
        yp[i] = f(xp[i]);
    });
    return;
  }
  parallelFor(x.size(), kGrain, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i)
      y.setFloat(i, f(x.getFloat(i)));
  });
}

/// Float ops use `f`, integer ones `g`.
template <typename F, typename G>
void unaryNumeric(KernelContext &c, F f, G g) {
  if (isFloat(c.in(0).dtype()))
    return unaryFloat(c, f);
  const Tensor &x = c.in(0);
  Tensor &y = c.output(0);
  for (int64_t i = 0; i < x.size(); ++i)
    y.setInt(i, g(x.getInt(i)));
}

float attrF(KernelContext &c, const char *name, double dflt) {
  return (float)c.step.getFloat(name, dflt);
}

// Float arithmetic comes from runtime/Formulas.h, shared with the CUDA
// kernels; only integer paths and data movement are written here.
#define MPC_UNARY(NAME, FORMULA)                                               \
  void NAME(KernelContext &c) {                                                \
    unaryFloat(c, [](float x) { return formulas::FORMULA(x); });               \
  }
MPC_UNARY(expK, mpc_exp)
MPC_UNARY(logK, mpc_log)
MPC_UNARY(sqrtK, mpc_sqrt)
MPC_UNARY(reciprocalK, mpc_reciprocal)
MPC_UNARY(tanhK, mpc_tanh)
MPC_UNARY(sigmoidK, mpc_sigmoid)
MPC_UNARY(erfK, mpc_erf)
MPC_UNARY(sinK, mpc_sin)
MPC_UNARY(cosK, mpc_cos)
MPC_UNARY(tanK, mpc_tan)
MPC_UNARY(asinK, mpc_asin)
MPC_UNARY(acosK, mpc_acos)
MPC_UNARY(sinhK, mpc_sinh)
MPC_UNARY(coshK, mpc_cosh)
MPC_UNARY(asinhK, mpc_asinh)
MPC_UNARY(acoshK, mpc_acosh)
MPC_UNARY(atanhK, mpc_atanh)
MPC_UNARY(softplusK, mpc_softplus)
MPC_UNARY(softsignK, mpc_softsign)
MPC_UNARY(floorK, mpc_floor)
MPC_UNARY(ceilK, mpc_ceil)
MPC_UNARY(roundK, mpc_round)
MPC_UNARY(hardSwishK, mpc_hard_swish)
MPC_UNARY(mishK, mpc_mish)
MPC_UNARY(atanK, mpc_atan)
#undef MPC_UNARY

void geluK(KernelContext &c) {
  if (c.step.getString("approximate", "none") == "tanh")
    return unaryFloat(c, [](float x) { return formulas::mpc_gelu_tanh(x); });
  unaryFloat(c, [](float x) { return formulas::mpc_gelu(x); });
}

void leakyReluK(KernelContext &c) {
  float a = attrF(c, "alpha", 0.01);
  unaryFloat(c, [a](float x) { return formulas::mpc_leaky_relu(x, a); });
}
void eluK(KernelContext &c) {
  float a = attrF(c, "alpha", 1.0);
  unaryFloat(c, [a](float x) { return formulas::mpc_elu(x, a); });
}
void celuK(KernelContext &c) {
  float a = attrF(c, "alpha", 1.0);
  unaryFloat(c, [a](float x) { return formulas::mpc_celu(x, a); });
}
void seluK(KernelContext &c) {
  float a = attrF(c, "alpha", 1.67326319217681884765625);
  float g = attrF(c, "gamma", 1.05070102214813232421875);
  unaryFloat(c, [a, g](float x) { return formulas::mpc_selu(x, a, g); });
}
void hardSigmoidK(KernelContext &c) {
  float a = attrF(c, "alpha", 0.2), b = attrF(c, "beta", 0.5);
  unaryFloat(c,
             [a, b](float x) { return formulas::mpc_hard_sigmoid(x, a, b); });
}
void thresholdedReluK(KernelContext &c) {
  float a = attrF(c, "alpha", 1.0);
  unaryFloat(c, [a](float x) { return formulas::mpc_thresholded_relu(x, a); });
}

void absK(KernelContext &c) {
  unaryNumeric(c, [](float x) { return formulas::mpc_abs(x); },
               [](int64_t x) { return x < 0 ? -x : x; });
}
void negK(KernelContext &c) {
  unaryNumeric(c, [](float x) { return -x; }, [](int64_t x) { return -x; });
}
void reluK(KernelContext &c) {
  unaryNumeric(c, [](float x) { return formulas::mpc_relu(x); },
               [](int64_t x) { return x < 0 ? 0 : x; });
}
void signK(KernelContext &c) {
  unaryNumeric(c, [](float x) { return formulas::mpc_sign(x); },
               [](int64_t x) -> int64_t { return (x > 0) - (x < 0); });
}

void notK(KernelContext &c) {
  const Tensor &x = c.in(0);
  Tensor &y = c.output(0);
  for (int64_t i = 0; i < x.size(); ++i)
    y.data<uint8_t>()[i] = !x.data<uint8_t>()[i];
}

void isNanK(KernelContext &c) {
  const Tensor &x = c.in(0);
  Tensor &y = c.output(0);
  for (int64_t i = 0; i < x.size(); ++i)
    y.data<uint8_t>()[i] = std::isnan(x.getFloat(i));
}

void isInfK(KernelContext &c) {
  bool neg = c.step.getInt("detect_negative", 1);
  bool pos = c.step.getInt("detect_positive", 1);
  const Tensor &x = c.in(0);
  Tensor &y = c.output(0);
  for (int64_t i = 0; i < x.size(); ++i) {
    float v = x.getFloat(i);
    y.data<uint8_t>()[i] = std::isinf(v) && ((v > 0 && pos) || (v < 0 && neg));
  }
}

void clipK(KernelContext &c) {
  const Tensor *lo = c.input(1), *hi = c.input(2);
  if (isFloat(c.in(0).dtype())) {
    float l = lo ? lo->getFloat(0) : -std::numeric_limits<float>::infinity();
    float h = hi ? hi->getFloat(0) : std::numeric_limits<float>::infinity();
    return unaryFloat(c,
                      [l, h](float x) { return formulas::mpc_clip(x, l, h); });
  }
  int64_t l = lo ? lo->getInt(0) : std::numeric_limits<int64_t>::min();
  int64_t h = hi ? hi->getInt(0) : std::numeric_limits<int64_t>::max();
  const Tensor &x = c.in(0);
  Tensor &y = c.output(0);
  for (int64_t i = 0; i < x.size(); ++i)
    y.setInt(i, std::min(std::max(x.getInt(i), l), h));
}

/// Float -> integer as a C cast would, with NaN and out-of-range defined.
int64_t floatToInt(float v, DType to) {
  if (std::isnan(v))
    return 0;
  double lo = to == DType::I32 ? -2147483648.0 : -9223372036854775808.0;
  double hi = to == DType::I32 ? 2147483647.0 : 9223372036854774784.0;
  return (int64_t)std::min(std::max((double)v, lo), hi);
}

void castK(KernelContext &c) {
  const Tensor &x = c.in(0);
  Tensor &y = c.output(0);
  DType to = y.dtype();
  for (int64_t i = 0; i < x.size(); ++i) {
    if (to == DType::I1)
      y.data<uint8_t>()[i] = isFloat(x.dtype()) ? x.getFloat(i) != 0
                                                : x.getInt(i) != 0;
    else if (isFloat(to))
      y.setFloat(i, isFloat(x.dtype()) ? x.getFloat(i) : (float)x.getInt(i));
    else
      y.setInt(i, isFloat(x.dtype()) ? floatToInt(x.getFloat(i), to)
                                     : x.getInt(i));
  }
}

//===----------------------------------------------------------------------===//
// Binary and variadic (numpy broadcasting)
//===----------------------------------------------------------------------===//

std::vector<const Tensor *> allInputs(KernelContext &c) {
  std::vector<const Tensor *> ins;
  for (size_t i = 0; i < c.numInputs(); ++i)
    ins.push_back(c.input(i));
  return ins;
}

/// y = f(a, b) on floats or g(a, b) on integers, broadcasting.
template <typename F, typename G> void binary(KernelContext &c, F f, G g) {
  auto ins = allInputs(c);
  Tensor &y = c.output(0);
  const Tensor &a = *ins[0], &b = *ins[1];
  if (a.dtype() == DType::F32 && b.dtype() == DType::F32 &&
      y.dtype() == DType::F32) {
    const float *ap = a.data<float>(), *bp = b.data<float>();
    float *yp = y.data<float>();
    if (a.shape() == b.shape()) { // no broadcasting
      parallelFor(y.size(), kGrain, [&](int64_t s, int64_t e) {
        for (int64_t i = s; i < e; ++i)
          yp[i] = f(ap[i], bp[i]);
      });
      return;
    }
    // One operand a row vector along the last dim (bias add).
    auto isRow = [&](const Tensor &t) {
      return t.rank() >= 1 && t.size() == t.dim(t.rank() - 1) &&
             y.rank() >= 1 && t.size() == y.dim(y.rank() - 1);
    };
    if ((a.shape() == y.shape() && isRow(b)) ||
        (b.shape() == y.shape() && isRow(a))) {
      bool rowIsB = a.shape() == y.shape() && isRow(b);
      int64_t n = y.dim(y.rank() - 1);
      parallelFor(y.size() / n, kGrain / n + 1, [&](int64_t s, int64_t e) {
        for (int64_t r = s; r < e; ++r)
          for (int64_t j = 0; j < n; ++j)
            yp[r * n + j] = rowIsB ? f(ap[r * n + j], bp[j])
                                   : f(ap[j], bp[r * n + j]);
      });
      return;
    }
    forEachBroadcast(y.shape(), ins, [&](int64_t i, const int64_t *o) {
      yp[i] = f(ap[o[0]], bp[o[1]]);
    });
  } else if (isFloat(a.dtype())) {
    forEachBroadcast(y.shape(), ins, [&](int64_t i, const int64_t *o) {
      y.setFloat(i, f(a.getFloat(o[0]), b.getFloat(o[1])));
    });
  } else {
    forEachBroadcast(y.shape(), ins, [&](int64_t i, const int64_t *o) {
      y.setInt(i, g(a.getInt(o[0]), b.getInt(o[1])));
    });
  }
}

int64_t intDiv(int64_t a, int64_t b) { return b == 0 ? 0 : a / b; }

void addK(KernelContext &c) {
  binary(c, [](float a, float b) { return a + b; },
         [](int64_t a, int64_t b) { return a + b; });
}
void subK(KernelContext &c) {
  binary(c, [](float a, float b) { return a - b; },
         [](int64_t a, int64_t b) { return a - b; });
}
void mulK(KernelContext &c) {
  binary(c, [](float a, float b) { return a * b; },
         [](int64_t a, int64_t b) { return a * b; });
}
void divK(KernelContext &c) {
  binary(c, [](float a, float b) { return a / b; }, intDiv);
}
void modK(KernelContext &c) {
  bool fmod = c.step.getInt("fmod", 0);
  binary(
      c,
      [fmod](float a, float b) {
        return fmod ? formulas::mpc_fmod(a, b) : formulas::mpc_floor_mod(a, b);
      },
      [fmod](int64_t a, int64_t b) -> int64_t {
        if (b == 0)
          return 0;
        int64_t r = a % b;
        // Without fmod the result takes the divisor's sign (Python).
        if (!fmod && r != 0 && ((r < 0) != (b < 0)))
          r += b;
        return r;
      });
}
void preluK(KernelContext &c) {
  binary(c, [](float a, float b) { return formulas::mpc_prelu(a, b); },
         [](int64_t x, int64_t s) { return x < 0 ? s * x : x; });
}
void reluGradK(KernelContext &c) { // float operands only (the verifier)
  binary(c, [](float g, float y) { return formulas::mpc_relu_grad(g, y); },
         [](int64_t, int64_t) -> int64_t { return 0; });
}
void geluGradK(KernelContext &c) { // float operands only (the verifier)
  auto noInts = [](int64_t, int64_t) -> int64_t { return 0; };
  if (c.step.getString("approximate", "none") == "tanh")
    return binary(
        c, [](float g, float x) { return formulas::mpc_gelu_tanh_grad(g, x); },
        noInts);
  binary(c, [](float g, float x) { return formulas::mpc_gelu_grad(g, x); },
         noInts);
}
void powK(KernelContext &c) {
  auto ins = allInputs(c);
  Tensor &y = c.output(0);
  const Tensor &a = *ins[0], &b = *ins[1];
  forEachBroadcast(y.shape(), ins, [&](int64_t i, const int64_t *o) {
    if (isFloat(y.dtype())) {
      float e = isFloat(b.dtype()) ? b.getFloat(o[1]) : (float)b.getInt(o[1]);
      y.setFloat(i, formulas::mpc_pow(a.getFloat(o[0]), e));
    } else {
      y.setInt(i, (int64_t)std::pow((double)a.getInt(o[0]),
                                    isFloat(b.dtype()) ? b.getFloat(o[1])
                                                       : b.getInt(o[1])));
    }
  });
}

template <typename P> void logical(KernelContext &c, P p) {
  auto ins = allInputs(c);
  Tensor &y = c.output(0);
  const uint8_t *a = ins[0]->data<uint8_t>(), *b = ins[1]->data<uint8_t>();
  forEachBroadcast(y.shape(), ins, [&](int64_t i, const int64_t *o) {
    y.data<uint8_t>()[i] = p(a[o[0]] != 0, b[o[1]] != 0);
  });
}
void andK(KernelContext &c) {
  logical(c, [](bool a, bool b) { return a && b; });
}
void orK(KernelContext &c) {
  logical(c, [](bool a, bool b) { return a || b; });
}
void xorK(KernelContext &c) {
  logical(c, [](bool a, bool b) { return a != b; });
}

/// Comparison producing i1; floats compare as floats, integers exactly.
template <typename P> void compare(KernelContext &c, P p) {
  auto ins = allInputs(c);
  Tensor &y = c.output(0);
  const Tensor &a = *ins[0], &b = *ins[1];
  bool fl = isFloat(a.dtype());
  forEachBroadcast(y.shape(), ins, [&](int64_t i, const int64_t *o) {
    y.data<uint8_t>()[i] = fl ? p(a.getFloat(o[0]), b.getFloat(o[1]))
                              : p(a.getInt(o[0]), b.getInt(o[1]));
  });
}
void equalK(KernelContext &c) {
  compare(c, [](auto a, auto b) { return a == b; });
}
void lessK(KernelContext &c) {
  compare(c, [](auto a, auto b) { return a < b; });
}
void lessOrEqualK(KernelContext &c) {
  compare(c, [](auto a, auto b) { return a <= b; });
}
void greaterK(KernelContext &c) {
  compare(c, [](auto a, auto b) { return a > b; });
}
void greaterOrEqualK(KernelContext &c) {
  compare(c, [](auto a, auto b) { return a >= b; });
}

void whereK(KernelContext &c) {
  auto ins = allInputs(c);
  Tensor &y = c.output(0);
  const Tensor &cond = *ins[0], &a = *ins[1], &b = *ins[2];
  size_t width = dtypeSize(y.dtype());
  const uint8_t *cp = cond.data<uint8_t>();
  const uint8_t *ap = a.data<uint8_t>(), *bp = b.data<uint8_t>();
  uint8_t *yp = y.data<uint8_t>();
  forEachBroadcast(y.shape(), ins, [&](int64_t i, const int64_t *o) {
    const uint8_t *src = cp[o[0]] ? ap + o[1] * width : bp + o[2] * width;
    std::memcpy(yp + i * width, src, width);
  });
}

/// Max, Min, Sum, Mean over any number of inputs, folded left to right in
/// FP32 (or int64), rounded once.
template <typename F, typename G>
void variadic(KernelContext &c, F f, G g, bool mean) {
  auto ins = allInputs(c);
  Tensor &y = c.output(0);
  size_t n = ins.size();
  bool fl = isFloat(y.dtype());
  forEachBroadcast(y.shape(), ins, [&](int64_t i, const int64_t *o) {
    if (fl) {
      float acc = ins[0]->getFloat(o[0]);
      for (size_t k = 1; k < n; ++k)
        acc = f(acc, ins[k]->getFloat(o[k]));
      y.setFloat(i, mean ? acc / (float)n : acc);
    } else {
      int64_t acc = ins[0]->getInt(o[0]);
      for (size_t k = 1; k < n; ++k)
        acc = g(acc, ins[k]->getInt(o[k]));
      y.setInt(i, mean ? acc / (int64_t)n : acc);
    }
  });
}
void maxK(KernelContext &c) {
  variadic(
      c, [](float a, float b) { return formulas::mpc_max(a, b); },
      [](int64_t a, int64_t b) { return std::max(a, b); }, false);
}
void minK(KernelContext &c) {
  variadic(
      c, [](float a, float b) { return formulas::mpc_min(a, b); },
      [](int64_t a, int64_t b) { return std::min(a, b); }, false);
}
void sumK(KernelContext &c) {
  variadic(c, [](float a, float b) { return a + b; },
           [](int64_t a, int64_t b) { return a + b; }, false);
}
void meanK(KernelContext &c) {
  variadic(c, [](float a, float b) { return a + b; },
           [](int64_t a, int64_t b) { return a + b; }, true);
}

} // namespace

void registerElementwiseKernels(KernelTable &t) {
  t.add(OpId::Exp, expK);
  t.add(OpId::Log, logK);
  t.add(OpId::Sqrt, sqrtK);
  t.add(OpId::Reciprocal, reciprocalK);
  t.add(OpId::Tanh, tanhK);
  t.add(OpId::Sigmoid, sigmoidK);
  t.add(OpId::Erf, erfK);
  t.add(OpId::Sin, sinK);
  t.add(OpId::Tan, tanK);
  t.add(OpId::Asin, asinK);
  t.add(OpId::Acos, acosK);
  t.add(OpId::Sinh, sinhK);
  t.add(OpId::Cosh, coshK);
  t.add(OpId::Asinh, asinhK);
  t.add(OpId::Acosh, acoshK);
  t.add(OpId::Atanh, atanhK);
  t.add(OpId::Cos, cosK);
  t.add(OpId::Softplus, softplusK);
  t.add(OpId::Softsign, softsignK);
  t.add(OpId::Floor, floorK);
  t.add(OpId::Ceil, ceilK);
  t.add(OpId::Round, roundK);
  t.add(OpId::HardSwish, hardSwishK);
  t.add(OpId::Mish, mishK);
  t.add(OpId::Atan, atanK);
  t.add(OpId::Gelu, geluK);
  t.add(OpId::GeluGrad, geluGradK);
  t.add(OpId::ReluGrad, reluGradK);
  t.add(OpId::LeakyRelu, leakyReluK);
  t.add(OpId::Elu, eluK);
  t.add(OpId::Celu, celuK);
  t.add(OpId::Selu, seluK);
  t.add(OpId::HardSigmoid, hardSigmoidK);
  t.add(OpId::ThresholdedRelu, thresholdedReluK);
  t.add(OpId::Abs, absK);
  t.add(OpId::Neg, negK);
  t.add(OpId::Relu, reluK);
  t.add(OpId::Sign, signK);
  t.add(OpId::Not, notK);
  t.add(OpId::IsNaN, isNanK);
  t.add(OpId::IsInf, isInfK);
  t.add(OpId::Clip, clipK);
  t.add(OpId::Cast, castK);
  t.add(OpId::Add, addK);
  t.add(OpId::Sub, subK);
  t.add(OpId::Mul, mulK);
  t.add(OpId::Div, divK);
  t.add(OpId::Mod, modK);
  t.add(OpId::PRelu, preluK);
  t.add(OpId::Pow, powK);
  t.add(OpId::And, andK);
  t.add(OpId::Or, orK);
  t.add(OpId::Xor, xorK);
  t.add(OpId::Equal, equalK);
  t.add(OpId::Less, lessK);
  t.add(OpId::LessOrEqual, lessOrEqualK);
  t.add(OpId::Greater, greaterK);
  t.add(OpId::GreaterOrEqual, greaterOrEqualK);
  t.add(OpId::Where, whereK);
  t.add(OpId::Max, maxK);
  t.add(OpId::Min, minK);
  t.add(OpId::Sum, sumK);
  t.add(OpId::Mean, meanK);
}

} // namespace mpc::rt
