//===- Folders.cpp - constant folding of ONNX shape arithmetic ------------===//
//
// Folds the integer computations torch and other exporters emit around
// Reshape/Expand (Shape -> Gather -> Unsqueeze -> Concat, ConstantOfShape ->
// Mul -> Equal -> Where, Range...), so that once input shapes are bound every
// tensor type is static. Only small integer/bool values are folded, never
// float math: folding must not change numerics. (A float scalar cast to
// an integer, a shape computed in floats, is evaluated in FP32 for that
// integer alone: FloatValues.cpp.)
//
//===----------------------------------------------------------------------===//

#include "mlir/IR/Matchers.h"
#include "llvm/Support/MathExtras.h"
#include "ir/MpcOps.h"
#include "ir/ShapeRules.h"

#include <cmath>
#include <limits>

using namespace mlir;
using namespace mlir::mpc;


namespace {
/// A small integer or bool constant, flattened.
struct IntConst {
  RankedTensorType type;
  SmallVector<int64_t> values;
};
} // namespace

static std::optional<IntConst> readInts(Attribute attr) {
  auto dense = llvm::dyn_cast_or_null<DenseIntElementsAttr>(attr);
  if (!dense || !dense.getType().hasStaticShape())
    return std::nullopt;
  if (!dense.isSplat() && dense.getNumElements() > kMaxFoldElements)
    return std::nullopt;
  IntConst c{llvm::cast<RankedTensorType>(dense.getType()), {}};
  bool isBool = dense.getElementType().isInteger(1);
  for (const APInt &v : dense.getValues<APInt>())
    c.values.push_back(isBool ? (int64_t)v.getBoolValue() : v.getSExtValue());
  return c;
}

static Attribute makeInts(Type type, ArrayRef<int64_t> values) {
  auto t = llvm::dyn_cast<RankedTensorType>(type);
  if (!t || !t.hasStaticShape() || t.getNumElements() != (int64_t)values.size())
    return {};
  auto elem = llvm::dyn_cast<IntegerType>(t.getElementType());
  if (!elem)
    return {};
  SmallVector<APInt> ints;
  for (int64_t v : values)
    ints.push_back(APInt(elem.getWidth(), elem.getWidth() == 1 ? v != 0 : v,
                         /*isSigned=*/elem.getWidth() > 1));
  return DenseElementsAttr::get(t, ints);
}

static SmallVector<int64_t> stridesOf(ArrayRef<int64_t> shape) {
  SmallVector<int64_t> strides(shape.size(), 1);
  for (int64_t i = (int64_t)shape.size() - 2; i >= 0; --i)
    strides[i] = strides[i + 1] * shape[i + 1];
  return strides;
}

/// Element of `c` read at output position `flat` of `outShape` under
/// numpy broadcasting.
static int64_t broadcastAt(const IntConst &c, ArrayRef<int64_t> outShape,
                           int64_t flat) {
  if (c.values.size() == 1)
    return c.values[0];
  auto inShape = c.type.getShape();
  auto outStrides = stridesOf(outShape), inStrides = stridesOf(inShape);
  size_t off = outShape.size() - inShape.size();
  int64_t idx = 0;
  for (size_t d = 0; d < outShape.size(); ++d) {
    int64_t coord = (flat / outStrides[d]) % outShape[d];
    if (d >= off && inShape[d - off] != 1)
      idx += coord * inStrides[d - off];
  }
  return c.values[idx];
}

/// Folds a broadcasting elementwise op over integer constants.
static OpFoldResult
foldElementwise(Type resultType, ArrayRef<Attribute> operands,
                function_ref<std::optional<int64_t>(ArrayRef<int64_t>)> fn) {
  auto t = llvm::dyn_cast<RankedTensorType>(resultType);
  if (!t || !t.hasStaticShape() || t.getNumElements() > kMaxFoldElements)
    return {};
  SmallVector<IntConst> cs;
  for (Attribute a : operands) {
    auto c = readInts(a);
    if (!c)
      return {};
    cs.push_back(std::move(*c));
  }
  SmallVector<int64_t> out, args(cs.size());
  for (int64_t i = 0; i < t.getNumElements(); ++i) {
    for (size_t k = 0; k < cs.size(); ++k)
      args[k] = broadcastAt(cs[k], t.getShape(), i);
    auto v = fn(args);
    if (!v)
      return {};
    out.push_back(*v);
  }
  return makeInts(t, out);
}

OpFoldResult ConstantOp::fold(FoldAdaptor) { return getValue(); }

OpFoldResult IdentityOp::fold(FoldAdaptor) { return getX(); }

OpFoldResult AddOp::fold(FoldAdaptor a) {
  return foldElementwise(getType(), a.getOperands(),
                         [](ArrayRef<int64_t> v) -> std::optional<int64_t> {
                           int64_t r;
                           if (llvm::AddOverflow(v[0], v[1], r))
                             return std::nullopt; // left for run time
                           return r;
                         });
}
OpFoldResult SubOp::fold(FoldAdaptor a) {
  return foldElementwise(getType(), a.getOperands(),
                         [](ArrayRef<int64_t> v) -> std::optional<int64_t> {
                           int64_t r;
                           if (llvm::SubOverflow(v[0], v[1], r))
                             return std::nullopt;
                           return r;
                         });
}
OpFoldResult MulOp::fold(FoldAdaptor a) {
  return foldElementwise(getType(), a.getOperands(),
                         [](ArrayRef<int64_t> v) -> std::optional<int64_t> {
                           int64_t r;
                           if (llvm::MulOverflow(v[0], v[1], r))
                             return std::nullopt;
                           return r;
                         });
}
OpFoldResult DivOp::fold(FoldAdaptor a) {
  // ONNX integer Div truncates toward zero, like C++.
  return foldElementwise(getType(), a.getOperands(),
                         [](ArrayRef<int64_t> v) -> std::optional<int64_t> {
                           if (v[1] == 0 || (v[1] == -1 && v[0] == INT64_MIN))
                             return std::nullopt;
                           return v[0] / v[1];
                         });
}
OpFoldResult NegOp::fold(FoldAdaptor a) {
  return foldElementwise(getType(), a.getOperands(),
                         [](ArrayRef<int64_t> v) -> std::optional<int64_t> {
                           if (v[0] == INT64_MIN)
                             return std::nullopt;
                           return -v[0];
                         });
}
OpFoldResult EqualOp::fold(FoldAdaptor a) {
  return foldElementwise(getType(), a.getOperands(),
                         [](ArrayRef<int64_t> v) -> std::optional<int64_t> {
                           return v[0] == v[1];
                         });
}
/// And with all true, Or with all false: the other operand, where it has
/// the result's shape (torch 2's mask functions and'ed with a true scalar).
static Value boolIdentity(Type resultType, ArrayRef<Attribute> constants,
                          ValueRange operands, bool unit) {
  for (int k = 0; k < 2; ++k) {
    auto c = readInts(constants[k]);
    if (c && operands[1 - k].getType() == resultType &&
        llvm::all_of(c->values, [&](int64_t v) { return (v != 0) == unit; }))
      return operands[1 - k];
  }
  return Value();
}
// Integer and bool shape arithmetic (GQA head grouping in ONNX's own
// Attention function body: Mod, Equal, Not, And, Where); And and Or also
// fold their identity (UNIT: true for And, false for Or).
#define MPC_FOLD_INTS(OP, EXPR)                                               \
  OpFoldResult OP::fold(FoldAdaptor a) {                                      \
    return foldElementwise(getType(), a.getOperands(),                        \
                           [](ArrayRef<int64_t> v) -> std::optional<int64_t> { \
                             return EXPR;                                     \
                           });                                                \
  }
#define MPC_FOLD_BOOL(OP, EXPR, UNIT)                                         \
  OpFoldResult OP::fold(FoldAdaptor a) {                                      \
    if (Value x = boolIdentity(getType(), a.getOperands(), getOperands(), UNIT)) \
      return x;                                                               \
    return foldElementwise(getType(), a.getOperands(),                        \
                           [](ArrayRef<int64_t> v) -> std::optional<int64_t> { \
                             return EXPR;                                     \
                           });                                                \
  }
MPC_FOLD_INTS(NotOp, !v[0])
MPC_FOLD_BOOL(AndOp, v[0] && v[1], true)
MPC_FOLD_BOOL(OrOp, v[0] || v[1], false)
#undef MPC_FOLD_BOOL
MPC_FOLD_INTS(XorOp, (v[0] != 0) != (v[1] != 0))
MPC_FOLD_INTS(LessOp, v[0] < v[1])
MPC_FOLD_INTS(LessOrEqualOp, v[0] <= v[1])
MPC_FOLD_INTS(GreaterOp, v[0] > v[1])
MPC_FOLD_INTS(GreaterOrEqualOp, v[0] >= v[1])
#undef MPC_FOLD_INTS

OpFoldResult MaxOp::fold(FoldAdaptor a) {
  return foldElementwise(getType(), a.getOperands(),
                         [](ArrayRef<int64_t> v) -> std::optional<int64_t> {
                           return *std::max_element(v.begin(), v.end());
                         });
}
OpFoldResult MinOp::fold(FoldAdaptor a) {
  return foldElementwise(getType(), a.getOperands(),
                         [](ArrayRef<int64_t> v) -> std::optional<int64_t> {
                           return *std::min_element(v.begin(), v.end());
                         });
}

OpFoldResult ModOp::fold(FoldAdaptor a) {
  bool fmod = getFmod();
  return foldElementwise(getType(), a.getOperands(),
                         [fmod](ArrayRef<int64_t> v) -> std::optional<int64_t> {
                           if (v[1] == 0 || v[1] == -1)
                             return v[1] == -1 ? std::optional<int64_t>(0)
                                               : std::nullopt;
                           int64_t r = v[0] % v[1];
                           // Without fmod the sign follows the divisor.
                           if (!fmod && r != 0 && ((r < 0) != (v[1] < 0)))
                             r += v[1];
                           return r;
                         });
}

OpFoldResult WhereOp::fold(FoldAdaptor a) {
  return foldElementwise(getType(), a.getOperands(),
                         [](ArrayRef<int64_t> v) -> std::optional<int64_t> {
                           return v[0] ? v[1] : v[2];
                         });
}

OpFoldResult CastOp::fold(FoldAdaptor a) {
  if (getX().getType() == getType())
    return getX();
  auto out = llvm::cast<RankedTensorType>(getType());
  // Small integer constants to FP32, rounded as the CPU backend's Cast
  // rounds them: a Range's limit or a window's size computed from a graph
  // input's value (frozen) gives its result's shape at import.
  auto dense = llvm::dyn_cast_or_null<DenseIntElementsAttr>(a.getX());
  if (dense && dense.isSplat() && out.getElementType().isF32() &&
      out.hasStaticShape()) {
    APInt v = dense.getSplatValue<APInt>();
    return DenseElementsAttr::get(out,
                                  (float)(dense.getElementType().isInteger(1)
                                              ? (int64_t)v.getBoolValue()
                                              : v.getSExtValue()));
  }
  if (out.getElementType().isF32() && out.hasStaticShape())
    if (auto in = readInts(a.getX());
        in && out.getNumElements() == (int64_t)in->values.size()) {
      SmallVector<float> floats;
      for (int64_t v : in->values)
        floats.push_back((float)v);
      return DenseElementsAttr::get(out, ArrayRef<float>(floats));
    }
  if (!llvm::isa<IntegerType>(out.getElementType()))
    return {};
  // Floats to integers: truncated, saturated and NaN to 0 as the CPU
  // backend's Cast does; to bool, nonzero (NaN too) is true.
  unsigned width = out.getElementType().getIntOrFloatBitWidth();
  auto f = llvm::isa<FloatType>(getX().getType().getElementType()) && (width == 1 || width >= 32)
               ? floatValues(getX())
               : std::nullopt;
  if (f) {
    double lo = width == 32 ? -2147483648.0 : -9223372036854775808.0,
           hi = width == 32 ? 2147483647.0 : 9223372036854774784.0;
    SmallVector<int64_t> ints;
    for (float x : *f)
      ints.push_back(width == 1       ? x != 0.0f || std::isnan(x)
                     : std::isnan(x) ? 0
                                     : (int64_t)std::min(std::max((double)x, lo), hi));
    return makeInts(out, ints);
  }
  return foldElementwise(getType(), a.getOperands(),
                         [](ArrayRef<int64_t> v) -> std::optional<int64_t> {
                           return v[0];
                         });
}

OpFoldResult ShapeOp::fold(FoldAdaptor) {
  auto in = rankedOf(getX());
  auto out = llvm::cast<RankedTensorType>(getType());
  int64_t rank = in.getRank(), n = out.getDimSize(0);
  int64_t start = getStart().value_or(0);
  start = std::clamp<int64_t>(start < 0 ? start + rank : start, 0, rank);
  SmallVector<int64_t> dims(in.getShape().slice(start, n));
  if (llvm::is_contained(dims, kDyn))
    return {};
  return makeInts(out, dims);
}

OpFoldResult SizeOp::fold(FoldAdaptor) {
  auto in = rankedOf(getX());
  if (!in.hasStaticShape())
    return {};
  return makeInts(getType(), {in.getNumElements()});
}

/// Same values, new static shape (reshape, squeeze, unsqueeze, flatten).
static OpFoldResult reshapeConstant(Attribute input, Type resultType) {
  auto dense = llvm::dyn_cast_or_null<DenseElementsAttr>(input);
  auto t = llvm::dyn_cast<RankedTensorType>(resultType);
  if (!dense || !t || !t.hasStaticShape())
    return {};
  return dense.reshape(t);
}

OpFoldResult ReshapeOp::fold(FoldAdaptor a) {
  if (getData().getType() == getType() && getType().hasStaticShape())
    return getData();
  // A view back to what the view before it read (CLIP's and BART's scores
  // viewed merged and as heads again between their masks).
  if (auto inner = getData().getDefiningOp<ReshapeOp>();
      inner && inner.getData().getType() == getType() && getType().hasStaticShape())
    return inner.getData();
  return reshapeConstant(a.getData(), getType());
}
OpFoldResult PadOp::fold(FoldAdaptor) {
  // Padding by nothing in any mode (Swin's F.pad to a multiple of its
  // window, computed as 0) is its input: a copy kernel fewer, and one
  // fewer for its gradient's slice.
  if (getX().getType() == getType() && getType().hasStaticShape() &&
      llvm::all_of(getPads(), [](int64_t p) { return p == 0; }))
    return getX();
  return {};
}
OpFoldResult SqueezeOp::fold(FoldAdaptor a) {
  return reshapeConstant(a.getX(), getType());
}
OpFoldResult UnsqueezeOp::fold(FoldAdaptor a) {
  return reshapeConstant(a.getX(), getType());
}

OpFoldResult TransposeOp::fold(FoldAdaptor a) {
  auto perm = getPerm();
  if (perm && llvm::equal(*perm, llvm::seq<int64_t>(0, perm->size())))
    return getX();
  // Integer constants (F.pad's [n, 2] pads view, transposed).
  auto c = readInts(a.getX());
  auto t = llvm::cast<RankedTensorType>(getType());
  const int64_t rank = t.getRank();
  if (!c || !t.hasStaticShape() || t.getNumElements() > kMaxFoldElements ||
      c->type.getRank() != rank)
    return {};
  SmallVector<int64_t> order;
  for (int64_t d = 0; d < rank; ++d)
    order.push_back(perm ? (*perm)[d] : rank - 1 - d);
  auto inStrides = stridesOf(c->type.getShape()), outStrides = stridesOf(t.getShape());
  SmallVector<int64_t> out;
  for (int64_t i = 0; i < t.getNumElements(); ++i) {
    int64_t at = 0;
    for (int64_t d = 0; d < rank; ++d)
      at += (i / outStrides[d]) % t.getDimSize(d) * inStrides[order[d]];
    out.push_back(c->values[at]);
  }
  return makeInts(t, out);
}

OpFoldResult ExpandOp::fold(FoldAdaptor a) {
  if (getX().getType() == getType() &&
      llvm::cast<RankedTensorType>(getType()).hasStaticShape())
    return getX(); // (to its own shape)
  auto c = readInts(a.getX());
  if (!c)
    return {};
  auto t = llvm::cast<RankedTensorType>(getType());
  if (!t.hasStaticShape() || t.getNumElements() > kMaxFoldElements)
    return {};
  SmallVector<int64_t> out;
  for (int64_t i = 0; i < t.getNumElements(); ++i)
    out.push_back(broadcastAt(*c, t.getShape(), i));
  return makeInts(t, out);
}

OpFoldResult ConcatOp::fold(FoldAdaptor a) {
  auto t = llvm::cast<RankedTensorType>(getType());
  if (!t.hasStaticShape() || t.getNumElements() > kMaxFoldElements)
    return {};
  int64_t axis = *normalizeAxis(getAxis(), t.getRank());
  SmallVector<IntConst> cs;
  for (Attribute attr : a.getInputs()) {
    auto c = readInts(attr);
    if (!c)
      return {};
    cs.push_back(std::move(*c));
  }
  // Outer = product of dims before axis; each input contributes a contiguous
  // block of (its axis dim x inner) per outer index.
  int64_t outer = 1;
  for (int64_t d = 0; d < axis; ++d)
    outer *= t.getDimSize(d);
  SmallVector<int64_t> out;
  for (int64_t o = 0; o < outer; ++o)
    for (const IntConst &c : cs) {
      int64_t block = c.type.getNumElements() / std::max<int64_t>(outer, 1);
      for (int64_t i = 0; i < block; ++i)
        out.push_back(c.values.size() == 1 ? c.values[0]
                                           : c.values[o * block + i]);
    }
  return makeInts(t, out);
}

OpFoldResult SliceOp::fold(FoldAdaptor a) {
  // A slice keeping every element in order (torch's mask[..., :n] with n
  // the whole axis) is its input: a copy kernel fewer.
  SmallVector<int64_t> forward;
  if (getData().getType() == getType() &&
      llvm::cast<RankedTensorType>(getType()).hasStaticShape() &&
      (!getSteps() || (getConstantInts(getSteps(), forward) &&
                       llvm::all_of(forward, [](int64_t st) { return st > 0; }))))
    return getData();
  // Integer constants (F.pad's pads, which torch 1.13 reverses pairwise
  // by a Slice of step -1 over a [n, 2] view).
  auto c = readInts(a.getData());
  auto t = llvm::cast<RankedTensorType>(getType());
  SmallVector<int64_t> starts, axes, steps;
  if (!c || !t.hasStaticShape() || t.getNumElements() > kMaxFoldElements ||
      !getConstantInts(getStarts(), starts))
    return {};
  if ((getSteps() && !getConstantInts(getSteps(), steps)) ||
      (getAxes() && !getConstantInts(getAxes(), axes)))
    return {};
  const int64_t rank = c->type.getRank();
  if (axes.empty())
    for (size_t k = 0; k < starts.size(); ++k)
      axes.push_back((int64_t)k);
  if (steps.empty())
    steps.assign(starts.size(), 1);
  if (axes.size() != starts.size() || steps.size() != starts.size() ||
      t.getRank() != rank)
    return {};
  SmallVector<int64_t> from(rank, 0), by(rank, 1);
  for (size_t k = 0; k < starts.size(); ++k) {
    int64_t axis = axes[k] < 0 ? axes[k] + rank : axes[k];
    if (axis < 0 || axis >= rank || steps[k] == 0)
      return {};
    from[axis] = sliceStart(starts[k], c->type.getDimSize(axis), steps[k]);
    by[axis] = steps[k];
  }
  auto inStrides = stridesOf(c->type.getShape()), outStrides = stridesOf(t.getShape());
  SmallVector<int64_t> out;
  for (int64_t i = 0; i < t.getNumElements(); ++i) {
    int64_t at = 0;
    for (int64_t d = 0; d < rank; ++d) {
      int64_t x = from[d] + (i / outStrides[d]) % t.getDimSize(d) * by[d];
      if (x < 0 || x >= c->type.getDimSize(d))
        return {};
      at += x * inStrides[d];
    }
    out.push_back(c->values[at]);
  }
  return makeInts(t, out);
}

LogicalResult SplitOp::fold(FoldAdaptor a,
                            SmallVectorImpl<OpFoldResult> &results) {
  // Integer parts of a constant (torch 1.13's repeat_interleave splits its
  // repeats to build an Expand's shape): a splat's parts are splats, a 1-D
  // constant's are its runs.
  auto dense = llvm::dyn_cast_or_null<DenseIntElementsAttr>(a.getX());
  if (!dense)
    return failure();
  std::optional<IntConst> c;
  if (!dense.isSplat() && !(c = readInts(dense)))
    return failure();
  if (c && c->type.getRank() != 1)
    return failure();
  int64_t at = 0;
  for (Value part : getOutputs()) {
    auto t = llvm::dyn_cast<RankedTensorType>(part.getType());
    if (!t || !t.hasStaticShape())
      return failure();
    if (!c) {
      results.push_back(DenseElementsAttr::get(t, dense.getSplatValue<Attribute>()));
      continue;
    }
    int64_t n = t.getDimSize(0);
    if (at + n > (int64_t)c->values.size())
      return failure();
    results.push_back(makeInts(t, ArrayRef(c->values).slice(at, n)));
    at += n;
  }
  return success();
}

OpFoldResult GatherOp::fold(FoldAdaptor a) {
  auto data = readInts(a.getData()), idx = readInts(a.getIndices());
  if (!data || !idx || data->type.getRank() != 1)
    return {};
  int64_t dim = data->type.getDimSize(0);
  SmallVector<int64_t> out;
  for (int64_t i : idx->values) {
    int64_t j = i < 0 ? i + dim : i;
    if (j < 0 || j >= dim)
      return {};
    out.push_back(data->values[j]);
  }
  return makeInts(getType(), out);
}

OpFoldResult ConstantOfShapeOp::fold(FoldAdaptor) {
  auto t = llvm::cast<RankedTensorType>(getType());
  auto value = llvm::dyn_cast<DenseElementsAttr>(getValue());
  if (!t.hasStaticShape() || !value)
    return {};
  return DenseElementsAttr::get(t, value.getSplatValue<Attribute>());
}

OpFoldResult RangeOp::fold(FoldAdaptor a) {
  auto s = readInts(a.getStart()), d = readInts(a.getDelta());
  auto t = llvm::cast<RankedTensorType>(getType());
  if (!s || !d || !t.hasStaticShape() || t.getNumElements() > kMaxFoldElements)
    return {};
  SmallVector<int64_t> out;
  for (int64_t i = 0; i < t.getDimSize(0); ++i)
    out.push_back(s->values[0] + i * d->values[0]);
  return makeInts(t, out);
}

/// Reductions of small integer constants, as exporters compute sizes
/// (x.numel(): Shape -> ReduceProd); floats are never folded here.
template <typename Op>
static OpFoldResult foldIntReduce(Op op, Attribute x, int64_t init,
                                  int64_t (*combine)(int64_t, int64_t)) {
  auto c = readInts(x);
  auto t = llvm::cast<RankedTensorType>(op.getType());
  if (!c || !t.hasStaticShape() || c->type.getElementType().isInteger(1) ||
      c->type.getNumElements() > kMaxFoldElements)
    return {};
  ArrayRef<int64_t> shape = c->type.getShape();
  int64_t rank = shape.size();
  bool all = !op.getAxes() || op.getAxes()->empty();
  if (all && op.getNoopWithEmptyAxes())
    return {};
  SmallVector<bool> reduced(rank, all);
  if (!all)
    for (int64_t a : *op.getAxes()) {
      auto n = normalizeAxis(a, rank);
      if (!n)
        return {};
      reduced[*n] = true;
    }
  // Each input element adds into the output element of its kept
  // coordinates.
  SmallVector<int64_t> keptShape;
  for (int64_t d = 0; d < rank; ++d)
    keptShape.push_back(reduced[d] ? 1 : shape[d]);
  auto inStrides = stridesOf(shape), outStrides = stridesOf(keptShape);
  SmallVector<int64_t> out(t.getNumElements(), init);
  for (int64_t i = 0, n = c->type.getNumElements(); i < n; ++i) {
    int64_t o = 0;
    for (int64_t d = 0; d < rank; ++d)
      if (!reduced[d])
        o += (i / inStrides[d]) % shape[d] * outStrides[d];
    out[o] = combine(out[o], c->values[c->values.size() == 1 ? 0 : i]);
  }
  return makeInts(t, out);
}

OpFoldResult ReduceSumOp::fold(FoldAdaptor a) {
  return foldIntReduce(*this, a.getX(), 0,
                       [](int64_t s, int64_t v) { return s + v; });
}
OpFoldResult ReduceProdOp::fold(FoldAdaptor a) {
  return foldIntReduce(*this, a.getX(), 1,
                       [](int64_t s, int64_t v) { return s * v; });
}
OpFoldResult ReduceMaxOp::fold(FoldAdaptor a) {
  return foldIntReduce(*this, a.getX(), std::numeric_limits<int64_t>::min(),
                       [](int64_t s, int64_t v) { return std::max(s, v); });
}
OpFoldResult ReduceMinOp::fold(FoldAdaptor a) {
  return foldIntReduce(*this, a.getX(), std::numeric_limits<int64_t>::max(),
                       [](int64_t s, int64_t v) { return std::min(s, v); });
}
