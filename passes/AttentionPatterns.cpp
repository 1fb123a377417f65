//===- AttentionPatterns.cpp - what mpc-fuse-attention recognizes --------===//
//
// The pieces of an attention subgraph FuseAttention.cpp reads beside the
// products and the softmax: scalar constants and scales, constant masks,
// the positional (causal and sliding-window) bias ONNX Attention's import
// builds, grouped-query heads repeated for the products, the softcap.
//
//===----------------------------------------------------------------------===//

#include "passes/AttentionPatterns.h"

#include "mlir/IR/Matchers.h"

#include <cmath>

namespace mlir::mpc::attention_patterns {

namespace {

/// The elements of a float constant shaped `rows` x `cols` (a column or
/// a row).
std::optional<SmallVector<double>> floatConstant(Value v, int64_t rows,
                                                 int64_t cols) {
  DenseFPElementsAttr attr;
  auto t = typeOf(v);
  if (!matchPattern(v, m_Constant(&attr)) || t.getRank() != 2 ||
      t.getDimSize(0) != rows || t.getDimSize(1) != cols)
    return std::nullopt;
  SmallVector<double> values;
  for (const APFloat &x : attr.getValues<APFloat>())
    values.push_back(x.convertToDouble());
  return values;
}

} // namespace

/// The value of a scalar (or splat) float constant, or of an elementwise
/// expression over such constants the importer leaves unfolded (torch
/// divides by pow(cast(head size), 0.5), Hugging Face's GPT-2 by
/// pow(...) + 0, GPT-NeoX's baddbmm adds zeros * beta), evaluated in FP32
/// as the CPU backend would.
std::optional<double> scalarConstant(Value v, int depth) {
  if (!v || depth > 4)
    return std::nullopt;
  auto t = typeOf(v);
  DenseElementsAttr attr;
  if (matchPattern(v, m_Constant(&attr))) {
    if (!attr.isSplat())
      return std::nullopt;
    if (llvm::isa<FloatType>(attr.getElementType()))
      return attr.getSplatValue<APFloat>().convertToDouble();
    if (attr.getElementType().isInteger(64) || attr.getElementType().isInteger(32))
      return (double)attr.getSplatValue<APInt>().getSExtValue();
    return std::nullopt;
  }
  Operation *op = v.getDefiningOp();
  if (!op || !llvm::isa<FloatType>(t.getElementType()))
    return std::nullopt;
  auto arg = [&](unsigned i) { return scalarConstant(op->getOperand(i), depth + 1); };
  if (isa<CastOp>(op))
    if (auto x = arg(0))
      return (double)(float)*x;
  if (isa<SqrtOp>(op))
    if (auto x = arg(0))
      return (double)std::sqrt((float)*x);
  if (isa<PowOp>(op))
    if (auto x = arg(0), y = arg(1); x && y)
      return (double)std::pow((float)*x, (float)*y);
  // (Hugging Face's GPT-2 divides by torch.full([], size ** 0.5), which
  // exports as pow(...) + 0.)
  if (isa<AddOp, SubOp, MulOp, DivOp>(op))
    if (auto x = arg(0), y = arg(1); x && y) {
      float a = (float)*x, b = (float)*y;
      return (double)(isa<AddOp>(op)   ? a + b
                      : isa<SubOp>(op) ? a - b
                      : isa<MulOp>(op) ? a * b
                                       : a / b);
    }
  return std::nullopt;
}

/// The elements of a constant boolean mask, also through Trilu.
std::optional<SmallVector<bool>> boolConstant(Value v) {
  DenseElementsAttr attr;
  if (matchPattern(v, m_Constant(&attr))) {
    if (!attr.getElementType().isInteger(1))
      return std::nullopt;
    auto values = attr.getValues<bool>();
    return SmallVector<bool>(values.begin(), values.end());
  }
  auto trilu = v.getDefiningOp<TriluOp>();
  auto t = typeOf(v);
  if (!trilu || t.getRank() < 2 || !t.hasStaticShape())
    return std::nullopt;
  auto in = boolConstant(trilu.getX());
  if (!in)
    return std::nullopt;
  int64_t rows = t.getDimSize(t.getRank() - 2), cols = t.getDimSize(t.getRank() - 1);
  int64_t k = trilu.getK();
  bool upper = trilu.getUpper();
  for (int64_t n = 0; n < (int64_t)in->size(); ++n) {
    int64_t i = n / cols % rows, j = n % cols;
    bool keep = upper ? j - i >= k : j - i <= k;
    if (!keep)
      (*in)[n] = false;
  }
  return in;
}

/// `v * c` or `v / c` with c a scalar constant and `v` used once: returns
/// the other operand and multiplies `scale`; otherwise `v` itself.
Value peelScale(Value v, double &scale, SmallVectorImpl<Operation *> &dead) {
  while (v.getDefiningOp() && singleUse(v)) {
    Operation *op = v.getDefiningOp();
    if (auto mul = dyn_cast<MulOp>(op)) {
      if (auto c = scalarConstant(mul.getB());
          c && typeOf(mul.getA()) == typeOf(v)) {
        scale *= *c;
        dead.push_back(op);
        v = mul.getA();
        continue;
      }
      if (auto c = scalarConstant(mul.getA());
          c && typeOf(mul.getB()) == typeOf(v)) {
        scale *= *c;
        dead.push_back(op);
        v = mul.getB();
        continue;
      }
    }
    if (auto div = dyn_cast<DivOp>(op)) {
      if (auto c = scalarConstant(div.getB());
          c && *c != 0.0 && typeOf(div.getA()) == typeOf(v)) {
        scale /= *c;
        dead.push_back(op);
        v = div.getA();
        continue;
      }
    }
    break;
  }
  return v;
}

namespace {

/// Whether `v` is a mask for sq x skv scores (leading 1s allowed).
bool scoresShaped(Value v, int64_t sq, int64_t skv) {
  auto t = typeOf(v);
  return t && t.getRank() >= 2 && t.hasStaticShape() &&
         t.getDimSize(t.getRank() - 2) == sq &&
         t.getDimSize(t.getRank() - 1) == skv && t.getNumElements() == sq * skv;
}

/// Bounds on a key's diff = i + offset - j that mpc.attention's band can
/// say: lo 0 (causal) or below (a right window), hi 0 or above (a left
/// window); a missing one is unbounded.
std::optional<Band> bandOf(int64_t offset, std::optional<int64_t> lo,
                           std::optional<int64_t> hi) {
  if ((lo && *lo > 0) || (hi && *hi < 0) || (lo && hi && *lo > *hi))
    return std::nullopt;
  Band band;
  band.offset = offset;
  band.causal = lo && *lo == 0;
  if (lo && *lo < 0)
    band.right = -*lo;
  if (hi)
    band.left = *hi;
  return band;
}

std::optional<int64_t> lowOf(const Band &b) {
  return b.causal ? std::optional<int64_t>(0)
                  : b.right >= 0 ? std::optional<int64_t>(-b.right) : std::nullopt;
}
std::optional<int64_t> highOf(const Band &b) {
  return b.left >= 0 ? std::optional<int64_t>(b.left) : std::nullopt;
}

} // namespace

/// The band of Trilus over a splat, as model code builds masks in torch
/// (the import leaves them unevaluated): torch.full((n, n), -inf).triu(1)
/// (Llama's causal mask; tril(-w) a left window), or log(ones.tril(0)
/// .triu(-w)) (Mistral's sliding window in Hugging Face 4.34-4.36). The
/// Trilus keep a range of d = j - i; diff = i + (skv - sq) - j. Read from
/// the ops alone, so at any length (constantBand evaluates masks up to
/// 64M scores).
std::optional<Band> triluBand(Value bias, int64_t sq, int64_t skv) {
  if (!scoresShaped(bias, sq, skv))
    return std::nullopt;
  Value v = bias;
  bool logOf = false;
  if (auto log = v.getDefiningOp<LogOp>())
    v = log.getX(), logOf = true;
  std::optional<int64_t> dLo, dHi; // the kept d
  int trilus = 0;
  for (auto trilu = v.getDefiningOp<TriluOp>(); trilu;
       trilu = v.getDefiningOp<TriluOp>(), ++trilus) {
    const int64_t k = static_cast<int64_t>(trilu.getK());
    if (trilu.getUpper())
      dLo = std::max(dLo.value_or(k), k);
    else
      dHi = std::min(dHi.value_or(k), k);
    v = trilu.getX();
  }
  std::optional<double> fill = trilus ? scalarConstant(v) : std::nullopt;
  const int64_t off = skv - sq;
  std::optional<int64_t> lo, hi;
  if (logOf && fill && *fill == 1.0) { // log: 0 where kept, -inf elsewhere
    if (dHi)
      lo = off - *dHi;
    if (dLo)
      hi = off - *dLo;
  } else if (!logOf && fill && maskingFill(*fill) && (bool)dLo != (bool)dHi) {
    // -inf where kept: the rest of one side is what a query sees.
    if (dLo)
      lo = off - (*dLo - 1);
    else
      hi = off - (*dHi + 1);
  } else {
    return std::nullopt;
  }
  std::optional<Band> band = bandOf(off, lo, hi);
  if (band && *fill == kHalfLowest && !everyRowSeesKey(*band, sq, skv))
    return std::nullopt;
  return band;
}

bool everyRowSeesKey(const Band &band, int64_t sq, int64_t skv) {
  std::optional<int64_t> lo = lowOf(band), hi = highOf(band);
  for (int64_t i = 0; i < sq; ++i) {
    // Keys j with lo <= i + offset - j <= hi, within [0, skv).
    int64_t first = hi ? std::max<int64_t>(0, i + band.offset - *hi) : 0;
    int64_t last =
        lo ? std::min<int64_t>(skv - 1, i + band.offset - *lo) : skv - 1;
    if (first > last)
      return false;
  }
  return true;
}

std::optional<Band> mergeBands(const Band &a, const Band &b) {
  if (a.offset != b.offset)
    return std::nullopt;
  std::optional<int64_t> lo = lowOf(a), hi = highOf(a);
  if (auto l = lowOf(b))
    lo = std::max(lo.value_or(*l), *l);
  if (auto h = highOf(b))
    hi = std::min(hi.value_or(*h), *h);
  return bandOf(a.offset, lo, hi);
}

/// The band a query-by-key visibility describes, where one does: every
/// row's visible keys one run [a_i, b_i] (or none) that the band's bounds
/// on diff = i + (skv - sq) - j give.
std::optional<Band> bandOfVisible(int64_t sq, int64_t skv,
                                  llvm::function_ref<bool(int64_t, int64_t)> seen) {
  const int64_t off = skv - sq;
  std::optional<int64_t> lo, hi;
  SmallVector<std::pair<int64_t, int64_t>> runs; // [a, b], a > b when empty
  for (int64_t i = 0; i < sq; ++i) {
    int64_t a = 0;
    while (a < skv && !seen(i, a))
      ++a;
    int64_t b = a;
    while (b + 1 < skv && seen(i, b + 1))
      ++b;
    for (int64_t j = b + 1; j < skv; ++j)
      if (seen(i, j))
        return std::nullopt; // two runs
    if (a == skv) {
      runs.push_back({1, 0});
      continue;
    }
    runs.push_back({a, b});
    if (b < skv - 1)
      lo = i + off - b;
    if (a > 0)
      hi = i + off - a;
  }
  std::optional<Band> band = bandOf(off, lo, hi);
  if (!band)
    return std::nullopt;
  for (int64_t i = 0; i < sq; ++i) { // the band gives each row its run
    int64_t a = std::max<int64_t>(0, hi ? i + off - *hi : 0),
            b = std::min<int64_t>(skv - 1, lo ? i + off - *lo : skv - 1);
    bool empty = a > b, wasEmpty = runs[i].first > runs[i].second;
    if (empty != wasEmpty || (!empty && runs[i] != std::make_pair(a, b)))
      return std::nullopt;
  }
  return band;
}

/// The band of the causal and sliding-window bias mpc's ONNX Attention
/// import builds (positionBias), where `bias` is one: where(c1 and c2
/// ..., 0, -inf) with each c a bound on diff = rows - cols, FP32
/// constants of rows i + offset ([sq, 1]) and columns j ([1, skv]): 0 <=
/// diff (causal), -R <= diff (a right window), diff <= L (a left one).
std::optional<Band> positionBand(Value bias, int64_t sq, int64_t skv) {
  auto where = bias.getDefiningOp<WhereOp>();
  if (!where)
    return std::nullopt;
  std::optional<double> zero = scalarConstant(where.getX()),
                        fill = scalarConstant(where.getY());
  if (!zero || *zero != 0.0 || !fill || !(*fill <= -1e30))
    return std::nullopt;
  // The bounds, over one diff.
  SmallVector<Value> conds{where.getCondition()};
  std::optional<double> lo, hi;
  Value diff;
  while (!conds.empty()) {
    Value c = conds.pop_back_val();
    if (auto both = c.getDefiningOp<AndOp>()) {
      conds.append({both.getA(), both.getB()});
      continue;
    }
    auto le = c.getDefiningOp<LessOrEqualOp>();
    if (!le)
      return std::nullopt;
    std::optional<double> below = scalarConstant(le.getA()),
                          above = scalarConstant(le.getB());
    Value d = below ? le.getB() : le.getA();
    if ((bool)below == (bool)above || (diff && d != diff))
      return std::nullopt;
    diff = d;
    if (below)
      lo = std::max(lo.value_or(*below), *below);
    else
      hi = std::min(hi.value_or(*above), *above);
  }
  auto sub = diff ? diff.getDefiningOp<SubOp>() : SubOp();
  if (!sub)
    return std::nullopt;
  auto rows = floatConstant(sub.getA(), sq, 1),
       cols = floatConstant(sub.getB(), 1, skv);
  if (!rows || !cols || sq < 1)
    return std::nullopt;
  const double offset = (*rows)[0];
  auto integral = [](double x) {
    return x == std::floor(x) && std::abs(x) <= 1e15;
  };
  if (!integral(offset))
    return std::nullopt;
  for (int64_t i = 0; i < sq; ++i)
    if ((*rows)[i] != offset + (double)i)
      return std::nullopt;
  for (int64_t j = 0; j < skv; ++j)
    if ((*cols)[j] != (double)j)
      return std::nullopt;
  if ((lo && !integral(*lo)) || (hi && !integral(*hi)))
    return std::nullopt;
  auto bound = [](std::optional<double> x) {
    return x ? std::optional<int64_t>((int64_t)*x) : std::nullopt;
  };
  return bandOf((int64_t)offset, bound(lo), bound(hi));
}

/// x and `rep` where `v` repeats each head of x (... x H x S x D) `rep`
/// times in place: unsqueeze at the axis after the heads, expand it to
/// `rep`, reshape to ... x H rep x S x D, as ONNX Attention's import and
/// Hugging Face's repeat_kv write grouped-query K and V (q head h then
/// reads head h / rep of x).
std::optional<std::pair<Value, int64_t>> repeatedHeads(Value v) {
  auto reshape = v.getDefiningOp<ReshapeOp>();
  auto expand = reshape ? reshape.getData().getDefiningOp<ExpandOp>() : ExpandOp();
  auto unsqueeze = expand ? expand.getX().getDefiningOp<UnsqueezeOp>() : UnsqueezeOp();
  if (!unsqueeze)
    return std::nullopt;
  Value x = unsqueeze.getX();
  auto xt = typeOf(x), et = typeOf(expand.getResult()), vt = typeOf(v);
  int64_t r = xt.getRank();
  if (r < 3 || vt.getRank() != r || !xt.hasStaticShape() ||
      !et.hasStaticShape() || !vt.hasStaticShape() ||
      unsqueeze.getAxes().size() != 1 ||
      (unsqueeze.getAxes()[0] != r - 2 && unsqueeze.getAxes()[0] != -3))
    return std::nullopt;
  const int64_t rep = et.getDimSize(r - 2);
  SmallVector<int64_t> expanded(xt.getShape()), merged(xt.getShape());
  expanded.insert(expanded.begin() + (r - 2), rep);
  merged[r - 3] *= rep;
  if (et.getShape() != ArrayRef<int64_t>(expanded) ||
      vt.getShape() != ArrayRef<int64_t>(merged))
    return std::nullopt;
  return std::pair{x, rep};
}

/// c and the capped scores s where `v` is ONNX Attention's softcap, c *
/// tanh(s / c) with c a positive scalar constant (Gemma 2's logit cap);
/// `dead` gets its three ops.
std::optional<std::pair<double, Value>>
softcapOf(Value v, SmallVectorImpl<Operation *> &dead) {
  auto mul = v.getDefiningOp<MulOp>();
  if (!mul)
    return std::nullopt;
  std::optional<double> c = scalarConstant(mul.getB());
  Value capped = mul.getA();
  if (!c) {
    c = scalarConstant(mul.getA());
    capped = mul.getB();
  }
  auto tanh = capped.getDefiningOp<TanhOp>();
  auto div = tanh ? tanh.getX().getDefiningOp<DivOp>() : DivOp();
  std::optional<double> c2 = div ? scalarConstant(div.getB()) : std::nullopt;
  if (!c || !(*c > 0.0) || !c2 || *c2 != *c || !singleUse(tanh.getY()) ||
      !singleUse(div.getResult()) ||
      typeOf(div.getA()) != typeOf(v))
    return std::nullopt;
  dead.append({mul, tanh, div});
  return std::pair{*c, div.getA()};
}

/// (b, h) where `out` is `in` [b * h, m, n] with its leading dimension
/// split in two.
std::optional<std::pair<int64_t, int64_t>> headsOf(RankedTensorType in,
                                                   RankedTensorType out) {
  if (!in.hasStaticShape() || !out.hasStaticShape() || in.getRank() < 3 ||
      out.getRank() != in.getRank() + 1 ||
      in.getDimSize(0) != out.getDimSize(0) * out.getDimSize(1) ||
      in.getShape().drop_front() != out.getShape().drop_front(2))
    return std::nullopt;
  return std::pair{out.getDimSize(0), out.getDimSize(1)};
}

std::optional<std::pair<int64_t, int64_t>> rowsOf(RankedTensorType in,
                                                  RankedTensorType out) {
  if (!in.hasStaticShape() || !out.hasStaticShape() || in.getRank() != 3 ||
      out.getRank() != 4 || in.getDimSize(0) != out.getDimSize(0) ||
      in.getDimSize(1) != out.getDimSize(1) * out.getDimSize(2) ||
      in.getDimSize(2) != out.getDimSize(3))
    return std::nullopt;
  return std::pair{out.getDimSize(1), out.getDimSize(2)};
}

std::optional<RankedTensorType> rowsOfQuery(RankedTensorType q, ArrayRef<int64_t> rows) {
  if (q.getRank() != 3 || !q.hasStaticShape() || q.getDimSize(1) != rows[0] * rows[1])
    return std::nullopt;
  return q.clone({q.getDimSize(0), rows[1], rows[0], q.getDimSize(2)});
}

bool unmergeable(RankedTensorType bias, int64_t rank, ArrayRef<int64_t> split) {
  return bias.getRank() < rank ||
         (bias.getRank() == rank && bias.hasStaticShape() &&
          (bias.getDimSize(0) == 1 || bias.getDimSize(0) == split[0] * split[1]));
}

RankedTensorType unmergedType(RankedTensorType t, ArrayRef<int64_t> split) {
  if (split.size() != 2 || t.getRank() < 3 || !t.hasStaticShape() ||
      t.getDimSize(0) != split[0] * split[1])
    return t;
  SmallVector<int64_t> shape(split);
  shape.append(t.getShape().drop_front().begin(), t.getShape().end());
  return t.clone(shape);
}

WhereOp nanGuardOf(Value probs) {
  if (std::distance(probs.use_begin(), probs.use_end()) != 2)
    return WhereOp();
  for (Operation *user : probs.getUsers()) {
    auto isNan = dyn_cast<IsNaNOp>(user);
    if (!isNan || !singleUse(isNan.getY()))
      continue;
    auto w = dyn_cast<WhereOp>(*isNan.getY().getUsers().begin());
    std::optional<double> zero = w ? scalarConstant(w.getX()) : std::nullopt;
    if (w && w.getCondition() == isNan.getY() && w.getY() == probs && zero &&
        *zero == 0.0 && singleUse(w.getResult()))
      return w;
  }
  return WhereOp();
}

std::optional<std::pair<Value, SmallVector<int64_t>>>
viewedTranspose(Value v, SmallVectorImpl<Operation *> &dead) {
  auto outer = v.getDefiningOp<ReshapeOp>();
  auto t = outer ? outer.getData().getDefiningOp<TransposeOp>() : TransposeOp();
  auto inner = t ? t.getX().getDefiningOp<ReshapeOp>() : ReshapeOp();
  if (!inner || !t.getPerm() || !singleUse(t.getY()) || !singleUse(inner.getResult()))
    return std::nullopt;
  Value x = inner.getData();
  RankedTensorType xt = typeOf(x), at = typeOf(inner.getResult()),
                   tt = typeOf(t.getY()), yt = typeOf(v);
  if (!xt.hasStaticShape() || !at.hasStaticShape() || !yt.hasStaticShape())
    return std::nullopt;
  ArrayRef<int64_t> xs = xt.getShape(), as = at.getShape(), perm = *t.getPerm();
  const int64_t n = xs.size(), m = as.size(), k = n - m + 1;
  if (k < 1 || m < 2 || perm[0] != 0)
    return std::nullopt;
  int64_t lead = 1;
  for (int64_t i = 0; i < k; ++i)
    lead *= xs[i];
  SmallVector<int64_t> split(xs.take_front(k));
  split.append(tt.getShape().begin() + 1, tt.getShape().end());
  if (as[0] != lead || as.drop_front() != xs.drop_front(k) || yt.getShape() != ArrayRef(split))
    return std::nullopt;
  SmallVector<int64_t> full;
  for (int64_t i = 0; i < k; ++i)
    full.push_back(i);
  for (int64_t j = 1; j < m; ++j)
    full.push_back(perm[j] + k - 1);
  dead.append({outer, t, inner});
  return std::pair{x, full};
}

bool leadsToProduct(Value v, int depth) {
  double unused = 1.0;
  SmallVector<Operation *> none;
  if (depth > 8)
    return false;
  if (auto cap = softcapOf(v, none)) // (through a softcap)
    v = cap->second;
  Value p = peelScale(v, unused, none);
  if (auto rs = p.getDefiningOp<ReshapeOp>();
      rs && headsOf(typeOf(rs.getData()), typeOf(rs.getReshaped())))
    p = peelScale(rs.getData(), unused, none);
  Operation *op = p.getDefiningOp();
  if (op && tensorScaleOfProduct(op)) // (SwinV2's cosine attention)
    return true;
  if (auto widen = dyn_cast_or_null<CastOp>(op)) // (an FP32 softmax's)
    return llvm::isa<FloatType>(typeOf(widen.getX()).getElementType()) &&
           leadsToProduct(widen.getX(), depth + 1);
  if (isa_and_nonnull<AddOp, WhereOp>(op))
    return llvm::any_of(op->getOperands(), [&](Value x) {
      return typeOf(x) == typeOf(p) && leadsToProduct(x, depth + 1);
    });
  return isa_and_nonnull<MatMulOp>(op);
}

Value tensorScaleOfProduct(Operation *mul) {
  if (!isa<MulOp>(mul))
    return Value();
  for (int side = 0; side < 2; ++side) {
    Value p = mul->getOperand(side), t = mul->getOperand(1 - side);
    auto pt = typeOf(p), tt = typeOf(t);
    if (!p.getDefiningOp<MatMulOp>() || !singleUse(p) ||
        typeOf(mul->getResult(0)) != pt || !tt.hasStaticShape() ||
        tt.getRank() > pt.getRank() || tt.getElementType() != pt.getElementType())
      continue;
    int64_t off = pt.getRank() - tt.getRank();
    bool fits = true;
    for (int64_t i = 0; i < tt.getRank(); ++i) {
      int64_t d = tt.getDimSize(i);
      fits &= d == 1 || (i + off < pt.getRank() - 2 && d == pt.getDimSize(i + off));
    }
    if (fits)
      return t;
  }
  return Value();
}

} // namespace mlir::mpc::attention_patterns
