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
  auto op = createInferred(b, loc, OpTy::getOperationName(), operands, attrs);
  assert(succeeded(op) && "gradient op does not type-check");
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

/// Elementwise gradient for unary ops: g * d(y)/d(x) given as a value.
Value times(OpBuilder &b, Location loc, Value g, Value d) {
  return make<MulOp>(b, loc, {g, d});
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
        grads[0] = b.create<CastOp>(loc, typeOf(x(0)), g);
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
        SmallVector<int64_t> kept(in.getShape());
        auto axesAttr = op->getAttrOfType<DenseI64ArrayAttr>("axes");
        std::optional<ArrayRef<int64_t>> axes;
        if (auto red = dyn_cast<ReduceSumOp>(op))
          axes = red.getAxes();
        else
          axes = cast<ReduceMeanOp>(op).getAxes();
        (void)axesAttr;
        for (int64_t i = 0; i < in.getRank(); ++i) {
          bool reduced = !axes || axes->empty();
          if (axes)
            for (int64_t a : *axes)
              reduced |= (a < 0 ? a + in.getRank() : a) == i;
          if (reduced)
            kept[i] = 1;
        }
        Value r = reshapeTo(b, loc, gr, RankedTensorType::get(kept, elem));
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
        if (!g)
          return success();
        SmallVector<Value> operands{g, sce.getLogProb(), sce.getLabels()};
        if (sce.getWeights())
          operands.push_back(sce.getWeights());
        SmallVector<NamedAttribute> attrs{
            b.getNamedAttr("reduction", sce.getReductionAttr())};
        if (auto ig = sce.getIgnoreIndexAttr())
          attrs.push_back(b.getNamedAttr("ignore_index", ig));
        grads[0] = make<SoftmaxCrossEntropyLossGradOp>(b, loc, operands, attrs);
        return success();
      })
      .Case([&](NegativeLogLikelihoodLossOp nll) {
        SmallVector<Value> operands{g, nll.getInput(), nll.getTarget()};
        if (nll.getWeight())
          operands.push_back(nll.getWeight());
        SmallVector<NamedAttribute> attrs{
            b.getNamedAttr("reduction", nll.getReductionAttr())};
        if (auto ig = nll.getIgnoreIndexAttr())
          attrs.push_back(b.getNamedAttr("ignore_index", ig));
        grads[0] = make<NegativeLogLikelihoodLossGradOp>(b, loc, operands, attrs);
        return success();
      })
      .Default([&](Operation *) {
        return op->emitError("no gradient rule for ")
               << op->getName() << " yet";
      });
}
