//===- MaskBand.cpp - the band of a mask computed from constants ---------===//
//
// Model code builds causal and sliding-window masks from constants in
// many ways, and the exported graph keeps the arithmetic: Hugging Face's
// Llama (4.36) a where() over a condition torch folded, its Mistral
// where(1 - triu(ones, -w), min, where(causal, 0, min)) in int32, others
// Trilus, logs, comparisons. Rather than match each spelling,
// mpc-fuse-attention evaluates such a mask element by element (each
// element a walk of its ops, nothing materialized) and asks whether what
// a query sees is the band of mpc.attention.
//
//===----------------------------------------------------------------------===//

#include "passes/AttentionPatterns.h"

#include "mlir/IR/Matchers.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <type_traits>

namespace mlir::mpc::attention_patterns {

namespace {

/// Row r of a value (flat over all its dimensions but the last) into
/// `out`, as many elements as its last dimension: a mask is evaluated a
/// row at a time, its ops' loops tight, nothing of its size stored.
using Rows = std::function<void(int64_t r, double *out)>;

int64_t lastDim(RankedTensorType t) {
  return t.getRank() ? t.getShape().back() : 1;
}

/// For a value shaped `from` broadcast to `to` (aligned on the last
/// axes): its flat index at each flat index of `to`.
std::function<int64_t(int64_t)> broadcastIndex(ArrayRef<int64_t> to,
                                               ArrayRef<int64_t> from) {
  if (to == from)
    return [](int64_t k) { return k; };
  SmallVector<int64_t> dims(to.begin(), to.end()), strides(to.size(), 0);
  int64_t stride = 1;
  for (int64_t a = (int64_t)from.size() - 1, b = (int64_t)to.size() - 1; a >= 0;
       --a, --b) {
    strides[b] = from[a] == 1 ? 0 : stride;
    stride *= from[a];
  }
  return [dims, strides](int64_t k) {
    int64_t at = 0;
    for (int64_t d = (int64_t)dims.size() - 1; d >= 0; --d) {
      at += k % dims[d] * strides[d];
      k /= dims[d];
    }
    return at;
  };
}

std::optional<Rows> rowsOf(Value v, int depth);

/// The rows of `in` broadcast to `t` (the elementwise ops' and Expand's
/// rule: aligned on the last axes, dimensions of 1 repeated).
std::optional<Rows> broadcastRows(Value in, RankedTensorType t, int depth) {
  RankedTensorType a = typeOf(in);
  auto x = rowsOf(in, depth + 1);
  if (!x || a.getRank() > t.getRank())
    return std::nullopt;
  // (A scalar's one row: Max(scalar, n) computing a mask's length.)
  auto lead = broadcastIndex(
      t.getRank() ? t.getShape().drop_back() : ArrayRef<int64_t>(),
      a.getRank() ? a.getShape().drop_back() : ArrayRef<int64_t>());
  const int64_t ca = lastDim(a), c = lastDim(t);
  if (ca == c)
    return Rows([x = *x, lead](int64_t r, double *out) { x(lead(r), out); });
  return Rows([x = *x, lead, c](int64_t r, double *out) {
    x(lead(r), out);
    std::fill(out + 1, out + c, out[0]);
  });
}

/// The constant integers of `v` (none: `fallback`).
std::optional<SmallVector<int64_t>> intsOf(Value v, SmallVector<int64_t> fallback) {
  if (!v)
    return fallback;
  DenseIntElementsAttr attr;
  if (!matchPattern(v, m_Constant(&attr)))
    return std::nullopt;
  SmallVector<int64_t> out;
  for (const APInt &x : attr.getValues<APInt>())
    out.push_back(x.getSExtValue());
  return out;
}

/// The rows of a Slice with constant starts, axes and steps: each output
/// element reads the input at start + index * step on every axis.
std::optional<Rows> sliceRows(SliceOp slice, int depth) {
  RankedTensorType in = typeOf(slice.getData()), out = typeOf(slice.getOutput());
  const int64_t rank = in.getRank();
  SmallVector<int64_t> all;
  for (int64_t d = 0; d < rank; ++d)
    all.push_back(d);
  auto starts = intsOf(slice.getStarts(), {});
  auto axes = intsOf(slice.getAxes(), all);
  auto steps = intsOf(slice.getSteps(), SmallVector<int64_t>(rank, 1));
  auto x = rowsOf(slice.getData(), depth + 1);
  if (!x || !starts || !axes || !steps || rank < 1 || !out.hasStaticShape() ||
      axes->size() != starts->size() || steps->size() != starts->size())
    return std::nullopt;
  SmallVector<int64_t> begin(rank, 0), step(rank, 1);
  for (size_t k = 0; k < axes->size(); ++k) {
    const int64_t a = (*axes)[k] < 0 ? (*axes)[k] + rank : (*axes)[k];
    if (a < 0 || a >= rank || (*steps)[k] == 0)
      return std::nullopt;
    const int64_t n = in.getDimSize(a), st = (*steps)[k];
    int64_t b = (*starts)[k] < 0 ? (*starts)[k] + n : (*starts)[k];
    b = st > 0 ? std::clamp<int64_t>(b, 0, n) : std::clamp<int64_t>(b, 0, n - 1);
    begin[a] = b;
    step[a] = st;
  }
  const int64_t c = lastDim(out), cin = lastDim(in);
  return Rows([x = *x, begin, step, dims = SmallVector<int64_t>(out.getShape()),
               inDims = SmallVector<int64_t>(in.getShape()), c, cin,
               buf = std::vector<double>(cin)](int64_t r, double *o) mutable {
    int64_t inRow = 0, stride = 1;
    for (int64_t d = (int64_t)dims.size() - 2; d >= 0; --d) {
      inRow += (begin[d] + r % dims[d] * step[d]) * stride;
      stride *= inDims[d];
      r /= dims[d];
    }
    x(inRow, buf.data());
    const int64_t last = (int64_t)dims.size() - 1;
    for (int64_t j = 0; j < c; ++j)
      o[j] = buf[begin[last] + j * step[last]];
  });
}

/// The rows of a Tile: each output element reads the input at its
/// coordinates modulo the input's dimensions.
std::optional<Rows> tileRows(TileOp tile, int depth) {
  RankedTensorType in = typeOf(tile.getX()), out = typeOf(tile.getResult());
  auto x = rowsOf(tile.getX(), depth + 1);
  if (!x || in.getRank() != out.getRank() || in.getRank() < 1 || !out.hasStaticShape())
    return std::nullopt;
  const int64_t c = lastDim(out), cin = lastDim(in);
  return Rows([x = *x, dims = SmallVector<int64_t>(out.getShape()),
               inDims = SmallVector<int64_t>(in.getShape()), c, cin,
               buf = std::vector<double>(cin)](int64_t r, double *o) mutable {
    int64_t inRow = 0, stride = 1;
    for (int64_t d = (int64_t)dims.size() - 2; d >= 0; --d) {
      inRow += r % dims[d] % inDims[d] * stride;
      stride *= inDims[d];
      r /= dims[d];
    }
    x(inRow, buf.data());
    for (int64_t j = 0; j < c; ++j)
      o[j] = buf[j % cin];
  });
}

/// The rows of `v`, where `v` is computed from constants by the ops masks
/// are built with.
std::optional<Rows> rowsOf(Value v, int depth) {
  RankedTensorType t = typeOf(v);
  if (!t.hasStaticShape() || depth > 24)
    return std::nullopt;
  const int64_t c = lastDim(t);
  DenseElementsAttr attr;
  if (matchPattern(v, m_Constant(&attr))) {
    auto number = [&](auto e) -> double {
      using E = decltype(e);
      if constexpr (std::is_same_v<E, APFloat>)
        return e.convertToDouble();
      else if constexpr (std::is_same_v<E, bool>)
        return e ? 1.0 : 0.0;
      else
        return (double)e.getSExtValue();
    };
    std::vector<double> x;
    Type elem = attr.getElementType();
    if (attr.isSplat()) {
      double e = llvm::isa<FloatType>(elem) ? number(attr.getSplatValue<APFloat>())
                 : elem.isInteger(1)        ? number(attr.getSplatValue<bool>())
                                            : number(attr.getSplatValue<APInt>());
      return Rows([e, c](int64_t, double *out) { std::fill(out, out + c, e); });
    }
    // FP32 and 64/32-bit integers read a row at a time from the raw data
    // (a 4096 x 4097 mask is 16M elements, each an APFloat otherwise).
    if (elem.isF32() || elem.isInteger(64) || elem.isInteger(32)) {
      const char *raw = attr.getRawData().data();
      const int width = elem.isInteger(64) ? 8 : 4;
      return Rows([raw, width, f32 = elem.isF32(), c](int64_t r, double *out) {
        for (int64_t j = 0; j < c; ++j) {
          const char *p = raw + (r * c + j) * width;
          if (f32) {
            float f;
            std::memcpy(&f, p, 4);
            out[j] = f;
          } else if (width == 8) {
            int64_t i;
            std::memcpy(&i, p, 8);
            out[j] = (double)i;
          } else {
            int32_t i;
            std::memcpy(&i, p, 4);
            out[j] = i;
          }
        }
      });
    }
    x.reserve(attr.getNumElements());
    if (llvm::isa<FloatType>(elem))
      for (const APFloat &e : attr.getValues<APFloat>())
        x.push_back(number(e));
    else if (elem.isInteger(1))
      for (bool e : attr.getValues<bool>())
        x.push_back(number(e));
    else
      for (const APInt &e : attr.getValues<APInt>())
        x.push_back(number(e));
    return Rows([x = std::move(x), c](int64_t r, double *out) {
      std::copy(x.begin() + r * c, x.begin() + (r + 1) * c, out);
    });
  }
  Operation *op = v.getDefiningOp();
  if (!op)
    return std::nullopt;
  auto arg = [&](unsigned n) { return broadcastRows(op->getOperand(n), t, depth); };
  if (isa<ExpandOp>(op))
    return arg(0);
  // An Unsqueeze or Reshape keeps the elements' order; its rows may cut
  // them differently (arange(n).view(n, 1) moves a row to a column).
  if (isa<UnsqueezeOp, ReshapeOp>(op)) {
    const int64_t ca = lastDim(typeOf(op->getOperand(0)));
    auto x = rowsOf(op->getOperand(0), depth + 1);
    if (!x)
      return std::nullopt;
    if (ca == c)
      return x;
    return Rows([x = *x, c, ca, buf = std::vector<double>(ca)](int64_t r, double *out) mutable {
      int64_t row = -1;
      for (int64_t j = 0; j < c; ++j) {
        const int64_t k = r * c + j;
        if (k / ca != row)
          x(row = k / ca, buf.data());
        out[j] = buf[k % ca];
      }
    });
  }
  if (auto slice = dyn_cast<SliceOp>(op)) // (Hugging Face 4.4x: mask[..., :keys])
    return sliceRows(slice, depth);
  if (auto tile = dyn_cast<TileOp>(op)) // (T5's causal mask: arange tiled)
    return tileRows(tile, depth);
  if (auto trilu = dyn_cast<TriluOp>(op)) {
    auto x = arg(0);
    if (!x || t.getRank() < 2)
      return std::nullopt;
    const int64_t rows = t.getDimSize(t.getRank() - 2);
    const int64_t k = static_cast<int64_t>(trilu.getK());
    const bool upper = trilu.getUpper();
    return Rows([x = *x, rows, c, k, upper](int64_t r, double *out) {
      x(r, out);
      const int64_t i = r % rows;
      for (int64_t j = 0; j < c; ++j)
        if (upper ? j - i < k : j - i > k)
          out[j] = 0.0;
    });
  }
  using Unary = double (*)(double);
  Unary unary = nullptr;
  if (auto cast = dyn_cast<CastOp>(op)) {
    Type to = typeOf(cast).getElementType();
    unary = to.isInteger(1) ? Unary([](double a) { return a != 0.0 ? 1.0 : 0.0; })
            : llvm::isa<IntegerType>(to) ? Unary([](double a) { return std::trunc(a); })
                                         : Unary([](double a) { return a; });
  }
  unary = isa<NegOp>(op)   ? Unary([](double a) { return -a; })
          : isa<LogOp>(op) ? Unary([](double a) { return std::log(a); })
          : isa<NotOp>(op) ? Unary([](double a) { return a != 0.0 ? 0.0 : 1.0; })
          // |i - j| <= w: ModernBERT's local (two-sided) window
          : isa<AbsOp>(op) ? Unary([](double a) { return std::fabs(a); })
                           : unary;
  if (unary) {
    auto x = arg(0);
    if (!x)
      return std::nullopt;
    return Rows([x = *x, unary, c](int64_t r, double *out) {
      x(r, out);
      for (int64_t j = 0; j < c; ++j)
        out[j] = unary(out[j]);
    });
  }
  using Binary = double (*)(double, double);
  Binary binary =
      isa<AddOp>(op)     ? Binary([](double a, double b) { return a + b; })
      : isa<SubOp>(op)   ? Binary([](double a, double b) { return a - b; })
      : isa<MulOp>(op)   ? Binary([](double a, double b) { return a * b; })
      : isa<AndOp>(op)   ? Binary([](double a, double b) { return a != 0.0 && b != 0.0 ? 1.0 : 0.0; })
      : isa<OrOp>(op)    ? Binary([](double a, double b) { return a != 0.0 || b != 0.0 ? 1.0 : 0.0; })
      : isa<EqualOp>(op) ? Binary([](double a, double b) { return a == b ? 1.0 : 0.0; })
      : isa<LessOp>(op)  ? Binary([](double a, double b) { return a < b ? 1.0 : 0.0; })
      : isa<LessOrEqualOp>(op) ? Binary([](double a, double b) { return a <= b ? 1.0 : 0.0; })
      : isa<GreaterOp>(op)     ? Binary([](double a, double b) { return a > b ? 1.0 : 0.0; })
      : isa<GreaterOrEqualOp>(op)
          ? Binary([](double a, double b) { return a >= b ? 1.0 : 0.0; })
          : nullptr;
  if (binary) {
    auto a = arg(0), b = arg(1);
    if (!a || !b)
      return std::nullopt;
    return Rows([a = *a, b = *b, binary, c, buf = std::vector<double>(c)](int64_t r, double *out) mutable {
      a(r, out);
      b(r, buf.data());
      for (int64_t j = 0; j < c; ++j)
        out[j] = binary(out[j], buf[j]);
    });
  }
  if (isa<WhereOp>(op)) {
    auto cond = arg(0), x = arg(1), y = arg(2);
    if (!cond || !x || !y)
      return std::nullopt;
    return Rows([cond = *cond, x = *x, y = *y, c, bc = std::vector<double>(c),
                 bx = std::vector<double>(c)](int64_t r, double *out) mutable {
      cond(r, bc.data());
      x(r, bx.data());
      y(r, out);
      for (int64_t j = 0; j < c; ++j)
        if (bc[j] != 0.0)
          out[j] = bx[j];
    });
  }
  return std::nullopt;
}

} // namespace

namespace {

/// A mask broadcast to sq x skv scores, a row at a time: `lead` x `rows`
/// rows (`rows` 1 or sq) of `cols` (1 or skv) values.
struct MaskRows {
  Rows at;
  int64_t lead, rows, cols;
};

std::optional<MaskRows> maskRowsOf(Value mask, int64_t sq, int64_t skv) {
  // The mask broadcast over batch and heads (Expand, Unsqueeze, Reshape
  // keeping the scores' last two dimensions) is evaluated before it.
  Value v = mask;
  while (Operation *op = v.getDefiningOp()) {
    auto in = isa<ExpandOp, UnsqueezeOp, ReshapeOp>(op)
                  ? typeOf(op->getOperand(0)) : RankedTensorType();
    if (!in || !in.hasStaticShape() || in.getRank() < 2 ||
        in.getDimSize(in.getRank() - 2) != sq || in.getDimSize(in.getRank() - 1) != skv)
      break;
    v = op->getOperand(0);
  }
  RankedTensorType t = typeOf(v);
  if (!t.hasStaticShape() || sq < 1 || skv < 1)
    return std::nullopt;
  const int64_t r = t.getRank();
  const int64_t cols = lastDim(t), rows = r >= 2 ? t.getDimSize(r - 2) : 1;
  if ((rows != 1 && rows != sq) || (cols != 1 && cols != skv))
    return std::nullopt;
  // One band for every leading index (a mask per batch row, as Bloom's
  // expands its padding mask): up to 64M elements, 4 x 4096^2.
  const int64_t lead = t.getNumElements() / (rows * cols);
  if (lead * sq * skv > (int64_t(1) << 26))
    return std::nullopt;
  auto x = rowsOf(v, 0);
  if (!x)
    return std::nullopt;
  return MaskRows{*x, lead, rows, cols};
}

} // namespace

std::optional<Band> constantBand(Value bias, int64_t sq, int64_t skv) {
  auto m = maskRowsOf(bias, sq, skv);
  if (!m)
    return std::nullopt;
  std::vector<double> row(m->cols);
  std::optional<Band> band;
  for (int64_t n = 0; n < m->lead; ++n) {
    bool additive = true; // every element 0 (seen) or masked
    bool halfLowest = false;
    int64_t held = -1;
    auto here = bandOfVisible(sq, skv, [&](int64_t i, int64_t j) {
      const int64_t at = n * m->rows + (m->rows == 1 ? 0 : i);
      if (at != held)
        m->at(held = at, row.data());
      const double e = row[m->cols == 1 ? 0 : j];
      halfLowest |= e == kHalfLowest;
      additive &= e == 0.0 || maskingFill(e);
      return e == 0.0;
    });
    // (FP16's lowest masks as -inf where every row keeps a key: the band
    // bandOfVisible found gives each row its run, empty ones too.)
    if (!additive || !here || (band && !(*band == *here)) ||
        (halfLowest && !everyRowSeesKey(*here, sq, skv)))
      return std::nullopt;
    band = here;
  }
  return band;
}

bool everyRowKeepsKey(Value cond, bool keptWhereTrue, int64_t sq, int64_t skv) {
  auto m = maskRowsOf(cond, sq, skv);
  if (!m)
    return false;
  std::vector<double> row(m->cols);
  for (int64_t r = 0; r < m->lead * m->rows; ++r) {
    m->at(r, row.data());
    if (llvm::none_of(row,
                      [&](double e) { return (e != 0.0) == keptWhereTrue; }))
      return false;
  }
  return true;
}

} // namespace mlir::mpc::attention_patterns
