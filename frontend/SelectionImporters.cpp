//===- SelectionImporters.cpp - Shrink, Hardmax, ReverseSequence ----------===//
//
// Ops whose definition selects values by comparison or index, imported as
// mpc.where, mpc.arg_max and mpc.gather_elements over index tensors built
// from the node's shapes, so the backends, autodiff and the precision
// passes need nothing of their own.
//
//===----------------------------------------------------------------------===//

#include "frontend/Composer.h"
#include "frontend/ImporterImpl.h"

namespace mlir::mpc::importer {
namespace {

/// 0, 1, ..., n - 1 along `axis` of a rank-`rank` i64 tensor whose other
/// sizes are 1.
Value iota(Composer &m, int64_t n, int64_t axis, int64_t rank) {
  SmallVector<int64_t> shape(rank, 1), values;
  shape[axis] = n;
  for (int64_t i = 0; i < n; ++i)
    values.push_back(i);
  return m.i64s(values, shape);
}

} // namespace

/// Shrink: x + bias below -lambd, x - bias above lambd, 0 between.
LogicalResult importShrink(NodeContext &c) {
  if (failed(c.requireInputs(1)) || failed(c.checkAttrs({"bias", "lambd"})))
    return failure();
  Type et = typeOf(c.input(0)).getElementType();
  if (!llvm::isa<FloatType>(et))
    return c.fail("Shrink of a non-float tensor is not supported");
  Composer m{c};
  Value x = c.input(0);
  double lambd = c.getFloat("lambd", 0.5f), bias = c.getFloat("bias", 0.0f);
  Value y = m.where(
      m.bin("mpc.less", x, m.scalar(et, -lambd)),
      m.bin("mpc.add", x, m.scalar(et, bias)),
      m.where(m.bin("mpc.greater", x, m.scalar(et, lambd)),
              m.bin("mpc.sub", x, m.scalar(et, bias)), m.scalar(et, 0.0)));
  if (c.failed())
    return failure();
  return c.setOutputs({y});
}

/// Hardmax: 1 where a value is the first largest along `axis`, else 0.
/// Before opset 13 the input is a 2-D view (the axes before `axis` as
/// rows, default 1) and the rows are what is reduced.
LogicalResult importHardmax(NodeContext &c) {
  if (failed(c.requireInputs(1)) || failed(c.checkAttrs({"axis"})))
    return failure();
  auto x = typeOf(c.input(0));
  bool coerced = c.opset < 13;
  auto axis = axisIn(c, "axis", c.getInt("axis", coerced ? 1 : -1),
                     std::max<int64_t>(x.getRank(), 1));
  if (failed(axis))
    return failure();
  Composer m{c};
  Value in = c.input(0);
  int64_t along = *axis;
  if (coerced) {
    in = m.op("mpc.flatten", {in}, {c.named("axis", c.b.getI64IntegerAttr(*axis))});
    along = 1;
  }
  if (!in)
    return failure();
  auto t = typeOf(in);
  if (t.isDynamicDim(along))
    return c.fail("the reduced axis needs a static size");
  Value argmax = m.op("mpc.arg_max", {in},
                      {c.named("axis", c.b.getI64IntegerAttr(along)),
                       c.named("keepdims", c.b.getBoolAttr(true))});
  Value y = m.cast(m.bin("mpc.equal", argmax,
                         iota(m, t.getDimSize(along), along, t.getRank())),
                   x.getElementType());
  if (coerced)
    y = m.op("mpc.reshape", {y, m.op("mpc.shape", {c.input(0)})});
  if (c.failed())
    return failure();
  return c.setOutputs({y});
}

/// ReverseSequence: along `time_axis`, the first sequence_lens[b] values
/// of each batch entry b reversed and the rest kept, as a gather of x at
/// t < len ? len - 1 - t : t.
LogicalResult importReverseSequence(NodeContext &c) {
  if (failed(c.requireInputs(2)) ||
      failed(c.checkAttrs({"batch_axis", "time_axis"})))
    return failure();
  auto x = typeOf(c.input(0));
  int64_t rank = x.getRank();
  if (rank < 2)
    return c.fail("input must have rank >= 2, got " + Twine(rank));
  auto batch = axisIn(c, "batch_axis", c.getInt("batch_axis", 1), rank);
  auto time = axisIn(c, "time_axis", c.getInt("time_axis", 0), rank);
  if (failed(batch) || failed(time))
    return failure();
  if (*batch == *time)
    return c.fail("batch_axis and time_axis must differ");
  if (x.isDynamicDim(*time))
    return c.fail("the time axis needs a static size");
  auto lens = typeOf(c.input(1));
  if (lens.getRank() != 1 || !lens.getElementType().isInteger(64))
    return c.fail("sequence_lens must be a 1-D int64 tensor");
  Composer m{c};
  SmallVector<int64_t> lensShape(rank, 1);
  lensShape[*batch] = -1;
  Value len = m.reshape(c.input(1), lensShape);
  Value t = iota(m, x.getDimSize(*time), *time, rank);
  Value reversed = m.bin("mpc.sub", m.bin("mpc.sub", len, m.i64s({1}, {})), t);
  Value index = m.where(m.bin("mpc.less", t, len), reversed, t);
  Value full = m.op("mpc.expand", {index, m.op("mpc.shape", {c.input(0)})});
  Value y = m.op("mpc.gather_elements", {c.input(0), full},
                 {c.named("axis", c.b.getI64IntegerAttr(*time))});
  if (c.failed())
    return failure();
  return c.setOutputs({y});
}

} // namespace mlir::mpc::importer
