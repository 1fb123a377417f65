//===- ShapeRules.cpp - result type rules shared by op families -----------===//

#include "ir/ShapeRules.h"
#include "ir/MpcOps.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Matchers.h"

using namespace mlir;
using namespace mlir::mpc;

RankedTensorType mpc::rankedOf(Value value) {
  return llvm::dyn_cast<RankedTensorType>(value.getType());
}

std::optional<int64_t> mpc::normalizeAxis(int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank)
    return std::nullopt;
  return axis < 0 ? axis + rank : axis;
}

bool mpc::getConstantInts(Value value, SmallVectorImpl<int64_t> &out) {
  DenseIntElementsAttr attr;
  if (!value || !matchPattern(value, m_Constant(&attr)))
    return false;
  out.clear();
  for (const APInt &v : attr.getValues<APInt>())
    out.push_back(v.getSExtValue());
  return true;
}

std::optional<double> mpc::getConstantScalar(Value value) {
  DenseElementsAttr attr;
  if (!value || !matchPattern(value, m_Constant(&attr)) ||
      attr.getNumElements() != 1)
    return std::nullopt;
  if (llvm::isa<FloatType>(attr.getElementType()))
    return (*attr.getValues<APFloat>().begin()).convertToDouble();
  APInt i = *attr.getValues<APInt>().begin();
  return attr.getElementType().isInteger(1) ? (double)i.getBoolValue()
                                            : (double)i.getSExtValue();
}

bool mpc::getPartialInts(Value value, SmallVectorImpl<int64_t> &out) {
  if (getConstantInts(value, out))
    return true;
  auto t = rankedOf(value);
  if (!t || t.getRank() > 1 || !t.hasStaticShape() ||
      !llvm::isa<IntegerType>(t.getElementType()))
    return false;
  out.assign(t.getNumElements(), kDyn);
  Operation *def = value.getDefiningOp();
  if (auto concat = llvm::dyn_cast_or_null<ConcatOp>(def)) {
    SmallVector<int64_t> all, part;
    for (Value in : concat.getInputs()) {
      if (!getPartialInts(in, part))
        return true;
      all.append(part);
    }
    if (all.size() == out.size())
      out.assign(all);
  } else if (auto shape = llvm::dyn_cast_or_null<ShapeOp>(def)) {
    auto x = rankedOf(shape.getX());
    int64_t start = shape.getStart().value_or(0);
    start = std::clamp<int64_t>(start < 0 ? start + x.getRank() : start, 0,
                                x.getRank());
    for (size_t i = 0; i < out.size(); ++i)
      out[i] = x.getDimSize(start + i);
  } else if (llvm::isa_and_nonnull<UnsqueezeOp, CastOp>(def)) {
    SmallVector<int64_t> in;
    if (getPartialInts(def->getOperand(0), in) && in.size() == out.size())
      out.assign(in);
  } else if (auto gather = llvm::dyn_cast_or_null<GatherOp>(def)) {
    SmallVector<int64_t> data, idx;
    if (getPartialInts(gather.getData(), data) &&
        getConstantInts(gather.getIndices(), idx) && idx.size() == out.size())
      for (size_t i = 0; i < idx.size(); ++i) {
        int64_t j = idx[i] < 0 ? idx[i] + (int64_t)data.size() : idx[i];
        if (j >= 0 && j < (int64_t)data.size())
          out[i] = data[j];
      }
  }
  return true;
}

FailureOr<SmallVector<int64_t>> mpc::broadcastShapes(ArrayRef<int64_t> a,
                                                     ArrayRef<int64_t> b) {
  size_t rank = std::max(a.size(), b.size());
  SmallVector<int64_t> out(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t x = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t y = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (x == 1)
      out[i] = y;
    else if (y == 1)
      out[i] = x;
    else if (x == kDyn)
      out[i] = y;
    else if (y == kDyn || x == y)
      out[i] = x;
    else
      return failure();
  }
  return out;
}

static std::string shapeStr(ArrayRef<int64_t> shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? "," : "") + (shape[i] == kDyn ? std::string("?")
                                            : std::to_string(shape[i]));
  return s + "]";
}

LogicalResult mpc::broadcastAll(std::optional<Location> loc, ValueRange values,
                                SmallVectorImpl<int64_t> &shape) {
  shape.clear();
  for (Value v : values) {
    auto t = rankedOf(v);
    if (!t)
      return shapeError(loc, "operands must be ranked tensors");
    auto r = broadcastShapes(shape, t.getShape());
    if (failed(r))
      return shapeError(loc, "shapes ", shapeStr(shape), " and ",
                        shapeStr(t.getShape()), " do not broadcast");
    shape.assign(r->begin(), r->end());
  }
  return success();
}

static LogicalResult sameElementTypes(std::optional<Location> loc,
                                      ValueRange values) {
  for (Value v : values.drop_front())
    if (getElementTypeOrSelf(v) != getElementTypeOrSelf(values.front()))
      return shapeError(loc, "operand element types differ: ",
                        getElementTypeOrSelf(values.front()), " and ",
                        getElementTypeOrSelf(v));
  return success();
}

namespace mlir::mpc::rules {

LogicalResult sameAsFirst(std::optional<Location>, ValueRange operands,
                          SmallVectorImpl<Type> &types) {
  types.push_back(operands.front().getType());
  return success();
}

LogicalResult sameShapeBool(std::optional<Location>, ValueRange operands,
                            SmallVectorImpl<Type> &types) {
  auto t = rankedOf(operands.front());
  types.push_back(t.clone(IntegerType::get(t.getContext(), 1)));
  return success();
}

static LogicalResult broadcastWith(std::optional<Location> loc,
                                   ValueRange operands, Type elem,
                                   SmallVectorImpl<Type> &types) {
  SmallVector<int64_t> shape;
  if (failed(broadcastAll(loc, operands, shape)))
    return failure();
  types.push_back(RankedTensorType::get(shape, elem));
  return success();
}

LogicalResult broadcast(std::optional<Location> loc, ValueRange operands,
                        SmallVectorImpl<Type> &types) {
  if (operands.empty())
    return shapeError(loc, "expected at least one operand");
  if (failed(sameElementTypes(loc, operands)))
    return failure();
  return broadcastWith(loc, operands, getElementTypeOrSelf(operands[0]), types);
}

LogicalResult broadcastAsFirst(std::optional<Location> loc, ValueRange operands,
                               SmallVectorImpl<Type> &types) {
  return broadcastWith(loc, operands, getElementTypeOrSelf(operands[0]), types);
}

LogicalResult broadcastToBool(std::optional<Location> loc, ValueRange operands,
                              SmallVectorImpl<Type> &types) {
  if (failed(sameElementTypes(loc, operands)))
    return failure();
  return broadcastWith(loc, operands,
                       IntegerType::get(operands[0].getContext(), 1), types);
}

LogicalResult where(std::optional<Location> loc, ValueRange operands,
                    SmallVectorImpl<Type> &types) {
  if (failed(sameElementTypes(loc, operands.drop_front())))
    return failure();
  return broadcastWith(loc, operands, getElementTypeOrSelf(operands[1]), types);
}

LogicalResult globalPool(std::optional<Location> loc, ValueRange operands,
                         SmallVectorImpl<Type> &types) {
  auto t = rankedOf(operands[0]);
  if (t.getRank() < 3)
    return shapeError(loc, "expected input of rank >= 3 (N x C x D1...), got ",
                      t);
  SmallVector<int64_t> shape(t.getShape().take_front(2));
  shape.append(t.getRank() - 2, 1);
  types.push_back(t.clone(shape));
  return success();
}

LogicalResult batchNormTrain(std::optional<Location>, ValueRange operands,
                             SmallVectorImpl<Type> &types) {
  types.push_back(operands[0].getType());
  types.push_back(operands[3].getType());
  types.push_back(operands[4].getType());
  return success();
}

/// (grad, x, scale) -> (dx: x's type, dscale and dbias: scale's).
LogicalResult batchNormGrad(std::optional<Location>, ValueRange operands,
                            SmallVectorImpl<Type> &types) {
  types.push_back(operands[1].getType());
  types.push_back(operands[2].getType());
  types.push_back(operands[2].getType());
  return success();
}

LogicalResult dropout(std::optional<Location> loc, ValueRange operands,
                      SmallVectorImpl<Type> &types) {
  types.push_back(operands[0].getType());
  return sameShapeBool(loc, operands, types);
}

LogicalResult scalarI64(std::optional<Location>, ValueRange operands,
                        SmallVectorImpl<Type> &types) {
  types.push_back(
      RankedTensorType::get({}, IntegerType::get(operands[0].getContext(), 64)));
  return success();
}

LogicalResult typeOfSecond(std::optional<Location>, ValueRange operands,
                           SmallVectorImpl<Type> &types) {
  types.push_back(operands[1].getType());
  return success();
}

LogicalResult constantValue(std::optional<Location> loc, Attribute value,
                            SmallVectorImpl<Type> &types) {
  auto typed = llvm::dyn_cast_or_null<TypedAttr>(value);
  if (!typed)
    return shapeError(loc, "constant value must be a typed elements attribute");
  types.push_back(typed.getType());
  return success();
}

LogicalResult sameAsFirstAxis(std::optional<Location> loc, ValueRange operands,
                              int64_t axis, SmallVectorImpl<Type> &types) {
  auto t = rankedOf(operands[0]);
  if (!normalizeAxis(axis, std::max<int64_t>(t.getRank(), 1)))
    return shapeError(loc, "axis ", axis, " is out of range for rank ",
                      t.getRank());
  types.push_back(t);
  return success();
}

LogicalResult argReduce(std::optional<Location> loc, ValueRange operands,
                        int64_t axis, bool keepdims,
                        SmallVectorImpl<Type> &types) {
  auto t = rankedOf(operands[0]);
  auto a = normalizeAxis(axis, t.getRank());
  if (!a)
    return shapeError(loc, "axis ", axis, " is out of range for rank ",
                      t.getRank());
  SmallVector<int64_t> shape(t.getShape());
  if (keepdims)
    shape[*a] = 1;
  else
    shape.erase(shape.begin() + *a);
  types.push_back(RankedTensorType::get(
      shape, IntegerType::get(t.getContext(), 64)));
  return success();
}

LogicalResult reduce(std::optional<Location> loc, ValueRange operands,
                     std::optional<ArrayRef<int64_t>> axes, bool keepdims,
                     bool noopWithEmptyAxes, SmallVectorImpl<Type> &types) {
  auto t = rankedOf(operands[0]);
  int64_t rank = t.getRank();
  SmallVector<bool> reduced(rank, false);
  if (!axes || axes->empty()) {
    if (!noopWithEmptyAxes)
      reduced.assign(rank, true);
  } else {
    for (int64_t axis : *axes) {
      auto a = normalizeAxis(axis, rank);
      if (!a)
        return shapeError(loc, "reduction axis ", axis,
                          " is out of range for rank ", rank);
      if (reduced[*a])
        return shapeError(loc, "reduction axis ", axis, " is repeated");
      reduced[*a] = true;
    }
  }
  SmallVector<int64_t> shape;
  for (int64_t i = 0; i < rank; ++i) {
    if (!reduced[i])
      shape.push_back(t.getDimSize(i));
    else if (keepdims)
      shape.push_back(1);
  }
  types.push_back(t.clone(shape));
  return success();
}

LogicalResult shapeOf(std::optional<Location>, ValueRange operands,
                      std::optional<int64_t> start, std::optional<int64_t> end,
                      SmallVectorImpl<Type> &types) {
  int64_t rank = rankedOf(operands[0]).getRank();
  auto clampIndex = [&](int64_t i) {
    if (i < 0)
      i += rank;
    return std::clamp<int64_t>(i, 0, rank);
  };
  int64_t b = clampIndex(start.value_or(0)), e = clampIndex(end.value_or(rank));
  types.push_back(RankedTensorType::get(
      {std::max<int64_t>(e - b, 0)}, IntegerType::get(operands[0].getContext(), 64)));
  return success();
}

LogicalResult optimizer(std::optional<Location> loc, ValueRange operands,
                        unsigned groups, SmallVectorImpl<Type> &types) {
  if (operands.size() < 2 + groups || (operands.size() - 2) % groups)
    return shapeError(loc, "expected R, T and ", groups,
                      " groups of equally many tensors, got ", operands.size(),
                      " operands");
  size_t n = (operands.size() - 2) / groups;
  for (unsigned g = 0; g < groups; ++g) {
    if (g == 1)
      continue; // gradients are not returned
    for (size_t i = 0; i < n; ++i)
      types.push_back(operands[2 + g * n + i].getType());
  }
  return success();
}

LogicalResult gradient(std::optional<Location> loc, ValueRange operands,
                       size_t numXs, SmallVectorImpl<Type> &types) {
  if (operands.size() < numXs)
    return shapeError(loc, "expected an operand for each of the ", numXs,
                      " names in xs");
  for (Value v : operands.take_front(numXs))
    types.push_back(v.getType());
  return success();
}

} // namespace mlir::mpc::rules
