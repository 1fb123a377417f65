//===- ShapeGradients.cpp - rules of the data-movement ops ----------------===//
//
// Each rule moves the gradient back where the forward op took its data
// from: the inverse permutation, the input's shape, a zero padding around
// a slice, a slice out of a concatenation, a scatter-add for a gather, the
// transposed table of a resize.
//
//===----------------------------------------------------------------------===//

#include "passes/gradients/GradientBuilder.h"
#include "ir/ShapeRules.h"

#include "mlir/IR/Matchers.h"
#include "mlir/IR/TypeUtilities.h"

#include <algorithm>

namespace mlir::mpc::grad {
namespace {

/// A unit-step mpc.slice of `v` (its operand segments: data, starts, ends,
/// axes; no steps).
Value unitSlice(Context &c, Value v, ArrayRef<int64_t> starts,
                ArrayRef<int64_t> ends, ArrayRef<int64_t> axes) {
  return makeOp(c.b, c.loc, SliceOp::getOperationName(),
                {v, ints(c.b, c.loc, starts), ints(c.b, c.loc, ends),
                 ints(c.b, c.loc, axes)},
                {c.b.getNamedAttr("operandSegmentSizes",
                                  c.b.getDenseI32ArrayAttr({1, 1, 1, 1, 0}))})
      ->getResult(0);
}

LogicalResult transposeGrad(Context &c, TransposeOp t) {
  int64_t rank = typeOf(t.getX()).getRank();
  SmallVector<int64_t> perm, inv(rank);
  if (auto p = t.getPerm())
    perm.assign(p->begin(), p->end());
  else
    for (int64_t i = rank - 1; i >= 0; --i)
      perm.push_back(i);
  for (int64_t i = 0; i < rank; ++i)
    inv[perm[i]] = i;
  c.grads[0] = c.make<TransposeOp>(
      c.g, {c.b.getNamedAttr("perm", c.b.getDenseI64ArrayAttr(inv))});
  return success();
}

/// Reshape, Flatten, Squeeze, Unsqueeze: the gradient in the input's shape.
template <typename OpTy> LogicalResult reshapeGrad(Context &c, OpTy) {
  c.grads[0] = reshapeTo(c.b, c.loc, c.g, typeOf(c.x(0)));
  return success();
}

LogicalResult expandGrad(Context &c, ExpandOp) {
  c.grads[0] = c.un(c.g, 0);
  return success();
}

LogicalResult gatherGrad(Context &c, GatherOp gather) {
  Value g = c.g;
  if (auto pad = gather.getPaddingIdx()) {
    // torch's padding_idx: the positions reading that row add nothing,
    // g * (indices != p) over the slice's dimensions.
    Value ids = gather.getIndices();
    auto idsType = typeOf(ids);
    Value p = c.b.create<ConstantOp>(
        c.loc, DenseElementsAttr::get(
                   RankedTensorType::get({}, idsType.getElementType()),
                   APInt(idsType.getElementType().getIntOrFloatBitWidth(), *pad,
                         /*isSigned=*/true)));
    Value keep = c.make<NotOp>({c.make<EqualOp>({ids, p})});
    Value w = c.b.create<CastOp>(c.loc, idsType.clone(c.elem), keep);
    auto gt = typeOf(g);
    SmallVector<int64_t> shape(idsType.getShape());
    shape.append(gt.getRank() - idsType.getRank(), 1);
    g = c.make<MulOp>(
        {g, reshapeTo(c.b, c.loc, w, RankedTensorType::get(shape, c.elem))});
  }
  c.grads[0] = c.b.create<GatherGradOp>(c.loc, typeOf(c.x(0)), g,
                                        gather.getIndices(),
                                        gather.getAxisAttr());
  return success();
}

LogicalResult splitGrad(Context &c, SplitOp split) {
  // Concatenate the result gradients (zeros for unused results).
  SmallVector<Value> parts;
  for (auto [r, rg] : llvm::zip(split->getResults(), c.resultGrads))
    parts.push_back(rg ? rg
                       : c.b.create<ConstantOp>(
                             c.loc, DenseElementsAttr::get(
                                        typeOf(r),
                                        c.b.getFloatAttr(c.elem, 0.0))));
  c.grads[0] = c.make<ConcatOp>(
      parts, {c.b.getNamedAttr("axis", split.getAxisAttr())});
  return success();
}

LogicalResult concatGrad(Context &c, ConcatOp concat) {
  int64_t rank = typeOf(c.y).getRank();
  int64_t axis = concat.getAxisAttr().getInt();
  axis = axis < 0 ? axis + rank : axis;
  // One Split of the gradient where every part is float with a static size
  // (one kernel, not one Slice a part: mpc-merge-sibling-linears' weights).
  auto gt = typeOf(c.g);
  SmallVector<Type> types;
  SmallVector<int64_t> sizes;
  for (Value v : concat->getOperands()) {
    int64_t size = typeOf(v).getDimSize(axis);
    if (!llvm::isa<FloatType>(getElementTypeOrSelf(v)) ||
        ShapedType::isDynamic(size) || size <= 0 || !gt.hasStaticShape())
      break;
    SmallVector<int64_t> shape(gt.getShape());
    shape[axis] = size;
    types.push_back(RankedTensorType::get(shape, gt.getElementType()));
    sizes.push_back(size);
  }
  if (types.size() == concat->getNumOperands() && types.size() > 1) {
    auto split = c.b.create<SplitOp>(
        c.loc, types, c.g, c.b.getI64IntegerAttr(axis),
        c.b.getI64IntegerAttr((int64_t)types.size()),
        c.b.getDenseI64ArrayAttr(sizes));
    for (unsigned i = 0; i < types.size(); ++i)
      c.grads[i] = split.getResult(i);
    return success();
  }
  int64_t offset = 0;
  for (auto [i, v] : llvm::enumerate(concat->getOperands())) {
    int64_t size = typeOf(v).getDimSize(axis);
    if (llvm::isa<FloatType>(getElementTypeOrSelf(v)))
      c.grads[i] = unitSlice(c, c.g, {offset}, {offset + size}, {axis});
    offset += size;
  }
  return success();
}

/// mpc.slice of `v` along one axis with a step.
Value stepSlice(Context &c, Value v, int64_t axis, int64_t start, int64_t end,
                int64_t step) {
  return makeOp(c.b, c.loc, SliceOp::getOperationName(),
                {v, ints(c.b, c.loc, {start}), ints(c.b, c.loc, {end}),
                 ints(c.b, c.loc, {axis}), ints(c.b, c.loc, {step})},
                {c.b.getNamedAttr("operandSegmentSizes",
                                  c.b.getDenseI32ArrayAttr({1, 1, 1, 1, 1}))})
      ->getResult(0);
}

/// The gradient of a step-`step` slice along `axis` (n results) spread back
/// to every step-th position: g, then step - 1 zeros after each element,
/// cut to the `room` positions the input has from the first one taken.
Value spreadStrided(Context &c, Value g, int64_t axis, int64_t step,
                    int64_t room) {
  auto t = typeOf(g);
  int64_t rank = t.getRank();
  SmallVector<int64_t> pads(2 * (rank + 1), 0);
  pads[rank + 1 + axis + 1] = step - 1;
  Value gaps = c.make<PadOp>(
      {c.make<UnsqueezeOp>(
           g, {c.b.getNamedAttr("axes", c.b.getDenseI64ArrayAttr({axis + 1}))}),
       c.scalar(0.0)},
      {c.b.getNamedAttr("pads", c.b.getDenseI64ArrayAttr(pads))});
  SmallVector<int64_t> shape(t.getShape());
  int64_t spread = shape[axis] * step;
  shape[axis] = spread;
  Value flat = reshapeTo(c.b, c.loc, gaps, t.clone(shape));
  return spread > room ? unitSlice(c, flat, {0}, {room}, {axis}) : flat;
}

LogicalResult sliceGrad(Context &c, SliceOp slice) {
  // g zero-padded back to the input, strided axes first spread out.
  auto in = typeOf(c.x(0));
  SmallVector<int64_t> starts, ends, axes, steps;
  if (!getConstantInts(slice.getStarts(), starts) ||
      !getConstantInts(slice.getEnds(), ends) ||
      (slice.getAxes() && !getConstantInts(slice.getAxes(), axes)) ||
      (slice.getSteps() && !getConstantInts(slice.getSteps(), steps)))
    return slice->emitError("slice gradient needs constant bounds");
  int64_t rank = in.getRank();
  SmallVector<int64_t> pads(2 * rank, 0);
  Value g = c.g;
  for (size_t i = 0; i < starts.size(); ++i) {
    int64_t a = axes.empty() ? (int64_t)i
                             : (axes[i] < 0 ? axes[i] + rank : axes[i]);
    int64_t step = steps.empty() ? 1 : steps[i];
    int64_t dim = in.getDimSize(a);
    int64_t s0 = std::clamp<int64_t>(
        starts[i] < 0 ? starts[i] + dim : starts[i], 0, dim);
    if (step < 0) {
      // Backwards (torch.flip, x[::-1]): g reversed is the positive-step
      // slice from the last element taken, s0 + (n - 1) step.
      int64_t n = typeOf(g).getDimSize(a);
      if (n == 0) { // nothing taken: zeros
        pads[rank + a] = dim;
        continue;
      }
      s0 = std::min(s0, dim - 1) + (n - 1) * step;
      g = stepSlice(c, g, a, n - 1, -(n + 1), -1);
      step = -step;
    }
    if (step > 1 && typeOf(g).getDimSize(a) > 0)
      g = spreadStrided(c, g, a, step, dim - s0);
    pads[a] = s0;
    pads[rank + a] = dim - s0 - typeOf(g).getDimSize(a);
  }
  c.grads[0] = c.make<PadOp>(
      {g, c.scalar(0.0)},
      {c.b.getNamedAttr("pads", c.b.getDenseI64ArrayAttr(pads))});
  return success();
}

/// `v` zero-padded by `before` and `after` along `axis`.
Value zeroPad(Context &c, Value v, int64_t axis, int64_t before,
              int64_t after) {
  int64_t rank = typeOf(v).getRank();
  SmallVector<int64_t> pads(2 * rank, 0);
  pads[axis] = before;
  pads[rank + axis] = after;
  return c.make<PadOp>(
      {v, c.scalar(0.0)},
      {c.b.getNamedAttr("pads", c.b.getDenseI64ArrayAttr(pads))});
}

/// One axis of a reflect or edge pad's gradient: g (n + p + q along `axis`)
/// back to n. The padded rows are copies of input rows, so their gradients
/// add onto those rows: reflect mirrors rows 1..p and n-1-q..n-2, edge
/// repeats rows 0 and n-1.
Value unpadAxis(Context &c, Value g, StringRef mode, int64_t axis, int64_t n,
                int64_t p, int64_t q) {
  Value sum = stepSlice(c, g, axis, p, p + n, 1);
  int64_t dim = n + p + q;
  if (mode == "reflect") {
    if (p)
      sum = c.make<AddOp>(
          {sum, zeroPad(c, stepSlice(c, g, axis, p - 1, -(dim + 1), -1), axis,
                        1, n - 1 - p)});
    if (q)
      sum = c.make<AddOp>(
          {sum, zeroPad(c, stepSlice(c, g, axis, dim - 1, p + n - 1, -1),
                        axis, n - 1 - q, 1)});
    return sum;
  }
  auto edgeSum = [&](int64_t start, int64_t end) {
    return c.make<ReduceSumOp>(
        stepSlice(c, g, axis, start, end, 1),
        {c.b.getNamedAttr("axes", c.b.getDenseI64ArrayAttr({axis})),
         c.b.getNamedAttr("keepdims", c.b.getBoolAttr(true))});
  };
  if (p)
    sum = c.make<AddOp>({sum, zeroPad(c, edgeSum(0, p), axis, 0, n - 1)});
  if (q)
    sum = c.make<AddOp>(
        {sum, zeroPad(c, edgeSum(p + n, dim), axis, n - 1, 0)});
  return sum;
}

/// mpc.resize_axis of `g` along `axis` with one row of (index, weight) taps
/// per output position, padded to the longest row with weight-0 taps
/// (never read).
Value resizeByRows(Context &c, Value g, int64_t axis,
                   ArrayRef<SmallVector<std::pair<int64_t, float>>> rows) {
  size_t taps = 1;
  for (const auto &r : rows)
    taps = std::max(taps, r.size());
  SmallVector<int64_t> idx;
  SmallVector<float> w;
  for (const auto &r : rows)
    for (size_t t = 0; t < taps; ++t) {
      idx.push_back(t < r.size() ? r[t].first : 0);
      w.push_back(t < r.size() ? r[t].second : 0.0f);
    }
  return c.make<ResizeAxisOp>(
      g, {c.b.getNamedAttr("axis", c.b.getI64IntegerAttr(axis)),
          c.b.getNamedAttr("size", c.b.getI64IntegerAttr(rows.size())),
          c.b.getNamedAttr("indices", c.b.getDenseI64ArrayAttr(idx)),
          c.b.getNamedAttr("weights", c.b.getDenseF32ArrayAttr(w))});
}

/// Wrap padding undone along `axis`: input position i gets every padded
/// position o with (o - p) mod n == i, as a resize_axis table of ones.
Value unwrapAxis(Context &c, Value g, int64_t axis, int64_t n, int64_t p,
                 int64_t q) {
  std::vector<SmallVector<std::pair<int64_t, float>>> rows(n);
  for (int64_t o = 0; o < p + n + q; ++o)
    rows[((o - p) % n + n) % n].emplace_back(o, 1.0f);
  return resizeByRows(c, g, axis, rows);
}

LogicalResult padGrad(Context &c, PadOp pad) {
  StringRef mode = pad.getMode();
  if (mode != "constant" && mode != "reflect" && mode != "edge" &&
      mode != "wrap")
    return pad->emitError("gradient of ")
           << mode << " padding is not supported yet";
  auto in = typeOf(c.x(0));
  int64_t rank = in.getRank();
  SmallVector<int64_t> padAxes;
  if (auto a = pad.getAxes())
    padAxes.assign(a->begin(), a->end());
  else
    for (int64_t i = 0; i < rank; ++i)
      padAxes.push_back(i);
  ArrayRef<int64_t> pads = pad.getPads();
  size_t k = padAxes.size();
  if (mode != "constant") {
    // Reflect, edge and wrap pads are separable: undo them one axis at a
    // time.
    Value g = c.g;
    for (size_t i = 0; i < k; ++i) {
      int64_t a = padAxes[i] < 0 ? padAxes[i] + rank : padAxes[i];
      int64_t p = pads[i], q = pads[k + i], n = in.getDimSize(a);
      if (p < 0 || q < 0)
        return pad->emitError("gradient of ")
               << mode << " padding with negative pads is not supported yet";
      if ((p || q) && mode == "wrap")
        g = unwrapAxis(c, g, a, n, p, q);
      else if (p || q)
        g = unpadAxis(c, g, mode, a, n, p, q);
    }
    c.grads[0] = g;
    return success();
  }
  // The interior of g: a unit-step slice over the padded axes.
  SmallVector<int64_t> starts, ends, axes;
  for (size_t i = 0; i < k; ++i) {
    int64_t a = padAxes[i] < 0 ? padAxes[i] + rank : padAxes[i];
    axes.push_back(a);
    starts.push_back(pads[i]);
    ends.push_back(pads[i] + in.getDimSize(a));
  }
  c.grads[0] = unitSlice(c, c.g, starts, ends, axes);
  return success();
}

/// Tile: the sum over the copies, g viewed as (r0, d0, r1, d1, ...).
LogicalResult tileGrad(Context &c, TileOp tile) {
  DenseElementsAttr reps;
  if (!matchPattern(tile.getRepeats(), m_Constant(&reps)))
    return tile->emitError("gradient of tile with repeats computed at run "
                           "time is not supported");
  auto in = typeOf(c.x(0));
  SmallVector<int64_t> view, axes;
  int64_t i = 0;
  for (APInt r : reps.getValues<APInt>()) {
    axes.push_back(view.size());
    view.push_back(r.getSExtValue());
    view.push_back(in.getDimSize(i++));
  }
  Value v = reshapeTo(c.b, c.loc, c.g, in.clone(view));
  c.grads[0] = c.make<ReduceSumOp>(
      v, {c.b.getNamedAttr("axes", c.b.getDenseI64ArrayAttr(axes)),
          c.b.getNamedAttr("keepdims", c.b.getBoolAttr(false))});
  return success();
}

/// GatherElements: each gathered element's gradient goes back where it
/// came from (a scatter-add; repeated indices accumulate).
LogicalResult gatherElementsGrad(Context &c, GatherElementsOp ge) {
  c.grads[0] = c.b.create<GatherElementsGradOp>(
      c.loc, typeOf(c.x(0)), c.g, ge.getIndices(), ge.getAxisAttr());
  return success();
}

/// A splat zero constant of `v`'s type.
Value zerosLike(Context &c, Value v) {
  auto type = typeOf(v);
  return c.b.create<ConstantOp>(
      c.loc, DenseElementsAttr::get(type, c.b.getZeroAttr(type.getElementType())));
}

/// GatherND: each gathered slice's gradient added back where it came from
/// (ScatterND with reduction add into zeros; repeated tuples accumulate,
/// in tuple order).
LogicalResult gatherNdGrad(Context &c, GatherNDOp op) {
  if (op.getBatchDims() != 0)
    return op->emitError("gradient of gather_nd with batch_dims ")
           << op.getBatchDims() << " is not supported (only 0)";
  c.grads[0] = c.make<ScatterNDOp>(
      {zerosLike(c, op.getData()), op.getIndices(), c.g}, {c.b.getNamedAttr("reduction", c.b.getStringAttr("add"))});
  return success();
}

/// A scatter's gradients, ScatterND's and ScatterElements' alike: the
/// updates' is g gathered where they went; data's is g where no update
/// replaced it (none: g scattered over by zeros) or g itself (add). Under
/// mul, max and min the gradient depends on which value won: refused.
template <typename ScatterOp, typename GatherOp>
LogicalResult scatterGrad(Context &c, ScatterOp op, ArrayRef<NamedAttribute> axis) {
  StringRef reduction = op.getReduction();
  if (reduction != "none" && reduction != "add")
    return op->emitError() << "gradient of " << op->getName().stripDialect()
                           << " with reduction '" << reduction
                           << "' is not supported (only none and add)";
  Value idx = op.getIndices();
  c.grads[2] = c.make<GatherOp>({c.g, idx}, axis);
  if (reduction == "add") {
    c.grads[0] = c.g;
    return success();
  }
  c.grads[0] = c.make<ScatterOp>({c.g, idx, zerosLike(c, op.getUpdates())}, axis);
  return success();
}

LogicalResult scatterNdGrad(Context &c, ScatterNDOp op) {
  return scatterGrad<ScatterNDOp, GatherNDOp>(c, op, {});
}

LogicalResult scatterElementsGrad(Context &c, ScatterElementsOp op) {
  return scatterGrad<ScatterElementsOp, GatherElementsOp>(
      c, op, {c.b.getNamedAttr("axis", op.getAxisAttr())});
}

/// Resize along one axis is linear with a constant table: its gradient is
/// the same op with the transposed table (each input position gathers the
/// output positions that read it, in output order).
LogicalResult resizeAxisGrad(Context &c, ResizeAxisOp r) {
  int64_t in = typeOf(c.x(0)).getDimSize(r.getAxis());
  ArrayRef<int64_t> idx = r.getIndices();
  ArrayRef<float> w = r.getWeights();
  int64_t size = r.getSize(), taps = idx.size() / size;
  std::vector<SmallVector<std::pair<int64_t, float>>> rows(in);
  for (int64_t o = 0; o < size; ++o)
    for (int64_t t = 0; t < taps; ++t)
      if (w[o * taps + t] != 0.0f)
        rows[idx[o * taps + t]].emplace_back(o, w[o * taps + t]);
  c.grads[0] = resizeByRows(c, c.g, r.getAxis(), rows);
  return success();
}

} // namespace

void attachShapeRules(MLIRContext *ctx) {
  attachRule<TransposeOp, transposeGrad>(ctx);
  attachRule<ReshapeOp, reshapeGrad<ReshapeOp>>(ctx);
  attachRule<FlattenOp, reshapeGrad<FlattenOp>>(ctx);
  attachRule<SqueezeOp, reshapeGrad<SqueezeOp>>(ctx);
  attachRule<UnsqueezeOp, reshapeGrad<UnsqueezeOp>>(ctx);
  attachRule<ExpandOp, expandGrad>(ctx);
  attachRule<GatherOp, gatherGrad>(ctx);
  attachRule<SplitOp, splitGrad>(ctx);
  attachRule<ConcatOp, concatGrad>(ctx);
  attachRule<SliceOp, sliceGrad>(ctx);
  attachRule<PadOp, padGrad>(ctx);
  attachRule<TileOp, tileGrad>(ctx);
  attachRule<ResizeAxisOp, resizeAxisGrad>(ctx);
  attachRule<GatherElementsOp, gatherElementsGrad>(ctx);
  attachRule<GatherNDOp, gatherNdGrad>(ctx);
  attachRule<ScatterNDOp, scatterNdGrad>(ctx);
  attachRule<ScatterElementsOp, scatterElementsGrad>(ctx);
}

} // namespace mlir::mpc::grad
