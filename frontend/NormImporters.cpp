//===- NormImporters.cpp - the normalizations and LpPool, composed -------===//
//
// InstanceNormalization and GroupNormalization normalise groups of values
// to zero mean and unit variance and then scale and shift per channel (per
// group for GroupNormalization before opset 21). They are imported as
// mpc.layer_norm over the trailing axes of a view of X (FP32 statistics,
// one kernel, the deny class, a gradient rule), followed by the affine
// part. LRN, LpNormalization, MeanVarianceNormalization and LpPool are
// their ONNX definitions in mpc ops (window sums as average pools, norms
// as reductions). No backend needs a rule of its own for any of them.
//
//===----------------------------------------------------------------------===//

#include "frontend/Composer.h"
#include "frontend/ImporterImpl.h"

#include <cmath>

namespace mlir::mpc::importer {
namespace {

/// layer_norm(x, ones) over the axes from `axis` on: (x - mean) / sqrt(var
/// + epsilon), the statistics in FP32.
Value normalize(Composer &m, Value x, int64_t axis, float epsilon) {
  auto t = typeOf(x);
  SmallVector<int64_t> norm(t.getShape().drop_front(axis));
  Value ones = m.floats(t.getElementType(), norm, 1.0);
  auto results = m.c.build(
      "mpc.layer_norm", {x, ones},
      {m.c.named("axis", m.c.b.getI64IntegerAttr(axis)),
       m.c.named("epsilon", m.c.b.getF32FloatAttr(epsilon))});
  return failed(results) ? Value() : (*results)[0];
}

/// v (of `channels` elements) shaped to broadcast along axis 1 of a tensor
/// of rank `rank`.
Value perChannel(Composer &m, Value v, int64_t rank) {
  SmallVector<int64_t> shape{-1};
  shape.append(rank - 2, 1);
  return m.reshape(v, shape);
}

/// X of rank >= 3 with static sizes past the batch, and 1-D scale and
/// bias of `n` elements of X's type.
LogicalResult checkOperands(NodeContext &c, int64_t n, StringRef what) {
  auto x = typeOf(c.input(0));
  if (x.getRank() < 3)
    return c.fail("X must be N x C x D1..Dn, got rank " + Twine(x.getRank()));
  for (int64_t i = 1; i < x.getRank(); ++i)
    if (x.isDynamicDim(i))
      return c.fail("X needs static sizes past the batch dimension");
  for (unsigned i : {1u, 2u}) {
    auto t = typeOf(c.input(i));
    if (t.getRank() != 1 || t.getDimSize(0) != n ||
        t.getElementType() != x.getElementType())
      return c.fail(Twine(i == 1 ? "scale" : "bias") + " must be 1-D of " +
                    Twine(n) + " elements (" + what + ") of X's type");
  }
  return success();
}

/// The shape of `x` with its (possibly dynamic) batch kept: a reshape
/// target that restores a view of x.
SmallVector<int64_t> batchKept(RankedTensorType x) {
  SmallVector<int64_t> shape(x.getShape());
  shape[0] = 0;
  return shape;
}

/// Fails unless X has rank >= `rank` and static sizes past the batch.
LogicalResult checkStaticPastBatch(NodeContext &c, RankedTensorType x,
                                   int64_t rank) {
  if (x.getRank() < rank)
    return c.fail("X must have rank >= " + Twine(rank) + ", got " +
                  Twine(x.getRank()));
  for (int64_t i = 1; i < x.getRank(); ++i)
    if (x.isDynamicDim(i))
      return c.fail("X needs static sizes past the batch dimension");
  return success();
}

} // namespace

LogicalResult importInstanceNorm(NodeContext &c) {
  if (failed(c.requireInputs(3)) || failed(c.checkAttrs({"epsilon"})))
    return failure();
  auto x = typeOf(c.input(0));
  if (x.getRank() >= 2 && failed(checkOperands(c, x.getDimSize(1),
                                               "one per channel")))
    return failure();
  Composer m{c};
  int64_t rank = x.getRank();
  Value y = normalize(m, c.input(0), 2, c.getFloat("epsilon", 1e-5f));
  y = m.bin("mpc.add", m.bin("mpc.mul", y, perChannel(m, c.input(1), rank)),
            perChannel(m, c.input(2), rank));
  if (c.failed())
    return failure();
  return c.setOutputs({y});
}

LogicalResult importGroupNorm(NodeContext &c) {
  if (failed(c.requireInputs(3)) ||
      failed(c.checkAttrs({"epsilon", "num_groups", "stash_type"})))
    return failure();
  if (c.getInt("stash_type", 1) != 1)
    return c.fail("stash_type other than 1 (float) is not supported");
  if (!c.attr("num_groups"))
    return c.fail("GroupNormalization needs attribute num_groups");
  auto x = typeOf(c.input(0));
  int64_t groups = c.getInt("num_groups", 1), rank = x.getRank();
  if (rank < 2 || x.isDynamicDim(1) || groups < 1 ||
      x.getDimSize(1) % groups)
    return c.fail("num_groups " + Twine(groups) +
                  " must divide the static channel count of X");
  // Opset 21 scales and shifts per channel; 18-20 per group.
  bool perGroup = c.opset < 21;
  if (failed(checkOperands(c, perGroup ? groups : x.getDimSize(1),
                           perGroup ? "one per group" : "one per channel")))
    return failure();
  Composer m{c};
  float eps = c.getFloat("epsilon", 1e-5f);
  Value grouped = m.reshape(c.input(0), {0, groups, -1});
  Value y = normalize(m, grouped, 2, eps);
  if (perGroup)
    y = m.bin("mpc.add", m.bin("mpc.mul", y, perChannel(m, c.input(1), 3)),
              perChannel(m, c.input(2), 3));
  SmallVector<int64_t> shape(x.getShape());
  shape[0] = 0; // keep the (possibly dynamic) batch
  y = m.reshape(y, shape);
  if (!perGroup)
    y = m.bin("mpc.add", m.bin("mpc.mul", y, perChannel(m, c.input(1), rank)),
              perChannel(m, c.input(2), rank));
  if (c.failed())
    return failure();
  return c.setOutputs({y});
}

/// LRN: x / (bias + alpha / size * s)^beta, s the sum of x^2 over the
/// `size` channels around each one (floor((size - 1) / 2) before, the rest
/// after, clipped at the edges). alpha / size * s is an average pool of
/// (sqrt(alpha) x)^2 over a [N, 1, C, rest] view (a size x 1 window, the
/// padding counted): squaring x scaled so, fp16 holds the squares of
/// activations far past 256 (alpha is 1e-4 in AlexNet and GoogLeNet).
LogicalResult importLRN(NodeContext &c) {
  if (failed(c.requireInputs(1)) ||
      failed(c.checkAttrs({"alpha", "beta", "bias", "size"})))
    return failure();
  if (!c.attr("size"))
    return c.fail("LRN needs attribute size");
  int64_t size = c.getInt("size", 1);
  if (size < 1)
    return c.fail("size must be positive, got " + Twine(size));
  auto x = typeOf(c.input(0));
  if (failed(checkStaticPastBatch(c, x, 3)))
    return failure();
  int64_t channels = x.getDimSize(1), rest = 1;
  for (int64_t d : x.getShape().drop_front(2))
    rest *= d;
  Composer m{c};
  Type et = x.getElementType();
  double alpha = c.getFloat("alpha", 1e-4f);
  Value scaled = alpha >= 0 ? m.bin("mpc.mul", c.input(0),
                                    m.scalar(et, std::sqrt(alpha)))
                            : c.input(0);
  Value squares = m.reshape(m.bin("mpc.mul", scaled, scaled),
                            {0, 1, channels, rest});
  int64_t before = (size - 1) / 2, after = size - 1 - before;
  Value mean = m.op(
      "mpc.average_pool", {squares},
      {c.named("kernel_shape", c.b.getDenseI64ArrayAttr({size, 1})),
       c.named("strides", c.b.getDenseI64ArrayAttr({1, 1})),
       c.named("pads", c.b.getDenseI64ArrayAttr({before, 0, after, 0})),
       c.named("count_include_pad", c.b.getBoolAttr(true))});
  Value sum = m.reshape(mean, batchKept(x));
  if (alpha < 0)
    sum = m.bin("mpc.mul", sum, m.scalar(et, alpha));
  Value base = m.bin("mpc.add", sum, m.scalar(et, c.getFloat("bias", 1.0f)));
  Value y = m.bin("mpc.div", c.input(0),
                  m.bin("mpc.pow", base,
                        m.scalar(et, c.getFloat("beta", 0.75f))));
  if (c.failed())
    return failure();
  return c.setOutputs({y});
}

/// LpNormalization: x over its L1 or L2 norm along `axis`; a zero vector
/// stays zero (opset 22 says so; earlier opsets divided 0 by 0), by
/// dividing it by 1, so no NaN reaches the gradient either.
LogicalResult importLpNormalization(NodeContext &c) {
  if (failed(c.requireInputs(1)) || failed(c.checkAttrs({"axis", "p"})))
    return failure();
  int64_t p = c.getInt("p", 2);
  if (p != 1 && p != 2)
    return c.fail("p must be 1 or 2, got " + Twine(p));
  auto x = typeOf(c.input(0));
  auto axis = axisIn(c, "axis", c.getInt("axis", -1), x.getRank());
  if (failed(axis))
    return failure();
  Composer m{c};
  Value norm = m.op(p == 1 ? "mpc.reduce_l1" : "mpc.reduce_l2", {c.input(0)},
                    {c.named("axes", c.b.getDenseI64ArrayAttr({*axis})),
                     c.named("keepdims", c.b.getBoolAttr(true))});
  Type et = x.getElementType();
  Value safe = m.where(m.bin("mpc.equal", norm, m.scalar(et, 0.0)),
                       m.scalar(et, 1.0), norm);
  Value y = m.bin("mpc.div", c.input(0), safe);
  if (c.failed())
    return failure();
  return c.setOutputs({y});
}

/// MeanVarianceNormalization: (x - mean) / (std + 1e-9) over `axes`
/// (default 0, 2, 3), the variance as the mean of the centred squares
/// (the definition's E[x^2] - E[x]^2 may come out negative).
LogicalResult importMeanVarianceNorm(NodeContext &c) {
  if (failed(c.requireInputs(1)) || failed(c.checkAttrs({"axes"})))
    return failure();
  auto x = typeOf(c.input(0));
  SmallVector<int64_t> axes =
      c.getInts("axes").value_or(SmallVector<int64_t>{0, 2, 3});
  for (int64_t &a : axes) {
    auto axis = axisIn(c, "axis", a, x.getRank());
    if (failed(axis))
      return failure();
    a = *axis;
  }
  Composer m{c};
  auto mean = [&](Value v) {
    return m.op("mpc.reduce_mean", {v},
                {c.named("axes", c.b.getDenseI64ArrayAttr(axes)),
                 c.named("keepdims", c.b.getBoolAttr(true))});
  };
  Value centred = m.bin("mpc.sub", c.input(0), mean(c.input(0)));
  Value std = m.op("mpc.sqrt", {mean(m.bin("mpc.mul", centred, centred))});
  Value y = m.bin("mpc.div", centred,
                  m.bin("mpc.add", std, m.scalar(x.getElementType(), 1e-9)));
  if (c.failed())
    return failure();
  return c.setOutputs({y});
}

/// LpPool: (sum of |x|^p over each window)^(1/p), the sum an average pool
/// of |x|^p with the padding counted (zeros), times the window size. The
/// powers are mpc.pow (for p = 2 too), so under mixed precision they and
/// the sums run in FP32, as torch's lp_pool does under autocast.
LogicalResult importLpPool(NodeContext &c) {
  if (failed(c.requireInputs(1)) ||
      failed(c.checkAttrs({"auto_pad", "kernel_shape", "p", "pads",
                           "strides", "dilations", "ceil_mode"})))
    return failure();
  // Opset 1 has p as a float.
  const onnx::AttributeProto *pAttr = c.attr("p");
  double p = pAttr && pAttr->type() == onnx::AttributeProto::FLOAT
                 ? c.getFloat("p", 2.0f)
                 : (double)c.getInt("p", 2);
  if (!(p > 0))
    return c.fail("p must be positive, got " + std::to_string(p));
  if (c.getInt("ceil_mode", 0))
    return c.fail("ceil_mode 1 is not supported");
  auto kernel = c.getInts("kernel_shape");
  if (!kernel)
    return c.fail("LpPool needs attribute kernel_shape");
  int64_t windowSize = 1;
  for (int64_t k : *kernel)
    windowSize *= k;
  SmallVector<NamedAttribute> attrs{
      c.named("kernel_shape", c.b.getDenseI64ArrayAttr(*kernel)),
      c.named("count_include_pad", c.b.getBoolAttr(true)),
      c.named("auto_pad",
              c.b.getStringAttr(c.getString("auto_pad", "NOTSET")))};
  for (StringRef name : {"strides", "pads", "dilations"})
    if (auto values = c.getInts(name))
      attrs.push_back(c.named(name, c.b.getDenseI64ArrayAttr(*values)));
  Composer m{c};
  Type et = typeOf(c.input(0)).getElementType();
  Value x = c.input(0);
  Value powers = p == 1   ? m.op("mpc.abs", {x})
                 : p == 2 ? m.bin("mpc.pow", x, m.scalar(et, 2.0))
                          : m.bin("mpc.pow", m.op("mpc.abs", {x}),
                                  m.scalar(et, p));
  Value sums = m.bin("mpc.mul", m.op("mpc.average_pool", {powers}, attrs),
                     m.scalar(et, (double)windowSize));
  Value y = p == 2   ? m.op("mpc.sqrt", {sums})
            : p == 1 ? sums
                     : m.bin("mpc.pow", sums, m.scalar(et, 1.0 / p));
  if (c.failed())
    return failure();
  return c.setOutputs({y});
}

} // namespace mlir::mpc::importer
