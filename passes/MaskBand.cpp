//===- MaskBand.cpp - the band of a mask computed from constants ---------===//
//
// Model code builds causal and sliding-window masks from constants in
// many ways, and the exported graph keeps the arithmetic: Hugging Face's
// Llama (4.36) a where() over a condition torch folded, its Mistral
// where(1 - triu(ones, -w), min, where(causal, 0, min)) in int32, others
// Trilus, logs, comparisons. Rather than match each spelling,
// mpc-fuse-attention evaluates such a mask element by element (each
// element a walk of its ops, nothing materialized) and asks whether what
// a query sees is the band of mpc.attention.
//
//===----------------------------------------------------------------------===//

#include "passes/AttentionPatterns.h"

#include "mlir/IR/Matchers.h"

#include <cmath>
#include <functional>

namespace mlir::mpc::attention_patterns {

namespace {

/// Element (i, j) of a value broadcast to sq x skv scores.
using Element = std::function<double(int64_t, int64_t)>;

/// The broadcast shape of `t` over sq x skv scores: rows (1 or sq) and
/// columns (1 or skv), its leading dimensions 1.
std::optional<std::pair<int64_t, int64_t>> broadcast(RankedTensorType t, int64_t sq,
                                                     int64_t skv) {
  if (!t || !t.hasStaticShape())
    return std::nullopt;
  const int64_t r = t.getRank();
  const int64_t cols = r >= 1 ? t.getDimSize(r - 1) : 1,
                rows = r >= 2 ? t.getDimSize(r - 2) : 1;
  if (t.getNumElements() != rows * cols || (rows != 1 && rows != sq) ||
      (cols != 1 && cols != skv))
    return std::nullopt;
  return std::make_pair(rows, cols);
}

/// The elements of `v` as a function of (i, j), where `v` is computed from
/// constants by the ops masks are built with.
std::optional<Element> elementsOf(Value v, int64_t sq, int64_t skv, int depth) {
  auto shape = broadcast(typeOf(v), sq, skv);
  if (!shape || depth > 24)
    return std::nullopt;
  const auto [rows, cols] = *shape;
  auto at = [rows = rows, cols = cols](int64_t i, int64_t j) {
    return (rows == 1 ? 0 : i) * cols + (cols == 1 ? 0 : j);
  };
  DenseElementsAttr attr;
  if (matchPattern(v, m_Constant(&attr))) {
    std::vector<double> x;
    x.reserve(attr.isSplat() ? 1 : attr.getNumElements());
    Type elem = attr.getElementType();
    if (attr.isSplat()) {
      if (llvm::isa<FloatType>(elem))
        x.push_back(attr.getSplatValue<APFloat>().convertToDouble());
      else if (elem.isInteger(1))
        x.push_back(attr.getSplatValue<bool>() ? 1.0 : 0.0);
      else
        x.push_back((double)attr.getSplatValue<APInt>().getSExtValue());
      return Element([c = x[0]](int64_t, int64_t) { return c; });
    }
    if (llvm::isa<FloatType>(elem))
      for (const APFloat &e : attr.getValues<APFloat>())
        x.push_back(e.convertToDouble());
    else if (elem.isInteger(1))
      for (bool e : attr.getValues<bool>())
        x.push_back(e ? 1.0 : 0.0);
    else
      for (const APInt &e : attr.getValues<APInt>())
        x.push_back((double)e.getSExtValue());
    return Element([x = std::move(x), at](int64_t i, int64_t j) { return x[at(i, j)]; });
  }
  Operation *op = v.getDefiningOp();
  if (!op)
    return std::nullopt;
  auto arg = [&](unsigned n) { return elementsOf(op->getOperand(n), sq, skv, depth + 1); };
  // Expand broadcasts as the elementwise ops do (aligned on the last
  // axes). An Unsqueeze or Reshape keeps the elements' order but may move
  // a vector from columns to rows (arange(n).view(n, 1)): element (i, j)
  // reads the operand's element of the same flat index.
  if (isa<ExpandOp>(op))
    return arg(0);
  if (isa<UnsqueezeOp, ReshapeOp>(op)) {
    auto in = broadcast(typeOf(op->getOperand(0)), sq, skv);
    auto x = arg(0);
    if (!in || !x || in->first * in->second != rows * cols)
      return std::nullopt;
    if (*in == *shape)
      return x;
    return Element([x = *x, at, inCols = in->second](int64_t i, int64_t j) {
      const int64_t k = at(i, j);
      return x(k / inCols, k % inCols);
    });
  }
  if (auto trilu = dyn_cast<TriluOp>(op)) {
    auto x = arg(0);
    if (!x || rows != sq || cols != skv) // (its i and j: the scores')
      return std::nullopt;
    const int64_t k = static_cast<int64_t>(trilu.getK());
    const bool upper = trilu.getUpper();
    return Element([x = *x, k, upper](int64_t i, int64_t j) {
      return (upper ? j - i >= k : j - i <= k) ? x(i, j) : 0.0;
    });
  }
  if (auto cast = dyn_cast<CastOp>(op)) {
    auto x = arg(0);
    Type to = typeOf(cast).getElementType();
    if (!x)
      return std::nullopt;
    if (to.isInteger(1))
      return Element([x = *x](int64_t i, int64_t j) { return x(i, j) != 0.0 ? 1.0 : 0.0; });
    if (llvm::isa<IntegerType>(to))
      return Element([x = *x](int64_t i, int64_t j) { return std::trunc(x(i, j)); });
    return x;
  }
  using Unary = double (*)(double);
  Unary unary = isa<NegOp>(op)   ? Unary([](double a) { return -a; })
                : isa<LogOp>(op) ? Unary([](double a) { return std::log(a); })
                : isa<NotOp>(op) ? Unary([](double a) { return a != 0.0 ? 0.0 : 1.0; })
                                 : nullptr;
  if (unary) {
    auto x = arg(0);
    if (!x)
      return std::nullopt;
    return Element([x = *x, unary](int64_t i, int64_t j) { return unary(x(i, j)); });
  }
  using Binary = double (*)(double, double);
  Binary binary =
      isa<AddOp>(op)     ? Binary([](double a, double b) { return a + b; })
      : isa<SubOp>(op)   ? Binary([](double a, double b) { return a - b; })
      : isa<MulOp>(op)   ? Binary([](double a, double b) { return a * b; })
      : isa<AndOp>(op)   ? Binary([](double a, double b) { return a != 0.0 && b != 0.0 ? 1.0 : 0.0; })
      : isa<OrOp>(op)    ? Binary([](double a, double b) { return a != 0.0 || b != 0.0 ? 1.0 : 0.0; })
      : isa<EqualOp>(op) ? Binary([](double a, double b) { return a == b ? 1.0 : 0.0; })
      : isa<LessOp>(op)  ? Binary([](double a, double b) { return a < b ? 1.0 : 0.0; })
      : isa<LessOrEqualOp>(op) ? Binary([](double a, double b) { return a <= b ? 1.0 : 0.0; })
      : isa<GreaterOp>(op)     ? Binary([](double a, double b) { return a > b ? 1.0 : 0.0; })
      : isa<GreaterOrEqualOp>(op)
          ? Binary([](double a, double b) { return a >= b ? 1.0 : 0.0; })
          : nullptr;
  if (binary) {
    auto a = arg(0), b = arg(1);
    if (!a || !b)
      return std::nullopt;
    return Element([a = *a, b = *b, binary](int64_t i, int64_t j) {
      return binary(a(i, j), b(i, j));
    });
  }
  if (isa<WhereOp>(op)) {
    auto c = arg(0), x = arg(1), y = arg(2);
    if (!c || !x || !y)
      return std::nullopt;
    return Element([c = *c, x = *x, y = *y](int64_t i, int64_t j) {
      return c(i, j) != 0.0 ? x(i, j) : y(i, j);
    });
  }
  return std::nullopt;
}

} // namespace

std::optional<Band> constantBand(Value bias, int64_t sq, int64_t skv) {
  // (An element a walk of the mask's ops: up to 64M scores, 4 x 4096^2.)
  if (sq < 1 || skv < 1 || sq * skv > (int64_t(1) << 26))
    return std::nullopt;
  // The mask broadcast over batch and heads (Expand, Unsqueeze, Reshape
  // of the scores' last two dimensions).
  Value v = bias;
  while (Operation *op = v.getDefiningOp()) {
    auto in = isa<ExpandOp, UnsqueezeOp, ReshapeOp>(op)
                  ? typeOf(op->getOperand(0)) : RankedTensorType();
    if (!in || !in.hasStaticShape() || in.getRank() < 2 ||
        in.getDimSize(in.getRank() - 2) != sq || in.getDimSize(in.getRank() - 1) != skv)
      break;
    v = op->getOperand(0);
  }
  auto x = elementsOf(v, sq, skv, 0);
  if (!x)
    return std::nullopt;
  bool additive = true; // every element 0 (seen) or <= -1e30 (masked)
  auto band = bandOfVisible(sq, skv, [&](int64_t i, int64_t j) {
    const double e = (*x)(i, j);
    additive &= e == 0.0 || e <= -1e30;
    return e == 0.0;
  });
  return additive ? band : std::nullopt;
}

} // namespace mlir::mpc::attention_patterns
