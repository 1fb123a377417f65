//===- Pool3dAs2d.cpp - 3-D pools as two 2-D ones -------------------------===//
//
// Video and volumetric models pool over (D, H, W) (MaxPool3d, AvgPool3d)
// and the CUDA backend's pooling kernels are 2-D. A box window is
// separable: the max over a D x H x W window is the max over D of the
// maxima over H x W, and the average (padding counted or not: the window's
// valid region is a product of intervals, so its count is the product of
// the axes' counts) the average over D of the averages over H x W. So a
// 3-D pool of X [N, C, D, H, W] is a 2-D pool of X viewed [N, C D, H, W]
// over (H, W), then one of the result viewed [N, C, D, H' W'] over D
// (a window of width 1), viewed back [N, C, D', H', W']; each axis keeps
// its kernel, stride, dilation, pads and ceil mode. A max pool whose
// indices something other than its gradient reads is left as written
// (the two pools' indices are not the 3-D one's).
//
//===----------------------------------------------------------------------===//

#include "ir/MpcOps.h"
#include "passes/Passes.h"
#include "passes/RewriteBuilder.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

namespace mlir::mpc {
#define GEN_PASS_DEF_POOL3DAS2D
#include "passes/Passes.h.inc"
} // namespace mlir::mpc

using namespace mlir;
using namespace mlir::mpc;

namespace {

/// The window attributes of `op` (3 spatial axes) for the pool over
/// (H, W), or over D (with a unit second axis): kernel_shape, strides,
/// dilations, pads.
SmallVector<NamedAttribute> axesWindow(OpBuilder &b, Operation *op,
                                       bool overDepth) {
  SmallVector<NamedAttribute> attrs;
  for (NamedAttribute a : op->getAttrs()) {
    StringRef n = a.getName().getValue();
    auto v = llvm::dyn_cast<DenseI64ArrayAttr>(a.getValue());
    if (!v || (n != "kernel_shape" && n != "strides" && n != "dilations" &&
               n != "pads")) {
      attrs.push_back(a);
      continue;
    }
    ArrayRef<int64_t> x = v.asArrayRef();
    int64_t unit = n == "pads" ? 0 : 1;
    SmallVector<int64_t> out;
    if (n == "pads")
      out = overDepth ? SmallVector<int64_t>{x[0], unit, x[3], unit}
                      : SmallVector<int64_t>{x[1], x[2], x[4], x[5]};
    else
      out = overDepth ? SmallVector<int64_t>{x[0], unit}
                      : SmallVector<int64_t>{x[1], x[2]};
    attrs.push_back(b.getNamedAttr(n, b.getDenseI64ArrayAttr(out)));
  }
  return attrs;
}

bool rewrite(Operation *op) {
  auto x = llvm::dyn_cast<RankedTensorType>(op->getOperand(0).getType());
  auto last = op->getAttrOfType<BoolAttr>("channels_last");
  if (!x || x.getRank() != 5 || !x.hasStaticShape() ||
      (last && last.getValue()))
    return false;
  if (auto pad = op->getAttrOfType<StringAttr>("auto_pad");
      pad && pad.getValue() != "NOTSET")
    return false;
  auto kernel = op->getAttrOfType<DenseI64ArrayAttr>("kernel_shape");
  if (!kernel || kernel.size() != 3)
    return false;
  for (StringRef name : {"strides", "dilations"})
    if (auto a = op->getAttrOfType<DenseI64ArrayAttr>(name); a && a.size() != 3)
      return false;
  if (auto p = op->getAttrOfType<DenseI64ArrayAttr>("pads"); p && p.size() != 6)
    return false;
  if (isa<MaxPoolOp>(op) && !op->getResult(1).use_empty())
    return false;
  RewriteBuilder B(op);
  auto shape = x.getShape();
  int64_t N = shape[0], C = shape[1], D = shape[2];
  StringRef name = op->getName().getStringRef();
  Value planes = B.make(
      name, {B.reshape(op->getOperand(0), {N, C * D, shape[3], shape[4]})},
      axesWindow(B.b, op, false));
  if (!B.ok)
    return B.giveUp();
  int64_t OH = RewriteBuilder::dim(planes, 2),
          OW = RewriteBuilder::dim(planes, 3);
  Value depth = B.make(name, {B.reshape(planes, {N, C, D, OH * OW})},
                       axesWindow(B.b, op, true));
  if (!B.ok)
    return B.giveUp();
  return B.replace(
      B.reshape(depth, {N, C, RewriteBuilder::dim(depth, 2), OH, OW}));
}

struct Pool3dAs2d : public mpc::impl::Pool3dAs2dBase<Pool3dAs2d> {
  void runOnOperation() override {
    SmallVector<Operation *> pools;
    getOperation().walk([&](Operation *op) {
      if (isa<MaxPoolOp, AveragePoolOp>(op))
        pools.push_back(op);
    });
    for (Operation *op : pools)
      rewrite(op);
  }
};

} // namespace
