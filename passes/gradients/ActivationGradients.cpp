//===- ActivationGradients.cpp - rules of the piecewise activations -------===//
//
// LeakyRelu, Elu, Celu, Selu, HardSigmoid, HardSwish, ThresholdedRelu,
// Softsign, PRelu and Clip, as forward elementwise ops. At a kink the rule
// takes PyTorch's side (the one its autograd formula takes), so gradients
// match what users compare against.
//
//===----------------------------------------------------------------------===//

#include "passes/gradients/GradientBuilder.h"

namespace mlir::mpc::grad {
namespace {

/// where(cond, a, b)
Value select(Context &c, Value cond, Value a, Value b) {
  return c.make<WhereOp>({cond, a, b});
}

Value positive(Context &c) { return c.make<GreaterOp>({c.x(0), c.scalar(0)}); }

LogicalResult leakyReluGrad(Context &c, LeakyReluOp op) {
  double alpha = op.getAlpha().convertToDouble();
  c.grads[0] = select(c, positive(c), c.g,
                      c.make<MulOp>({c.g, c.scalar(alpha)}));
  return success();
}

LogicalResult eluGrad(Context &c, EluOp op) { // x <= 0: y + alpha
  double alpha = op.getAlpha().convertToDouble();
  Value neg = c.times(c.make<AddOp>({c.y, c.scalar(alpha)}));
  c.grads[0] = select(c, positive(c), c.g, neg);
  return success();
}

LogicalResult celuGrad(Context &c, CeluOp op) { // x <= 0: exp(x / alpha)
  double alpha = op.getAlpha().convertToDouble();
  Value e = c.make<ExpOp>(c.make<DivOp>({c.x(0), c.scalar(alpha)}));
  c.grads[0] = select(c, positive(c), c.g, c.times(e));
  return success();
}

LogicalResult seluGrad(Context &c, SeluOp op) {
  // gamma for x > 0, else gamma alpha exp(x) = y + gamma alpha
  double alpha = op.getAlpha().convertToDouble(),
         gamma = op.getGamma().convertToDouble();
  Value neg = c.times(c.make<AddOp>({c.y, c.scalar(gamma * alpha)}));
  c.grads[0] = select(c, positive(c), c.times(c.scalar(gamma)), neg);
  return success();
}

/// alpha x + beta strictly inside (0, 1): the linear piece.
LogicalResult hardSigmoidGrad(Context &c, HardSigmoidOp op) {
  double alpha = op.getAlpha().convertToDouble(),
         beta = op.getBeta().convertToDouble();
  Value t = c.make<AddOp>(
      {c.make<MulOp>({c.x(0), c.scalar(alpha)}), c.scalar(beta)});
  Value inside = c.make<AndOp>({c.make<GreaterOp>({t, c.scalar(0)}),
                                c.make<LessOp>({t, c.scalar(1)})});
  c.grads[0] = select(c, inside, c.times(c.scalar(alpha)), c.scalar(0));
  return success();
}

LogicalResult hardSwishGrad(Context &c, HardSwishOp) {
  // 0 below -3, x/3 + 1/2 up to 3, 1 above (PyTorch's hardswish_backward).
  Value x = c.x(0);
  Value mid = c.make<AddOp>(
      {c.make<DivOp>({x, c.scalar(3)}), c.scalar(0.5)});
  Value d = select(c, c.make<LessOp>({x, c.scalar(-3)}), c.scalar(0),
                   select(c, c.make<LessOrEqualOp>({x, c.scalar(3)}), mid,
                          c.scalar(1)));
  c.grads[0] = c.times(d);
  return success();
}

LogicalResult thresholdedReluGrad(Context &c, ThresholdedReluOp op) {
  double alpha = op.getAlpha().convertToDouble();
  c.grads[0] = select(c, c.make<GreaterOp>({c.x(0), c.scalar(alpha)}), c.g,
                      c.scalar(0));
  return success();
}

LogicalResult softsignGrad(Context &c, SoftsignOp) { // 1 / (1 + |x|)^2
  Value d = c.make<AddOp>({c.scalar(1), c.make<AbsOp>(c.x(0))});
  c.grads[0] = c.make<DivOp>({c.g, c.make<MulOp>({d, d})});
  return success();
}

LogicalResult preluGrad(Context &c, PReluOp) {
  // y = x > 0 ? x : slope x; the slope broadcasts to x.
  Value pos = positive(c), zero = c.scalar(0);
  c.grads[0] =
      c.un(select(c, pos, c.g, c.make<MulOp>({c.g, c.x(1)})), 0);
  c.grads[1] =
      c.un(select(c, pos, zero, c.make<MulOp>({c.g, c.x(0)})), 1);
  return success();
}

LogicalResult clipGrad(Context &c, ClipOp clip) {
  // Passes g where min <= x <= max (PyTorch's clamp); a bound gets the sum
  // of g where it clamped (x < min, x > max), as torch.clamp with tensor
  // bounds (unused, and dropped, when the bounds are constants).
  Value keep;
  auto both = [&](Value cond) {
    keep = keep ? c.make<AndOp>({keep, cond}) : cond;
  };
  unsigned bound = 1; // operand number of the next bound present
  if (Value lo = clip.getMin()) {
    both(c.make<GreaterOrEqualOp>({c.x(0), lo}));
    c.grads[bound] = c.un(
        select(c, c.make<LessOp>({c.x(0), lo}), c.g, c.scalar(0)), bound);
    ++bound;
  }
  if (Value hi = clip.getMax()) {
    both(c.make<LessOrEqualOp>({c.x(0), hi}));
    c.grads[bound] = c.un(
        select(c, c.make<GreaterOp>({c.x(0), hi}), c.g, c.scalar(0)), bound);
  }
  c.grads[0] = keep ? select(c, keep, c.g, c.scalar(0)) : c.g;
  return success();
}

} // namespace

void attachActivationRules(MLIRContext *ctx) {
  attachRule<LeakyReluOp, leakyReluGrad>(ctx);
  attachRule<EluOp, eluGrad>(ctx);
  attachRule<CeluOp, celuGrad>(ctx);
  attachRule<SeluOp, seluGrad>(ctx);
  attachRule<HardSigmoidOp, hardSigmoidGrad>(ctx);
  attachRule<HardSwishOp, hardSwishGrad>(ctx);
  attachRule<ThresholdedReluOp, thresholdedReluGrad>(ctx);
  attachRule<SoftsignOp, softsignGrad>(ctx);
  attachRule<PReluOp, preluGrad>(ctx);
  attachRule<ClipOp, clipGrad>(ctx);
}

} // namespace mlir::mpc::grad
