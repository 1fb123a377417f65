//===- GradientRules.cpp - reverse-mode rules per mpc op ------------------===//
//
// Each rule expresses d(operand) with forward mpc ops where that is short
// (elementwise, gemm/matmul, reshapes, softmax) and with a dedicated grad op
// where it is not (the classification losses). Broadcast operands get their
// gradient summed back to their shape.
//
//===----------------------------------------------------------------------===//

#include "passes/GradientRules.h"
#include "ir/MpcOps.h"
#include "ir/ShapeRules.h"

#include "mlir/IR/TypeUtilities.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::mpc;

namespace {

RankedTensorType typeOf(Value v) {
  return llvm::cast<RankedTensorType>(v.getType());
}

/// A scalar constant of `elem`.
Value scalar(OpBuilder &b, Location loc, Type elem, double value) {
  auto type = RankedTensorType::get({}, elem);
  Attribute v = llvm::isa<FloatType>(elem)
                    ? (Attribute)b.getFloatAttr(elem, value)
                    : (Attribute)b.getIntegerAttr(elem, (int64_t)value);
  return b.create<ConstantOp>(loc, DenseElementsAttr::get(type, v));
}

/// Builds OpTy with inferred result types. Gradient ops are built from
/// well-typed forward ops, so inference cannot fail here.
template <typename OpTy>
Value make(OpBuilder &b, Location loc, ValueRange operands,
           ArrayRef<NamedAttribute> attrs = {}) {
  std::string diag;
  auto op = createInferred(b, loc, OpTy::getOperationName(), operands, attrs,
                           &diag);
  if (failed(op)) // an internal invariant: rules build well-typed ops
    llvm::report_fatal_error(llvm::Twine("mpc-autodiff built an ill-typed ") +
                             OpTy::getOperationName() + ": " + diag);
  return (*op)->getResult(0);
}

Value reshapeTo(OpBuilder &b, Location loc, Value v, RankedTensorType type) {
  if (v.getType() == type)
    return v;
  auto shape = b.create<ConstantOp>(
      loc, DenseElementsAttr::get(
               RankedTensorType::get({type.getRank()}, b.getI64Type()),
               type.getShape()));
  return b.create<ReshapeOp>(loc, type, v, shape, b.getBoolAttr(true));
}

Value transposeLast2(OpBuilder &b, Location loc, Value v) {
  int64_t rank = typeOf(v).getRank();
  SmallVector<int64_t> perm;
  for (int64_t i = 0; i < rank; ++i)
    perm.push_back(i);
  std::swap(perm[rank - 1], perm[rank - 2]);
  return make<TransposeOp>(
      b, loc, v, {b.getNamedAttr("perm", b.getDenseI64ArrayAttr(perm))});
}

/// The keepdims result type of reducing `in` over `axes` (absent or empty:
/// all axes).
RankedTensorType keptType(RankedTensorType in,
                          std::optional<ArrayRef<int64_t>> axes) {
  SmallVector<int64_t> kept(in.getShape());
  for (int64_t i = 0; i < in.getRank(); ++i) {
    bool reduced = !axes || axes->empty();
    if (axes)
      for (int64_t a : *axes)
        reduced |= (a < 0 ? a + in.getRank() : a) == i;
    if (reduced)
      kept[i] = 1;
  }
  return in.clone(kept);
}

/// Elementwise gradient for unary ops: g * d(y)/d(x) given as a value.
Value times(OpBuilder &b, Location loc, Value g, Value d) {
  return make<MulOp>(b, loc, {g, d});
}

/// The grad op of a classification loss: (g, log-probabilities, labels,
/// weights?) with the forward op's reduction and ignore_index.
template <typename GradOp, typename LossOp>
Value lossGrad(OpBuilder &b, Location loc, Value g, Value logp, LossOp loss,
               Value weights) {
  SmallVector<Value> operands{g, logp, loss->getOperand(1)};
  if (weights)
    operands.push_back(weights);
  SmallVector<NamedAttribute> attrs{
      b.getNamedAttr("reduction", loss.getReductionAttr())};
  if (auto ig = loss.getIgnoreIndexAttr())
    attrs.push_back(b.getNamedAttr("ignore_index", ig));
  return make<GradOp>(b, loc, operands, attrs);
}

} // namespace

Value mpc::unbroadcast(OpBuilder &b, Location loc, Value grad, Type type) {
  auto target = llvm::cast<RankedTensorType>(type);
  auto g = typeOf(grad);
  if (g == target)
    return grad;
  SmallVector<int64_t> axes;
  int64_t lead = g.getRank() - target.getRank();
  for (int64_t i = 0; i < g.getRank(); ++i)
    if (i < lead || (target.getDimSize(i - lead) == 1 && g.getDimSize(i) != 1))
      axes.push_back(i);
  Value sum = grad;
  if (!axes.empty())
    sum = make<ReduceSumOp>(
        b, loc, grad,
        {b.getNamedAttr("axes", b.getDenseI64ArrayAttr(axes)),
         b.getNamedAttr("keepdims", b.getBoolAttr(false))});
  return reshapeTo(b, loc, sum, target);
}

LogicalResult mpc::buildOperandGradients(OpBuilder &b, Operation *op,
                                         ArrayRef<Value> resultGrads,
                                         SmallVectorImpl<Value> &grads) {
  Location loc = op->getLoc();
  grads.assign(op->getNumOperands(), Value());
  Value g = resultGrads.empty() ? Value() : resultGrads[0];
  if (!g && !isa<SoftmaxCrossEntropyLossOp>(op))
    return success();
  auto un = [&](Value v, unsigned i) {
    return unbroadcast(b, loc, v, op->getOperand(i).getType());
  };
  auto x = [&](unsigned i) { return op->getOperand(i); };
  Value y = op->getNumResults() ? op->getResult(0) : Value();
  Type elem = y ? typeOf(y).getElementType() : Type();

  return llvm::TypeSwitch<Operation *, LogicalResult>(op)
      .Case([&](AddOp) {
        grads[0] = un(g, 0);
        grads[1] = un(g, 1);
        return success();
      })
      .Case([&](SubOp) {
        grads[0] = un(g, 0);
        grads[1] = un(make<NegOp>(b, loc, g), 1);
        return success();
      })
      .Case([&](MulOp) {
        grads[0] = un(make<MulOp>(b, loc, {g, x(1)}), 0);
        grads[1] = un(make<MulOp>(b, loc, {g, x(0)}), 1);
        return success();
      })
      .Case([&](DivOp) {
        grads[0] = un(make<DivOp>(b, loc, {g, x(1)}), 0);
        // d(a/b)/db = -y / b
        Value t = make<DivOp>(b, loc, {make<MulOp>(b, loc, {g, y}), x(1)});
        grads[1] = un(make<NegOp>(b, loc, t), 1);
        return success();
      })
      .Case([&](NegOp) {
        grads[0] = make<NegOp>(b, loc, g);
        return success();
      })
      .Case([&](IdentityOp) {
        grads[0] = g;
        return success();
      })
      .Case([&](ReluOp) {
        Value zero = scalar(b, loc, elem, 0.0);
        Value pos = make<GreaterOp>(b, loc, {x(0), zero});
        grads[0] = make<WhereOp>(b, loc, {pos, g, zero});
        return success();
      })
      .Case([&](TanhOp) { // 1 - y^2
        Value one = scalar(b, loc, elem, 1.0);
        grads[0] = times(b, loc, g,
                         make<SubOp>(b, loc, {one, make<MulOp>(b, loc, {y, y})}));
        return success();
      })
      .Case([&](SigmoidOp) { // y (1 - y)
        Value one = scalar(b, loc, elem, 1.0);
        grads[0] = times(b, loc, g,
                         make<MulOp>(b, loc, {y, make<SubOp>(b, loc, {one, y})}));
        return success();
      })
      .Case([&](ExpOp) {
        grads[0] = times(b, loc, g, y);
        return success();
      })
      .Case([&](LogOp) {
        grads[0] = make<DivOp>(b, loc, {g, x(0)});
        return success();
      })
      .Case([&](SqrtOp) { // 1 / (2 y)
        Value two = scalar(b, loc, elem, 2.0);
        grads[0] = make<DivOp>(b, loc, {g, make<MulOp>(b, loc, {two, y})});
        return success();
      })
      .Case([&](GemmOp gemm) {
        bool ta = gemm.getTransA(), tb = gemm.getTransB();
        auto gemmOf = [&](Value l, Value r, bool tl, bool tr) {
          return make<GemmOp>(
              b, loc, {l, r},
              {b.getNamedAttr("alpha", gemm.getAlphaAttr()),
               b.getNamedAttr("transA", b.getBoolAttr(tl)),
               b.getNamedAttr("transB", b.getBoolAttr(tr))});
        };
        Value a = gemm.getA(), bb = gemm.getB();
        // Y = op(A) op(B): the four transpose cases.
        grads[0] = ta ? gemmOf(bb, g, tb, true) : gemmOf(g, bb, false, !tb);
        grads[1] = tb ? gemmOf(g, a, true, ta) : gemmOf(a, g, !ta, false);
        if (gemm.getC()) {
          Value gc = g;
          if (gemm.getBeta().convertToDouble() != 1.0)
            gc = make<MulOp>(b, loc,
                             {g, scalar(b, loc, elem,
                                        gemm.getBeta().convertToDouble())});
          grads[2] = un(gc, 2);
        }
        return success();
      })
      .Case([&](MatMulOp mm) -> LogicalResult {
        auto at = typeOf(mm.getA()), bt = typeOf(mm.getB());
        if (at.getRank() < 2 || bt.getRank() < 2)
          return op->emitError("gradient of 1-D matmul operands is not "
                               "supported yet");
        grads[0] = un(make<MatMulOp>(b, loc, {g, transposeLast2(b, loc, mm.getB())}), 0);
        grads[1] = un(make<MatMulOp>(b, loc, {transposeLast2(b, loc, mm.getA()), g}), 1);
        return success();
      })
      .Case([&](TransposeOp t) {
        int64_t rank = typeOf(t.getX()).getRank();
        SmallVector<int64_t> perm, inv(rank);
        if (auto p = t.getPerm())
          perm.assign(p->begin(), p->end());
        else
          for (int64_t i = rank - 1; i >= 0; --i)
            perm.push_back(i);
        for (int64_t i = 0; i < rank; ++i)
          inv[perm[i]] = i;
        grads[0] = make<TransposeOp>(
            b, loc, g, {b.getNamedAttr("perm", b.getDenseI64ArrayAttr(inv))});
        return success();
      })
      .Case<ReshapeOp, FlattenOp, SqueezeOp, UnsqueezeOp>([&](Operation *) {
        grads[0] = reshapeTo(b, loc, g, typeOf(x(0)));
        return success();
      })
      .Case([&](CastOp) {
        auto cast = b.create<CastOp>(loc, typeOf(x(0)), g);
        // A gradient rounded into fp16/bf16: the executor counts the
        // elements that flush to zero there (step health).
        Type to = typeOf(x(0)).getElementType();
        if ((to.isF16() || to.isBF16()) && typeOf(g).getElementType().isF32())
          cast->setAttr("mpc.count_underflow", b.getUnitAttr());
        grads[0] = cast;
        return success();
      })
      .Case<ReduceSumOp, ReduceMeanOp>([&](Operation *) {
        auto in = typeOf(x(0));
        Value gr = g;
        if (isa<ReduceMeanOp>(op))
          gr = make<DivOp>(b, loc, {g, scalar(b, loc, elem,
                                             (double)in.getNumElements() /
                                                 typeOf(y).getNumElements())});
        // Back to the keepdims shape, then broadcast to the input.
        auto axes = isa<ReduceSumOp>(op) ? cast<ReduceSumOp>(op).getAxes()
                                         : cast<ReduceMeanOp>(op).getAxes();
        Value r = reshapeTo(b, loc, gr, keptType(in, axes));
        auto shape = b.create<ConstantOp>(
            loc, DenseElementsAttr::get(
                     RankedTensorType::get({in.getRank()}, b.getI64Type()),
                     in.getShape()));
        grads[0] = make<ExpandOp>(b, loc, {r, shape});
        return success();
      })
      .Case<SoftmaxOp, LogSoftmaxOp>([&](Operation *) {
        int64_t axis = op->getAttrOfType<IntegerAttr>("axis").getInt();
        auto sumKeep = [&](Value v) {
          return make<ReduceSumOp>(
              b, loc, v,
              {b.getNamedAttr("axes", b.getDenseI64ArrayAttr({axis})),
               b.getNamedAttr("keepdims", b.getBoolAttr(true))});
        };
        if (isa<SoftmaxOp>(op)) { // y (g - sum(g y))
          Value s = sumKeep(make<MulOp>(b, loc, {g, y}));
          grads[0] = make<MulOp>(b, loc, {y, make<SubOp>(b, loc, {g, s})});
        } else { // g - exp(y) sum(g)
          grads[0] = make<SubOp>(
              b, loc, {g, make<MulOp>(b, loc, {make<ExpOp>(b, loc, y),
                                                sumKeep(g)})});
        }
        return success();
      })
      .Case([&](SoftmaxCrossEntropyLossOp sce) {
        if (g)
          grads[0] = lossGrad<SoftmaxCrossEntropyLossGradOp>(
              b, loc, g, sce.getLogProb(), sce, sce.getWeights());
        return success();
      })
      .Case([&](NegativeLogLikelihoodLossOp nll) {
        grads[0] = lossGrad<NegativeLogLikelihoodLossGradOp>(
            b, loc, g, nll.getInput(), nll, nll.getWeight());
        return success();
      })
      .Case([&](ErfOp) { // 2/sqrt(pi) exp(-x^2)
        Value sq = make<MulOp>(b, loc, {x(0), x(0)});
        Value e = make<ExpOp>(b, loc, make<NegOp>(b, loc, sq));
        grads[0] = times(b, loc, g,
                         make<MulOp>(b, loc, {e, scalar(b, loc, elem,
                                                        1.1283791670955126)}));
        return success();
      })
      .Case([&](GeluOp gelu) -> LogicalResult {
        if (gelu.getApproximate() != "none")
          return op->emitError("gradient of tanh-approximated gelu is not "
                               "supported yet");
        // Phi(x) + x phi(x) = 0.5 (1 + erf(x/sqrt2)) + x exp(-x^2/2)/sqrt(2pi)
        Value xs = make<MulOp>(b, loc, {x(0), scalar(b, loc, elem,
                                                    0.7071067811865476)});
        Value cdf = make<MulOp>(
            b, loc, {scalar(b, loc, elem, 0.5),
                     make<AddOp>(b, loc, {scalar(b, loc, elem, 1.0),
                                          make<ErfOp>(b, loc, xs)})});
        Value pdf = make<MulOp>(
            b, loc, {make<ExpOp>(b, loc, make<NegOp>(b, loc,
                                                     make<MulOp>(b, loc, {xs, xs}))),
                     scalar(b, loc, elem, 0.3989422804014327)});
        grads[0] = times(b, loc, g,
                         make<AddOp>(b, loc, {cdf, make<MulOp>(b, loc, {x(0), pdf})}));
        return success();
      })
      .Case([&](PowOp pw) -> LogicalResult {
        // d/dbase = e * base^(e-1); the exponent is treated as constant.
        Value e = pw.getExponent();
        if (getElementTypeOrSelf(e) != elem)
          e = b.create<CastOp>(loc, typeOf(e).clone(elem), e);
        Value em1 = make<SubOp>(b, loc, {e, scalar(b, loc, elem, 1.0)});
        Value d = make<MulOp>(b, loc, {e, make<PowOp>(b, loc, {x(0), em1})});
        grads[0] = un(times(b, loc, g, d), 0);
        return success();
      })
      .Case([&](WhereOp) {
        Value zero = scalar(b, loc, elem, 0.0);
        grads[1] = un(make<WhereOp>(b, loc, {x(0), g, zero}), 1);
        grads[2] = un(make<WhereOp>(b, loc, {x(0), zero, g}), 2);
        return success();
      })
      .Case([&](ExpandOp) {
        grads[0] = un(g, 0);
        return success();
      })
      .Case([&](ReduceLogSumExpOp red) {
        // g * softmax over the reduced axes: exp(x - y) with y, g kept.
        auto kept = keptType(typeOf(x(0)), red.getAxes());
        Value yk = reshapeTo(b, loc, y, kept);
        Value gk = reshapeTo(b, loc, g, kept);
        Value sm = make<ExpOp>(b, loc, make<SubOp>(b, loc, {x(0), yk}));
        grads[0] = make<MulOp>(b, loc, {sm, gk});
        return success();
      })
      .Case([&](DropoutOp d) -> LogicalResult {
        // Inference mode is the identity; in training mode the forward
        // mask and scale apply to the gradient too.
        if (!d.getTrainingMode()) {
          grads[0] = g;
          return success();
        }
        Value ratio = d.getRatio() ? d.getRatio()
                                   : scalar(b, loc, elem, 0.5);
        Value keep = make<SubOp>(b, loc, {scalar(b, loc, elem, 1.0), ratio});
        Value zero = scalar(b, loc, elem, 0.0);
        Value scaled = make<DivOp>(b, loc, {g, keep});
        Value masked = make<WhereOp>(b, loc, {d.getMask(), scaled, zero});
        // training_mode may be false at run time: then pass g through.
        grads[0] = make<WhereOp>(b, loc, {d.getTrainingMode(), masked, g});
        return success();
      })
      .Case([&](GatherOp gather) {
        grads[0] = b.create<GatherGradOp>(loc, typeOf(x(0)), g,
                                          gather.getIndices(),
                                          gather.getAxisAttr());
        return success();
      })
      .Case([&](SplitOp split) {
        // Concatenate the result gradients (zeros for unused results).
        SmallVector<Value> parts;
        for (auto [r, rg] : llvm::zip(op->getResults(), resultGrads))
          parts.push_back(rg ? rg
                             : b.create<ConstantOp>(
                                   loc, DenseElementsAttr::get(
                                            typeOf(r),
                                            b.getFloatAttr(elem, 0.0))));
        grads[0] = make<ConcatOp>(
            b, loc, parts, {b.getNamedAttr("axis", split.getAxisAttr())});
        return success();
      })
      .Case([&](ConcatOp concat) {
        int64_t rank = typeOf(y).getRank();
        int64_t axis = concat.getAxisAttr().getInt();
        axis = axis < 0 ? axis + rank : axis;
        int64_t offset = 0;
        for (auto [i, v] : llvm::enumerate(op->getOperands())) {
          (void)i;
          int64_t size = typeOf(v).getDimSize(axis);
          auto ints = [&](ArrayRef<int64_t> vals) {
            return b.create<ConstantOp>(
                loc, DenseElementsAttr::get(
                         RankedTensorType::get({(int64_t)vals.size()},
                                               b.getI64Type()),
                         vals));
          };
          if (llvm::isa<FloatType>(getElementTypeOrSelf(v)))
            grads[i] = (*createInferred(
                            b, loc, SliceOp::getOperationName(),
                            {g, ints({offset}), ints({offset + size}),
                             ints({axis})},
                            {b.getNamedAttr("operandSegmentSizes",
                                            b.getDenseI32ArrayAttr(
                                                {1, 1, 1, 1, 0}))}))
                           ->getResult(0);
          offset += size;
        }
        return success();
      })
      .Case([&](SliceOp slice) -> LogicalResult {
        // Unit steps: the gradient is g zero-padded back to the input.
        auto in = typeOf(x(0));
        SmallVector<int64_t> starts, ends, axes, steps;
        if (!getConstantInts(slice.getStarts(), starts) ||
            !getConstantInts(slice.getEnds(), ends) ||
            (slice.getAxes() && !getConstantInts(slice.getAxes(), axes)) ||
            (slice.getSteps() && !getConstantInts(slice.getSteps(), steps)))
          return op->emitError("slice gradient needs constant bounds");
        int64_t rank = in.getRank();
        SmallVector<int64_t> pads(2 * rank, 0);
        for (size_t i = 0; i < starts.size(); ++i) {
          int64_t a = axes.empty() ? (int64_t)i
                                   : (axes[i] < 0 ? axes[i] + rank : axes[i]);
          if (!steps.empty() && steps[i] != 1)
            return op->emitError("gradient of strided slices is not "
                                 "supported yet");
          int64_t dim = in.getDimSize(a);
          int64_t s0 = std::clamp<int64_t>(
              starts[i] < 0 ? starts[i] + dim : starts[i], 0, dim);
          pads[a] = s0;
          pads[rank + a] = dim - s0 - typeOf(y).getDimSize(a);
        }
        grads[0] = make<PadOp>(
            b, loc, {g, scalar(b, loc, elem, 0.0)},
            {b.getNamedAttr("pads", b.getDenseI64ArrayAttr(pads))});
        return success();
      })
      .Case([&](PadOp pad) -> LogicalResult {
        if (pad.getMode() != "constant")
          return op->emitError("gradient of ") << pad.getMode()
                                               << " padding is not supported yet";
        // The interior of g: a unit-step slice over the padded axes.
        auto in = typeOf(x(0));
        int64_t rank = in.getRank();
        SmallVector<int64_t> padAxes;
        if (auto a = pad.getAxes())
          padAxes.assign(a->begin(), a->end());
        else
          for (int64_t i = 0; i < rank; ++i)
            padAxes.push_back(i);
        ArrayRef<int64_t> pads = pad.getPads();
        SmallVector<int64_t> starts, ends, axes;
        for (size_t i = 0; i < padAxes.size(); ++i) {
          int64_t a = padAxes[i] < 0 ? padAxes[i] + rank : padAxes[i];
          axes.push_back(a);
          starts.push_back(pads[i]);
          ends.push_back(pads[i] + in.getDimSize(a));
        }
        auto ints = [&](ArrayRef<int64_t> vals) -> Value {
          return b.create<ConstantOp>(
              loc, DenseElementsAttr::get(
                       RankedTensorType::get({(int64_t)vals.size()},
                                             b.getI64Type()),
                       vals));
        };
        grads[0] = (*createInferred(
                        b, loc, SliceOp::getOperationName(),
                        {g, ints(starts), ints(ends), ints(axes)},
                        {b.getNamedAttr("operandSegmentSizes",
                                        b.getDenseI32ArrayAttr(
                                            {1, 1, 1, 1, 0}))}))
                       ->getResult(0);
        return success();
      })
      .Case([&](ConvOp conv) {
        // Window attributes carry over to the grad ops unchanged.
        SmallVector<NamedAttribute> attrs;
        for (StringRef n : {"group", "auto_pad", "kernel_shape", "strides",
                            "pads", "dilations"})
          if (Attribute a = conv->getAttr(n))
            attrs.push_back(b.getNamedAttr(n, a));
        auto withTypes = [&](StringRef name, Value other, Type result) {
          OperationState state(loc, name);
          state.addOperands({g, other});
          state.addTypes(result);
          state.propertiesAttr = b.getDictionaryAttr(attrs);
          return b.create(state)->getResult(0);
        };
        grads[0] = withTypes(ConvGradInputOp::getOperationName(),
                             conv.getW(), conv.getX().getType());
        grads[1] = withTypes(ConvGradWeightOp::getOperationName(),
                             conv.getX(), conv.getW().getType());
        if (conv.getBias()) {
          SmallVector<int64_t> axes{0};
          for (int64_t i = 2; i < typeOf(g).getRank(); ++i)
            axes.push_back(i);
          grads[2] = make<ReduceSumOp>(
              b, loc, g,
              {b.getNamedAttr("axes", b.getDenseI64ArrayAttr(axes)),
               b.getNamedAttr("keepdims", b.getBoolAttr(false))});
        }
        return success();
      })
      .Case([&](MaxPoolOp pool) {
        grads[0] = b.create<MaxPoolGradOp>(loc, x(0).getType(), g,
                                           pool.getIndices());
        return success();
      })
      .Case([&](AveragePoolOp pool) {
        SmallVector<NamedAttribute> attrs;
        for (StringRef n : {"ceil_mode", "count_include_pad", "auto_pad",
                            "kernel_shape", "strides", "pads", "dilations"})
          if (Attribute a = pool->getAttr(n))
            attrs.push_back(b.getNamedAttr(n, a));
        OperationState state(loc, AveragePoolGradOp::getOperationName());
        state.addOperands(g);
        state.addTypes(x(0).getType());
        state.propertiesAttr = b.getDictionaryAttr(attrs);
        grads[0] = b.create(state)->getResult(0);
        return success();
      })
      .Case([&](GlobalAveragePoolOp) { // g / (spatial size), broadcast
        auto in = typeOf(x(0));
        int64_t spatial = in.getNumElements() / (in.getDimSize(0) * in.getDimSize(1));
        Value scaled = make<DivOp>(b, loc, {g, scalar(b, loc, elem, (double)spatial)});
        auto shape = b.create<ConstantOp>(
            loc, DenseElementsAttr::get(
                     RankedTensorType::get({in.getRank()}, b.getI64Type()),
                     in.getShape()));
        grads[0] = make<ExpandOp>(b, loc, {scaled, shape});
        return success();
      })
      .Case([&](BatchNormTrainOp bn) -> LogicalResult {
        if (!elem.isF32())
          return op->emitError("batch_norm_train gradient needs f32");
        // Batch statistics over every axis but the channel (1), recomputed
        // here; then the layer-norm formula with per-channel scale:
        // dx = inv * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat)).
        auto in = typeOf(x(0));
        SmallVector<int64_t> axes{0}, bshape(in.getRank(), 1);
        for (int64_t i = 2; i < in.getRank(); ++i)
          axes.push_back(i);
        bshape[1] = in.getDimSize(1);
        auto chan = RankedTensorType::get(bshape, elem);
        auto meanKeep = [&](Value v) {
          return make<ReduceMeanOp>(
              b, loc, v,
              {b.getNamedAttr("axes", b.getDenseI64ArrayAttr(axes)),
               b.getNamedAttr("keepdims", b.getBoolAttr(true))});
        };
        if (!g)
          return success();
        Value mean = meanKeep(x(0));
        Value centered = make<SubOp>(b, loc, {x(0), mean});
        Value var = meanKeep(make<MulOp>(b, loc, {centered, centered}));
        Value eps = scalar(b, loc, elem, bn.getEpsilon().convertToDouble());
        Value inv = make<ReciprocalOp>(
            b, loc, make<SqrtOp>(b, loc, make<AddOp>(b, loc, {var, eps})));
        Value xhat = make<MulOp>(b, loc, {centered, inv});
        Value scale = reshapeTo(b, loc, bn.getScale(), chan);
        Value dxhat = make<MulOp>(b, loc, {g, scale});
        Value inner = make<SubOp>(
            b, loc,
            {make<SubOp>(b, loc, {dxhat, meanKeep(dxhat)}),
             make<MulOp>(b, loc,
                         {xhat, meanKeep(make<MulOp>(b, loc, {dxhat, xhat}))})});
        grads[0] = make<MulOp>(b, loc, {inv, inner});
        auto sumToChannel = [&](Value v) { // [N, C, ...] -> [C]
          return make<ReduceSumOp>(
              b, loc, v,
              {b.getNamedAttr("axes", b.getDenseI64ArrayAttr(axes)),
               b.getNamedAttr("keepdims", b.getBoolAttr(false))});
        };
        grads[1] = sumToChannel(make<MulOp>(b, loc, {g, xhat}));
        grads[2] = sumToChannel(g);
        return success();
      })
      .Case([&](LayerNormOp ln) -> LogicalResult {
        if (!elem.isF32())
          return op->emitError("layer_norm gradient needs f32 (casts around "
                               "it come with mixed precision)");
        auto in = typeOf(x(0));
        int64_t axis = ln.getAxisAttr().getInt();
        axis = axis < 0 ? axis + in.getRank() : axis;
        SmallVector<int64_t> axes;
        for (int64_t i = axis; i < in.getRank(); ++i)
          axes.push_back(i);
        auto meanKeep = [&](Value v) {
          return make<ReduceMeanOp>(
              b, loc, v,
              {b.getNamedAttr("axes", b.getDenseI64ArrayAttr(axes)),
               b.getNamedAttr("keepdims", b.getBoolAttr(true))});
        };
        // xhat = (x - mean) * inv; dxhat = g * scale;
        // dx = inv * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat)).
        Value xhat = make<MulOp>(
            b, loc, {make<SubOp>(b, loc, {x(0), ln.getMean()}),
                     ln.getInvStdDev()});
        Value dxhat = make<MulOp>(b, loc, {g, ln.getScale()});
        Value inner = make<SubOp>(
            b, loc,
            {make<SubOp>(b, loc, {dxhat, meanKeep(dxhat)}),
             make<MulOp>(b, loc,
                         {xhat, meanKeep(make<MulOp>(b, loc, {dxhat, xhat}))})});
        grads[0] = make<MulOp>(b, loc, {ln.getInvStdDev(), inner});
        grads[1] = un(make<MulOp>(b, loc, {g, xhat}), 1);
        if (ln.getBias())
          grads[2] = un(g, 2);
        return success();
      })
      .Default([&](Operation *) {
        return op->emitError("no gradient rule for ")
               << op->getName() << " yet";
      });
}

LogicalResult mpc::reverseSweep(OpBuilder &b, ArrayRef<Operation *> ops,
                                Value target, ArrayRef<Value> wrt,
                                SmallVectorImpl<Value> &result) {
  // Values that depend on one of `wrt`: only their producers need rules.
  llvm::DenseSet<Value> needsGrad(wrt.begin(), wrt.end());
  for (Operation *op : ops)
    if (llvm::any_of(op->getOperands(),
                     [&](Value v) { return needsGrad.contains(v); }))
      for (Value r : op->getResults())
        needsGrad.insert(r);
  llvm::DenseMap<Value, Value> grads;
  auto type = llvm::cast<RankedTensorType>(target.getType());
  // The seed is tagged so mpc-loss-scaling can replace it by the scale.
  auto seed = b.create<ConstantOp>(
      target.getLoc(),
      DenseElementsAttr::get(type, b.getFloatAttr(type.getElementType(), 1.0)));
  seed->setAttr("mpc.grad_seed", b.getUnitAttr());
  grads[target] = seed;
  for (Operation *op : llvm::reverse(ops)) {
    SmallVector<Value> resultGrads;
    bool any = false;
    for (Value r : op->getResults()) {
      resultGrads.push_back(grads.lookup(r));
      any |= (bool)resultGrads.back();
    }
    if (!any || llvm::none_of(op->getOperands(),
                              [&](Value v) { return needsGrad.contains(v); }))
      continue;
    SmallVector<Value> operandGrads;
    if (failed(buildOperandGradients(b, op, resultGrads, operandGrads)))
      return failure();
    for (auto [v, gv] : llvm::zip(op->getOperands(), operandGrads)) {
      if (!gv || !needsGrad.contains(v))
        continue;
      Value &acc = grads[v];
      acc = acc ? (*createInferred(b, op->getLoc(), AddOp::getOperationName(),
                                   {acc, gv}))
                      ->getResult(0)
                : gv;
    }
  }
  result.clear();
  for (Value w : wrt)
    result.push_back(grads.lookup(w));
  return success();
}
