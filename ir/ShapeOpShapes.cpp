//===- ShapeOpShapes.cpp - result types of data-movement ops --------------===//
//
// Several results depend on the values of constant operands (reshape,
// expand, slice, tile, range, constant_of_shape); when those are not
// constants yet the affected dimensions are dynamic.
//
//===----------------------------------------------------------------------===//

#include "llvm/Support/MathExtras.h"
#include "ir/MpcOps.h"
#include "ir/ShapeRules.h"
#include "mlir/IR/Matchers.h"

using namespace mlir;
using namespace mlir::mpc;

/// Rank of the 1-D shape operand, or failure when it is not 1-D and static.
static FailureOr<int64_t> shapeOperandLength(std::optional<Location> loc,
                                             Value shape) {
  auto t = rankedOf(shape);
  if (t.getRank() != 1 || t.isDynamicDim(0))
    return shapeError(loc, "shape operand must be a 1-D tensor of static "
                           "length, got ",
                      t);
  return t.getDimSize(0);
}

/// What is known of the values of a 1-D shape operand (kDyn where unknown).
static FailureOr<SmallVector<int64_t>> shapeOperandValues(
    std::optional<Location> loc, Value shape) {
  auto len = shapeOperandLength(loc, shape);
  if (failed(len))
    return failure();
  SmallVector<int64_t> values;
  if (!getPartialInts(shape, values))
    values.assign(*len, kDyn);
  return values;
}

static int64_t product(ArrayRef<int64_t> dims) {
  int64_t p = 1;
  for (int64_t d : dims) {
    if (d == kDyn)
      return kDyn;
    p *= d;
  }
  return p;
}

LogicalResult ReshapeOp::inferReturnTypes(MLIRContext *,
                                          std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &types) {
  auto data = rankedOf(adaptor.getData());
  auto values = shapeOperandValues(loc, adaptor.getShape());
  if (failed(values))
    return failure();
  ArrayRef<int64_t> target = *values;
  // Unknown target entries (kDyn) stay dynamic. Dimensions copied by 0
  // cancel out of the -1 computation, so a symbolic batch copied through
  // ([0, -1]) still lets the -1 be inferred.
  int64_t inferIdx = -1, known = 1, total = 1;
  SmallVector<bool> copied(data.getRank(), false);
  SmallVector<int64_t> shape;
  for (auto [i, d] : llvm::enumerate(target)) {
    if (d == 0 && !adaptor.getAllowzero()) {
      if ((int64_t)i >= data.getRank())
        return shapeError(loc, "reshape dimension ", i,
                          " copies an input dimension that does not exist");
      copied[i] = true;
      shape.push_back(data.getDimSize(i));
      continue;
    }
    if (d == -1) {
      if (inferIdx >= 0)
        return shapeError(loc, "reshape shape has more than one -1");
      inferIdx = i;
    } else if (d == kDyn) {
      known = kDyn;
    } else if (d < -1) {
      return shapeError(loc, "reshape dimension ", d, " is negative");
    } else if (known != kDyn && llvm::MulOverflow(known, d, known)) {
      return shapeError(loc, "reshape target has more elements than int64 "
                             "can count");
    }
    shape.push_back(d);
  }
  // A 0 anywhere makes the count 0, however large the other dimensions.
  bool empty = false;
  for (int64_t i = 0; i < data.getRank(); ++i)
    empty |= !copied[i] && data.getDimSize(i) == 0;
  for (int64_t i = 0; i < data.getRank() && !empty; ++i) {
    if (copied[i])
      continue;
    if (total == kDyn || data.isDynamicDim(i))
      total = kDyn;
    else if (llvm::MulOverflow(total, data.getDimSize(i), total))
      return shapeError(loc, "reshape input ", data,
                        " has more elements than int64 can count");
  }
  if (empty)
    total = 0;
  if (inferIdx >= 0) {
    if (total == kDyn || known == kDyn)
      shape[inferIdx] = kDyn;
    else if (known == 0 || total % known)
      return shapeError(loc, "cannot reshape ", data, " with -1 into ",
                        target.size(), " dimensions of known product ", known);
    else
      shape[inferIdx] = total / known;
  } else if (total != kDyn && known != kDyn && total != known) {
    return shapeError(loc, "cannot reshape ", data, " into ", target.size(),
                      " dimensions: element counts differ");
  }
  types.push_back(data.clone(shape));
  return success();
}

LogicalResult TransposeOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &types) {
  auto x = rankedOf(adaptor.getX());
  int64_t rank = x.getRank();
  SmallVector<int64_t> perm;
  if (auto p = adaptor.getPerm())
    perm.assign(p->begin(), p->end());
  else
    for (int64_t i = rank - 1; i >= 0; --i)
      perm.push_back(i);
  if ((int64_t)perm.size() != rank)
    return shapeError(loc, "transpose perm has ", perm.size(),
                      " entries for rank ", rank);
  SmallVector<bool> seen(rank, false);
  SmallVector<int64_t> shape;
  for (int64_t p : perm) {
    if (p < 0 || p >= rank || seen[p])
      return shapeError(loc, "transpose perm is not a permutation");
    seen[p] = true;
    shape.push_back(x.getDimSize(p));
  }
  types.push_back(x.clone(shape));
  return success();
}

LogicalResult ConcatOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &types) {
  auto inputs = adaptor.getInputs();
  if (inputs.empty())
    return shapeError(loc, "concat needs at least one operand");
  auto first = rankedOf(inputs[0]);
  auto axis = normalizeAxis(adaptor.getAxis(), first.getRank());
  if (!axis)
    return shapeError(loc, "concat axis ", adaptor.getAxis(),
                      " is out of range for rank ", first.getRank());
  SmallVector<int64_t> shape(first.getShape());
  for (Value v : inputs.drop_front()) {
    auto t = rankedOf(v);
    if (t.getRank() != first.getRank() ||
        t.getElementType() != first.getElementType())
      return shapeError(loc, "concat operands differ in rank or element type: ",
                        first, " and ", t);
    for (int64_t i = 0; i < t.getRank(); ++i) {
      int64_t d = t.getDimSize(i);
      if (i == *axis)
        shape[i] = (shape[i] == kDyn || d == kDyn) ? kDyn : shape[i] + d;
      else if (shape[i] == kDyn)
        shape[i] = d;
      else if (d != kDyn && d != shape[i])
        return shapeError(loc, "concat operands differ in dimension ", i, ": ",
                          shape[i], " and ", d);
    }
  }
  types.push_back(first.clone(shape));
  return success();
}

LogicalResult SplitOp::inferReturnTypes(MLIRContext *,
                                        std::optional<Location> loc,
                                        Adaptor adaptor,
                                        SmallVectorImpl<Type> &types) {
  auto x = rankedOf(adaptor.getX());
  auto axis = normalizeAxis(adaptor.getAxis(), x.getRank());
  int64_t n = adaptor.getNumOutputs();
  if (!axis)
    return shapeError(loc, "split axis out of range");
  if (n < 1)
    return shapeError(loc, "split needs at least one output");
  int64_t dim = x.getDimSize(*axis);
  SmallVector<int64_t> sizes;
  if (auto split = adaptor.getSplit()) {
    if ((int64_t)split->size() != n)
      return shapeError(loc, "split has ", split->size(), " sizes for ", n,
                        " outputs");
    int64_t sum = 0;
    for (int64_t s : *split) {
      if (s < 0)
        return shapeError(loc, "split sizes must be non-negative");
      sum += s;
    }
    if (dim != kDyn && sum != dim)
      return shapeError(loc, "split sizes sum to ", sum, ", not ", dim);
    sizes.assign(split->begin(), split->end());
  } else if (dim == kDyn) {
    sizes.assign(n, kDyn);
  } else {
    int64_t chunk = (dim + n - 1) / n;
    for (int64_t i = 0; i < n; ++i)
      sizes.push_back(std::max<int64_t>(std::min(chunk, dim - i * chunk), 0));
  }
  for (int64_t s : sizes) {
    SmallVector<int64_t> shape(x.getShape());
    shape[*axis] = s;
    types.push_back(x.clone(shape));
  }
  return success();
}

LogicalResult SliceOp::inferReturnTypes(MLIRContext *,
                                        std::optional<Location> loc,
                                        Adaptor adaptor,
                                        SmallVectorImpl<Type> &types) {
  auto data = rankedOf(adaptor.getData());
  int64_t rank = data.getRank();
  SmallVector<int64_t> starts, ends, axes, steps;
  bool known = getConstantInts(adaptor.getStarts(), starts) &&
               getConstantInts(adaptor.getEnds(), ends);
  if (adaptor.getAxes())
    known &= getConstantInts(adaptor.getAxes(), axes);
  if (adaptor.getSteps())
    known &= getConstantInts(adaptor.getSteps(), steps);
  if (!known) {
    types.push_back(data.clone(SmallVector<int64_t>(rank, kDyn)));
    return success();
  }
  if (!adaptor.getAxes())
    for (size_t i = 0; i < starts.size(); ++i)
      axes.push_back(i);
  if (!adaptor.getSteps())
    steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() ||
      steps.size() != starts.size())
    return shapeError(loc, "slice starts, ends, axes and steps differ in length");
  SmallVector<int64_t> shape(data.getShape());
  SmallVector<bool> seen(rank, false);
  for (size_t i = 0; i < starts.size(); ++i) {
    auto a = normalizeAxis(axes[i], rank);
    if (!a || seen[*a])
      return shapeError(loc, "slice axis ", axes[i], " is out of range or repeated");
    seen[*a] = true;
    int64_t step = steps[i], dim = shape[*a];
    if (step == 0)
      return shapeError(loc, "slice step must not be 0");
    if (dim == kDyn)
      continue;
    int64_t s = starts[i], e = ends[i];
    s = s < 0 ? s + dim : s;
    e = e < 0 ? e + dim : e;
    if (step > 0) {
      s = std::clamp<int64_t>(s, 0, dim);
      e = std::clamp<int64_t>(e, 0, dim);
      shape[*a] = e > s ? (e - s + step - 1) / step : 0;
    } else {
      s = std::clamp<int64_t>(s, 0, dim - 1);
      e = std::clamp<int64_t>(e, -1, dim - 1);
      shape[*a] = s > e ? (s - e - step - 1) / -step : 0;
    }
  }
  types.push_back(data.clone(shape));
  return success();
}

LogicalResult SqueezeOp::inferReturnTypes(MLIRContext *,
                                          std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &types) {
  auto x = rankedOf(adaptor.getX());
  SmallVector<bool> drop(x.getRank(), false);
  if (auto axes = adaptor.getAxes()) {
    for (int64_t axis : *axes) {
      auto a = normalizeAxis(axis, x.getRank());
      if (!a)
        return shapeError(loc, "squeeze axis ", axis, " is out of range");
      if (x.getDimSize(*a) != 1 && x.getDimSize(*a) != kDyn)
        return shapeError(loc, "squeeze axis ", axis, " has size ",
                          x.getDimSize(*a), ", not 1");
      drop[*a] = true;
    }
  } else {
    for (int64_t i = 0; i < x.getRank(); ++i)
      drop[i] = x.getDimSize(i) == 1;
  }
  SmallVector<int64_t> shape;
  for (int64_t i = 0; i < x.getRank(); ++i)
    if (!drop[i])
      shape.push_back(x.getDimSize(i));
  types.push_back(x.clone(shape));
  return success();
}

LogicalResult UnsqueezeOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &types) {
  auto x = rankedOf(adaptor.getX());
  int64_t rank = x.getRank() + adaptor.getAxes().size();
  SmallVector<bool> inserted(rank, false);
  for (int64_t axis : adaptor.getAxes()) {
    auto a = normalizeAxis(axis, rank);
    if (!a || inserted[*a])
      return shapeError(loc, "unsqueeze axis ", axis,
                        " is out of range or repeated");
    inserted[*a] = true;
  }
  SmallVector<int64_t> shape;
  auto dims = x.getShape();
  for (int64_t i = 0, j = 0; i < rank; ++i)
    shape.push_back(inserted[i] ? 1 : dims[j++]);
  types.push_back(x.clone(shape));
  return success();
}

LogicalResult FlattenOp::inferReturnTypes(MLIRContext *,
                                          std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &types) {
  auto x = rankedOf(adaptor.getX());
  int64_t axis = adaptor.getAxis(), rank = x.getRank();
  if (axis < -rank || axis > rank)
    return shapeError(loc, "flatten axis ", axis, " is out of range");
  if (axis < 0)
    axis += rank;
  types.push_back(x.clone({product(x.getShape().take_front(axis)),
                           product(x.getShape().drop_front(axis))}));
  return success();
}

LogicalResult ExpandOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &types) {
  auto x = rankedOf(adaptor.getX());
  auto target = shapeOperandValues(loc, adaptor.getShape());
  if (failed(target))
    return failure();
  auto r = broadcastShapes(x.getShape(), *target);
  if (failed(r))
    return shapeError(loc, "cannot expand ", x, " to the requested shape");
  types.push_back(x.clone(*r));
  return success();
}

LogicalResult TileOp::inferReturnTypes(MLIRContext *,
                                       std::optional<Location> loc,
                                       Adaptor adaptor,
                                       SmallVectorImpl<Type> &types) {
  auto x = rankedOf(adaptor.getX());
  SmallVector<int64_t> repeats, shape(x.getShape());
  if (!getConstantInts(adaptor.getRepeats(), repeats)) {
    types.push_back(x.clone(SmallVector<int64_t>(x.getRank(), kDyn)));
    return success();
  }
  if ((int64_t)repeats.size() != x.getRank())
    return shapeError(loc, "tile needs one repeat per dimension");
  for (int64_t i = 0; i < x.getRank(); ++i) {
    if (repeats[i] < 0)
      return shapeError(loc, "tile repeats must be non-negative");
    if (shape[i] != kDyn)
      shape[i] *= repeats[i];
  }
  types.push_back(x.clone(shape));
  return success();
}

LogicalResult PadOp::inferReturnTypes(MLIRContext *,
                                      std::optional<Location> loc,
                                      Adaptor adaptor,
                                      SmallVectorImpl<Type> &types) {
  auto x = rankedOf(adaptor.getX());
  int64_t rank = x.getRank();
  SmallVector<int64_t> axes;
  if (auto a = adaptor.getAxes())
    axes.assign(a->begin(), a->end());
  else
    for (int64_t i = 0; i < rank; ++i)
      axes.push_back(i);
  ArrayRef<int64_t> pads = adaptor.getPads();
  if (pads.size() != 2 * axes.size())
    return shapeError(loc, "pad needs 2 pads per padded axis, got ",
                      pads.size(), " for ", axes.size(), " axes");
  StringRef mode = adaptor.getMode();
  if (mode != "constant" && mode != "reflect" && mode != "edge" &&
      mode != "wrap")
    return shapeError(loc, "unknown pad mode '", mode, "'");
  SmallVector<int64_t> shape(x.getShape());
  for (size_t i = 0; i < axes.size(); ++i) {
    auto a = normalizeAxis(axes[i], rank);
    if (!a)
      return shapeError(loc, "pad axis out of range");
    if (shape[*a] == kDyn)
      continue;
    shape[*a] += pads[i] + pads[axes.size() + i];
    if (shape[*a] < 0)
      return shapeError(loc, "pads make dimension ", *a, " negative");
  }
  types.push_back(x.clone(shape));
  return success();
}

LogicalResult GatherOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &types) {
  auto data = rankedOf(adaptor.getData()), idx = rankedOf(adaptor.getIndices());
  auto axis = normalizeAxis(adaptor.getAxis(), data.getRank());
  if (!axis)
    return shapeError(loc, "gather axis ", adaptor.getAxis(),
                      " is out of range for rank ", data.getRank());
  SmallVector<int64_t> shape(data.getShape().take_front(*axis));
  llvm::append_range(shape, idx.getShape());
  llvm::append_range(shape, data.getShape().drop_front(*axis + 1));
  types.push_back(data.clone(shape));
  return success();
}

LogicalResult GatherElementsOp::inferReturnTypes(MLIRContext *,
                                                 std::optional<Location> loc,
                                                 Adaptor adaptor,
                                                 SmallVectorImpl<Type> &types) {
  auto data = rankedOf(adaptor.getData()), idx = rankedOf(adaptor.getIndices());
  if (data.getRank() != idx.getRank() ||
      !normalizeAxis(adaptor.getAxis(), data.getRank()))
    return shapeError(loc, "gather_elements needs indices of the data's rank "
                           "and an axis in range");
  types.push_back(data.clone(idx.getShape()));
  return success();
}

LogicalResult ScatterElementsOp::inferReturnTypes(MLIRContext *,
                                                  std::optional<Location> loc,
                                                  Adaptor adaptor,
                                                  SmallVectorImpl<Type> &types) {
  auto data = rankedOf(adaptor.getData()), idx = rankedOf(adaptor.getIndices()),
       upd = rankedOf(adaptor.getUpdates());
  if (data.getRank() != idx.getRank() || idx.getShape() != upd.getShape() ||
      !normalizeAxis(adaptor.getAxis(), data.getRank()))
    return shapeError(loc, "scatter_elements needs indices of the data's rank, "
                           "updates of the indices' shape and an axis in range");
  if (data.getElementType() != upd.getElementType())
    return shapeError(loc, "scatter_elements updates ", upd,
                      " are not of the data's element type");
  StringRef r = adaptor.getReduction();
  if (r != "none" && r != "add" && r != "mul" && r != "max" && r != "min")
    return shapeError(loc, "scatter_elements reduction '", r,
                      "' is not one of none, add, mul, max, min");
  types.push_back(data);
  return success();
}

LogicalResult GatherNDOp::inferReturnTypes(MLIRContext *,
                                           std::optional<Location> loc,
                                           Adaptor adaptor,
                                           SmallVectorImpl<Type> &types) {
  auto data = rankedOf(adaptor.getData()), idx = rankedOf(adaptor.getIndices());
  int64_t b = adaptor.getBatchDims();
  if (idx.getRank() < 1 || idx.isDynamicDim(idx.getRank() - 1))
    return shapeError(loc, "gather_nd needs a static last index dimension");
  int64_t last = idx.getDimSize(idx.getRank() - 1);
  if (b < 0 || b + last > data.getRank() || b >= idx.getRank())
    return shapeError(loc, "gather_nd index tuples of length ", last,
                      " with batch_dims ", b, " do not fit ", data);
  SmallVector<int64_t> shape(idx.getShape().drop_back());
  llvm::append_range(shape, data.getShape().drop_front(b + last));
  types.push_back(data.clone(shape));
  return success();
}

LogicalResult ConstantOfShapeOp::inferReturnTypes(MLIRContext *,
                                                  std::optional<Location> loc,
                                                  Adaptor adaptor,
                                                  SmallVectorImpl<Type> &types) {
  auto value = llvm::dyn_cast<ElementsAttr>(adaptor.getValue());
  if (!value || value.getNumElements() != 1)
    return shapeError(loc, "constant_of_shape value must have one element");
  auto shape = shapeOperandValues(loc, adaptor.getShape());
  if (failed(shape))
    return failure();
  for (int64_t d : *shape)
    if (d < 0 && d != kDyn)
      return shapeError(loc, "constant_of_shape dimension ", d, " is negative");
  types.push_back(RankedTensorType::get(*shape, value.getElementType()));
  return success();
}

LogicalResult RangeOp::inferReturnTypes(MLIRContext *,
                                        std::optional<Location> loc,
                                        Adaptor adaptor,
                                        SmallVectorImpl<Type> &types) {
  Type elem = getElementTypeOrSelf(adaptor.getStart());
  for (Value v : adaptor.getOperands())
    if (getElementTypeOrSelf(v) != elem || rankedOf(v).getNumElements() != 1)
      return shapeError(loc, "range operands must be scalars of one type");
  auto s = getConstantScalar(adaptor.getStart());
  auto l = getConstantScalar(adaptor.getLimit());
  auto d = getConstantScalar(adaptor.getDelta());
  int64_t n = kDyn;
  if (s && l && d) {
    if (*d == 0)
      return shapeError(loc, "range delta must not be 0");
    n = std::max<int64_t>((int64_t)std::ceil((*l - *s) / *d), 0);
  }
  types.push_back(RankedTensorType::get({n}, elem));
  return success();
}
