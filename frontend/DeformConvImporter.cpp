//===- DeformConvImporter.cpp - DeformConv as sampling and a MatMul -------===//
//
// DeformConv (19; torchvision's deform_conv2d, DCNv2 with its mask) is a
// convolution whose every kernel tap reads X at its own learned offset,
// bilinearly (zeros outside: onnx's reference samples through GridSample
// with align_corners). Imported as that definition in mpc ops: the taps'
// coordinates [N, offset groups, K, P] from constant positions plus the
// offsets, the four corners of each a gather_elements of X viewed
// [N, offset groups, C / offset groups, H * W], weighted by the bilinear
// coefficients and the mask, summed into columns [N, C * K, P] (as
// torchvision's kernel builds them), and the convolution one batched
// MatMul of the filters by the columns per group. Autodiff gives X's
// gradient through the gathers' scatter, the offsets' through the
// coefficients, the mask's and the filters' through the products. The
// sampling is kept FP32 (mpc.amp_fp32); the MatMul runs on tensor cores.
//
//===----------------------------------------------------------------------===//

#include "frontend/Composer.h"
#include "frontend/ImporterImpl.h"

namespace mlir::mpc::importer {
namespace {

} // namespace

LogicalResult importDeformConv(NodeContext &c) {
  if (failed(c.requireInputs(3)) ||
      failed(c.checkAttrs({"dilations", "group", "kernel_shape",
                           "offset_group", "pads", "strides"})))
    return failure();
  auto x = typeOf(c.input(0)), w = typeOf(c.input(1)),
       offset = typeOf(c.input(2));
  if (x.getRank() != 4 || w.getRank() != 4 || offset.getRank() != 4)
    return c.fail("only 2-D DeformConv is supported (X N x C x H x W, W "
                  "M x C/group x kH x kW, offset N x 2 * offset_group * kH "
                  "* kW x oH x oW)");
  for (int64_t i = 1; i < 4; ++i)
    if (x.isDynamicDim(i) || offset.isDynamicDim(i))
      return c.fail("X and offset need static sizes past the batch dimension");
  if (!w.hasStaticShape() || !llvm::isa<FloatType>(x.getElementType()))
    return c.fail("W must be a float tensor of static shape");
  int64_t channels = x.getDimSize(1), H = x.getDimSize(2), W = x.getDimSize(3);
  int64_t outC = w.getDimSize(0), kH = w.getDimSize(2), kW = w.getDimSize(3);
  if (auto kernel = c.getInts("kernel_shape"))
    if (*kernel != SmallVector<int64_t>{kH, kW})
      return c.fail("kernel_shape disagrees with W's shape");
  int64_t group = c.getInt("group", 1), offsetGroup = c.getInt("offset_group", 1);
  if (group < 1 || offsetGroup < 1 || channels % group ||
      channels % offsetGroup || w.getDimSize(1) * group != channels ||
      outC % group)
    return c.fail("X's " + Twine(channels) + " channels, W " +
                  Twine(outC) + " x " + Twine(w.getDimSize(1)) +
                  ", group " + Twine(group) + " and offset_group " +
                  Twine(offsetGroup) + " do not agree");
  auto strides = c.getInts("strides").value_or(SmallVector<int64_t>{1, 1});
  auto dilations = c.getInts("dilations").value_or(SmallVector<int64_t>{1, 1});
  auto pads = c.getInts("pads").value_or(SmallVector<int64_t>{0, 0, 0, 0});
  if (strides.size() != 2 || dilations.size() != 2 || pads.size() != 4)
    return c.fail("strides and dilations need 2 values, pads 4");
  int64_t K = kH * kW, oH = offset.getDimSize(2), oW = offset.getDimSize(3);
  int64_t P = oH * oW;
  if (oH != (H + pads[0] + pads[2] - (kH - 1) * dilations[0] - 1) / strides[0] + 1 ||
      oW != (W + pads[1] + pads[3] - (kW - 1) * dilations[1] - 1) / strides[1] + 1 ||
      offset.getDimSize(1) != 2 * offsetGroup * K)
    return c.fail("offset is N x " + Twine(offset.getDimSize(1)) + " x " +
                  Twine(oH) + " x " + Twine(oW) +
                  ", which the window, X and offset_group do not give");
  Value mask = c.input(4);
  if (mask && typeOf(mask).getShape().drop_front() !=
                  ArrayRef<int64_t>{offsetGroup * K, oH, oW})
    return c.fail("mask must be N x offset_group * kH * kW x oH x oW");

  Fp32Region fp32(c);
  Composer m{c};
  Type et = x.getElementType();
  auto scalar = [&](double v) { return m.scalar(et, v); };
  auto bin = [&](StringRef op, Value a, Value b) { return m.bin(op, a, b); };
  // Each tap's position without its offset, [1, 1, K, P]: rows, columns.
  SmallVector<double> rows, cols;
  for (int64_t i = 0; i < kH; ++i)
    for (int64_t j = 0; j < kW; ++j)
      for (int64_t oh = 0; oh < oH; ++oh)
        for (int64_t ow = 0; ow < oW; ++ow) {
          rows.push_back(oh * strides[0] - pads[0] + i * dilations[0]);
          cols.push_back(ow * strides[1] - pads[1] + j * dilations[1]);
        }
  auto positions = [&](ArrayRef<double> v) {
    return m.floatValues(et, {1, 1, K, P}, v);
  };

  Value offsets = m.reshape(m.cast(c.input(2), et),
                            {0, offsetGroup, K, 2, P});
  Value y = bin("mpc.add", m.reshape(m.slice(offsets, 3, 0, 1),
                                     {0, offsetGroup, K, P}),
                positions(rows));
  Value xc = bin("mpc.add", m.reshape(m.slice(offsets, 3, 1, 2),
                                      {0, offsetGroup, K, P}),
                 positions(cols));
  Value y0 = m.op("mpc.floor", {y}), x0 = m.op("mpc.floor", {xc});
  Value ty = bin("mpc.sub", y, y0), tx = bin("mpc.sub", xc, x0);
  Value scale = mask ? m.reshape(m.cast(mask, et), {0, offsetGroup, K, P})
                     : Value();
  int64_t per = channels / offsetGroup;
  Value image = m.reshape(c.input(0), {0, offsetGroup, per, H * W});
  Value shape = m.concat({m.slice(m.op("mpc.shape", {image}), 0, 0, 3),
                          m.i64s({K * P})},
                         0);
  Value columns;
  for (int64_t dy = 0; dy < 2; ++dy)
    for (int64_t dx = 0; dx < 2; ++dx) {
      Value yy = dy ? bin("mpc.add", y0, scalar(1.0)) : y0;
      Value xx = dx ? bin("mpc.add", x0, scalar(1.0)) : x0;
      auto within = [&](Value v, int64_t size) {
        return m.op("mpc.and",
                    {bin("mpc.greater_or_equal", v, scalar(0.0)),
                     bin("mpc.less", v, scalar((double)size))});
      };
      auto clamp = [&](Value v, int64_t size) {
        return bin("mpc.min", bin("mpc.max", v, scalar(0.0)),
                   scalar(double(size - 1)));
      };
      Value inside = m.op("mpc.and", {within(yy, H), within(xx, W)});
      Value index = m.cast(bin("mpc.add", bin("mpc.mul", clamp(yy, H),
                                              scalar((double)W)),
                               clamp(xx, W)),
                           c.b.getI64Type());
      Value weight = bin("mpc.mul",
                         dy ? ty : bin("mpc.sub", scalar(1.0), ty),
                         dx ? tx : bin("mpc.sub", scalar(1.0), tx));
      if (scale)
        weight = bin("mpc.mul", weight, scale);
      Value taken = m.op(
          "mpc.gather_elements",
          {image, m.op("mpc.expand",
                       {m.reshape(index, {0, offsetGroup, 1, K * P}), shape})},
          {c.named("axis", c.b.getI64IntegerAttr(3))});
      // Zeros outside (where, not a zero weight: 0 * inf is NaN).
      taken = m.where(m.reshape(inside, {0, offsetGroup, 1, K * P}), taken,
                      scalar(0.0));
      Value term = bin("mpc.mul", taken,
                       m.reshape(weight, {0, offsetGroup, 1, K * P}));
      columns = columns ? bin("mpc.add", columns, term) : term;
    }
  if (c.failed())
    return failure();
  fp32.keep("deformable sampling (its coordinates)");
  // [N, G', C/G' * K... ] -> [N, group, C/group * K, P] (channel-major
  // within each tap row, as W's [M, C/group, kH, kW] flattens).
  int64_t perGroup = channels / group;
  Value cols4 = m.reshape(columns, {0, group, perGroup * K, P});
  Value filters = m.reshape(c.input(1), {1, group, outC / group, perGroup * K});
  Value out = m.reshape(m.op("mpc.matmul", {filters, cols4}),
                        {0, outC, oH, oW});
  if (Value bias = c.input(3))
    out = bin("mpc.add", out, m.reshape(bias, {1, outC, 1, 1}));
  if (c.failed())
    return failure();
  return c.setOutputs({out});
}

} // namespace mlir::mpc::importer
