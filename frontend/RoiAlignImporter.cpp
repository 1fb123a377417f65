//===- RoiAlignImporter.cpp - RoiAlign as bilinear gathers ----------------===//
//
// RoiAlign (Mask R-CNN's and Faster R-CNN's box heads) imported as its
// definition in mpc ops, step for step with onnx's reference (which
// follows onnxruntime's kernel): each roi's bins sampled on an s x s grid
// (sampling_ratio s), every sample bilinear from the roi's image (points
// past -1 or the far edge read 0; the last row and column clamp), the
// samples averaged, or the largest of their weighted corners kept (mode
// max, as onnxruntime computes it). The roi's image is a gather of X by
// batch_indices, each corner a gather_elements of it viewed [R, C, H W]:
// autodiff scatters X's gradient back through both, and the rois' through
// the coordinates. Kept FP32 under mixed precision (mpc.amp_fp32). An
// adaptive grid (sampling_ratio 0: a sample count that depends on the
// rois' values) is refused.
//
//===----------------------------------------------------------------------===//

#include "frontend/Composer.h"
#include "frontend/ImporterImpl.h"

namespace mlir::mpc::importer {

LogicalResult importRoiAlign(NodeContext &c) {
  if (failed(c.requireInputs(3)) ||
      failed(c.checkAttrs({"coordinate_transformation_mode", "mode",
                           "output_height", "output_width", "sampling_ratio",
                           "spatial_scale"})))
    return failure();
  auto x = llvm::cast<RankedTensorType>(c.input(0).getType());
  auto rois = llvm::cast<RankedTensorType>(c.input(1).getType());
  auto batch = llvm::cast<RankedTensorType>(c.input(2).getType());
  if (x.getRank() != 4 || rois.getRank() != 2 || rois.isDynamicDim(0) ||
      rois.getDimSize(1) != 4 || batch.getRank() != 1 ||
      !batch.getElementType().isInteger(64))
    return c.fail("X must be N x C x H x W, rois R x 4 (static R) and "
                  "batch_indices an int64 vector");
  for (int64_t i = 1; i < 4; ++i)
    if (x.isDynamicDim(i))
      return c.fail("X needs static sizes past the batch dimension");
  int64_t s = c.getInt("sampling_ratio", 0);
  if (s <= 0)
    return c.fail("sampling_ratio " + Twine(s) +
                  " (an adaptive grid, whose sample count depends on the "
                  "rois' values) is not supported; give a positive one");
  std::string mode = c.getString("mode", "avg");
  if (mode != "avg" && mode != "max")
    return c.fail("unknown mode '" + mode + "'");
  std::string transform = c.getString("coordinate_transformation_mode",
                                      c.opset < 16 ? "output_half_pixel"
                                                   : "half_pixel");
  if (transform != "half_pixel" && transform != "output_half_pixel")
    return c.fail("unknown coordinate_transformation_mode '" + transform + "'");
  bool halfPixel = transform == "half_pixel";
  int64_t PH = c.getInt("output_height", 1), PW = c.getInt("output_width", 1);
  if (PH < 1 || PW < 1)
    return c.fail("output_height and output_width must be positive");
  int64_t R = rois.getDimSize(0), C = x.getDimSize(1), H = x.getDimSize(2),
          W = x.getDimSize(3);
  double scale = c.getFloat("spatial_scale", 1.0f);
  Type et = x.getElementType();
  if (!llvm::isa<FloatType>(et))
    return c.fail("X must be a float tensor");

  Fp32Region fp32(c);
  Composer m{c};
  auto k = [&](double v) { return m.scalar(et, v); };
  auto bin = [&](StringRef op, Value a, Value b) { return m.bin(op, a, b); };
  Value box = m.cast(c.input(1), et);
  auto corner = [&](int64_t i) { // [R, 1], scaled and shifted
    return bin("mpc.sub", bin("mpc.mul", m.slice(box, 1, i, i + 1), k(scale)),
               k(halfPixel ? 0.5 : 0.0));
  };
  Value x1 = corner(0), y1 = corner(1), x2 = corner(2), y2 = corner(3);
  Value roiW = bin("mpc.sub", x2, x1), roiH = bin("mpc.sub", y2, y1);
  if (!halfPixel) { // malformed rois forced to 1 x 1
    roiW = bin("mpc.max", roiW, k(1.0));
    roiH = bin("mpc.max", roiH, k(1.0));
  }
  // Sample positions in bins: p + (i + 0.5) / s for bin p, sample i.
  auto grid = [&](int64_t bins) {
    SmallVector<float> v;
    for (int64_t p = 0; p < bins; ++p)
      for (int64_t i = 0; i < s; ++i)
        v.push_back(p + (i + 0.5f) / s);
    return m.f32s(v, {1, bins * s});
  };
  auto along = [&](Value start, Value size, int64_t bins,
                   ArrayRef<int64_t> shape) { // [R, bins * s] viewed `shape`
    Value steps = m.cast(grid(bins), et);
    return m.reshape(bin("mpc.add", start,
                         bin("mpc.mul", bin("mpc.div", size, k((double)bins)),
                             steps)),
                     shape);
  };
  Value ys = along(y1, roiH, PH, {R, PH, s, 1, 1});
  Value xs = along(x1, roiW, PW, {R, 1, 1, PW, s});
  // Per axis: whether the sample reads anything, the low and high rows
  // (or columns) and their weights.
  struct Axis {
    Value valid, low, high, wLow, wHigh;
  };
  auto axis = [&](Value p, int64_t size) {
    Axis a;
    a.valid = m.op("mpc.and", {bin("mpc.greater_or_equal", p, k(-1.0)),
                               bin("mpc.less_or_equal", p, k((double)size))});
    Value q = bin("mpc.max", p, k(0.0));
    Value f = m.op("mpc.floor", {q});
    Value atEdge = bin("mpc.greater_or_equal", f, k(size - 1.0));
    a.low = bin("mpc.min", f, k(size - 1.0));
    a.high = bin("mpc.min", bin("mpc.add", a.low, k(1.0)), k(size - 1.0));
    a.wHigh = bin("mpc.sub", m.where(atEdge, k(size - 1.0), q), a.low);
    a.wLow = bin("mpc.sub", k(1.0), a.wHigh);
    return a;
  };
  Axis ay = axis(ys, H), ax = axis(xs, W);
  Value valid = m.op("mpc.and", {ay.valid, ax.valid}); // [R, PH, s, PW, s]
  int64_t Q = PH * s * PW * s;
  Value image = m.reshape(
      m.op("mpc.gather", {c.input(0), c.input(2)},
           {c.named("axis", c.b.getI64IntegerAttr(0))}),
      {R, C, H * W});
  Value shape = m.i64s({R, C, Q});
  Value sum, best;
  for (int corner = 0; corner < 4; ++corner) {
    Value row = corner < 2 ? ay.low : ay.high, col = corner % 2 ? ax.high : ax.low;
    Value wRow = corner < 2 ? ay.wLow : ay.wHigh,
          wCol = corner % 2 ? ax.wHigh : ax.wLow;
    Value index = m.cast(bin("mpc.add", bin("mpc.mul", row, k((double)W)), col),
                         c.b.getI64Type());
    index = m.where(valid, index, m.i64s({0}, {})); // onnx's: position 0
    Value weight = m.where(valid, bin("mpc.mul", wRow, wCol), k(0.0));
    Value v = m.op("mpc.gather_elements",
                   {image, m.op("mpc.expand", {m.reshape(index, {R, 1, Q}), shape})},
                   {c.named("axis", c.b.getI64IntegerAttr(2))});
    Value term = bin("mpc.mul", m.reshape(weight, {R, 1, Q}), v);
    if (mode == "avg")
      sum = sum ? bin("mpc.add", sum, term) : term;
    else
      best = best ? bin("mpc.max", best, term) : term;
  }
  SmallVector<int64_t> axes{3, 5};
  Value y =
      mode == "avg"
          ? bin("mpc.div",
                m.op("mpc.reduce_sum", {m.reshape(sum, {R, C, PH, s, PW, s})},
                     {c.named("axes", c.b.getDenseI64ArrayAttr(axes)),
                      c.named("keepdims", c.b.getBoolAttr(false))}),
                k((double)(s * s)))
          : m.op("mpc.reduce_max", {m.reshape(best, {R, C, PH, s, PW, s})},
                 {c.named("axes", c.b.getDenseI64ArrayAttr(axes)),
                  c.named("keepdims", c.b.getBoolAttr(false))});
  if (c.failed())
    return failure();
  fp32.keep("roi sampling (its coordinates)");
  return c.setOutputs({y});
}

} // namespace mlir::mpc::importer
