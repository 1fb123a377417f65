//===- ResizeImporter.cpp - ONNX Resize and Upsample -> mpc.resize_axis ---===//
//
// Resize is separable: each resized axis is a weighted sum of a few input
// positions along that axis, with weights that depend only on the output
// position. The importer computes those tables here, step for step as
// onnx's reference (_interpolate_1d_along_axis) does in double precision,
// and emits one mpc.resize_axis per resized axis. Every ONNX mode (nearest
// with its four roundings, linear, cubic, antialias, exclude_outside, the
// seven coordinate transformations, roi, axes, keep_aspect_ratio_policy)
// is resolved here, so the runtimes and the gradient rule see one table op.
//
//===----------------------------------------------------------------------===//

#include "frontend/ImporterImpl.h"
#include "ir/MpcOps.h"

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Matchers.h"

#include <cmath>
#include <map>

namespace mlir::mpc::importer {
namespace {

struct ResizeAttrs {
  std::string mode = "nearest", coordinates = "half_pixel",
              nearest = "round_prefer_floor", policy = "stretch";
  double cubicA = -0.75, extrapolation = 0.0;
  bool excludeOutside = false, antialias = false;
};

/// The coefficients of one output position (ONNX's get_coeffs functions);
/// `ratio` is in (0, 1], `scale` the axis scale.
std::vector<double> coefficients(const ResizeAttrs &a, double ratio,
                                 double scale) {
  if (a.mode == "nearest") {
    if (ratio == std::floor(ratio))
      return {0, 1};
    const std::string &m = a.nearest;
    if (m == "round_prefer_floor")
      return {double(ratio <= 0.5), double(ratio > 0.5)};
    if (m == "round_prefer_ceil")
      return {double(ratio < 0.5), double(ratio >= 0.5)};
    if (m == "floor")
      return {1, 0};
    return {0, 1}; // ceil
  }
  auto normalized = [](std::vector<double> c) {
    double sum = 0;
    for (double v : c)
      sum += v;
    for (double &v : c)
      v /= sum;
    return c;
  };
  if (a.mode == "linear") {
    if (!a.antialias)
      return {1 - ratio, ratio};
    double s = std::min(scale, 1.0);
    int64_t start = (int64_t)std::floor(-1 / s) + 1, footprint = 2 - 2 * start;
    std::vector<double> c;
    for (int64_t i = start; i < start + footprint; ++i)
      c.push_back(std::clamp(1 - std::fabs((i - ratio) * s), 0.0, 1.0));
    return normalized(c);
  }
  double A = a.cubicA;
  if (!a.antialias) {
    double r = ratio, q = 1 - ratio;
    return {((A * (r + 1) - 5 * A) * (r + 1) + 8 * A) * (r + 1) - 4 * A,
            ((A + 2) * r - (A + 3)) * r * r + 1,
            ((A + 2) * q - (A + 3)) * q * q + 1,
            ((A * (q + 1) - 5 * A) * (q + 1) + 8 * A) * (q + 1) - 4 * A};
  }
  double s = std::min(scale, 1.0);
  auto kernel = [&](double x) {
    x = std::fabs(x);
    double x2 = x * x, x3 = x * x2;
    if (x <= 1)
      return (A + 2) * x3 - (A + 3) * x2 + 1;
    if (x < 2)
      return A * x3 - 5 * A * x2 + 8 * A * x - 4 * A;
    return 0.0;
  };
  int64_t start = (int64_t)std::floor(-2 / s) + 1, end = 2 - start;
  std::vector<double> c;
  for (int64_t i = start; i < end; ++i)
    c.push_back(kernel(s * (i - ratio)));
  return normalized(c);
}

/// One axis's table: `size` rows of `taps` (index, weight) pairs, and the
/// extrapolation value of rows whose source lies outside the input.
struct AxisTable {
  int64_t size = 0, taps = 1;
  std::vector<int64_t> indices;
  std::vector<float> weights, fill;
  bool hasFill = false;
};

/// The table of an axis of `in` positions resized to `out` with `scale`
/// (onnx's _interpolate_1d_along_axis; roi = [start, end] or empty).
AxisTable axisTable(const ResizeAttrs &a, int64_t in, int64_t out,
                    double scale, const std::vector<double> &roi) {
  double outWidth = scale * in;
  std::vector<std::map<int64_t, double>> rows(out);
  std::vector<bool> outside(out, false);
  for (int64_t o = 0; o < out; ++o) {
    double y = (double)o, x;
    const std::string &m = a.coordinates;
    if (m == "align_corners")
      x = outWidth == 1 ? 0.0 : y * (in - 1) / (outWidth - 1);
    else if (m == "asymmetric")
      x = y / scale;
    else if (m == "tf_crop_and_resize") {
      x = outWidth == 1 ? (roi[1] - roi[0]) * (in - 1) / 2
                        : y * (roi[1] - roi[0]) * (in - 1) / (outWidth - 1);
      x += roi[0] * (in - 1);
      outside[o] = x < 0 || x > in - 1;
    } else if (m == "pytorch_half_pixel")
      x = outWidth == 1 ? -0.5 : (y + 0.5) / scale - 0.5;
    else if (m == "tf_half_pixel_for_nn") // opset 11 only
      x = (y + 0.5) / scale;
    else if (m == "half_pixel_symmetric") {
      double offset = in / 2.0 * (1 - out / outWidth);
      x = offset + (y + 0.5) / scale - 0.5;
    } else // half_pixel
      x = (y + 0.5) / scale - 0.5;
    double floorX = std::floor(x);
    double ratio = x == floorX ? 1.0 : x - floorX;
    std::vector<double> c = coefficients(a, ratio, scale);
    int64_t n = c.size(), pad = (n + 1) / 2;
    double xp = x + pad;
    int64_t p = (int64_t)std::floor(xp);
    double frac = xp - p;
    int64_t offset = n % 2 == 0 ? (frac == 0 ? -(n / 2) : -(n / 2) + 1)
                                : (frac <= 0.5 ? -((n - 1) / 2)
                                               : -((n - 1) / 2) + 1);
    int64_t first = p + offset - pad;
    if (a.excludeOutside) {
      double sum = 0;
      for (int64_t k = 0; k < n; ++k) {
        if (first + k < 0 || first + k >= in)
          c[k] = 0;
        sum += c[k];
      }
      for (double &v : c)
        v /= sum == 0 ? 1 : sum;
    }
    if (outside[o])
      continue;
    // Edge padding is clamping; taps that clamp to one index merge.
    for (int64_t k = 0; k < n; ++k)
      if (c[k] != 0)
        rows[o][std::clamp<int64_t>(first + k, 0, in - 1)] += c[k];
  }
  AxisTable t;
  t.size = out;
  for (const auto &row : rows)
    t.taps = std::max<int64_t>(t.taps, row.size());
  for (int64_t o = 0; o < out; ++o) {
    int64_t k = 0;
    for (const auto &[index, weight] : rows[o]) {
      t.indices.push_back(index);
      t.weights.push_back((float)weight);
      ++k;
    }
    for (; k < t.taps; ++k) { // padding taps: weight 0, never read
      t.indices.push_back(0);
      t.weights.push_back(0.0f);
    }
    t.fill.push_back(outside[o] ? (float)a.extrapolation : 0.0f);
    t.hasFill |= outside[o];
  }
  return t;
}

/// The values of a float constant, or of a 1-D Concat of them (torch
/// exports Resize's scales as Concat(Constant, Constant)); false otherwise.
bool floatValues(Value v, std::vector<double> &out) {
  DenseElementsAttr value;
  if (matchPattern(v, m_Constant(&value))) {
    if (!llvm::isa<FloatType>(value.getElementType()))
      return false;
    for (APFloat f : value.getValues<APFloat>())
      out.push_back(f.convertToDouble());
    return true;
  }
  auto concat = v.getDefiningOp<ConcatOp>();
  if (!concat || llvm::cast<RankedTensorType>(v.getType()).getRank() != 1)
    return false;
  for (Value part : concat.getInputs())
    if (!floatValues(part, out))
      return false;
  return true;
}

/// Float values of constant input `i` (empty when the input is omitted).
FailureOr<std::vector<double>> constantFloats(NodeContext &c, unsigned i,
                                              StringRef what) {
  std::vector<double> out;
  if (c.input(i) && !floatValues(c.input(i), out)) {
    (void)c.fail(what + " (input " + Twine(i) +
                 ") must be a constant float tensor (--freeze binds an input)");
    return failure();
  }
  return out;
}

LogicalResult importResizeLike(NodeContext &c, bool upsample) {
  if (failed(c.requireInputs(1)))
    return failure();
  ResizeAttrs a;
  auto x = llvm::dyn_cast<RankedTensorType>(c.input(0).getType());
  if (!x || !llvm::isa<FloatType>(x.getElementType()))
    return c.fail("X must be a float tensor (mpc resizes float data only)");
  int64_t rank = x.getRank();
  std::vector<double> scales, roi;
  SmallVector<int64_t> sizes, axes;
  if (upsample || c.opset < 11) {
    // Upsample and Resize-10: asymmetric coordinates, scales only; nearest
    // takes the position's floor (np.repeat for integer scales).
    if (failed(c.checkAttrs({"mode", "scales"})))
      return failure();
    a.coordinates = "asymmetric";
    a.nearest = "floor";
    a.mode = c.getString("mode", "nearest");
    if (a.mode == "bilinear")
      a.mode = "linear";
    if (upsample && c.opset < 9) {
      if (const onnx::AttributeProto *f = c.attr("scales"))
        for (float v : f->floats())
          scales.push_back(v);
    } else {
      auto s = constantFloats(c, 1, "scales");
      if (failed(s))
        return failure();
      scales = *s;
    }
  } else {
    if (failed(c.checkAttrs({"antialias", "axes", "coordinate_transformation_mode",
                             "cubic_coeff_a", "exclude_outside",
                             "extrapolation_value", "keep_aspect_ratio_policy",
                             "mode", "nearest_mode"})))
      return failure();
    a.mode = c.getString("mode", "nearest");
    a.coordinates = c.getString("coordinate_transformation_mode", "half_pixel");
    a.nearest = c.getString("nearest_mode", "round_prefer_floor");
    a.policy = c.getString("keep_aspect_ratio_policy", "stretch");
    a.cubicA = c.getFloat("cubic_coeff_a", -0.75f);
    a.extrapolation = c.getFloat("extrapolation_value", 0.0f);
    a.excludeOutside = c.getInt("exclude_outside", 0) != 0;
    a.antialias = c.getInt("antialias", 0) != 0;
    if (auto given = c.getInts("axes"))
      axes = *given;
    auto r = constantFloats(c, 1, "roi");
    auto s = constantFloats(c, 2, "scales");
    if (failed(r) || failed(s))
      return failure();
    roi = *r;
    scales = *s;
    if (c.input(3)) {
      auto z = c.constantInts(3, "sizes");
      if (failed(z))
        return failure();
      sizes = *z;
    }
  }
  if (c.failed())
    return failure();
  static const char *kModes[] = {"nearest", "linear", "cubic"};
  static const char *kCoordinates[] = {
      "half_pixel",    "half_pixel_symmetric", "pytorch_half_pixel",
      "align_corners", "asymmetric",           "tf_crop_and_resize",
      "tf_half_pixel_for_nn"};
  static const char *kNearest[] = {"round_prefer_floor", "round_prefer_ceil",
                                   "floor", "ceil"};
  static const char *kPolicies[] = {"stretch", "not_larger", "not_smaller"};
  auto oneOf = [](const std::string &v, auto &list) {
    return llvm::is_contained(list, StringRef(v));
  };
  if (!oneOf(a.mode, kModes))
    return c.fail("attribute mode '" + a.mode + "' is not supported "
                  "(nearest, linear, cubic)");
  if (!oneOf(a.coordinates, kCoordinates))
    return c.fail("attribute coordinate_transformation_mode '" +
                  a.coordinates + "' is not supported");
  if (!oneOf(a.nearest, kNearest))
    return c.fail("attribute nearest_mode '" + a.nearest +
                  "' is not supported");
  if (!oneOf(a.policy, kPolicies))
    return c.fail("attribute keep_aspect_ratio_policy '" + a.policy +
                  "' is not supported");
  if (a.antialias && a.mode == "nearest")
    return c.fail("attribute antialias is not defined for mode nearest");
  if (axes.empty())
    for (int64_t i = 0; i < rank; ++i)
      axes.push_back(i);
  for (int64_t &axis : axes) {
    if (axis < -rank || axis >= rank)
      return c.fail("attribute axes: " + Twine(axis) +
                    " is out of range for rank " + Twine(rank));
    axis = axis < 0 ? axis + rank : axis;
  }
  size_t n = axes.size();
  if (!scales.empty() && !sizes.empty())
    return c.fail("scales and sizes are both given (one of them must be "
                  "empty or omitted)");
  if (scales.empty() && sizes.empty())
    return c.fail("neither scales nor sizes is given");
  if ((!scales.empty() && scales.size() != n) ||
      (!sizes.empty() && sizes.size() != n))
    return c.fail("scales/sizes need " + Twine(n) + " values (one per " +
                  (axes.size() == (size_t)rank ? "axis" : "entry of axes") +
                  "), got " + Twine(std::max(scales.size(), sizes.size())));
  bool crop = a.coordinates == "tf_crop_and_resize";
  if (crop && roi.size() != 2 * n)
    return c.fail("tf_crop_and_resize needs roi with " + Twine(2 * n) +
                  " values, got " + Twine(roi.size()));
  // Per resized axis: input and output size and scale, as onnx's
  // _interpolate_nd computes them.
  std::vector<int64_t> in(n), out(n);
  std::vector<double> scale(n);
  for (size_t i = 0; i < n; ++i) {
    in[i] = x.getDimSize(axes[i]);
    bool changes = sizes.empty() ? scales[i] != 1.0 : sizes[i] != in[i];
    if (in[i] == ShapedType::kDynamic) {
      if (changes || crop)
        return c.fail("axis " + Twine(axes[i]) +
                      " is resized but its size is not static");
      continue;
    }
    if (!scales.empty() && !(scales[i] > 0))
      return c.fail("scales must be positive, got " + std::to_string(scales[i]));
    if (!sizes.empty() && sizes[i] <= 0)
      return c.fail("sizes must be positive, got " + Twine(sizes[i]));
    if (in[i] == 0)
      return c.fail("axis " + Twine(axes[i]) + " of X is empty");
    scale[i] = sizes.empty() ? scales[i] : (double)sizes[i] / in[i];
    out[i] = sizes.empty() ? (int64_t)(scale[i] * in[i]) : sizes[i];
  }
  if (!sizes.empty() && a.policy != "stretch") {
    double s = a.policy == "not_larger" ? *llvm::min_element(scale)
                                        : *llvm::max_element(scale);
    for (size_t i = 0; i < n; ++i) {
      scale[i] = s;
      out[i] = (int64_t)(s * in[i] + 0.5);
    }
  }
  Value v = c.input(0);
  for (size_t i = 0; i < n; ++i) {
    if (in[i] == ShapedType::kDynamic)
      continue;
    if (out[i] <= 0)
      return c.fail("axis " + Twine(axes[i]) + " resizes to " +
                    Twine(out[i]) + " positions");
    std::vector<double> axisRoi;
    if (crop)
      axisRoi = {roi[i], roi[n + i]};
    bool identity = std::fabs(scale[i] - 1.0) <= 1e-9 && out[i] == in[i] &&
                    (!crop || (std::fabs(axisRoi[0]) <= 1e-9 &&
                               std::fabs(axisRoi[1] - 1) <= 1e-9));
    if (identity)
      continue;
    AxisTable t = axisTable(a, in[i], out[i], scale[i], axisRoi);
    SmallVector<NamedAttribute> attrs{
        c.named("axis", c.b.getI64IntegerAttr(axes[i])),
        c.named("size", c.b.getI64IntegerAttr(t.size)),
        c.named("indices", c.b.getDenseI64ArrayAttr(t.indices)),
        c.named("weights", c.b.getDenseF32ArrayAttr(t.weights))};
    if (t.hasFill)
      attrs.push_back(c.named("fill", c.b.getDenseF32ArrayAttr(t.fill)));
    auto r = c.build("mpc.resize_axis", {v}, attrs);
    if (failed(r))
      return failure();
    v = (*r)[0];
  }
  return c.setOutputs({v});
}

} // namespace

LogicalResult importResize(NodeContext &c) { return importResizeLike(c, false); }
LogicalResult importUpsample(NodeContext &c) { return importResizeLike(c, true); }

} // namespace mlir::mpc::importer
