//===- ElementwiseGradients.cpp - rules of the elementwise ops ------------===//
//
// d(operand) as forward elementwise ops; broadcast operands get their
// gradient summed back to their shape.
//
//===----------------------------------------------------------------------===//

#include "passes/gradients/GradientBuilder.h"

#include "mlir/IR/TypeUtilities.h"

namespace mlir::mpc::grad {
namespace {

LogicalResult addGrad(Context &c, AddOp) {
  c.grads[0] = c.un(c.g, 0);
  c.grads[1] = c.un(c.g, 1);
  return success();
}

LogicalResult subGrad(Context &c, SubOp) {
  c.grads[0] = c.un(c.g, 0);
  c.grads[1] = c.un(c.make<NegOp>(c.g), 1);
  return success();
}

LogicalResult mulGrad(Context &c, MulOp) {
  c.grads[0] = c.un(c.make<MulOp>({c.g, c.x(1)}), 0);
  c.grads[1] = c.un(c.make<MulOp>({c.g, c.x(0)}), 1);
  return success();
}

LogicalResult divGrad(Context &c, DivOp) {
  c.grads[0] = c.un(c.make<DivOp>({c.g, c.x(1)}), 0);
  // d(a/b)/db = -y / b
  Value t = c.make<DivOp>({c.make<MulOp>({c.g, c.y}), c.x(1)});
  c.grads[1] = c.un(c.make<NegOp>(t), 1);
  return success();
}

LogicalResult negGrad(Context &c, NegOp) {
  c.grads[0] = c.make<NegOp>(c.g);
  return success();
}

LogicalResult identityGrad(Context &c, IdentityOp) {
  c.grads[0] = c.g;
  return success();
}

LogicalResult reluGrad(Context &c, ReluOp) {
  // From the result, not the input: see mpc.relu_grad.
  c.grads[0] = c.make<ReluGradOp>({c.g, c.y});
  return success();
}

LogicalResult tanhGrad(Context &c, TanhOp) { // 1 - y^2
  Value one = c.scalar(1.0);
  c.grads[0] = c.times(c.make<SubOp>({one, c.make<MulOp>({c.y, c.y})}));
  return success();
}

LogicalResult sigmoidGrad(Context &c, SigmoidOp) { // y (1 - y)
  Value one = c.scalar(1.0);
  c.grads[0] = c.times(c.make<MulOp>({c.y, c.make<SubOp>({one, c.y})}));
  return success();
}

LogicalResult expGrad(Context &c, ExpOp) {
  c.grads[0] = c.times(c.y);
  return success();
}

LogicalResult logGrad(Context &c, LogOp) {
  c.grads[0] = c.make<DivOp>({c.g, c.x(0)});
  return success();
}

LogicalResult sqrtGrad(Context &c, SqrtOp) { // 1 / (2 y)
  Value two = c.scalar(2.0);
  c.grads[0] = c.make<DivOp>({c.g, c.make<MulOp>({two, c.y})});
  return success();
}

LogicalResult sinGrad(Context &c, SinOp) { // cos x
  c.grads[0] = c.times(c.make<CosOp>(c.x(0)));
  return success();
}

LogicalResult cosGrad(Context &c, CosOp) { // -sin x
  c.grads[0] = c.times(c.make<NegOp>(c.make<SinOp>(c.x(0))));
  return success();
}

LogicalResult tanGrad(Context &c, TanOp) { // 1 + y^2
  c.grads[0] = c.times(
      c.make<AddOp>({c.scalar(1.0), c.make<MulOp>({c.y, c.y})}));
  return success();
}

LogicalResult sinhGrad(Context &c, SinhOp) { // cosh x
  c.grads[0] = c.times(c.make<CoshOp>(c.x(0)));
  return success();
}

LogicalResult coshGrad(Context &c, CoshOp) { // sinh x
  c.grads[0] = c.times(c.make<SinhOp>(c.x(0)));
  return success();
}

/// g / sqrt(add + sign x^2), negated for acos: the inverse functions'
/// slopes 1 / sqrt(1 - x^2) (asin, acos), 1 / sqrt(1 + x^2) (asinh) and
/// 1 / sqrt(x^2 - 1) (acosh).
Value overRoot(Context &c, double add, double sign, bool negate) {
  Value sq = c.make<MulOp>({c.x(0), c.x(0)});
  Value r = c.make<SqrtOp>(
      c.make<AddOp>({c.scalar(add), sign > 0 ? sq : c.make<NegOp>(sq)}));
  Value q = c.make<DivOp>({c.g, r});
  return negate ? c.make<NegOp>(q) : q;
}

LogicalResult asinGrad(Context &c, AsinOp) {
  c.grads[0] = overRoot(c, 1.0, -1.0, false);
  return success();
}

LogicalResult acosGrad(Context &c, AcosOp) {
  c.grads[0] = overRoot(c, 1.0, -1.0, true);
  return success();
}

LogicalResult asinhGrad(Context &c, AsinhOp) {
  c.grads[0] = overRoot(c, 1.0, 1.0, false);
  return success();
}

LogicalResult acoshGrad(Context &c, AcoshOp) {
  c.grads[0] = overRoot(c, -1.0, 1.0, false);
  return success();
}

LogicalResult atanhGrad(Context &c, AtanhOp) { // 1 / (1 - x^2)
  Value sq = c.make<MulOp>({c.x(0), c.x(0)});
  c.grads[0] = c.make<DivOp>({c.g, c.make<SubOp>({c.scalar(1.0), sq})});
  return success();
}

LogicalResult atanGrad(Context &c, AtanOp) { // 1 / (1 + x^2)
  Value sq = c.make<MulOp>({c.x(0), c.x(0)});
  c.grads[0] = c.make<DivOp>({c.g, c.make<AddOp>({c.scalar(1.0), sq})});
  return success();
}

LogicalResult softplusGrad(Context &c, SoftplusOp) { // sigmoid(x)
  c.grads[0] = c.times(c.make<SigmoidOp>(c.x(0)));
  return success();
}

LogicalResult mishGrad(Context &c, MishOp) {
  // y = x tanh(sp(x)): tanh(sp) + x sigmoid(x) (1 - tanh(sp)^2)
  Value t = c.make<TanhOp>(c.make<SoftplusOp>(c.x(0)));
  Value dt = c.make<SubOp>({c.scalar(1.0), c.make<MulOp>({t, t})});
  Value xs = c.make<MulOp>({c.x(0), c.make<SigmoidOp>(c.x(0))});
  c.grads[0] = c.times(c.make<AddOp>({t, c.make<MulOp>({xs, dt})}));
  return success();
}

LogicalResult erfGrad(Context &c, ErfOp) { // 2/sqrt(pi) exp(-x^2)
  Value sq = c.make<MulOp>({c.x(0), c.x(0)});
  Value e = c.make<ExpOp>(c.make<NegOp>(sq));
  c.grads[0] = c.times(c.make<MulOp>({e, c.scalar(1.1283791670955126)}));
  return success();
}

LogicalResult geluGrad(Context &c, GeluOp gelu) {
  // One op for either form: gelu' in FP32, rounded once (mpc.gelu_grad).
  c.grads[0] = c.make<GeluGradOp>(
      {c.g, c.x(0)},
      {c.b.getNamedAttr("approximate", gelu.getApproximateAttr())});
  return success();
}

LogicalResult powGrad(Context &c, PowOp pw) {
  // d/dbase = e * base^(e-1); the exponent is treated as constant.
  Value e = pw.getExponent();
  if (getElementTypeOrSelf(e) != c.elem)
    e = c.b.create<CastOp>(c.loc, typeOf(e).clone(c.elem), e);
  Value em1 = c.make<SubOp>({e, c.scalar(1.0)});
  Value d = c.make<MulOp>({e, c.make<PowOp>({c.x(0), em1})});
  c.grads[0] = c.un(c.times(d), 0);
  return success();
}

LogicalResult whereGrad(Context &c, WhereOp) {
  Value zero = c.scalar(0.0);
  c.grads[1] = c.un(c.make<WhereOp>({c.x(0), c.g, zero}), 1);
  c.grads[2] = c.un(c.make<WhereOp>({c.x(0), zero, c.g}), 2);
  return success();
}

LogicalResult castGrad(Context &c, CastOp) {
  auto cast = c.b.create<CastOp>(c.loc, typeOf(c.x(0)), c.g);
  // A gradient rounded into fp16/bf16: the executor counts the elements
  // that flush to zero there (step health).
  Type to = typeOf(c.x(0)).getElementType();
  if ((to.isF16() || to.isBF16()) && typeOf(c.g).getElementType().isF32())
    cast->setAttr("mpc.count_underflow", c.b.getUnitAttr());
  c.grads[0] = cast;
  return success();
}

LogicalResult absGrad(Context &c, AbsOp) {
  c.grads[0] = c.times(c.make<SignOp>(c.x(0)));
  return success();
}

LogicalResult reciprocalGrad(Context &c, ReciprocalOp) { // -y^2
  c.grads[0] = c.times(c.make<NegOp>(c.make<MulOp>({c.y, c.y})));
  return success();
}

/// Floor, Ceil, Round, Sign: zero almost everywhere, so no gradient flows
/// (PyTorch's zeros).
template <typename OpTy> LogicalResult stepGrad(Context &, OpTy) {
  return success();
}

/// Max, Min: g goes to the inputs equal to the result, split evenly where
/// several are (PyTorch's maximum/minimum).
template <typename OpTy> LogicalResult extremumGrad(Context &c, OpTy op) {
  unsigned n = op->getNumOperands();
  SmallVector<Value> hits;
  Value count;
  for (unsigned i = 0; i < n; ++i) {
    Value hit = c.make<EqualOp>({c.x(i), c.y});
    hits.push_back(hit);
    Value one = c.b.create<CastOp>(c.loc, typeOf(hit).clone(c.elem), hit);
    count = count ? c.make<AddOp>({count, one}) : one;
  }
  Value share = n > 1 ? c.make<DivOp>({c.g, count}) : c.g;
  for (unsigned i = 0; i < n; ++i)
    c.grads[i] = c.un(c.make<WhereOp>({hits[i], share, c.scalar(0)}), i);
  return success();
}

template <typename OpTy> LogicalResult sumGrad(Context &c, OpTy op) {
  unsigned n = op->getNumOperands();
  Value g = std::is_same_v<OpTy, MeanOp> && n > 1
                ? c.make<DivOp>({c.g, c.scalar(n)})
                : c.g;
  for (unsigned i = 0; i < n; ++i)
    c.grads[i] = c.un(g, i);
  return success();
}

} // namespace

void attachElementwiseRules(MLIRContext *ctx) {
  attachRule<AddOp, addGrad>(ctx);
  attachRule<SubOp, subGrad>(ctx);
  attachRule<MulOp, mulGrad>(ctx);
  attachRule<DivOp, divGrad>(ctx);
  attachRule<NegOp, negGrad>(ctx);
  attachRule<IdentityOp, identityGrad>(ctx);
  attachRule<ReluOp, reluGrad>(ctx);
  attachRule<TanhOp, tanhGrad>(ctx);
  attachRule<SigmoidOp, sigmoidGrad>(ctx);
  attachRule<ExpOp, expGrad>(ctx);
  attachRule<LogOp, logGrad>(ctx);
  attachRule<SqrtOp, sqrtGrad>(ctx);
  attachRule<AtanOp, atanGrad>(ctx);
  attachRule<SinOp, sinGrad>(ctx);
  attachRule<CosOp, cosGrad>(ctx);
  attachRule<TanOp, tanGrad>(ctx);
  attachRule<AsinOp, asinGrad>(ctx);
  attachRule<AcosOp, acosGrad>(ctx);
  attachRule<SinhOp, sinhGrad>(ctx);
  attachRule<CoshOp, coshGrad>(ctx);
  attachRule<AsinhOp, asinhGrad>(ctx);
  attachRule<AcoshOp, acoshGrad>(ctx);
  attachRule<AtanhOp, atanhGrad>(ctx);
  attachRule<SoftplusOp, softplusGrad>(ctx);
  attachRule<MishOp, mishGrad>(ctx);
  attachRule<ErfOp, erfGrad>(ctx);
  attachRule<GeluOp, geluGrad>(ctx);
  attachRule<PowOp, powGrad>(ctx);
  attachRule<WhereOp, whereGrad>(ctx);
  attachRule<CastOp, castGrad>(ctx);
  attachRule<AbsOp, absGrad>(ctx);
  attachRule<ReciprocalOp, reciprocalGrad>(ctx);
  attachRule<FloorOp, stepGrad<FloorOp>>(ctx);
  attachRule<CeilOp, stepGrad<CeilOp>>(ctx);
  attachRule<RoundOp, stepGrad<RoundOp>>(ctx);
  attachRule<SignOp, stepGrad<SignOp>>(ctx);
  attachRule<MaxOp, extremumGrad<MaxOp>>(ctx);
  attachRule<MinOp, extremumGrad<MinOp>>(ctx);
  attachRule<SumOp, sumGrad<SumOp>>(ctx);
  attachRule<MeanOp, sumGrad<MeanOp>>(ctx);
}

} // namespace mlir::mpc::grad
