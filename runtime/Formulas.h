//===- Formulas.h - one formula per elementwise op, CPU and CUDA -*- C++ -*-===//
//
// The single definition of each elementwise op's FP32 arithmetic. The CPU
// kernels (runtime/kernels/Elementwise.cpp) call these functions; the CUDA
// emitter writes the same text, stringized from this list, into every
// kernels.cu (codegen/CudaEmitter.cpp: kFormulaSource) and its expressions
// call it by name. So the two backends cannot drift: they differ only where
// CUDA's libdevice and the host libm round expf, logf... differently (within
// their documented ulps), never in the formula, NaN or signed-zero handling.
//
// Each entry: X(name, (parameters), expression). Plain C math functions
// only (expf, not std::exp): they name the same thing in host and device
// code. An entry may call one listed before it.
//
//===----------------------------------------------------------------------===//

#ifndef MPC_RUNTIME_FORMULAS_H
#define MPC_RUNTIME_FORMULAS_H

#include <math.h>

// clang-format off
#define MPC_FORMULAS(X)                                                        \
  /* NaN propagates, -0 stays -0 (as x < 0 ? 0 : x everywhere). */            \
  X(relu, (float x), x < 0.0f ? 0.0f : x)                                      \
  /* From relu's result y: y > 0 exactly where relu's input is. */            \
  X(relu_grad, (float dy, float y), y > 0.0f ? dy : 0.0f)                      \
  X(exp, (float x), expf(x))                                                   \
  X(log, (float x), logf(x))                                                   \
  X(sqrt, (float x), sqrtf(x))                                                 \
  X(reciprocal, (float x), 1.0f / x)                                           \
  X(tanh, (float x), tanhf(x))                                                 \
  X(sigmoid, (float x), 1.0f / (1.0f + expf(-x)))                              \
  X(erf, (float x), erff(x))                                                   \
  X(atan, (float x), atanf(x))                                                 \
  X(sin, (float x), sinf(x))                                                   \
  X(cos, (float x), cosf(x))                                                   \
  X(tan, (float x), tanf(x))                                                   \
  X(asin, (float x), asinf(x))                                                 \
  X(acos, (float x), acosf(x))                                                 \
  X(sinh, (float x), sinhf(x))                                                 \
  X(cosh, (float x), coshf(x))                                                 \
  X(asinh, (float x), asinhf(x))                                               \
  X(acosh, (float x), acoshf(x))                                               \
  X(atanh, (float x), atanhf(x))                                               \
  X(abs, (float x), fabsf(x))                                                  \
  X(floor, (float x), floorf(x))                                               \
  X(ceil, (float x), ceilf(x))                                                 \
  /* Half to even, as ONNX Round. */                                           \
  X(round, (float x), rintf(x))                                                \
  X(sign, (float x), x > 0.0f ? 1.0f : x < 0.0f ? -1.0f : x)                   \
  /* log(1 + e^x) without overflow for large x or loss for very negative */   \
  /* x (log(exp(x) + 1) is 0 below about -16.6, and inf above 88.7). */       \
  X(softplus, (float x), (x > 0.0f ? x : 0.0f) + log1pf(expf(-fabsf(x))))     \
  X(softsign, (float x), x / (1.0f + fabsf(x)))                                \
  X(mish, (float x), x * tanhf(mpc_softplus(x)))                               \
  X(hard_swish, (float x), x * mpc_clip(x / 6.0f + 0.5f, 0.0f, 1.0f))         \
  X(gelu, (float x), 0.5f * x * (1.0f + erff(x * 0.7071067811865476f)))        \
  X(gelu_tanh, (float x),                                                      \
    0.5f * x * (1.0f + tanhf(0.7978845608028654f * (x + 0.044715f * x * x * x))))\
  /* gelu' = Phi(x) + x phi(x), times the incoming gradient. */              \
  X(gelu_grad, (float dy, float x),                                            \
    dy * (0.5f * (1.0f + erff(x * 0.7071067811865476f)) +                      \
          x * expf(-0.5f * x * x) * 0.3989422804014327f))                       \
  /* t = tanh(u), u = k (x + c x^3): 0.5 (1 + t) + 0.5 x (1 - t^2) u'. */     \
  X(gelu_tanh_grad, (float dy, float x),                                       \
    dy * mpc_gelu_tanh_slope(                                                  \
             x, tanhf(0.7978845608028654f * (x + 0.044715f * x * x * x))))    \
  X(leaky_relu, (float x, float alpha), x < 0.0f ? alpha * x : x)              \
  X(elu, (float x, float alpha), x < 0.0f ? alpha * (expf(x) - 1.0f) : x)      \
  X(celu, (float x, float alpha),                                              \
    (x > 0.0f ? x : 0.0f) + mpc_min(0.0f, alpha * (expf(x / alpha) - 1.0f)))   \
  X(selu, (float x, float alpha, float gamma),                                 \
    x > 0.0f ? gamma * x : gamma * (alpha * expf(x) - alpha))                  \
  X(hard_sigmoid, (float x, float alpha, float beta),                          \
    mpc_clip(alpha * x + beta, 0.0f, 1.0f))                                    \
  X(thresholded_relu, (float x, float alpha), x > alpha ? x : 0.0f)            \
  X(prelu, (float x, float slope), x < 0.0f ? slope * x : x)                   \
  X(pow, (float x, float e), powf(x, e))                                       \
  /* Mod with fmod=1: C's fmod, the dividend's sign. */                       \
  X(fmod, (float x, float y), fmodf(x, y))                                     \
  /* Mod with fmod=0: numpy's mod, the divisor's sign. */                      \
  X(floor_mod, (float x, float y), mpc_to_divisor_sign(fmodf(x, y), y))
// clang-format on

// What the entries above call: Max/Min that propagate NaN from either
// operand (ONNX; fmaxf/fminf drop it), and Clip, which keeps NaN.
#define MPC_FORMULA_HELPERS(X)                                                 \
  X(max, (float a, float b), (a != a || a > b) ? a : b)                        \
  X(min, (float a, float b), (a != a || a < b) ? a : b)                        \
  X(clip, (float x, float lo, float hi),                                       \
    x != x ? x : mpc_min(mpc_max(x, lo), hi))                                  \
  X(gelu_tanh_slope, (float x, float t),                                       \
    0.5f * (1.0f + t) +                                                        \
        0.5f * x * (1.0f - t * t) * 0.7978845608028654f *                      \
            (1.0f + 0.134145f * x * x))                                        \
  X(to_divisor_sign, (float r, float y),                                       \
    r != 0.0f ? ((r < 0.0f) != (y < 0.0f) ? r + y : r) : copysignf(0.0f, y))

/// Host definitions: mpc::formulas::mpc_softplus(x)...
namespace mpc::formulas {
#define MPC_DEFINE_FORMULA(name, params, expr)                                 \
  inline float mpc_##name params { return expr; }
MPC_FORMULA_HELPERS(MPC_DEFINE_FORMULA)
MPC_FORMULAS(MPC_DEFINE_FORMULA)
#undef MPC_DEFINE_FORMULA
} // namespace mpc::formulas

/// The same definitions as CUDA source, for the prelude of every kernels.cu.
#define MPC_FORMULA_TEXT(name, params, expr)                                   \
  "__device__ __forceinline__ float mpc_" #name #params " { return " #expr     \
  "; }\n"
inline constexpr const char *kFormulaSource =
    "// Elementwise formulas (runtime/Formulas.h, shared with the CPU).\n"
    MPC_FORMULA_HELPERS(MPC_FORMULA_TEXT) MPC_FORMULAS(MPC_FORMULA_TEXT);
#undef MPC_FORMULA_TEXT

#endif // MPC_RUNTIME_FORMULAS_H
