//===- Conv3dAs2d.cpp - 3-D convolutions as 2-D ones ----------------------===//
//
// Video and volumetric models (C3D, I3D, 3-D U-Nets) convolve over
// (D, H, W), and the CUDA backend's convolutions (cuDNN's and mpc's
// implicit GEMMs) are 2-D. A 3-D convolution is a 2-D one over (H, W)
// whose channels carry the depth taps (the depth part of im2col): X
// [N, C, D, H, W] viewed [N, D, C, H, W], padded in depth, one gather of
// its rows (od s + kz dl) as [N, OD, kd, C, H, W], that is columns
// [N OD, kd C, H, W], convolved by W [M, C, kd, kh, kw] with its taps
// moved before its channels, [M, kd C, kh, kw] (the 3-D products, one
// GEMM on tensor cores), and the result [N OD, M, OH, OW] viewed back
// [N, M, OD, OH, OW]. A grouped one keeps each group's channels together:
// kd strided depth slices stacked as [N, OD, C, kd, H, W] and W viewed
// [M, C/g kd, kh, kw].
//
// A transposed convolution is the 2-D one of X viewed [N D, C, H, W] by W
// viewed [C, M/g kd, kh, kw], each input depth's kd output taps as
// channels, then placed along the depth (col2im in one axis): a reshape
// where the taps tile the output (kernel == stride, a 3-D U-Net's
// upsampling; the bias then rides in the 2-D convolution), else each tap
// spread by the stride, shifted by its offset and summed. Gradients follow
// from those ops' own.
//
//===----------------------------------------------------------------------===//

#include "ir/MpcOps.h"
#include "passes/Passes.h"
#include "passes/RewriteBuilder.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

namespace mlir::mpc {
#define GEN_PASS_DEF_CONV3DAS2D
#include "passes/Passes.h.inc"
} // namespace mlir::mpc

using namespace mlir;
using namespace mlir::mpc;

namespace {

/// A 3-D window with explicit pads: per axis (D, H, W) kernel, stride,
/// dilation and the pads before and after.
struct Window3d {
  int64_t k[3], s[3], dl[3], p0[3], p1[3];

  /// Reads `op`'s window over input sizes `in` with kernel `kernel`;
  /// auto_pad SAME resolves as ONNX's Conv does (a transposed convolution's
  /// importer resolved it already).
  bool read(Operation *op, ArrayRef<int64_t> in, ArrayRef<int64_t> kernel) {
    auto attr = [&](StringRef name, int64_t dflt, unsigned i) -> int64_t {
      auto a = op->getAttrOfType<DenseI64ArrayAttr>(name);
      return a ? a.asArrayRef()[i] : dflt;
    };
    for (StringRef name : {"kernel_shape", "strides", "dilations"})
      if (auto a = op->getAttrOfType<DenseI64ArrayAttr>(name);
          a && a.size() != 3)
        return false;
    if (auto a = op->getAttrOfType<DenseI64ArrayAttr>("pads");
        a && a.size() != 6)
      return false;
    auto autoPad = op->getAttrOfType<StringAttr>("auto_pad");
    StringRef mode = autoPad ? autoPad.getValue() : "NOTSET";
    for (unsigned i = 0; i < 3; ++i) {
      k[i] = kernel[i];
      s[i] = attr("strides", 1, i);
      dl[i] = attr("dilations", 1, i);
      p0[i] = attr("pads", 0, i);
      p1[i] = attr("pads", 0, 3 + i);
      if (attr("kernel_shape", k[i], i) != k[i])
        return false;
      if (mode == "VALID") {
        p0[i] = p1[i] = 0;
      } else if (mode == "SAME_UPPER" || mode == "SAME_LOWER") {
        int64_t out = (in[i] + s[i] - 1) / s[i];
        int64_t total = std::max<int64_t>(
            0, (out - 1) * s[i] + dl[i] * (k[i] - 1) + 1 - in[i]);
        p0[i] = mode == "SAME_UPPER" ? total / 2 : total - total / 2;
        p1[i] = total - p0[i];
      } else if (mode != "NOTSET") {
        return false;
      }
    }
    return true;
  }

  /// The 2-D window over (H, W) as attributes.
  SmallVector<NamedAttribute> planar(OpBuilder &b) const {
    return {
        b.getNamedAttr("kernel_shape", b.getDenseI64ArrayAttr({k[1], k[2]})),
        b.getNamedAttr("strides", b.getDenseI64ArrayAttr({s[1], s[2]})),
        b.getNamedAttr("dilations", b.getDenseI64ArrayAttr({dl[1], dl[2]})),
        b.getNamedAttr("pads",
                       b.getDenseI64ArrayAttr({p0[1], p0[2], p1[1], p1[2]}))};
  }
};

/// The attributes of `op` but its window's.
SmallVector<NamedAttribute> otherAttrs(Operation *op) {
  SmallVector<NamedAttribute> attrs;
  for (NamedAttribute a : op->getAttrs()) {
    StringRef n = a.getName().getValue();
    if (n != "kernel_shape" && n != "strides" && n != "dilations" &&
        n != "pads" && n != "auto_pad" && n != "output_padding")
      attrs.push_back(a);
  }
  return attrs;
}

RankedTensorType staticRank5(Value v) {
  auto t = llvm::dyn_cast<RankedTensorType>(v.getType());
  return t && t.getRank() == 5 && t.hasStaticShape() ? t : RankedTensorType();
}

bool convAs2d(ConvOp op) {
  auto x = staticRank5(op.getX()), w = staticRank5(op.getW());
  Window3d win;
  if (!x || !w || op.getChannelsLast() ||
      !win.read(op, x.getShape().drop_front(2), w.getShape().drop_front(2)))
    return false;
  auto xs = x.getShape(), ws = w.getShape();
  int64_t N = xs[0], C = xs[1], D = xs[2], H = xs[3], W = xs[4];
  int64_t M = ws[0], kd = win.k[0], s = win.s[0], dl = win.dl[0];
  int64_t span = D + win.p0[0] + win.p1[0] - dl * (kd - 1) - 1;
  if (span < 0)
    return false;
  int64_t OD = span / s + 1;
  RewriteBuilder B(op);
  Value v =
      B.pad(B.transpose(op.getX(), {0, 2, 1, 3, 4}), 1, win.p0[0], win.p1[0]);
  SmallVector<Value> operands;
  if (op.getGroup() == 1 && kd > 1) {
    // One gather of every (output depth, tap) row: columns [N OD, kd C,
    // H, W] tap-major, W's taps moved before its channels to match (a
    // small copy); one kd-sized copy where slices and their concat are two.
    SmallVector<int64_t> rows;
    for (int64_t od = 0; od < OD; ++od)
      for (int64_t kz = 0; kz < kd; ++kz)
        rows.push_back(od * s + kz * dl);
    Value at = B.b.create<ConstantOp>(
        B.loc, DenseElementsAttr::get(
                   RankedTensorType::get({OD, kd}, B.b.getI64Type()),
                   ArrayRef<int64_t>(rows)));
    Value cols = B.make(GatherOp::getOperationName(), {v, at},
                        {B.b.getNamedAttr("axis", B.b.getI64IntegerAttr(1))});
    operands = {B.reshape(cols, {N * OD, kd * C, H, W}),
                B.reshape(B.transpose(op.getW(), {0, 2, 1, 3, 4}),
                          {M, kd * C, ws[3], ws[4]})};
  } else {
    // Grouped (each group's channels together, its taps after them), or
    // one tap: the taps stacked after the channels.
    SmallVector<Value> taps; // [N, OD, C, 1, H, W] each
    for (int64_t kz = 0; kz < kd; ++kz)
      taps.push_back(B.unsqueeze(
          B.slice(v, 1, kz * dl, kz * dl + (OD - 1) * s + 1, s), 3));
    Value cols =
        kd == 1 ? taps[0]
                : B.make(ConcatOp::getOperationName(), taps,
                         {B.b.getNamedAttr("axis", B.b.getI64IntegerAttr(3))});
    operands = {B.reshape(cols, {N * OD, C * kd, H, W}),
                B.reshape(op.getW(), {M, ws[1] * kd, ws[3], ws[4]})};
  }
  if (op.getBias())
    operands.push_back(op.getBias());
  SmallVector<NamedAttribute> attrs = otherAttrs(op);
  attrs.append(win.planar(B.b));
  Value y = B.make(ConvOp::getOperationName(), operands, attrs);
  if (!B.ok)
    return B.giveUp();
  int64_t OH = RewriteBuilder::dim(y, 2), OW = RewriteBuilder::dim(y, 3);
  return B.replace(
      B.transpose(B.reshape(y, {N, OD, M, OH, OW}), {0, 2, 1, 3, 4}));
}

bool convTransposeAs2d(ConvTransposeOp op) {
  auto x = staticRank5(op.getX()), w = staticRank5(op.getW());
  auto y3 = staticRank5(op.getResult());
  Window3d win;
  if (!x || !w || !y3 ||
      !win.read(op, x.getShape().drop_front(2), w.getShape().drop_front(2)))
    return false;
  SmallVector<int64_t> extra(3, 0);
  if (auto a = op->getAttrOfType<DenseI64ArrayAttr>("output_padding")) {
    if (a.size() != 3)
      return false;
    extra.assign(a.asArrayRef().begin(), a.asArrayRef().end());
  }
  auto xs = x.getShape(), ws = w.getShape();
  int64_t N = xs[0], C = xs[1], D = xs[2], H = xs[3], W = xs[4];
  int64_t M = y3.getDimSize(1), kd = win.k[0], s = win.s[0], dl = win.dl[0];
  int64_t full = (D - 1) * s + dl * (kd - 1) + 1, OD = y3.getDimSize(2);
  int64_t p0 = win.p0[0], after = OD + p0 - full;
  // The taps tile the depth (input depth d's tap kz lands at d s + kz): a
  // reshape places them, and the bias can ride in the 2-D convolution
  // when no output depth is cropped or padded.
  bool tiled = kd == s && (kd == 1 || dl == 1);
  bool biasInside = op.getBias() && tiled && p0 == 0 && after == 0;
  RewriteBuilder B(op);
  SmallVector<Value> operands = {
      B.reshape(B.transpose(op.getX(), {0, 2, 1, 3, 4}), {N * D, C, H, W}),
      B.reshape(op.getW(), {C, ws[1] * kd, ws[3], ws[4]})};
  if (biasInside) {
    Value column = B.reshape(op.getBias(), {M, 1});
    operands.push_back(
        B.reshape(B.make(ExpandOp::getOperationName(),
                         {column, i64Constant(B.b, B.loc, {M, kd})}),
                  {M * kd}));
  }
  SmallVector<NamedAttribute> attrs = otherAttrs(op);
  attrs.append(win.planar(B.b));
  attrs.push_back(B.b.getNamedAttr(
      "output_padding", B.b.getDenseI64ArrayAttr({extra[1], extra[2]})));
  Value z = B.make(ConvTransposeOp::getOperationName(), operands, attrs);
  if (!B.ok)
    return B.giveUp();
  int64_t OH = RewriteBuilder::dim(z, 2), OW = RewriteBuilder::dim(z, 3),
          P = OH * OW;
  Value y;
  if (tiled) {
    y = B.transpose(B.reshape(z, {N, D, M, kd, P}), {0, 2, 1, 3, 4});
    y = B.reshape(y, {N, M, D * kd, P});
  } else {
    Value taps = B.transpose(B.reshape(z, {N, D, M, kd, P}), {0, 2, 3, 1, 4});
    for (int64_t kz = 0; kz < kd; ++kz) {
      // Tap kz of input depth d lands at d s + kz dl: spread by the
      // stride (s - 1 zeros after each depth), then shifted.
      Value t = B.reshape(B.slice(taps, 2, kz, kz + 1), {N, M, D, 1, P});
      t = B.reshape(B.pad(t, 3, 0, s - 1), {N, M, D * s, P});
      y = B.add(y, B.pad(t, 2, kz * dl, full - kz * dl - D * s));
    }
  }
  // The pads crop the full output; output_padding adds depths no tap
  // reaches.
  y = B.reshape(B.pad(y, 2, -p0, after), {N, M, OD, OH, OW});
  if (op.getBias() && !biasInside)
    y = B.add(y, B.reshape(op.getBias(), {1, M, 1, 1, 1}));
  return B.replace(y);
}

struct Conv3dAs2d : public mpc::impl::Conv3dAs2dBase<Conv3dAs2d> {
  void runOnOperation() override {
    SmallVector<Operation *> convs;
    getOperation().walk([&](Operation *op) {
      if (isa<ConvOp, ConvTransposeOp>(op))
        convs.push_back(op);
    });
    for (Operation *op : convs) {
      if (auto c = dyn_cast<ConvOp>(op))
        convAs2d(c);
      else
        convTransposeAs2d(cast<ConvTransposeOp>(op));
    }
  }
};

} // namespace
