//===- CudaExpressions.cpp - elementwise ops as FP32 expressions ----------===//
//
// Each elementwise op as one C++ expression over its operands a, b, c...
// (loaded as float), written to give what runtime/kernels/Elementwise.cpp
// gives, NaN handling included; attributes are baked in. Elementwise
// kernels and fused chains (CudaEmitter.cpp) both use these.
//
//===----------------------------------------------------------------------===//

#include "codegen/CudaKernels.h"

namespace mlir::mpc::cuda {
namespace {

/// A float attribute as an exact literal.
std::string attr(const Step &s, const char *name, double dflt) {
  return flt((float)s.getFloat(name, dflt));
}

/// Variadic Max/Min/Sum/Mean: a left fold over a, b, c... as the CPU
/// backend computes them (Max/Min propagate NaN, unlike fmaxf/fminf).
std::optional<std::string> fold(const Step &s) {
  size_t arity = s.inputs.size();
  if (arity < 1 || arity > kMaxOperands)
    return std::nullopt;
  std::string acc = "a";
  for (size_t k = 1; k < arity; ++k) {
    std::string v(1, kOperandNames[k]);
    acc = s.op == OpId::Max   ? "mpc_max(" + acc + ", " + v + ")"
          : s.op == OpId::Min ? "mpc_min(" + acc + ", " + v + ")"
                              : "(" + acc + " + " + v + ")";
  }
  return s.op == OpId::Mean ? acc + " / " + flt((float)arity) : acc;
}

std::optional<std::string> gelu(const Step &s) {
  return s.getString("approximate", "none") == "tanh"
             ? std::string("0.5f * a * (1.0f + tanhf(0.7978845608028654f "
                           "* (a + 0.044715f * a * a * a)))")
             : std::string("0.5f * a * (1.0f + erff(a * 0.7071067811865476f))");
}

std::optional<std::string> leakyRelu(const Step &s) {
  return "a < 0.0f ? " + attr(s, "alpha", 0.01) + " * a : a";
}

std::optional<std::string> elu(const Step &s) {
  return "a < 0.0f ? " + attr(s, "alpha", 1.0) + " * (expf(a) - 1.0f) : a";
}

std::optional<std::string> celu(const Step &s) {
  std::string al = attr(s, "alpha", 1.0);
  return "fmaxf(0.0f, a) + fminf(0.0f, " + al + " * (expf(a / " + al +
         ") - 1.0f))";
}

std::optional<std::string> selu(const Step &s) {
  std::string al = attr(s, "alpha", 1.67326319217681884765625);
  std::string g = attr(s, "gamma", 1.05070102214813232421875);
  return "a > 0.0f ? " + g + " * a : " + g + " * (" + al + " * expf(a) - " +
         al + ")";
}

std::optional<std::string> hardSigmoid(const Step &s) {
  return "fmaxf(0.0f, fminf(1.0f, " + attr(s, "alpha", 0.2) + " * a + " +
         attr(s, "beta", 0.5) + "))";
}

std::optional<std::string> thresholdedRelu(const Step &s) {
  return "a > " + attr(s, "alpha", 1.0) + " ? a : 0.0f";
}

std::optional<std::string> isInf(const Step &s) {
  bool pos = s.getInt("detect_positive", 1),
       neg = s.getInt("detect_negative", 1);
  return std::string("(float)(") + (pos ? "a == INFINITY" : "false") +
         " || " + (neg ? "a == -INFINITY" : "false") + ")";
}

} // namespace

void registerExpressions(EmitterTable &t) {
  // Unary: the operand is `a`.
  t.expr(OpId::Relu, "fmaxf(a, 0.0f) + 0.0f * a"); // NaN as max(x, 0)
  t.expr(OpId::Neg, "-a");
  t.expr(OpId::Exp, "expf(a)");
  t.expr(OpId::Log, "logf(a)");
  t.expr(OpId::Tanh, "tanhf(a)");
  t.expr(OpId::Sigmoid, "1.0f / (1.0f + expf(-a))");
  t.expr(OpId::Sqrt, "sqrtf(a)");
  t.expr(OpId::Erf, "erff(a)");
  t.expr(OpId::Atan, "atanf(a)");
  t.expr(OpId::Abs, "fabsf(a)");
  t.expr(OpId::Reciprocal, "1.0f / a");
  t.expr(OpId::Sin, "sinf(a)");
  t.expr(OpId::Cos, "cosf(a)");
  t.expr(OpId::Floor, "floorf(a)");
  t.expr(OpId::Ceil, "ceilf(a)");
  t.expr(OpId::Round, "rintf(a)"); // half to even, as nearbyint
  t.expr(OpId::Softplus, "log1pf(expf(a))");
  t.expr(OpId::Mish, "a * tanhf(log1pf(expf(a)))");
  t.expr(OpId::Softsign, "a / (1.0f + fabsf(a))");
  t.expr(OpId::Sign, "a > 0.0f ? 1.0f : a < 0.0f ? -1.0f : a");
  t.expr(OpId::HardSwish, "a * fmaxf(0.0f, fminf(1.0f, a / 6.0f + 0.5f))");
  t.expr(OpId::Not, "(float)(a == 0.0f)");
  t.expr(OpId::IsNaN, "(float)(a != a)");
  t.expr(OpId::Cast, "a");
  t.expr(OpId::Gelu, gelu);
  t.expr(OpId::LeakyRelu, leakyRelu);
  t.expr(OpId::Elu, elu);
  t.expr(OpId::Celu, celu);
  t.expr(OpId::Selu, selu);
  t.expr(OpId::HardSigmoid, hardSigmoid);
  t.expr(OpId::ThresholdedRelu, thresholdedRelu);
  t.expr(OpId::IsInf, isInf);
  // Binary: `a` and `b`, broadcast.
  t.expr(OpId::Add, "a + b");
  t.expr(OpId::Sub, "a - b");
  t.expr(OpId::Mul, "a * b");
  t.expr(OpId::Div, "a / b");
  t.expr(OpId::Pow, "powf(a, b)");
  t.expr(OpId::PRelu, "a < 0.0f ? b * a : a");
  t.expr(OpId::Mod, "fmodf(a, b)"); // floats: C fmod whatever the attribute
  t.expr(OpId::Greater, "(float)(a > b)");
  t.expr(OpId::Less, "(float)(a < b)");
  t.expr(OpId::Equal, "(float)(a == b)");
  t.expr(OpId::GreaterOrEqual, "(float)(a >= b)");
  t.expr(OpId::LessOrEqual, "(float)(a <= b)");
  t.expr(OpId::And, "(float)(a != 0.0f && b != 0.0f)");
  t.expr(OpId::Or, "(float)(a != 0.0f || b != 0.0f)");
  t.expr(OpId::Xor, "(float)((a != 0.0f) != (b != 0.0f))");
  for (OpId op : {OpId::Max, OpId::Min, OpId::Sum, OpId::Mean})
    t.expr(op, fold);
  t.expr(OpId::Where, "a != 0.0f ? b : c");
}

} // namespace mlir::mpc::cuda
