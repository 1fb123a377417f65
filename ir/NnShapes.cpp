//===- NnShapes.cpp - types and verifiers of norm, loss, training ops -----===//

#include "ir/MpcOps.h"
#include "ir/ShapeRules.h"

using namespace mlir;
using namespace mlir::mpc;

LogicalResult LayerNormOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &types) {
  auto x = rankedOf(adaptor.getX());
  auto axis = normalizeAxis(adaptor.getAxis(), x.getRank());
  if (!axis)
    return shapeError(loc, "layer_norm axis ", adaptor.getAxis(),
                      " is out of range for rank ", x.getRank());
  SmallVector<int64_t> statShape(x.getShape());
  for (int64_t i = *axis; i < x.getRank(); ++i)
    statShape[i] = 1;
  types.push_back(x);
  auto stat = RankedTensorType::get(statShape, Float32Type::get(x.getContext()));
  types.push_back(stat);
  types.push_back(stat);
  return success();
}

LogicalResult TopKOp::inferReturnTypes(MLIRContext *,
                                       std::optional<Location> loc,
                                       Adaptor adaptor,
                                       SmallVectorImpl<Type> &types) {
  auto x = rankedOf(adaptor.getX());
  auto axis = normalizeAxis(adaptor.getAxis(), x.getRank());
  if (!axis)
    return shapeError(loc, "top_k axis ", adaptor.getAxis(),
                      " is out of range for rank ", x.getRank());
  int64_t k = adaptor.getK(), n = x.getDimSize(*axis);
  if (k < 0 || (!ShapedType::isDynamic(n) && k > n))
    return shapeError(loc, "top_k k = ", k, " is outside [0, ", n,
                      "], the axis' size");
  SmallVector<int64_t> shape(x.getShape());
  shape[*axis] = k;
  types.push_back(
      RankedTensorType::get(shape, IntegerType::get(x.getContext(), 64)));
  return success();
}

LogicalResult RmsNormOp::inferReturnTypes(MLIRContext *,
                                          std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &types) {
  auto x = rankedOf(adaptor.getX()), scale = rankedOf(adaptor.getScale());
  auto axis = normalizeAxis(adaptor.getAxis(), x.getRank());
  if (!axis)
    return shapeError(loc, "rms_norm axis ", adaptor.getAxis(),
                      " is out of range for rank ", x.getRank());
  // The scale: a trailing part of the normalized shape (leading 1s aside).
  ArrayRef<int64_t> norm = x.getShape().drop_front(*axis), s = scale.getShape();
  while (!s.empty() && s.front() == 1)
    s = s.drop_front();
  if (s.size() > norm.size() || s != norm.take_back(s.size()))
    return shapeError(loc, "rms_norm scale ", scale,
                      " is not a trailing part of the normalized shape of ", x);
  SmallVector<int64_t> statShape(x.getShape());
  for (int64_t i = *axis; i < x.getRank(); ++i)
    statShape[i] = 1;
  types.push_back(x);
  types.push_back(
      RankedTensorType::get(statShape, Float32Type::get(x.getContext())));
  return success();
}

/// Shared checks of the two classification losses: scores N x C x D...,
/// labels N x D..., and the loss shape implied by `reduction`.
static LogicalResult inferLossShape(std::optional<Location> loc, Value scores,
                                    Value labels, Value weights,
                                    StringRef reduction,
                                    SmallVectorImpl<Type> &types) {
  auto s = rankedOf(scores), l = rankedOf(labels);
  if (s.getRank() < 2 || l.getRank() != s.getRank() - 1)
    return shapeError(loc, "expected scores N x C x D1..Dk and labels "
                           "N x D1..Dk, got ",
                      s, " and ", l);
  for (int64_t i = 0; i < l.getRank(); ++i) {
    int64_t a = s.getDimSize(i == 0 ? 0 : i + 1), b = l.getDimSize(i);
    if (a != kDyn && b != kDyn && a != b)
      return shapeError(loc, "labels shape ", l, " does not match scores ", s);
  }
  if (weights) {
    auto w = rankedOf(weights);
    if (w.getRank() != 1 ||
        (w.getDimSize(0) != kDyn && s.getDimSize(1) != kDyn &&
         w.getDimSize(0) != s.getDimSize(1)))
      return shapeError(loc, "weights must be 1-D with one entry per class");
  }
  if (reduction == "none")
    types.push_back(l.clone(s.getElementType()));
  else if (reduction == "mean" || reduction == "sum")
    types.push_back(RankedTensorType::get({}, s.getElementType()));
  else
    return shapeError(loc, "reduction must be none, sum or mean, got '",
                      reduction, "'");
  return success();
}

LogicalResult SoftmaxCrossEntropyLossOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &types) {
  if (failed(inferLossShape(loc, adaptor.getScores(), adaptor.getLabels(),
                            adaptor.getWeights(), adaptor.getReduction(),
                            types)))
    return failure();
  types.push_back(adaptor.getScores().getType());
  return success();
}

LogicalResult NegativeLogLikelihoodLossOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &types) {
  return inferLossShape(loc, adaptor.getInput(), adaptor.getTarget(),
                        adaptor.getWeight(), adaptor.getReduction(), types);
}

LogicalResult RandomOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &types) {
  Type elem = adaptor.getDtype();
  if (!elem || !llvm::isa<FloatType>(elem))
    return shapeError(loc, "random needs a float dtype");
  StringRef d = adaptor.getDistribution();
  if (d != "uniform" && d != "normal")
    return shapeError(loc, "random distribution '", d, "' is not uniform or normal");
  if (adaptor.getLike()) {
    types.push_back(rankedOf(adaptor.getLike()).clone(elem));
    return success();
  }
  if (!adaptor.getShape())
    return shapeError(loc, "random needs a shape or a tensor to take it from");
  types.push_back(RankedTensorType::get(*adaptor.getShape(), elem));
  return success();
}

LogicalResult OneHotOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &types) {
  auto idx = rankedOf(adaptor.getIndices()), vals = rankedOf(adaptor.getValues());
  if (vals.getNumElements() != 2)
    return shapeError(loc, "one_hot values must hold [off, on], got ", vals);
  if (adaptor.getDepth() < 1)
    return shapeError(loc, "one_hot depth must be positive");
  auto axis = normalizeAxis(adaptor.getAxis(), idx.getRank() + 1);
  if (!axis)
    return shapeError(loc, "one_hot axis out of range");
  SmallVector<int64_t> shape(idx.getShape());
  shape.insert(shape.begin() + *axis, adaptor.getDepth());
  types.push_back(RankedTensorType::get(shape, vals.getElementType()));
  return success();
}

//===----------------------------------------------------------------------===//
// Verifiers
//===----------------------------------------------------------------------===//

LogicalResult GeluOp::verify() {
  if (getApproximate() != "none" && getApproximate() != "tanh")
    return emitOpError("approximate must be 'none' or 'tanh', got '")
           << getApproximate() << "'";
  return success();
}

LogicalResult GeluGradOp::verify() {
  if (getApproximate() != "none" && getApproximate() != "tanh")
    return emitOpError("approximate must be 'none' or 'tanh', got '")
           << getApproximate() << "'";
  if (getGrad().getType() != getX().getType())
    return emitOpError("grad and x must have one type");
  return success();
}

LogicalResult BatchNormGradOp::verify() {
  auto x = rankedOf(getX()), scale = rankedOf(getScale());
  if (getGrad().getType() != getX().getType() ||
      (getReluOut() && getReluOut().getType() != getX().getType()))
    return emitOpError("grad, x and relu_out must have one type");
  int64_t ch = getChannelsLast() ? x.getRank() - 1 : 1;
  if (x.getRank() < 2 || scale.getRank() != 1 ||
      (!x.isDynamicDim(ch) && !scale.isDynamicDim(0) &&
       scale.getDimSize(0) != x.getDimSize(ch)))
    return emitOpError("expected x [N, C, ...] and scale [C], got ")
           << x << " and " << scale;
  return success();
}

LogicalResult ReluGradOp::verify() {
  if (getGrad().getType() != getY().getType())
    return emitOpError("grad and y must have one type");
  return success();
}

LogicalResult ClipOp::verify() {
  for (Value bound : {getMin(), getMax()}) {
    if (!bound)
      continue;
    auto t = rankedOf(bound);
    if (t.getNumElements() != 1 ||
        t.getElementType() != getElementTypeOrSelf(getX()))
      return emitOpError("min and max must be single elements of the input's "
                         "element type, got ")
             << t;
  }
  return success();
}

/// Scale, bias, mean and var are 1-D with one entry per channel (dim 1,
/// or the last with `channelsLast`).
static LogicalResult verifyChannelParams(Operation *op, ValueRange params,
                                         bool channelsLast) {
  auto x = rankedOf(op->getOperand(0));
  if (x.getRank() < 2)
    return op->emitOpError("input must be N x C x ..., got ") << x;
  int64_t c = x.getDimSize(channelsLast ? x.getRank() - 1 : 1);
  for (Value p : params) {
    auto t = rankedOf(p);
    if (t.getRank() != 1 ||
        (t.getDimSize(0) != kDyn && c != kDyn && t.getDimSize(0) != c))
      return op->emitOpError("expected per-channel parameters of shape [")
             << c << "], got " << t;
  }
  return success();
}

LogicalResult BatchNormOp::verify() {
  return verifyChannelParams(*this, getOperands().drop_front(),
                             getChannelsLast());
}

LogicalResult BatchNormTrainOp::verify() {
  return verifyChannelParams(*this, getOperands().drop_front(),
                             getChannelsLast());
}

LogicalResult GradientOp::verify() {
  if (getInputs().size() != getXs().size() + getZs().size())
    return emitOpError("expected ")
           << getXs().size() + getZs().size()
           << " operands (one per name in xs and zs), got "
           << getInputs().size();
  return success();
}

/// R is a float scalar, T an i64 scalar, then `groups` groups of n tensors
/// with matching types.
static LogicalResult verifyOptimizer(Operation *op, unsigned groups) {
  auto operands = op->getOperands();
  if (operands.size() < 2 + groups || (operands.size() - 2) % groups)
    return op->emitOpError("expected R, T and ")
           << groups << " groups of equally many tensors";
  auto r = rankedOf(operands[0]), t = rankedOf(operands[1]);
  if (r.getNumElements() != 1 || !llvm::isa<FloatType>(r.getElementType()))
    return op->emitOpError("learning rate R must be a float scalar");
  if (t.getNumElements() != 1 || !t.getElementType().isInteger(64))
    return op->emitOpError("step count T must be an i64 scalar");
  size_t n = (operands.size() - 2) / groups;
  for (unsigned g = 1; g < groups; ++g)
    for (size_t i = 0; i < n; ++i)
      if (operands[2 + g * n + i].getType() != operands[2 + i].getType())
        return op->emitOpError("operand ")
               << 2 + g * n + i << " must have the type of tensor " << i;
  return success();
}

LogicalResult MomentumOp::verify() {
  if (getMode() != "standard" && getMode() != "nesterov")
    return emitOpError("mode must be 'standard' or 'nesterov'");
  return verifyOptimizer(*this, 3);
}
LogicalResult AdagradOp::verify() { return verifyOptimizer(*this, 3); }
LogicalResult AdamOp::verify() { return verifyOptimizer(*this, 4); }

LogicalResult GatherElementsGradOp::verify() {
  auto data = rankedOf(getDataGrad()), idx = rankedOf(getIndices());
  auto axis = normalizeAxis(getAxis(), data.getRank());
  if (!axis)
    return emitOpError("axis out of range");
  if (!areCompatibleTypes(idx.clone(getElementTypeOrSelf(data)),
                          getGrad().getType()) ||
      idx.getRank() != data.getRank())
    return emitOpError("grad type ")
           << getGrad().getType() << " is not what gather_elements of " << data
           << " with indices " << idx << " gives";
  return success();
}

LogicalResult GatherGradOp::verify() {
  auto data = rankedOf(getDataGrad()), idx = rankedOf(getIndices());
  auto axis = normalizeAxis(getAxis(), data.getRank());
  if (!axis)
    return emitOpError("axis out of range");
  SmallVector<int64_t> shape(data.getShape().take_front(*axis));
  llvm::append_range(shape, idx.getShape());
  llvm::append_range(shape, data.getShape().drop_front(*axis + 1));
  if (!areCompatibleTypes(data.clone(shape), getGrad().getType()))
    return emitOpError("grad type ")
           << getGrad().getType() << " is not what gather of " << data
           << " gives";
  return success();
}

LogicalResult AllReduceOp::verify() {
  if (getGrads().size() != getReduced().size() || getGrads().empty())
    return emitOpError("expects one result per gradient, got ")
           << getReduced().size() << " for " << getGrads().size();
  for (auto [g, r] : llvm::zip(getGrads(), getReduced()))
    if (g.getType() != r.getType())
      return emitOpError("result type ")
             << r.getType() << " differs from its gradient's " << g.getType();
  if (getWire() != "f32" && getWire() != "f16" && getWire() != "bf16")
    return emitOpError("wire must be f32, f16 or bf16, got '")
           << getWire() << "'";
  // What travels is what the operands hold (mpc-data-parallel casts).
  for (Value g : getGrads()) {
    Type e = getElementTypeOrSelf(g);
    if (!(getWire() == "f32"   ? e.isF32()
          : getWire() == "f16" ? e.isF16()
                               : e.isBF16()))
      return emitOpError("operand of type ")
             << g.getType() << " on a " << getWire() << " wire";
  }
  return success();
}

LogicalResult UnscaleGradsOp::verify() {
  if (getGrads().size() != getUnscaled().size())
    return emitOpError("expects one result per gradient, got ")
           << getUnscaled().size() << " for " << getGrads().size();
  // A result has its gradient's type, or its shape in FP32 (the exact
  // widening of a fp16/bf16 gradient).
  for (auto [g, u] : llvm::zip(getGrads(), getUnscaled())) {
    auto gt = rankedOf(g), ut = rankedOf(u);
    bool widened = ut.getElementType().isF32() &&
                   !gt.getElementType().isF32() &&
                   gt.clone(ut.getElementType()) == ut;
    if (g.getType() != u.getType() && !widened)
      return emitOpError("result type ")
             << u.getType() << " is neither its gradient's " << g.getType()
             << " nor its FP32 widening";
  }
  return success();
}

LogicalResult GlobalNormOp::verify() {
  if (getTensors().empty())
    return emitOpError("expects at least one tensor");
  return success();
}

LogicalResult ResizeAxisOp::inferReturnTypes(MLIRContext *,
                                             std::optional<Location> loc,
                                             Adaptor adaptor,
                                             SmallVectorImpl<Type> &types) {
  auto x = rankedOf(adaptor.getX());
  int64_t axis = adaptor.getAxis(); // I64Attr's getter is unsigned
  if (axis < 0 || axis >= x.getRank())
    return shapeError(loc, "resize_axis axis ", axis,
                      " is out of range for rank ", x.getRank());
  ArrayRef<int64_t> idx = adaptor.getIndices();
  ArrayRef<float> w = adaptor.getWeights();
  if (w.size() != idx.size())
    return shapeError(loc, "resize_axis has ", idx.size(), " indices and ",
                      w.size(), " weights");
  int64_t rows = adaptor.getSize();
  if (rows <= 0 || idx.empty() || (int64_t)idx.size() % rows != 0)
    return shapeError(loc, "resize_axis table of ", idx.size(),
                      " taps does not split into ", rows, " rows");
  if (adaptor.getFill() && (int64_t)adaptor.getFill()->size() != rows)
    return shapeError(loc, "resize_axis fill has ", adaptor.getFill()->size(),
                      " values for ", rows, " rows");
  int64_t dim = x.getDimSize(axis);
  for (int64_t i : idx)
    if (i < 0 || (dim != ShapedType::kDynamic && i >= dim))
      return shapeError(loc, "resize_axis index ", i,
                        " is out of range for dimension ", dim);
  SmallVector<int64_t> shape(x.getShape());
  shape[axis] = rows;
  types.push_back(x.clone(shape));
  return success();
}

LogicalResult RotaryOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &types) {
  auto x = rankedOf(adaptor.getX());
  int64_t seqAxis = adaptor.getSeqAxis(), dim = adaptor.getRotaryDim();
  if (x.getRank() != 4 || (seqAxis != 1 && seqAxis != 2))
    return shapeError(loc, "rotary needs a 4-D x with the sequence on axis 1 "
                           "or 2");
  int64_t head = x.getDimSize(3);
  if (dim <= 0 || dim % 2 || (head != ShapedType::kDynamic && dim > head))
    return shapeError(loc, "rotary_dim ", dim,
                      " must be even, positive and at most the head size ",
                      head);
  for (Value cache : {adaptor.getCos(), adaptor.getSin()}) {
    auto c = rankedOf(cache);
    auto compatible = [](int64_t a, int64_t b) {
      return a == b || a == ShapedType::kDynamic || b == ShapedType::kDynamic;
    };
    if (c.getRank() != 3 || !compatible(c.getDimSize(2), dim / 2) ||
        !compatible(c.getDimSize(1), x.getDimSize(seqAxis)) ||
        !(c.getDimSize(0) == 1 || compatible(c.getDimSize(0), x.getDimSize(0))))
      return shapeError(loc, "rotary caches must be (batch or 1, sequence, ",
                        dim / 2, "), got ", c);
  }
  types.push_back(x);
  return success();
}
