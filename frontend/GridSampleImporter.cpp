//===- GridSampleImporter.cpp - GridSample and AffineGrid, composed -------===//
//
// GridSample (16; N-D in 20: spatial transformers, optical-flow warping,
// deformable sampling) imported as its definition in mpc ops, step for
// step with onnx's reference (torch's grid_sampler): each grid point's
// coordinates un-normalized per axis, fixed by the padding mode (border
// clamps, reflection folds), its taps (nearest: 1, linear: 2, cubic: 4 an
// axis) gathered from X flattened to [N, C, S] and weighted by the
// products of their coefficients. Autodiff then gives both gradients: X's
// through gather_elements' scatter, the grid's through the coefficients
// (floor and round pass none), as torch's grid_sampler_backward computes
// them. Every op is marked mpc.amp_fp32: coordinates of a few hundred
// pixels lose their fraction in fp16 (autocast promotes grid_sampler to
// its widest input). AffineGrid (20: the grid of a spatial transformer)
// is its base grid, a constant, times theta transposed: one batched MatMul,
// also kept FP32.
//
//===----------------------------------------------------------------------===//

#include "frontend/Composer.h"
#include "frontend/ImporterImpl.h"
#include "ir/MpcOps.h"

namespace mlir::mpc::importer {
namespace {

enum class Padding { Zeros, Border, Reflection };

struct Sampler {
  Composer &m;
  Type et;
  Value scalar(double v) { return m.scalar(et, v); }
  Value add(Value a, Value b) { return m.bin("mpc.add", a, b); }
  Value sub(Value a, Value b) { return m.bin("mpc.sub", a, b); }
  Value mul(Value a, Value b) { return m.bin("mpc.mul", a, b); }
  Value floor(Value a) { return m.op("mpc.floor", {a}); }
  Value clamp(Value x, double lo, double hi) {
    return m.bin("mpc.min", m.bin("mpc.max", x, scalar(lo)), scalar(hi));
  }

  /// x folded into [lo, hi] by reflecting at the nearer border until it
  /// lies inside (onnx's _gs_reflect); hi == lo (one pixel, corners
  /// aligned) gives lo.
  Value reflect(Value x, double lo, double hi) {
    double range = hi - lo;
    if (range <= 0)
      return add(mul(x, scalar(0.0)), scalar(lo));
    Value below = m.bin("mpc.less", x, scalar(lo));
    Value above = m.bin("mpc.greater", x, scalar(hi));
    Value dx = m.where(below, sub(scalar(lo), x), sub(x, scalar(hi)));
    Value n = floor(m.bin("mpc.div", dx, scalar(range)));
    Value r = sub(dx, mul(n, scalar(range)));
    Value half = mul(n, scalar(0.5));
    Value even = m.bin("mpc.equal", floor(half), half);
    Value fromLo = add(scalar(lo), r), fromHi = sub(scalar(hi), r);
    return m.where(below, m.where(even, fromLo, fromHi),
                   m.where(above, m.where(even, fromHi, fromLo), x));
  }

  /// Keys' cubic convolution weights (a = -0.75) of the taps at -1, 0, 1,
  /// 2 from floor(x), t = x - floor(x).
  SmallVector<Value> cubic(Value t) {
    const double a = -0.75;
    auto outer = [&](Value s) { // s in [1, 2]
      return sub(mul(add(mul(sub(mul(s, scalar(a)), scalar(5 * a)), s),
                         scalar(8 * a)),
                     s),
                 scalar(4 * a));
    };
    auto inner = [&](Value s) { // s in [0, 1]
      return add(mul(mul(sub(mul(s, scalar(a + 2)), scalar(a + 3)), s), s),
                 scalar(1.0));
    };
    Value one = scalar(1.0);
    return {outer(add(t, one)), inner(t), inner(sub(one, t)),
            outer(sub(scalar(2.0), t))};
  }
};

struct Axis {
  SmallVector<Value> taps, weights; // float taps (integral values)
  int64_t size;
};

} // namespace

/// AffineGrid: theta [N, k, k + 1] applied to the homogeneous positions
/// (x, y[, z], 1) of an output of spatial size `size` (x along the last
/// axis), each axis' positions from -1 to 1 (pixel centres, or corners with
/// align_corners), as a [S, k + 1] constant times theta transposed.
LogicalResult importAffineGrid(NodeContext &c) {
  if (failed(c.requireInputs(2)) || failed(c.checkAttrs({"align_corners"})))
    return failure();
  auto theta = typeOf(c.input(0));
  auto size = c.constantInts(1, "size");
  if (failed(size))
    return failure();
  int64_t k = (int64_t)size->size() - 2;
  if ((k != 2 && k != 3) || theta.getRank() != 3 || theta.isDynamicDim(1) ||
      theta.isDynamicDim(2) || theta.getDimSize(1) != k ||
      theta.getDimSize(2) != k + 1)
    return c.fail("theta must be N x 2 x 3 with a size of 4 values, or "
                  "N x 3 x 4 with 5");
  bool align = c.getInt("align_corners", 0) != 0;
  Type et = theta.getElementType();
  if (!llvm::isa<FloatType>(et))
    return c.fail("theta must be a float tensor");
  SmallVector<int64_t> dims(size->begin() + 2, size->end());
  int64_t points = 1;
  for (int64_t d : dims) {
    if (d < 1)
      return c.fail("size has a spatial size of " + Twine(d));
    points *= d;
  }
  auto position = [&](int64_t i, int64_t d) -> double {
    if (align)
      return d == 1 ? -1.0 : -1.0 + 2.0 * i / (d - 1);
    return (2.0 * i + 1) / d - 1;
  };
  // Row p: x, y[, z] of point p (row-major over dims), then 1.
  SmallVector<double> base;
  for (int64_t p = 0; p < points; ++p) {
    SmallVector<double> coords(k);
    int64_t rest = p;
    for (int64_t i = k - 1; i >= 0; --i) {
      coords[k - 1 - i] = position(rest % dims[i], dims[i]);
      rest /= dims[i];
    }
    base.append(coords.begin(), coords.end());
    base.push_back(1.0);
  }
  Fp32Region fp32(c);
  Composer m{c};
  Value grid = m.op("mpc.matmul", {m.floatValues(et, {points, k + 1}, base),
                                   m.transpose(c.input(0), {0, 2, 1})});
  SmallVector<int64_t> shape{0};
  shape.append(dims.begin(), dims.end());
  shape.push_back(k);
  grid = m.reshape(grid, shape);
  if (c.failed())
    return failure();
  fp32.keep("affine grid (sampling coordinates)");
  return c.setOutputs({grid});
}

LogicalResult importGridSample(NodeContext &c) {
  if (failed(c.requireInputs(2)) ||
      failed(c.checkAttrs({"align_corners", "mode", "padding_mode"})))
    return failure();
  auto x = typeOf(c.input(0)), grid = typeOf(c.input(1));
  int64_t k = x.getRank() - 2;
  if (k < 1 || grid.getRank() != k + 2)
    return c.fail("X must be N x C x D1..Dk and grid N x O1..Ok x k, got "
                  "ranks " + Twine(x.getRank()) + " and " +
                  Twine(grid.getRank()));
  if (k > 3)
    return c.fail("GridSample over more than 3 spatial axes is not supported");
  for (int64_t i = 1; i < x.getRank(); ++i)
    if (x.isDynamicDim(i) || grid.isDynamicDim(i) ||
        grid.isDynamicDim(grid.getRank() - 1))
      return c.fail("X and grid need static sizes past the batch dimension");
  if (grid.getShape().back() != k)
    return c.fail("grid's last axis has " + Twine(grid.getShape().back()) +
                  " coordinates; X has " + Twine(k) + " spatial axes");
  std::string mode = c.getString("mode", c.opset < 20 ? "bilinear" : "linear");
  if (mode == "bilinear")
    mode = "linear";
  if (mode == "bicubic")
    mode = "cubic";
  if (mode != "linear" && mode != "nearest" && mode != "cubic")
    return c.fail("unknown mode '" + mode + "'");
  std::string pad = c.getString("padding_mode", "zeros");
  Padding padding = pad == "zeros"    ? Padding::Zeros
                    : pad == "border" ? Padding::Border
                                      : Padding::Reflection;
  if (pad != "zeros" && pad != "border" && pad != "reflection")
    return c.fail("unknown padding_mode '" + pad + "'");
  bool align = c.getInt("align_corners", 0) != 0;
  Type et = x.getElementType();
  if (!llvm::isa<FloatType>(et))
    return c.fail("X must be a float tensor");

  Fp32Region fp32(c);
  Composer m{c};
  Sampler s{m, et};
  int64_t channels = x.getDimSize(1), points = 1, pixels = 1;
  for (int64_t d : grid.getShape().drop_front().drop_back())
    points *= d;
  for (int64_t d : x.getShape().drop_front(2))
    pixels *= d;
  Value flat = m.reshape(c.input(0), {0, channels, pixels});
  Value coords = m.reshape(m.cast(c.input(1), et), {0, points, k});

  // Per spatial axis i (grid's coordinate k-1-i): taps and their weights,
  // each [N, 1, P].
  SmallVector<Axis> axes;
  for (int64_t i = 0; i < k; ++i) {
    double d = x.getDimSize(2 + i);
    double lo = align ? 0.0 : -0.5, hi = align ? d - 1 : d - 0.5;
    Value g = m.reshape(m.slice(coords, 2, k - 1 - i, k - i), {0, 1, points});
    Value p = align ? s.mul(s.add(g, s.scalar(1.0)), s.scalar((d - 1) / 2))
                    : s.mul(s.sub(s.mul(s.add(g, s.scalar(1.0)), s.scalar(d)),
                                  s.scalar(1.0)),
                            s.scalar(0.5));
    if (mode == "nearest")
      p = m.op("mpc.round", {p}); // half to even, as torch's nearbyint
    if (padding == Padding::Border)
      p = m.where(m.op("mpc.or", {m.bin("mpc.less", p, s.scalar(lo)),
                                  m.bin("mpc.greater", p, s.scalar(hi))}),
                  s.clamp(p, 0, d - 1), p);
    else if (padding == Padding::Reflection)
      p = s.reflect(p, lo, hi);
    Axis axis{{}, {}, (int64_t)d};
    if (mode == "nearest") {
      axis.taps = {p};
      axis.weights = {Value()};
    } else {
      Value f = s.floor(p), t = s.sub(p, f);
      if (mode == "linear") {
        axis.taps = {f, s.add(f, s.scalar(1.0))};
        axis.weights = {s.sub(s.scalar(1.0), t), t};
      } else {
        for (double o : {-1.0, 0.0, 1.0, 2.0})
          axis.taps.push_back(s.add(f, s.scalar(o)));
        axis.weights = s.cubic(t);
      }
    }
    axes.push_back(axis);
  }

  // A tap's index along its axis (i64), and whether it lies inside (zeros
  // padding: outside taps read 0).
  auto indexOf = [&](Value tap, int64_t size, Value &inside) {
    double lo = align ? 0.0 : -0.5, hi = align ? size - 1.0 : size - 0.5;
    if (padding == Padding::Zeros)
      inside = m.op("mpc.and",
                    {m.bin("mpc.greater_or_equal", tap, s.scalar(0.0)),
                     m.bin("mpc.less", tap, s.scalar((double)size))});
    Value fixed = padding == Padding::Reflection
                      ? s.floor(s.clamp(s.reflect(tap, lo, hi), 0, size - 1))
                      : s.clamp(tap, 0, size - 1);
    return m.cast(fixed, c.b.getI64Type());
  };
  SmallVector<SmallVector<std::pair<Value, Value>>> indices(k);
  for (int64_t i = 0; i < k; ++i)
    for (Value tap : axes[i].taps) {
      Value inside;
      Value idx = indexOf(tap, axes[i].size, inside);
      indices[i].push_back({idx, inside});
    }

  // Every combination of one tap an axis: gather, weight, sum.
  Value shape = m.concat({m.slice(m.op("mpc.shape", {flat}), 0, 0, 2),
                          m.i64s({points})},
                         0);
  SmallVector<int64_t> pick(k, 0);
  Value y;
  while (!c.failed()) {
    Value flatIndex, weight, inside;
    int64_t stride = 1;
    for (int64_t i = k - 1; i >= 0; --i) {
      auto [idx, in] = indices[i][pick[i]];
      Value term = stride == 1 ? idx
                               : m.bin("mpc.mul", idx, m.i64s({stride}, {}));
      flatIndex = flatIndex ? m.bin("mpc.add", flatIndex, term) : term;
      if (Value w = axes[i].weights[pick[i]])
        weight = weight ? s.mul(weight, w) : w;
      if (in)
        inside = inside ? m.op("mpc.and", {inside, in}) : in;
      stride *= axes[i].size;
    }
    Value v = m.op("mpc.gather_elements",
                   {flat, m.op("mpc.expand", {flatIndex, shape})},
                   {c.named("axis", c.b.getI64IntegerAttr(2))});
    if (inside)
      v = m.where(inside, v, s.scalar(0.0));
    if (weight)
      v = s.mul(v, weight);
    y = y ? s.add(y, v) : v;
    int64_t i = k - 1;
    while (i >= 0 && ++pick[i] == (int64_t)axes[i].taps.size())
      pick[i--] = 0;
    if (i < 0)
      break;
  }
  SmallVector<int64_t> outShape{0, channels};
  for (int64_t d : grid.getShape().drop_front().drop_back())
    outShape.push_back(d);
  y = m.reshape(y, outShape);
  if (c.failed())
    return failure();
  fp32.keep("grid sampling (its coordinates)");
  return c.setOutputs({y});
}

} // namespace mlir::mpc::importer
