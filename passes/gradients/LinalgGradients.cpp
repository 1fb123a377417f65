//===- LinalgGradients.cpp - rules of GEMMs, convolutions and pooling -----===//
//
// GEMM and MatMul gradients are GEMMs and MatMuls again (so they run on
// tensor cores in mixed precision); convolution and pooling gradients are
// dedicated grad ops carrying the forward op's window attributes.
//
//===----------------------------------------------------------------------===//

#include "passes/gradients/GradientBuilder.h"

namespace mlir::mpc::grad {
namespace {

Value transposeLast2(OpBuilder &b, Location loc, Value v) {
  int64_t rank = typeOf(v).getRank();
  SmallVector<int64_t> perm;
  for (int64_t i = 0; i < rank; ++i)
    perm.push_back(i);
  std::swap(perm[rank - 1], perm[rank - 2]);
  return make<TransposeOp>(
      b, loc, v, {b.getNamedAttr("perm", b.getDenseI64ArrayAttr(perm))});
}

/// A grad op of `name` with the given operands, result type and the
/// forward op's attributes named in `attrNames`.
Value gradOp(Context &c, StringRef name, ValueRange operands, Type result,
             ArrayRef<StringRef> attrNames) {
  SmallVector<NamedAttribute> attrs;
  for (StringRef n : attrNames)
    if (Attribute a = c.op->getAttr(n))
      attrs.push_back(c.b.getNamedAttr(n, a));
  OperationState state(c.loc, name);
  state.addOperands(operands);
  state.addTypes(result);
  state.propertiesAttr = c.b.getDictionaryAttr(attrs);
  return c.b.create(state)->getResult(0);
}

LogicalResult gemmGrad(Context &c, GemmOp gemm) {
  OpBuilder &b = c.b;
  bool ta = gemm.getTransA(), tb = gemm.getTransB();
  auto gemmOf = [&](Value l, Value r, bool tl, bool tr) {
    return c.make<GemmOp>({l, r},
                          {b.getNamedAttr("alpha", gemm.getAlphaAttr()),
                           b.getNamedAttr("transA", b.getBoolAttr(tl)),
                           b.getNamedAttr("transB", b.getBoolAttr(tr))});
  };
  Value a = gemm.getA(), bb = gemm.getB(), g = c.g;
  // Y = op(A) op(B): the four transpose cases.
  c.grads[0] = ta ? gemmOf(bb, g, tb, true) : gemmOf(g, bb, false, !tb);
  c.grads[1] = tb ? gemmOf(g, a, true, ta) : gemmOf(a, g, !ta, false);
  if (gemm.getC()) {
    Value gc = g;
    if (gemm.getBeta().convertToDouble() != 1.0)
      gc = c.make<MulOp>({g, c.scalar(gemm.getBeta().convertToDouble())});
    c.grads[2] = c.un(gc, 2);
  }
  return success();
}

/// `v` reshaped to `shape`.
Value reshaped(Context &c, Value v, ArrayRef<int64_t> shape) {
  return c.make<ReshapeOp>({v, ints(c.b, c.loc, shape)});
}

LogicalResult matmulGrad(Context &c, MatMulOp mm) {
  auto at = typeOf(mm.getA()), bt = typeOf(mm.getB());
  if (at.getRank() < 2 || bt.getRank() < 2)
    return mm->emitError("gradient of 1-D matmul operands is not "
                         "supported yet");
  if (at.getRank() > 2 && bt.getRank() == 2 && at.hasStaticShape() &&
      typeOf(c.g).hasStaticShape()) {
    // A linear layer over a batch of rows (torch exports x @ W^T as
    // MatMul): the rows of every batch are one matrix, so both gradients
    // are single GEMMs (the weight's sums over all rows in its K, as
    // torch's addmm backward does) - no transposed copies, no per-batch
    // partial products summed afterwards.
    int64_t k = at.getShape().back(), n = bt.getShape().back();
    int64_t rows = at.getNumElements() / std::max<int64_t>(k, 1);
    Value a2 = reshaped(c, mm.getA(), {rows, k}),
          g2 = reshaped(c, c.g, {rows, n});
    auto trans = [&](bool ta, bool tb) {
      return SmallVector<NamedAttribute>{
          c.b.getNamedAttr("transA", c.b.getBoolAttr(ta)),
          c.b.getNamedAttr("transB", c.b.getBoolAttr(tb))};
    };
    c.grads[0] = reshaped(
        c, c.make<GemmOp>({g2, mm.getB()}, trans(false, true)), at.getShape());
    c.grads[1] = c.make<GemmOp>({a2, g2}, trans(true, false));
    return success();
  }
  c.grads[0] = c.un(
      c.make<MatMulOp>({c.g, transposeLast2(c.b, c.loc, mm.getB())}), 0);
  c.grads[1] = c.un(
      c.make<MatMulOp>({transposeLast2(c.b, c.loc, mm.getA()), c.g}), 1);
  return success();
}

/// Sums g over every dimension but the channels (a conv bias's gradient):
/// dim 1, or the last with `channelsLast`.
Value channelSum(Context &c, bool channelsLast = false) {
  int64_t rank = typeOf(c.g).getRank(), channel = channelsLast ? rank - 1 : 1;
  SmallVector<int64_t> axes;
  for (int64_t i = 0; i < rank; ++i)
    if (i != channel)
      axes.push_back(i);
  return c.make<ReduceSumOp>(
      c.g, {c.b.getNamedAttr("axes", c.b.getDenseI64ArrayAttr(axes)),
            c.b.getNamedAttr("keepdims", c.b.getBoolAttr(false))});
}

LogicalResult convGrad(Context &c, ConvOp conv) {
  // Window attributes carry over to the grad ops unchanged.
  const StringRef window[] = {"group",   "auto_pad", "kernel_shape",
                              "strides", "pads",     "dilations",
                              "channels_last"};
  c.grads[0] = gradOp(c, ConvGradInputOp::getOperationName(),
                      {c.g, conv.getW()}, conv.getX().getType(), window);
  c.grads[1] = gradOp(c, ConvGradWeightOp::getOperationName(),
                      {c.g, conv.getX()}, conv.getW().getType(), window);
  if (conv.getBias())
    c.grads[2] = channelSum(c, conv.getChannelsLast());
  return success();
}

LogicalResult convTransposeGrad(Context &c, ConvTransposeOp ct) {
  // conv_transpose(X, W) is conv's input gradient, so its own gradients are
  // conv(dY, W) and conv's weight gradient with X and dY in swapped roles.
  const StringRef window[] = {"group", "kernel_shape", "strides", "pads",
                              "dilations"};
  SmallVector<NamedAttribute> attrs;
  for (StringRef n : window)
    if (Attribute a = ct->getAttr(n))
      attrs.push_back(c.b.getNamedAttr(n, a));
  Value dx = c.make<ConvOp>({c.g, ct.getW()}, attrs);
  if (dx.getType() != ct.getX().getType())
    return ct->emitError("gradient of conv_transpose with output_padding "
                         "not smaller than the stride is not supported yet");
  c.grads[0] = dx;
  c.grads[1] = gradOp(c, ConvGradWeightOp::getOperationName(),
                      {ct.getX(), c.g}, ct.getW().getType(), window);
  if (ct.getBias())
    c.grads[2] = channelSum(c);
  return success();
}

LogicalResult maxPoolGrad(Context &c, MaxPoolOp pool) {
  c.grads[0] = gradOp(c, MaxPoolGradOp::getOperationName(),
                      {c.g, pool.getIndices()}, c.x(0).getType(),
                      {"auto_pad", "kernel_shape", "strides", "pads",
                       "dilations", "channels_last"});
  return success();
}

LogicalResult averagePoolGrad(Context &c, AveragePoolOp) {
  c.grads[0] = gradOp(c, AveragePoolGradOp::getOperationName(), {c.g},
                      c.x(0).getType(),
                      {"ceil_mode", "count_include_pad", "auto_pad",
                       "kernel_shape", "strides", "pads", "dilations"});
  return success();
}

LogicalResult globalAveragePoolGrad(Context &c, GlobalAveragePoolOp) {
  // g / (spatial size), broadcast.
  auto in = typeOf(c.x(0));
  int64_t spatial =
      in.getNumElements() / (in.getDimSize(0) * in.getDimSize(1));
  Value scaled = c.make<DivOp>({c.g, c.scalar((double)spatial)});
  c.grads[0] = c.make<ExpandOp>({scaled, ints(c.b, c.loc, in.getShape())});
  return success();
}

} // namespace

void attachLinalgRules(MLIRContext *ctx) {
  attachRule<GemmOp, gemmGrad>(ctx);
  attachRule<MatMulOp, matmulGrad>(ctx);
  attachRule<ConvOp, convGrad>(ctx);
  attachRule<ConvTransposeOp, convTransposeGrad>(ctx);
  attachRule<MaxPoolOp, maxPoolGrad>(ctx);
  attachRule<AveragePoolOp, averagePoolGrad>(ctx);
  attachRule<GlobalAveragePoolOp, globalAveragePoolGrad>(ctx);
}

} // namespace mlir::mpc::grad
