//===- CudaExpressions.cpp - elementwise ops as FP32 expressions ----------===//
//
// Each elementwise op as one C++ expression over its operands a, b, c...
// (loaded as float), written to give what runtime/kernels/Elementwise.cpp
// gives, NaN handling included; attributes are baked in. Elementwise
// kernels and fused chains (CudaEmitter.cpp) both use these.
//
//===----------------------------------------------------------------------===//

#include "codegen/CudaKernels.h"

#include <map>

namespace mlir::mpc::cuda {

std::optional<std::string> Emitter::expr(const Step &s) {
  static const std::map<std::string, std::string> unary = {
      {"relu", "fmaxf(a, 0.0f) + 0.0f * a"}, // NaN propagates like max(x, 0)
      {"neg", "-a"}, {"exp", "expf(a)"}, {"log", "logf(a)"},
      {"tanh", "tanhf(a)"}, {"sigmoid", "1.0f / (1.0f + expf(-a))"},
      {"sqrt", "sqrtf(a)"}, {"erf", "erff(a)"}, {"abs", "fabsf(a)"},
      {"reciprocal", "1.0f / a"}, {"sin", "sinf(a)"}, {"cos", "cosf(a)"},
      {"floor", "floorf(a)"}, {"ceil", "ceilf(a)"},
      {"round", "rintf(a)"}, // half to even, as nearbyint
      {"softplus", "log1pf(expf(a))"}, {"softsign", "a / (1.0f + fabsf(a))"},
      {"sign", "a > 0.0f ? 1.0f : a < 0.0f ? -1.0f : a"},
      {"hard_swish", "a * fmaxf(0.0f, fminf(1.0f, a / 6.0f + 0.5f))"},
      {"not", "(float)(a == 0.0f)"}, {"is_nan", "(float)(a != a)"},
      {"identity", "a"}, {"cast", "a"}};
  static const std::map<std::string, std::string> binary = {
      {"add", "a + b"}, {"sub", "a - b"}, {"mul", "a * b"}, {"div", "a / b"},
      {"pow", "powf(a, b)"}, {"prelu", "a < 0.0f ? b * a : a"},
      {"mod", "fmodf(a, b)"}, // floats: C fmod whatever the fmod attribute
      {"greater", "(float)(a > b)"}, {"less", "(float)(a < b)"},
      {"equal", "(float)(a == b)"}, {"greater_or_equal", "(float)(a >= b)"},
      {"less_or_equal", "(float)(a <= b)"},
      {"and", "(float)(a != 0.0f && b != 0.0f)"},
      {"or", "(float)(a != 0.0f || b != 0.0f)"},
      {"xor", "(float)((a != 0.0f) != (b != 0.0f))"}};
  const std::string &op = s.op;
  size_t arity = s.inputs.size();
  auto attr = [&](const char *name, double dflt) {
    return flt((float)s.getFloat(name, dflt));
  };
  // Variadic Max/Min/Sum/Mean: a left fold over a, b, c... as the CPU
  // backend computes them (Max/Min propagate NaN, unlike fmaxf/fminf).
  if ((op == "max" || op == "min" || op == "sum" || op == "mean") &&
      arity >= 1 && arity <= kMaxOperands) {
    std::string acc = "a";
    for (size_t k = 1; k < arity; ++k) {
      std::string v(1, kOperandNames[k]);
      acc = op == "max"   ? "mpc_max(" + acc + ", " + v + ")"
            : op == "min" ? "mpc_min(" + acc + ", " + v + ")"
                          : "(" + acc + " + " + v + ")";
    }
    return op == "mean" ? acc + " / " + flt((float)arity) : acc;
  }
  if (arity == 1) {
    if (op == "gelu")
      return s.getString("approximate", "none") == "tanh"
                 ? std::string("0.5f * a * (1.0f + tanhf(0.7978845608028654f "
                               "* (a + 0.044715f * a * a * a)))")
                 : std::string("0.5f * a * (1.0f + erff(a * 0.7071067811865476f))");
    std::string al = attr("alpha", op == "leaky_relu"     ? 0.01
                                   : op == "hard_sigmoid" ? 0.2
                                   : op == "selu" ? 1.67326319217681884765625
                                                  : 1.0);
    if (op == "leaky_relu")
      return "a < 0.0f ? " + al + " * a : a";
    if (op == "elu")
      return "a < 0.0f ? " + al + " * (expf(a) - 1.0f) : a";
    if (op == "celu")
      return "fmaxf(0.0f, a) + fminf(0.0f, " + al + " * (expf(a / " + al +
             ") - 1.0f))";
    if (op == "selu") {
      std::string g = attr("gamma", 1.05070102214813232421875);
      return "a > 0.0f ? " + g + " * a : " + g + " * (" + al + " * expf(a) - " +
             al + ")";
    }
    if (op == "hard_sigmoid")
      return "fmaxf(0.0f, fminf(1.0f, " + al + " * a + " + attr("beta", 0.5) +
             "))";
    if (op == "thresholded_relu")
      return "a > " + al + " ? a : 0.0f";
    if (op == "is_inf") {
      bool pos = s.getInt("detect_positive", 1), neg = s.getInt("detect_negative", 1);
      return std::string("(float)(") + (pos ? "a == INFINITY" : "false") +
             " || " + (neg ? "a == -INFINITY" : "false") + ")";
    }
  }
  if (arity == 1 || arity == 2) {
    auto &table = arity == 1 ? unary : binary;
    if (auto it = table.find(op); it != table.end())
      return it->second;
  }
  if (op == "where" && arity == 3)
    return std::string("a != 0.0f ? b : c");
  return std::nullopt;
}

} // namespace mlir::mpc::cuda
