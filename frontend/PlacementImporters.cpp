//===- PlacementImporters.cpp - Col2Im, MaxUnpool, CenterCropPad... -------===//
//
// Ops that place their input's values into a tensor of another shape,
// imported as the mpc ops that do so (so autodiff, the precision passes
// and both backends need nothing of their own):
// - Col2Im (torch's F.fold): sliding blocks summed back into an image. A
//   grouped ConvTranspose with a one-hot filter (channel c's k-th block
//   element to tap k) adds each block where it came from; blocks that do
//   not overlap (stride = block, no padding or dilation: patches) are a
//   reshape and a transpose.
// - MaxUnpool (SegNet's unpooling): X's values scattered to the flat
//   positions MaxPool's indices name, in zeros of the inferred shape,
//   padded at the end to output_shape (onnx's reference).
// - CenterCropPad: a centred slice or zero padding per axis.
// - TensorScatter (a KV cache's update): the update's rows gathered to the
//   cache positions they are written to, past_cache kept elsewhere.
//
//===----------------------------------------------------------------------===//

#include "frontend/Composer.h"
#include "frontend/ImporterImpl.h"

namespace mlir::mpc::importer {
namespace {

/// A window attribute of `n` values (2n for pads), `fill` when absent.
FailureOr<SmallVector<int64_t>> windowAttr(NodeContext &c, StringRef name,
                                           size_t n, int64_t fill) {
  auto v = c.getInts(name).value_or(SmallVector<int64_t>(n, fill));
  if (v.size() != n)
    return c.fail("attribute " + name + " must have " + Twine(n) +
                  " values, got " + Twine(v.size()));
  return v;
}

} // namespace

LogicalResult importCol2Im(NodeContext &c) {
  if (failed(c.requireInputs(3)) ||
      failed(c.checkAttrs({"dilations", "pads", "strides"})))
    return failure();
  auto image = c.constantInts(1, "image_shape");
  auto block = c.constantInts(2, "block_shape");
  if (failed(image) || failed(block))
    return failure();
  size_t k = image->size();
  auto x = typeOf(c.input(0));
  if (k == 0 || block->size() != k)
    return c.fail("image_shape and block_shape must have the same, nonzero "
                  "number of values");
  if (x.getRank() != 3 || x.isDynamicDim(1) || x.isDynamicDim(2))
    return c.fail("input must be N x (C * block size) x L with static C "
                  "and L");
  if (!llvm::isa<FloatType>(x.getElementType()))
    return c.fail("input must be a float tensor");
  auto strides = windowAttr(c, "strides", k, 1);
  auto dilations = windowAttr(c, "dilations", k, 1);
  auto pads = windowAttr(c, "pads", 2 * k, 0);
  if (failed(strides) || failed(dilations) || failed(pads))
    return failure();
  int64_t blockSize = 1, blocks = 1;
  SmallVector<int64_t> counts; // blocks along each axis
  for (size_t i = 0; i < k; ++i) {
    int64_t span = (*dilations)[i] * ((*block)[i] - 1) + 1;
    int64_t room = (*image)[i] + (*pads)[i] + (*pads)[k + i] - span;
    if ((*block)[i] < 1 || (*strides)[i] < 1 || (*dilations)[i] < 1 ||
        room < 0)
      return c.fail("block_shape " + Twine((*block)[i]) +
                    " does not fit image_shape " + Twine((*image)[i]));
    counts.push_back(room / (*strides)[i] + 1);
    blockSize *= (*block)[i];
    blocks *= counts.back();
  }
  int64_t channels = x.getDimSize(1) / blockSize;
  if (x.getDimSize(1) % blockSize || x.getDimSize(2) != blocks)
    return c.fail("input is N x " + Twine(x.getDimSize(1)) + " x " +
                  Twine(x.getDimSize(2)) + "; the blocks need C * " +
                  Twine(blockSize) + " x " + Twine(blocks));
  Composer m{c};
  Type et = x.getElementType();
  bool patches = llvm::all_of(*pads, [](int64_t p) { return p == 0; }) &&
                 llvm::all_of(*dilations, [](int64_t d) { return d == 1; }) &&
                 *strides == *block;
  Value y;
  if (patches) {
    // [N, C, b1..bk, n1..nk] -> [N, C, n1, b1, ..., nk, bk] -> the image
    // of the whole blocks, then zeros past them.
    SmallVector<int64_t> split{0, channels}, perm{0, 1}, joined{0, channels},
        tail;
    split.append(block->begin(), block->end());
    split.append(counts.begin(), counts.end());
    for (size_t i = 0; i < k; ++i) {
      perm.append({(int64_t)(2 + k + i), (int64_t)(2 + i)});
      joined.push_back(counts[i] * (*block)[i]);
      tail.push_back((*image)[i] - joined.back());
    }
    y = m.reshape(m.transpose(m.reshape(c.input(0), split), perm), joined);
    if (llvm::any_of(tail, [](int64_t t) { return t != 0; })) {
      SmallVector<int64_t> padding(k, 0), axes;
      padding.append(tail.begin(), tail.end());
      for (size_t i = 0; i < k; ++i)
        axes.push_back(2 + i);
      y = m.op("mpc.pad", {y, m.scalar(et, 0.0)},
               {c.named("pads", c.b.getDenseI64ArrayAttr(padding)),
                c.named("axes", c.b.getDenseI64ArrayAttr(axes))});
    }
  } else {
    if (x.getDimSize(1) * blockSize > (int64_t(1) << 24))
      return c.fail("overlapping blocks of " + Twine(blockSize) +
                    " elements over " + Twine(channels) +
                    " channels need a filter past 16M elements");
    // Filter [C * K, 1, b1..bk]: row c * K + j is 1 at tap j.
    SmallVector<int64_t> wShape{x.getDimSize(1), 1};
    wShape.append(block->begin(), block->end());
    SmallVector<double> w(x.getDimSize(1) * blockSize, 0.0);
    for (int64_t r = 0; r < x.getDimSize(1); ++r)
      w[r * blockSize + r % blockSize] = 1.0;
    SmallVector<int64_t> grid{0, x.getDimSize(1)}, outPad;
    grid.append(counts.begin(), counts.end());
    for (size_t i = 0; i < k; ++i) {
      int64_t natural = (*strides)[i] * (counts[i] - 1) +
                        (*dilations)[i] * ((*block)[i] - 1) + 1 - (*pads)[i] -
                        (*pads)[k + i];
      outPad.push_back((*image)[i] - natural);
    }
    SmallVector<NamedAttribute> attrs{
        c.named("group", c.b.getI64IntegerAttr(channels)),
        c.named("kernel_shape", c.b.getDenseI64ArrayAttr(*block)),
        c.named("strides", c.b.getDenseI64ArrayAttr(*strides)),
        c.named("pads", c.b.getDenseI64ArrayAttr(*pads)),
        c.named("dilations", c.b.getDenseI64ArrayAttr(*dilations))};
    if (llvm::any_of(outPad, [](int64_t p) { return p != 0; }))
      attrs.push_back(c.named("output_padding",
                              c.b.getDenseI64ArrayAttr(outPad)));
    y = m.op("mpc.conv_transpose",
             {m.reshape(c.input(0), grid), m.floatValues(et, wShape, w)},
             attrs);
  }
  if (c.failed())
    return failure();
  return c.setOutputs({y});
}

LogicalResult importMaxUnpool(NodeContext &c) {
  if (failed(c.requireInputs(2)) ||
      failed(c.checkAttrs({"kernel_shape", "pads", "strides"})))
    return failure();
  auto x = typeOf(c.input(0)), idx = typeOf(c.input(1));
  size_t k = x.getRank() - 2;
  if (x.getRank() < 3 || !x.hasStaticShape() || idx.getShape() != x.getShape() ||
      !idx.getElementType().isInteger(64))
    return c.fail("X must be N x C x D1..Dn of static shape and I int64 of "
                  "the same shape");
  auto kernel = c.getInts("kernel_shape");
  if (!kernel || kernel->size() != k)
    return c.fail("MaxUnpool needs attribute kernel_shape of " + Twine(k) +
                  " values");
  auto strides = windowAttr(c, "strides", k, 1);
  auto pads = windowAttr(c, "pads", 2 * k, 0);
  if (failed(strides) || failed(pads))
    return failure();
  SmallVector<int64_t> inferred{x.getDimSize(0), x.getDimSize(1)};
  int64_t total = x.getDimSize(0) * x.getDimSize(1);
  for (size_t i = 0; i < k; ++i) {
    inferred.push_back((x.getDimSize(2 + i) - 1) * (*strides)[i] -
                       (*pads)[i] - (*pads)[k + i] + (*kernel)[i]);
    total *= inferred.back();
  }
  SmallVector<int64_t> shape = inferred;
  if (c.input(2)) {
    auto given = c.constantInts(2, "output_shape");
    if (failed(given))
      return failure();
    if (given->size() != inferred.size())
      return c.fail("output_shape must have " + Twine(inferred.size()) +
                    " values");
    for (size_t i = 0; i < inferred.size(); ++i)
      if ((*given)[i] < inferred[i] || (i < 2 && (*given)[i] != inferred[i]))
        return c.fail("output_shape " + Twine((*given)[i]) + " of axis " +
                      Twine(i) + " is smaller than the unpooled " +
                      Twine(inferred[i]));
    shape = *given;
  }
  Composer m{c};
  Type et = x.getElementType();
  Value zeros = m.splat(et, {total}, 0.0);
  Value y = m.op("mpc.scatter_elements",
                 {zeros, m.reshape(c.input(1), {-1}), m.reshape(c.input(0), {-1})},
                 {c.named("axis", c.b.getI64IntegerAttr(0))});
  y = m.reshape(y, inferred);
  if (shape != inferred) {
    SmallVector<int64_t> padding(shape.size(), 0);
    for (size_t i = 0; i < shape.size(); ++i)
      padding.push_back(shape[i] - inferred[i]);
    y = m.op("mpc.pad", {y, m.scalar(et, 0.0)},
             {c.named("pads", c.b.getDenseI64ArrayAttr(padding))});
  }
  if (c.failed())
    return failure();
  return c.setOutputs({y});
}

LogicalResult importCenterCropPad(NodeContext &c) {
  if (failed(c.requireInputs(2)) || failed(c.checkAttrs({"axes"})))
    return failure();
  auto x = typeOf(c.input(0));
  int64_t rank = x.getRank();
  auto shape = c.constantInts(1, "shape");
  if (failed(shape))
    return failure();
  SmallVector<int64_t> axes;
  if (auto given = c.getInts("axes"))
    axes = *given;
  else
    for (int64_t i = 0; i < rank; ++i)
      axes.push_back(i);
  if (axes.size() != shape->size())
    return c.fail("shape has " + Twine(shape->size()) + " values for " +
                  Twine(axes.size()) + " axes");
  Composer m{c};
  Value y = c.input(0);
  SmallVector<int64_t> before(rank, 0), after(rank, 0);
  for (auto [a, want] : llvm::zip(axes, *shape)) {
    if (a < -rank || a >= rank)
      return c.fail("axis " + Twine(a) + " is out of range for rank " +
                    Twine(rank));
    int64_t axis = a < 0 ? a + rank : a;
    if (x.isDynamicDim(axis))
      return c.fail("axis " + Twine(axis) + " needs a static size");
    int64_t have = x.getDimSize(axis);
    if (want < have) { // centred crop, the odd element dropped at the end
      int64_t start = (have - want) / 2;
      y = m.slice(y, axis, start, start + want);
    } else if (want > have) { // zeros, the odd one at the end
      before[axis] = (want - have) / 2;
      after[axis] = want - have - before[axis];
    }
  }
  if (llvm::any_of(before, [](int64_t p) { return p; }) ||
      llvm::any_of(after, [](int64_t p) { return p; })) {
    SmallVector<int64_t> padding(before);
    padding.append(after.begin(), after.end());
    Value zero = m.constant(DenseElementsAttr::get(
        RankedTensorType::get({}, x.getElementType()),
        llvm::isa<FloatType>(x.getElementType())
            ? Attribute(c.b.getFloatAttr(x.getElementType(), 0.0))
            : Attribute(c.b.getIntegerAttr(x.getElementType(), 0))));
    y = m.op("mpc.pad", {y, zero},
             {c.named("pads", c.b.getDenseI64ArrayAttr(padding))});
  }
  if (c.failed())
    return failure();
  return c.setOutputs({y});
}

} // namespace mlir::mpc::importer

namespace mlir::mpc::importer {

// TensorScatter (opset 24, a KV cache update): cache position j of batch b
// takes update row s = j - write_indices[b] (mod the cache length in
// circular mode) where 0 <= s < the update's length, and keeps past_cache
// elsewhere: one gather_elements of the update and a where(), so the
// gradient reaches both (what was overwritten gets none).
LogicalResult importTensorScatter(NodeContext &c) {
  if (failed(c.requireInputs(2)) || failed(c.checkAttrs({"axis", "mode"})))
    return failure();
  std::string mode = c.getString("mode", "linear");
  if (mode != "linear" && mode != "circular")
    return c.fail("mode '" + mode + "' is not linear or circular");
  Value past = c.input(0), update = c.input(1), writes = c.input(2);
  auto cache = typeOf(past), upd = typeOf(update);
  int64_t rank = cache.getRank(), axis = c.getInt("axis", -2);
  if (axis < -rank || axis >= rank)
    return c.fail("axis " + Twine(axis) + " is out of range for rank " +
                  Twine(rank));
  axis = axis < 0 ? axis + rank : axis;
  if (axis == 0)
    return c.fail("axis 0 is the batch; the sequence axis must come after it");
  if (!cache.hasStaticShape() || !upd.hasStaticShape())
    return c.fail("past_cache and update need static shapes (bind the "
                  "batch)");
  if (upd.getRank() != rank)
    return c.fail("update must have past_cache's rank " + Twine(rank));
  for (int64_t d = 0; d < rank; ++d)
    if (d == axis ? upd.getDimSize(d) > cache.getDimSize(d)
                  : upd.getDimSize(d) != cache.getDimSize(d))
      return c.fail("update's shape must be past_cache's, at most as long "
                    "along axis " +
                    Twine(axis));
  int64_t batch = cache.getDimSize(0), length = cache.getDimSize(axis),
          rows = upd.getDimSize(axis);
  Composer m{c};
  SmallVector<int64_t> positions;
  for (int64_t j = 0; j < length; ++j)
    positions.push_back(j);
  // s for each (batch, cache position): [batch, length].
  Value start = writes ? m.reshape(m.cast(writes, c.b.getI64Type()), {-1, 1})
                       : m.i64s(SmallVector<int64_t>(batch, 0), {batch, 1});
  Value s = m.bin("mpc.sub", m.i64s(positions, {1, length}), start);
  Value rowsC = m.i64s({rows}, {});
  Value inside;
  if (mode == "circular") {
    s = m.op("mpc.mod", {s, m.i64s({length}, {})},
             {c.named("fmod", c.b.getBoolAttr(false))});
    inside = m.bin("mpc.less", s, rowsC);
  } else {
    inside = m.bin("mpc.and", m.bin("mpc.less_or_equal", m.i64s({0}, {}), s),
                   m.bin("mpc.less", s, rowsC));
  }
  s = m.where(inside, s, m.i64s({0}, {}));
  // Both as [batch, 1..., length at axis, 1...], the indices expanded to
  // the cache's shape for gather_elements.
  SmallVector<int64_t> view(rank, 1);
  view[0] = batch;
  view[axis] = length;
  Value index =
      m.op("mpc.expand", {m.reshape(s, view), m.i64s(cache.getShape())});
  Value taken = m.op("mpc.gather_elements", {update, index},
                     {c.named("axis", c.b.getI64IntegerAttr(axis))});
  Value y = m.where(m.reshape(inside, view), taken, past);
  if (c.failed())
    return failure();
  return c.setOutputs({y});
}

} // namespace mlir::mpc::importer
