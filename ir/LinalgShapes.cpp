//===- LinalgShapes.cpp - result types of matmul, gemm, conv, pools -------===//

#include "ir/MpcOps.h"
#include "ir/ShapeRules.h"

using namespace mlir;
using namespace mlir::mpc;

LogicalResult MatMulOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &types) {
  auto a = rankedOf(adaptor.getA()), b = rankedOf(adaptor.getB());
  if (a.getElementType() != b.getElementType())
    return shapeError(loc, "matmul operand element types differ: ",
                      a.getElementType(), " and ", b.getElementType());
  if (a.getRank() == 0 || b.getRank() == 0)
    return shapeError(loc, "matmul operands must have rank >= 1");
  SmallVector<int64_t> as(a.getShape()), bs(b.getShape());
  bool vecA = as.size() == 1, vecB = bs.size() == 1;
  if (vecA)
    as.insert(as.begin(), 1);
  if (vecB)
    bs.push_back(1);
  int64_t k1 = as.back(), k2 = bs[bs.size() - 2];
  if (k1 != kDyn && k2 != kDyn && k1 != k2)
    return shapeError(loc, "matmul inner dimensions differ: ", k1, " and ", k2);
  auto batch = broadcastShapes(ArrayRef(as).drop_back(2),
                               ArrayRef(bs).drop_back(2));
  if (failed(batch))
    return shapeError(loc, "matmul batch dimensions do not broadcast");
  SmallVector<int64_t> shape(*batch);
  if (!vecA)
    shape.push_back(as[as.size() - 2]);
  if (!vecB)
    shape.push_back(bs.back());
  types.push_back(RankedTensorType::get(shape, a.getElementType()));
  return success();
}

LogicalResult GemmOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                       Adaptor adaptor,
                                       SmallVectorImpl<Type> &types) {
  auto a = rankedOf(adaptor.getA()), b = rankedOf(adaptor.getB());
  if (a.getRank() != 2 || b.getRank() != 2)
    return shapeError(loc, "gemm operands A and B must be 2-D, got ", a, " and ",
                      b);
  if (a.getElementType() != b.getElementType())
    return shapeError(loc, "gemm operand element types differ");
  int64_t m = a.getDimSize(adaptor.getTransA() ? 1 : 0);
  int64_t k1 = a.getDimSize(adaptor.getTransA() ? 0 : 1);
  int64_t k2 = b.getDimSize(adaptor.getTransB() ? 1 : 0);
  int64_t n = b.getDimSize(adaptor.getTransB() ? 0 : 1);
  if (k1 != kDyn && k2 != kDyn && k1 != k2)
    return shapeError(loc, "gemm inner dimensions differ: ", k1, " and ", k2);
  if (Value c = adaptor.getC()) {
    auto r = broadcastShapes({m, n}, rankedOf(c).getShape());
    if (failed(r) || r->size() != 2 ||
        ((*r)[0] != m && m != kDyn) || ((*r)[1] != n && n != kDyn))
      return shapeError(loc, "gemm C of type ", c.getType(),
                        " does not broadcast to [", m, ",", n, "]");
  }
  types.push_back(RankedTensorType::get({m, n}, a.getElementType()));
  return success();
}

namespace {
/// Spatial window arithmetic shared by Conv and the pools (ONNX semantics).
struct Window {
  SmallVector<int64_t> kernel, strides, dilations, pads;
  StringRef autoPad;
  bool ceilMode = false;

  LogicalResult init(std::optional<Location> loc, size_t spatial,
                     std::optional<ArrayRef<int64_t>> k,
                     std::optional<ArrayRef<int64_t>> s,
                     std::optional<ArrayRef<int64_t>> d,
                     std::optional<ArrayRef<int64_t>> p) {
    if (k)
      kernel.assign(k->begin(), k->end());
    strides = s ? SmallVector<int64_t>(*s) : SmallVector<int64_t>(spatial, 1);
    dilations = d ? SmallVector<int64_t>(*d) : SmallVector<int64_t>(spatial, 1);
    pads = p ? SmallVector<int64_t>(*p) : SmallVector<int64_t>(2 * spatial, 0);
    if (kernel.size() != spatial || strides.size() != spatial ||
        dilations.size() != spatial || pads.size() != 2 * spatial)
      return shapeError(loc, "kernel_shape, strides, dilations and pads must "
                             "match the ",
                        spatial, " spatial dimensions");
    for (size_t i = 0; i < spatial; ++i)
      if (kernel[i] < 1 || strides[i] < 1 || dilations[i] < 1 ||
          pads[i] < 0 || pads[spatial + i] < 0)
        return shapeError(loc, "window sizes, strides and dilations must be "
                               "positive and pads non-negative");
    if (autoPad != "NOTSET" && autoPad != "VALID" && autoPad != "SAME_UPPER" &&
        autoPad != "SAME_LOWER")
      return shapeError(loc, "unknown auto_pad '", autoPad, "'");
    return success();
  }

  int64_t outDim(size_t i, int64_t in) const {
    if (in == kDyn)
      return kDyn;
    size_t n = kernel.size();
    if (autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER")
      return (in + strides[i] - 1) / strides[i];
    int64_t padded = in + (autoPad == "VALID" ? 0 : pads[i] + pads[n + i]);
    int64_t span = padded - dilations[i] * (kernel[i] - 1) - 1;
    if (span < 0)
      return -1;
    int64_t out = (ceilMode ? (span + strides[i] - 1) / strides[i]
                            : span / strides[i]) + 1;
    // The last window must start inside the input or left padding (PyTorch).
    if (ceilMode && (out - 1) * strides[i] >= in + pads[i])
      --out;
    return out;
  }

  LogicalResult outShape(std::optional<Location> loc, RankedTensorType x,
                         int64_t channels, SmallVectorImpl<int64_t> &shape) {
    shape.assign({x.getDimSize(0), channels});
    for (size_t i = 0; i < kernel.size(); ++i) {
      int64_t d = outDim(i, x.getDimSize(2 + i));
      if (d != kDyn && d < 1)
        return shapeError(loc, "window of size ", kernel[i],
                          " does not fit spatial dimension ", i, " of size ",
                          x.getDimSize(2 + i));
      shape.push_back(d);
    }
    return success();
  }
};
} // namespace

/// What conv and conv_transpose both require: X and W of one rank >= 3 and
/// a positive group.
static LogicalResult checkConvOperands(std::optional<Location> loc,
                                       StringRef op, RankedTensorType x,
                                       RankedTensorType w, int64_t group) {
  if (x.getRank() < 3 || w.getRank() != x.getRank())
    return shapeError(loc, op, " expects X (N x C x D1..Dn) and W of the same "
                               "rank >= 3, got ",
                      x, " and ", w);
  if (group < 1)
    return shapeError(loc, op, " group must be positive");
  return success();
}

/// An optional bias of `channels` elements.
static LogicalResult checkConvBias(std::optional<Location> loc, StringRef op,
                                   Value bias, int64_t channels) {
  if (!bias)
    return success();
  auto bt = rankedOf(bias);
  if (bt.getRank() != 1 || (bt.getDimSize(0) != kDyn && channels != kDyn &&
                            bt.getDimSize(0) != channels))
    return shapeError(loc, op, " bias must be 1-D of size ", channels);
  return success();
}

LogicalResult ConvOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                       Adaptor adaptor,
                                       SmallVectorImpl<Type> &types) {
  auto x = rankedOf(adaptor.getX()), w = rankedOf(adaptor.getW());
  int64_t group = adaptor.getGroup();
  if (failed(checkConvOperands(loc, "conv", x, w, group)))
    return failure();
  // Channels last: the shapes are worked out in the channels-first order.
  bool last = adaptor.getChannelsLast();
  if (last) {
    x = permutedType(x, channelsFirstPerm(x.getRank()));
    w = permutedType(w, channelsFirstPerm(w.getRank()));
  }
  int64_t c = x.getDimSize(1), wc = w.getDimSize(1), m = w.getDimSize(0);
  if (c != kDyn && wc != kDyn && c != wc * group)
    return shapeError(loc, "conv input has ", c, " channels but W expects ",
                      wc, " x group ", group);
  if (m != kDyn && m % group)
    return shapeError(loc, "conv output channels ", m,
                      " not divisible by group ", group);
  if (failed(checkConvBias(loc, "conv", adaptor.getBias(), m)))
    return failure();
  Window win;
  win.autoPad = adaptor.getAutoPad();
  SmallVector<int64_t> kernel(w.getShape().drop_front(2));
  auto k = adaptor.getKernelShape();
  if (failed(win.init(loc, x.getRank() - 2, k ? *k : ArrayRef(kernel),
                      adaptor.getStrides(), adaptor.getDilations(),
                      adaptor.getPads())))
    return failure();
  SmallVector<int64_t> shape;
  if (failed(win.outShape(loc, x, m, shape)))
    return failure();
  auto y = x.clone(shape);
  types.push_back(last ? permutedType(y, channelsLastPerm(y.getRank())) : y);
  return success();
}

LogicalResult ConvTransposeOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &types) {
  auto x = rankedOf(adaptor.getX()), w = rankedOf(adaptor.getW());
  int64_t group = adaptor.getGroup();
  if (failed(checkConvOperands(loc, "conv_transpose", x, w, group)))
    return failure();
  int64_t c = x.getDimSize(1), wc = w.getDimSize(0), wm = w.getDimSize(1);
  if (c != kDyn && wc != kDyn && c != wc)
    return shapeError(loc, "conv_transpose input has ", c,
                      " channels but W has ", wc);
  if (c != kDyn && c % group)
    return shapeError(loc, "conv_transpose input channels ", c,
                      " not divisible by group ", group);
  int64_t m = wm == kDyn ? kDyn : wm * group;
  if (failed(checkConvBias(loc, "conv_transpose", adaptor.getBias(), m)))
    return failure();
  size_t spatial = x.getRank() - 2;
  Window win;
  win.autoPad = "NOTSET";
  SmallVector<int64_t> kernel(w.getShape().drop_front(2));
  auto k = adaptor.getKernelShape();
  if (failed(win.init(loc, spatial, k ? *k : ArrayRef(kernel),
                      adaptor.getStrides(), adaptor.getDilations(),
                      adaptor.getPads())))
    return failure();
  SmallVector<int64_t> extra(spatial, 0);
  if (auto op = adaptor.getOutputPadding())
    extra.assign(op->begin(), op->end());
  if (extra.size() != spatial || llvm::any_of(extra, [](int64_t e) {
        return e < 0;
      }))
    return shapeError(loc, "conv_transpose output_padding must hold ",
                      spatial, " non-negative values");
  SmallVector<int64_t> shape{x.getDimSize(0), m};
  for (size_t i = 0; i < spatial; ++i) {
    int64_t in = x.getDimSize(2 + i);
    if (in == kDyn) {
      shape.push_back(kDyn);
      continue;
    }
    int64_t out = win.strides[i] * (in - 1) + extra[i] +
                  (win.kernel[i] - 1) * win.dilations[i] + 1 - win.pads[i] -
                  win.pads[spatial + i];
    if (out < 1)
      return shapeError(loc, "conv_transpose pads leave spatial dimension ",
                        i, " empty");
    shape.push_back(out);
  }
  types.push_back(x.clone(shape));
  return success();
}

template <typename Adaptor>
static LogicalResult inferPool(std::optional<Location> loc, Adaptor adaptor,
                               RankedTensorType x,
                               SmallVectorImpl<Type> &types) {
  if (x.getRank() < 3)
    return shapeError(loc, "pooling expects N x C x D1..Dn input, got ", x);
  if (!adaptor.getKernelShape())
    return shapeError(loc, "pooling requires kernel_shape");
  Window win;
  win.autoPad = adaptor.getAutoPad();
  win.ceilMode = adaptor.getCeilMode();
  if (failed(win.init(loc, x.getRank() - 2, adaptor.getKernelShape(),
                      adaptor.getStrides(), adaptor.getDilations(),
                      adaptor.getPads())))
    return failure();
  SmallVector<int64_t> shape;
  if (failed(win.outShape(loc, x, x.getDimSize(1), shape)))
    return failure();
  types.push_back(x.clone(shape));
  return success();
}

LogicalResult MaxPoolOp::inferReturnTypes(MLIRContext *ctx,
                                          std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &types) {
  auto x = rankedOf(adaptor.getX());
  if (adaptor.getChannelsLast() && x.getRank() >= 3) {
    // The window works on the channels-first shape.
    RankedTensorType first = permutedType(x, channelsFirstPerm(x.getRank()));
    if (failed(inferPool(loc, adaptor, first, types)))
      return failure();
    types[0] = permutedType(llvm::cast<RankedTensorType>(types[0]),
                            channelsLastPerm(x.getRank()));
  } else if (failed(inferPool(loc, adaptor, x, types))) {
    return failure();
  }
  types.push_back(llvm::cast<RankedTensorType>(types[0]).clone(
      IntegerType::get(ctx, 64)));
  return success();
}

LogicalResult AveragePoolOp::inferReturnTypes(MLIRContext *,
                                              std::optional<Location> loc,
                                              Adaptor adaptor,
                                              SmallVectorImpl<Type> &types) {
  return inferPool(loc, adaptor, rankedOf(adaptor.getX()), types);
}
