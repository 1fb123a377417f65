//===- CudaExpressions.cpp - elementwise ops as FP32 expressions ----------===//
//
// Each elementwise op as one C++ expression over its operands a, b, c...
// (loaded as float): a call of its formula in runtime/Formulas.h, which the
// CPU kernels call too, with attributes baked in as exact literals. Elementwise
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

std::optional<std::string> mod(const Step &s) {
  return s.getInt("fmod", 0) ? std::string("mpc_fmod(a, b)")
                             : std::string("mpc_floor_mod(a, b)");
}

std::optional<std::string> gelu(const Step &s) {
  return s.getString("approximate", "none") == "tanh"
             ? std::string("mpc_gelu_tanh(a)")
             : std::string("mpc_gelu(a)");
}

std::optional<std::string> geluGrad(const Step &s) {
  return s.getString("approximate", "none") == "tanh"
             ? std::string("mpc_gelu_tanh_grad(a, b)")
             : std::string("mpc_gelu_grad(a, b)");
}

std::optional<std::string> leakyRelu(const Step &s) {
  return "mpc_leaky_relu(a, " + attr(s, "alpha", 0.01) + ")";
}

std::optional<std::string> elu(const Step &s) {
  return "mpc_elu(a, " + attr(s, "alpha", 1.0) + ")";
}

std::optional<std::string> celu(const Step &s) {
  return "mpc_celu(a, " + attr(s, "alpha", 1.0) + ")";
}

std::optional<std::string> selu(const Step &s) {
  return "mpc_selu(a, " + attr(s, "alpha", 1.67326319217681884765625) + ", " +
         attr(s, "gamma", 1.05070102214813232421875) + ")";
}

std::optional<std::string> hardSigmoid(const Step &s) {
  return "mpc_hard_sigmoid(a, " + attr(s, "alpha", 0.2) + ", " +
         attr(s, "beta", 0.5) + ")";
}

std::optional<std::string> thresholdedRelu(const Step &s) {
  return "mpc_thresholded_relu(a, " + attr(s, "alpha", 1.0) + ")";
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
  t.expr(OpId::Relu, "mpc_relu(a)");
  t.expr(OpId::Neg, "-a");
  t.expr(OpId::Exp, "mpc_exp(a)");
  t.expr(OpId::Log, "mpc_log(a)");
  t.expr(OpId::Tanh, "mpc_tanh(a)");
  t.expr(OpId::Sigmoid, "mpc_sigmoid(a)");
  t.expr(OpId::Sqrt, "mpc_sqrt(a)");
  t.expr(OpId::Erf, "mpc_erf(a)");
  t.expr(OpId::Atan, "mpc_atan(a)");
  t.expr(OpId::Abs, "mpc_abs(a)");
  t.expr(OpId::Reciprocal, "mpc_reciprocal(a)");
  t.expr(OpId::Sin, "mpc_sin(a)");
  t.expr(OpId::Tan, "mpc_tan(a)");
  t.expr(OpId::Asin, "mpc_asin(a)");
  t.expr(OpId::Acos, "mpc_acos(a)");
  t.expr(OpId::Sinh, "mpc_sinh(a)");
  t.expr(OpId::Cosh, "mpc_cosh(a)");
  t.expr(OpId::Asinh, "mpc_asinh(a)");
  t.expr(OpId::Acosh, "mpc_acosh(a)");
  t.expr(OpId::Atanh, "mpc_atanh(a)");
  t.expr(OpId::Cos, "mpc_cos(a)");
  t.expr(OpId::Floor, "mpc_floor(a)");
  t.expr(OpId::Ceil, "mpc_ceil(a)");
  t.expr(OpId::Round, "mpc_round(a)");
  t.expr(OpId::Softplus, "mpc_softplus(a)");
  t.expr(OpId::Mish, "mpc_mish(a)");
  t.expr(OpId::Softsign, "mpc_softsign(a)");
  t.expr(OpId::Sign, "mpc_sign(a)");
  t.expr(OpId::HardSwish, "mpc_hard_swish(a)");
  t.expr(OpId::Not, "(float)(a == 0.0f)");
  t.expr(OpId::IsNaN, "(float)(a != a)");
  t.expr(OpId::Cast, "a");
  t.expr(OpId::Gelu, gelu);
  t.expr(OpId::GeluGrad, geluGrad);
  t.expr(OpId::ReluGrad, "mpc_relu_grad(a, b)");
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
  t.expr(OpId::Pow, "mpc_pow(a, b)");
  t.expr(OpId::PRelu, "mpc_prelu(a, b)");
  t.expr(OpId::Mod, mod);
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
