//===- NormImporters.cpp - InstanceNormalization, GroupNormalization ------===//
//
// Both normalise groups of values to zero mean and unit variance and then
// scale and shift per channel (per group for GroupNormalization before
// opset 21). They are imported as mpc.layer_norm over the trailing axes of
// a view of X (FP32 statistics, one kernel, the deny class, a gradient
// rule), followed by the affine part, so no backend needs a rule of its own.
//
//===----------------------------------------------------------------------===//

#include "frontend/Composer.h"
#include "frontend/ImporterImpl.h"

namespace mlir::mpc::importer {
namespace {

RankedTensorType typeOf(Value v) {
  return llvm::cast<RankedTensorType>(v.getType());
}

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

} // namespace mlir::mpc::importer
