//===- NnGradients.cpp - rules of reductions, normalisation, losses -------===//
//
// Reductions and softmax as forward ops again; normalisations recompute
// their statistics (batch norm) or reuse the saved ones (layer norm); the
// classification losses use dedicated grad ops.
//
//===----------------------------------------------------------------------===//

#include "passes/gradients/GradientBuilder.h"
#include <algorithm>
#include <limits>

namespace mlir::mpc::grad {
namespace {

/// Sum or mean over `axes` keeping the reduced dimensions.
template <typename ReduceOpTy>
Value reduceKeep(Context &c, Value v, ArrayRef<int64_t> axes) {
  return c.make<ReduceOpTy>(
      v, {c.b.getNamedAttr("axes", c.b.getDenseI64ArrayAttr(axes)),
          c.b.getNamedAttr("keepdims", c.b.getBoolAttr(true))});
}

/// ReduceSum, ReduceMean: g back to the keepdims shape, broadcast to the
/// input (divided by the count for a mean).
template <typename OpTy> LogicalResult sumGrad(Context &c, OpTy red) {
  auto in = typeOf(c.x(0));
  Value gr = c.g;
  if (std::is_same_v<OpTy, ReduceMeanOp>)
    gr = c.make<DivOp>({c.g, c.scalar((double)in.getNumElements() /
                                      typeOf(c.y).getNumElements())});
  Value r = reshapeTo(c.b, c.loc, gr, keptType(in, red.getAxes()));
  c.grads[0] = c.make<ExpandOp>({r, ints(c.b, c.loc, in.getShape())});
  return success();
}

/// y and g of a reduction reshaped to its keepdims shape, so they
/// broadcast against the input.
template <typename OpTy> std::pair<Value, Value> kept(Context &c, OpTy red) {
  auto k = keptType(typeOf(c.x(0)), red.getAxes());
  return {reshapeTo(c.b, c.loc, c.y, k), reshapeTo(c.b, c.loc, c.g, k)};
}

/// ReduceMax, ReduceMin: g to the elements equal to the result, split
/// evenly among ties (PyTorch's amax/amin).
template <typename OpTy> LogicalResult extremumGrad(Context &c, OpTy red) {
  auto [yk, gk] = kept(c, red);
  Value hit = c.make<EqualOp>({c.x(0), yk});
  Value one = c.b.create<CastOp>(c.loc, typeOf(hit).clone(c.elem), hit);
  SmallVector<int64_t> axes;
  if (auto a = red.getAxes())
    axes.assign(a->begin(), a->end());
  else
    for (int64_t i = 0; i < typeOf(c.x(0)).getRank(); ++i)
      axes.push_back(i);
  Value count = reduceKeep<ReduceSumOp>(c, one, axes);
  c.grads[0] = c.make<MulOp>({one, c.make<DivOp>({gk, count})});
  return success();
}

/// GlobalMaxPool: g to the elements equal to their channel's max, split
/// evenly among ties (as ReduceMax).
LogicalResult globalMaxPoolGrad(Context &c, GlobalMaxPoolOp) {
  Value hit = c.make<EqualOp>({c.x(0), c.y});
  Value one = c.b.create<CastOp>(c.loc, typeOf(hit).clone(c.elem), hit);
  SmallVector<int64_t> axes;
  for (int64_t i = 2; i < typeOf(c.x(0)).getRank(); ++i)
    axes.push_back(i);
  Value count = reduceKeep<ReduceSumOp>(c, one, axes);
  c.grads[0] = c.make<MulOp>({one, c.make<DivOp>({c.g, count})});
  return success();
}

LogicalResult l1Grad(Context &c, ReduceL1Op red) { // sign(x) g
  c.grads[0] = c.make<MulOp>({c.make<SignOp>(c.x(0)), kept(c, red).second});
  return success();
}

LogicalResult l2Grad(Context &c, ReduceL2Op red) { // x g / y, 0 where y = 0
  auto [yk, gk] = kept(c, red);
  Value zero = c.scalar(0);
  Value nz = c.make<GreaterOp>({yk, zero});
  Value safe = c.make<WhereOp>({nz, yk, c.scalar(1)});
  Value d = c.make<MulOp>({c.x(0), c.make<DivOp>({gk, safe})});
  c.grads[0] = c.make<WhereOp>({nz, d, zero});
  return success();
}

LogicalResult sumSquareGrad(Context &c, ReduceSumSquareOp red) { // 2 x g
  Value two = c.make<MulOp>({kept(c, red).second, c.scalar(2)});
  c.grads[0] = c.make<MulOp>({c.x(0), two});
  return success();
}

LogicalResult logSumGrad(Context &c, ReduceLogSumOp red) { // g / sum(x)
  auto [yk, gk] = kept(c, red);
  Value d = c.make<DivOp>({gk, c.make<ExpOp>(yk)});
  c.grads[0] = c.make<ExpandOp>(
      {d, ints(c.b, c.loc, typeOf(c.x(0)).getShape())});
  return success();
}

/// d(prod)/dx_i is the product of the others: y / x_i where no element of
/// the reduction is 0; where exactly one is, the product of the rest for
/// it and 0 for the others; 0 where two or more are.
LogicalResult prodGrad(Context &c, ReduceProdOp red) {
  auto [yk, gk] = kept(c, red);
  Value x = c.x(0), zero = c.scalar(0), one = c.scalar(1);
  SmallVector<int64_t> axes;
  if (auto a = red.getAxes())
    axes.assign(a->begin(), a->end());
  else
    for (int64_t i = 0; i < typeOf(x).getRank(); ++i)
      axes.push_back(i);
  Value isZero = c.make<EqualOp>({x, zero});
  Value zeros = reduceKeep<ReduceSumOp>(
      c, c.b.create<CastOp>(c.loc, typeOf(isZero).clone(c.elem), isZero),
      axes);
  Value nonZero = c.make<WhereOp>({isZero, one, x});
  Value rest = c.make<ReduceProdOp>(
      nonZero, {c.b.getNamedAttr("axes", c.b.getDenseI64ArrayAttr(axes)),
                c.b.getNamedAttr("keepdims", c.b.getBoolAttr(true))});
  Value none = c.make<EqualOp>({zeros, zero});
  Value single = c.make<AndOp>({c.make<EqualOp>({zeros, one}), isZero});
  Value d = c.make<WhereOp>(
      {none, c.make<DivOp>({yk, nonZero}),
       c.make<WhereOp>({single, rest, zero})});
  c.grads[0] = c.make<MulOp>({d, gk});
  return success();
}

/// The gradient of a cumulative sum is the cumulative sum of g the other
/// way, with the same exclusivity.
LogicalResult cumSumGrad(Context &c, CumSumOp cs) {
  c.grads[0] = c.make<CumSumOp>(
      c.g, {c.b.getNamedAttr("axis", cs.getAxisAttr()),
            c.b.getNamedAttr("exclusive", cs.getExclusiveAttr()),
            c.b.getNamedAttr("reverse", c.b.getBoolAttr(!cs.getReverse()))});
  return success();
}

/// A cumulative product's: mpc.cum_prod_grad, which needs no division by
/// x (a 0 in the line, as masks have, stays exact).
LogicalResult cumProdGrad(Context &c, CumProdOp cp) {
  c.grads[0] = c.make<CumProdGradOp>(
      {c.x(0), c.g}, {c.b.getNamedAttr("axis", cp.getAxisAttr()),
                      c.b.getNamedAttr("exclusive", cp.getExclusiveAttr()),
                      c.b.getNamedAttr("reverse", cp.getReverseAttr())});
  return success();
}

/// Trilu keeps a triangle: g flows back through the same one.
LogicalResult triluGrad(Context &c, TriluOp t) {
  c.grads[0] = c.make<TriluOp>(
      c.g, {c.b.getNamedAttr("k", t.getKAttr()),
            c.b.getNamedAttr("upper", t.getUpperAttr())});
  return success();
}

LogicalResult softmaxGrad(Context &c, SoftmaxOp sm) { // y (g - sum(g y))
  int64_t axis = sm.getAxis();
  Value s = reduceKeep<ReduceSumOp>(c, c.make<MulOp>({c.g, c.y}), {axis});
  c.grads[0] = c.make<MulOp>({c.y, c.make<SubOp>({c.g, s})});
  return success();
}

LogicalResult logSoftmaxGrad(Context &c, LogSoftmaxOp sm) {
  // g - exp(y) sum(g)
  int64_t axis = sm.getAxis();
  c.grads[0] = c.make<SubOp>(
      {c.g, c.make<MulOp>({c.make<ExpOp>(c.y),
                           reduceKeep<ReduceSumOp>(c, c.g, {axis})})});
  return success();
}

LogicalResult logSumExpGrad(Context &c, ReduceLogSumExpOp red) {
  // g * softmax over the reduced axes: exp(x - y) with y, g kept.
  auto kept = keptType(typeOf(c.x(0)), red.getAxes());
  Value yk = reshapeTo(c.b, c.loc, c.y, kept);
  Value gk = reshapeTo(c.b, c.loc, c.g, kept);
  Value sm = c.make<ExpOp>(c.make<SubOp>({c.x(0), yk}));
  c.grads[0] = c.make<MulOp>({sm, gk});
  return success();
}

/// The grad op of a classification loss: (g, log-probabilities, labels,
/// weights?) with the forward op's reduction and ignore_index.
template <typename GradOp, typename LossOp>
Value lossGrad(Context &c, Value logp, LossOp loss, Value weights) {
  SmallVector<Value> operands{c.g, logp, loss->getOperand(1)};
  if (weights)
    operands.push_back(weights);
  SmallVector<NamedAttribute> attrs{
      c.b.getNamedAttr("reduction", loss.getReductionAttr())};
  if (auto ig = loss.getIgnoreIndexAttr())
    attrs.push_back(c.b.getNamedAttr("ignore_index", ig));
  return c.make<GradOp>(operands, attrs);
}

LogicalResult softmaxCrossEntropyGrad(Context &c,
                                      SoftmaxCrossEntropyLossOp sce) {
  if (c.g)
    c.grads[0] = lossGrad<SoftmaxCrossEntropyLossGradOp>(
        c, sce.getLogProb(), sce, sce.getWeights());
  return success();
}

LogicalResult nllGrad(Context &c, NegativeLogLikelihoodLossOp nll) {
  c.grads[0] = lossGrad<NegativeLogLikelihoodLossGradOp>(
      c, nll.getInput(), nll, nll.getWeight());
  return success();
}

/// mpc.random reads only `like`'s shape: no gradient flows to it.
LogicalResult randomGrad(Context &, RandomOp) { return success(); }

LogicalResult dropoutGrad(Context &c, DropoutOp d) {
  // Inference mode is the identity; in training mode the forward mask and
  // scale apply to the gradient too.
  std::optional<double> constRatio = constantDropoutRatio(d);
  if (constRatio && *constRatio == 0.0) {
    c.grads[0] = c.g;
    return success();
  }
  if (constRatio) {
    // What exports write: the gradient is the dropout of g with the
    // forward's key, ratio and step, which draws the forward's mask again
    // (Philox is a pure function of key and counter): nothing of the
    // forward's size is kept for the backward, g * 1/(1-ratio) is rounded
    // once from the FP32 factor (as torch's dropout backward), and the
    // CUDA backend computes it inside the chain that reads it.
    SmallVector<Value> operands{c.g};
    for (Value v : {d.getRatio(), d.getTrainingMode(), d.getStep()})
      if (v)
        operands.push_back(v);
    SmallVector<NamedAttribute> attrs{c.b.getNamedAttr(
        "operandSegmentSizes",
        c.b.getDenseI32ArrayAttr({1, d.getRatio() ? 1 : 0,
                                  d.getTrainingMode() ? 1 : 0,
                                  d.getStep() ? 1 : 0}))};
    if (d.getSeedAttr())
      attrs.push_back(c.b.getNamedAttr("seed", d.getSeedAttr()));
    if (d.getStreamAttr())
      attrs.push_back(c.b.getNamedAttr("stream", d.getStreamAttr()));
    c.grads[0] = makeOp(c.b, c.loc, DropoutOp::getOperationName(), operands,
                        attrs)
                     ->getResult(0);
    return success();
  }
  Value ratio = d.getRatio() ? d.getRatio() : c.scalar(0.5);
  Value keep = c.make<SubOp>({c.scalar(1.0), ratio});
  Value zero = c.scalar(0.0);
  Value scaled = c.make<DivOp>({c.g, keep});
  Value masked = c.make<WhereOp>({d.getMask(), scaled, zero});
  // training_mode may be false at run time: then pass g through.
  c.grads[0] = c.make<WhereOp>({d.getTrainingMode(), masked, c.g});
  return success();
}

/// BatchNormalization's channel view of x = [N, C, ...] (or [N, ..., C]
/// with `channelsLast`): the axes its statistics reduce over (all but the
/// channels'), a [1, C, 1...] (or [1..., C]) type for values per channel,
/// and the sum of a value over those axes down to [C].
struct ChannelView {
  SmallVector<int64_t> axes;
  RankedTensorType chan;
  ChannelView(Context &c, RankedTensorType in, bool channelsLast = false) {
    int64_t ch = channelsLast ? in.getRank() - 1 : 1;
    SmallVector<int64_t> bshape(in.getRank(), 1);
    for (int64_t i = 0; i < in.getRank(); ++i)
      if (i != ch)
        axes.push_back(i);
    bshape[ch] = in.getDimSize(ch);
    chan = RankedTensorType::get(bshape, c.elem);
  }
  Value sum(Context &c, Value v) const {
    return c.make<ReduceSumOp>(
        v, {c.b.getNamedAttr("axes", c.b.getDenseI64ArrayAttr(axes)),
            c.b.getNamedAttr("keepdims", c.b.getBoolAttr(false))});
  }
};

LogicalResult batchNormTrainGrad(Context &c, BatchNormTrainOp bn) {
  // The batch statistics recomputed and all three gradients in one op
  // (mpc.batch_norm_grad), the layer-norm formula per channel: dx in x's
  // type (low under mixed precision), the parameters' in FP32.
  if (!c.g)
    return success();
  Operation *grad = makeOp(
      c.b, c.loc, BatchNormGradOp::getOperationName(),
      {c.g, c.x(0), bn.getScale()},
      {c.b.getNamedAttr("epsilon", bn.getEpsilonAttr()),
       c.b.getNamedAttr("channels_last", bn.getChannelsLastAttr())});
  for (unsigned i = 0; i < 3; ++i)
    c.grads[i] = grad->getResult(i);
  return success();
}

/// RotaryEmbedding: a rotation per pair, so dx is the rotation by -angle
/// (the same op with -sin). The caches get the sum over heads of the
/// pairs' products (zero work unless something trains them: unused
/// results are dropped).
LogicalResult rotaryGrad(Context &c, RotaryOp rot) {
  NamedAttrList attrs(rot->getAttrDictionary());
  // -sin once for every rotation sharing the table (a Llama's q and k in
  // every layer): the backward emits later rotations' gradients first, so
  // an earlier -sin of the same table in this block comes before this one.
  Value negSin;
  Block *here = c.b.getInsertionBlock();
  for (Operation *u : rot.getSin().getUsers())
    if (isa<NegOp>(u) && u->getBlock() == here &&
        (c.b.getInsertionPoint() == here->end() ||
         u->isBeforeInBlock(&*c.b.getInsertionPoint())))
      negSin = u->getResult(0);
  if (!negSin)
    negSin = c.make<NegOp>(rot.getSin());
  c.grads[0] = c.make<RotaryOp>({c.g, rot.getCos(), negSin}, attrs.getAttrs());
  int64_t R = rot.getRotaryDim(), half = R / 2;
  bool inter = rot.getInterleaved();
  // The two elements of every pair along the head axis (3), as views.
  auto part = [&](Value v, bool second) {
    int64_t start = inter ? (second ? 1 : 0) : (second ? half : 0);
    int64_t end = inter ? R : start + half;
    return makeOp(c.b, c.loc, SliceOp::getOperationName(),
                  {v, ints(c.b, c.loc, {start}), ints(c.b, c.loc, {end}),
                   ints(c.b, c.loc, {3}), ints(c.b, c.loc, {inter ? 2 : 1})},
                  {c.b.getNamedAttr("operandSegmentSizes",
                                    c.b.getDenseI32ArrayAttr({1, 1, 1, 1, 1}))})
        ->getResult(0);
  };
  Value x1 = part(c.x(0), false), x2 = part(c.x(0), true);
  Value g1 = part(c.g, false), g2 = part(c.g, true);
  // (b, a1, a2, p) summed over the heads axis -> (b, s, p), then to the
  // cache's (batch or 1) shape.
  int64_t heads = rot.getSeqAxis() == 1 ? 2 : 1;
  // (In mixed precision the tables stay FP32 while x is fp16/bf16.)
  auto toCache = [&](Value v, unsigned operand) {
    Value summed = c.make<ReduceSumOp>(
        v, {c.b.getNamedAttr("axes", c.b.getDenseI64ArrayAttr({heads})),
            c.b.getNamedAttr("keepdims", c.b.getBoolAttr(false))});
    Type elem = typeOf(c.x(operand)).getElementType();
    if (typeOf(summed).getElementType() != elem)
      summed = c.b.create<CastOp>(c.loc, typeOf(summed).clone(elem), summed);
    return c.un(summed, operand);
  };
  c.grads[1] = toCache(c.make<AddOp>({c.make<MulOp>({g1, x1}),
                                      c.make<MulOp>({g2, x2})}), 1);
  c.grads[2] = toCache(c.make<SubOp>({c.make<MulOp>({g2, x1}),
                                      c.make<MulOp>({g1, x2})}), 2);
  return success();
}

/// BatchNormalization with running statistics (inference form, e.g. a
/// frozen backbone being fine-tuned): an affine map per channel, so
/// dx = g * scale * inv, dscale = sum(g * xhat), dbias = sum(g); the
/// statistics are not trained.
LogicalResult batchNormGrad(Context &c, BatchNormOp bn) {
  // Low-precision data (mixed precision; the parameters stay FP32): the
  // formula in FP32 on the widened g and x, dx rounded once to x's type.
  Type f32 = c.b.getF32Type();
  auto wide = [&](Value v) {
    auto t = typeOf(v);
    return t.getElementType().isF32()
               ? v
               : c.b.create<CastOp>(c.loc, t.clone(f32), v).getResult();
  };
  Value g = wide(c.g), x = wide(c.x(0));
  ChannelView view(c, typeOf(x), bn.getChannelsLast());
  view.chan = view.chan.clone(f32);
  auto perChannel = [&](Value v) {
    return reshapeTo(c.b, c.loc, v, view.chan);
  };
  Value eps = grad::scalar(c.b, c.loc, f32, bn.getEpsilon().convertToDouble());
  Value inv = perChannel(c.make<ReciprocalOp>(
      c.make<SqrtOp>(c.make<AddOp>({bn.getVar(), eps}))));
  Value dx = c.make<MulOp>({g, c.make<MulOp>({perChannel(bn.getScale()), inv})});
  c.grads[0] = dx.getType() == c.x(0).getType()
                   ? dx
                   : c.b.create<CastOp>(c.loc, typeOf(c.x(0)), dx).getResult();
  Value xhat =
      c.make<MulOp>({c.make<SubOp>({x, perChannel(bn.getMean())}), inv});
  c.grads[1] = view.sum(c, c.make<MulOp>({g, xhat}));
  c.grads[2] = view.sum(c, g);
  return success();
}

LogicalResult layerNormGrad(Context &c, LayerNormOp ln) {
  if (!c.elem.isF32())
    return ln->emitError("layer_norm gradient needs f32 (casts around "
                         "it come with mixed precision)");
  auto in = typeOf(c.x(0));
  int64_t axis = ln.getAxisAttr().getInt();
  axis = axis < 0 ? axis + in.getRank() : axis;
  // dx in one row pass (mpc.norm_grad); dscale = sum(g * xhat) over rows.
  c.grads[0] = c.make<NormGradOp>(
      {c.g, c.x(0), ln.getScale(), ln.getInvStdDev(), ln.getMean()},
      {c.b.getNamedAttr("axis", c.b.getI64IntegerAttr(axis))});
  Value xhat = c.make<MulOp>(
      {c.make<SubOp>({c.x(0), ln.getMean()}), ln.getInvStdDev()});
  c.grads[1] = c.un(c.make<MulOp>({c.g, xhat}), 1);
  if (ln.getBias())
    c.grads[2] = c.un(c.g, 2);
  return success();
}

LogicalResult rmsNormGrad(Context &c, RmsNormOp rn) {
  if (!c.elem.isF32())
    return rn->emitError("rms_norm gradient needs f32 (casts around it come "
                         "with mixed precision)");
  auto in = typeOf(c.x(0));
  int64_t axis = rn.getAxisAttr().getInt();
  axis = axis < 0 ? axis + in.getRank() : axis;
  // xhat = x * inv; dx = inv * (dxhat - xhat * mean(dxhat * xhat)) in one
  // row pass (mpc.norm_grad without a mean).
  c.grads[0] = c.make<NormGradOp>(
      {c.g, c.x(0), rn.getScale(), rn.getInvRms()},
      {c.b.getNamedAttr("axis", c.b.getI64IntegerAttr(axis))});
  Value xhat = c.make<MulOp>({c.x(0), rn.getInvRms()});
  c.grads[1] = c.un(c.make<MulOp>({c.g, xhat}), 1);
  return success();
}

/// dq, dk, dv from mpc.attention_grad (p recomputed from lse, the dropout
/// mask redrawn, nothing of size Sq x Skv kept). A bias that depends on a
/// parameter (a learned relative position bias: Swin, T5) also takes dS
/// from it, summed to the bias's shape: Q and K have no other reader, so
/// the GPU kernels may read them in place (mpc-transposes-to-attention).
LogicalResult attentionGrad(Context &c, AttentionOp at) {
  if (c.resultGrads.size() > 1 && c.resultGrads[1])
    return at->emitError("gradient through attention's log-sum-exp is not "
                         "supported");
  SmallVector<Value> operands{c.g, at.getQ(), at.getK(), at.getV(), c.y,
                              at.getLse()};
  if (at.getBias())
    operands.push_back(at.getBias());
  bool dropout = at.getDropout().convertToFloat() > 0.0f;
  // Only a bias that depends on what is trained needs its gradient (a
  // constant mask or ALiBi's slopes none).
  bool biasGrad = at.getBias() && c.wanted[3];
  SmallVector<NamedAttribute> attrs{
      c.b.getNamedAttr("scale", at.getScaleAttr()),
      c.b.getNamedAttr("causal", at.getCausalAttr()),
      c.b.getNamedAttr("operandSegmentSizes",
                       c.b.getDenseI32ArrayAttr(
                           {1, 1, 1, 1, 1, 1, at.getBias() ? 1 : 0, 0}))};
  if (biasGrad)
    attrs.push_back(c.b.getNamedAttr("with_scores_grad", c.b.getUnitAttr()));
  // The forward's key, so the gradient redraws its mask (mpc-dropout-steps
  // gives both the step).
  if (dropout) {
    attrs.push_back(c.b.getNamedAttr("dropout", at.getDropoutAttr()));
    if (at.getSeedAttr())
      attrs.push_back(c.b.getNamedAttr("seed", at.getSeedAttr()));
    if (at.getStreamAttr())
      attrs.push_back(c.b.getNamedAttr("stream", at.getStreamAttr()));
  }
  if (at.getSoftcap().convertToFloat() > 0.0f)
    attrs.push_back(c.b.getNamedAttr("softcap", at.getSoftcapAttr()));
  for (auto [name, attr] :
       {std::pair{"causal_offset", at.getCausalOffsetAttr()},
        std::pair{"window_left", at.getWindowLeftAttr()},
        std::pair{"window_right", at.getWindowRightAttr()}})
    if (attr)
      attrs.push_back(c.b.getNamedAttr(name, attr));
  Operation *grad = makeOp(c.b, c.loc, AttentionGradOp::getOperationName(),
                           operands, attrs);
  // attention_grad needs no flag: p = 0 wherever lse is -inf.
  for (unsigned i = 0; i < 3; ++i)
    c.grads[i] = grad->getResult(i);
  if (!biasGrad)
    return success();
  // dS (q's type) summed over the dims the bias broadcasts along, in the
  // bias's type (an FP32 bias of FP16 attention, as a half model's FP32
  // softmax adds it: the sum in FP32 too).
  Value ds = grad->getResult(3);
  Type biasElem = typeOf(at.getBias()).getElementType();
  if (typeOf(ds).getElementType() != biasElem)
    ds = c.b.create<CastOp>(c.loc, typeOf(ds).clone(biasElem), ds);
  c.grads[3] = c.un(ds, 3);
  return success();
}

} // namespace

void attachNnRules(MLIRContext *ctx) {
  attachRule<AttentionOp, attentionGrad>(ctx);
  attachRule<RotaryOp, rotaryGrad>(ctx);
  attachRule<ReduceSumOp, sumGrad<ReduceSumOp>>(ctx);
  attachRule<ReduceMeanOp, sumGrad<ReduceMeanOp>>(ctx);
  attachRule<ReduceMaxOp, extremumGrad<ReduceMaxOp>>(ctx);
  attachRule<GlobalMaxPoolOp, globalMaxPoolGrad>(ctx);
  attachRule<BatchNormOp, batchNormGrad>(ctx);
  attachRule<ReduceMinOp, extremumGrad<ReduceMinOp>>(ctx);
  attachRule<ReduceL1Op, l1Grad>(ctx);
  attachRule<ReduceL2Op, l2Grad>(ctx);
  attachRule<ReduceSumSquareOp, sumSquareGrad>(ctx);
  attachRule<ReduceLogSumOp, logSumGrad>(ctx);
  attachRule<ReduceProdOp, prodGrad>(ctx);
  attachRule<CumSumOp, cumSumGrad>(ctx);
  attachRule<CumProdOp, cumProdGrad>(ctx);
  attachRule<TriluOp, triluGrad>(ctx);
  attachRule<SoftmaxOp, softmaxGrad>(ctx);
  attachRule<LogSoftmaxOp, logSoftmaxGrad>(ctx);
  attachRule<ReduceLogSumExpOp, logSumExpGrad>(ctx);
  attachRule<SoftmaxCrossEntropyLossOp, softmaxCrossEntropyGrad>(ctx);
  attachRule<NegativeLogLikelihoodLossOp, nllGrad>(ctx);
  attachRule<DropoutOp, dropoutGrad>(ctx);
  attachRule<RandomOp, randomGrad>(ctx);
  attachRule<BatchNormTrainOp, batchNormTrainGrad>(ctx);
  attachRule<LayerNormOp, layerNormGrad>(ctx);
  attachRule<RmsNormOp, rmsNormGrad>(ctx);
}

} // namespace mlir::mpc::grad
