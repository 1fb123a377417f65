//===- MaskSplit.cpp - a padding mask over a causal one: band + bias ------===//
//
// Hugging Face's mask utilities combine the padding mask with the causal
// one at run time: where(P, min, C) with C the constant causal mask (0 on
// and below the diagonal, min above) and P "this key is padding" (4.38+:
// (C + attention_mask) == 0, a masked_fill of C). As a whole it depends on
// an input, so it would stay an (S, S) bias a batch row, and no key tile
// would be skipped. Outside C's band both branches are <= -1e30, so the
// mask is C's band plus where(P, min, 0) inside it; and inside the band C
// is 0, so P may read 0 for C: (0 + attention_mask) == 0, a [b, 1, 1, S]
// bias. (A query whose visible keys are all padding attends among them
// here, where the graph's finite min spreads it over every key: the rows
// FlashAttention and Hugging Face's own SDPA path also leave undefined.)
//
// The boolean form, where(C and P, s, min) (GPT-BigCode's causal buffer
// and its padding), splits the same way: splitConstantOperand gives C and
// P apart, and where(C, 0, min) is the band.
//
// What stays of the padding is often still (S, S) a batch row: 4.36's
// _expand_mask broadcasts it along the queries before its arithmetic.
// queryInvariantBias computes it before the broadcast: [b, 1, 1, S].
//
//===----------------------------------------------------------------------===//

#include "passes/AttentionPatterns.h"

#include "mlir/IR/Matchers.h"

#include <functional>

namespace mlir::mpc::attention_patterns {

namespace {

/// Whether `v` is computed from constants alone.
bool fromConstants(Value v, llvm::DenseMap<Value, bool> &memo, int depth = 0) {
  if (auto it = memo.find(v); it != memo.end())
    return it->second;
  Operation *op = v.getDefiningOp();
  bool constant = op && depth < 32 &&
                  (matchPattern(v, m_Constant()) ||
                   llvm::all_of(op->getOperands(), [&](Value x) {
                     return fromConstants(x, memo, depth + 1);
                   }));
  return memo[v] = constant;
}

/// `op` again over `operands` (shapes inferred; a Cast keeps its element
/// type, which only its result's type says), or null.
Value rebuild(OpBuilder &b, Operation *op, ValueRange operands) {
  if (auto cast = dyn_cast<CastOp>(op))
    return b.create<CastOp>(op->getLoc(),
                            typeOf(operands[0]).clone(typeOf(cast).getElementType()),
                            operands[0]);
  auto rebuilt = createInferred(b, op->getLoc(), op->getName().getStringRef(), operands,
                                op->getAttrDictionary().getValue());
  return succeeded(rebuilt) ? (*rebuilt)->getResult(0) : Value();
}

/// `v` with each maximal constant part that is 0 wherever `band` shows a
/// key and <= -1e30 elsewhere replaced by a scalar 0 (ops above rebuilt
/// with the shapes that gives): the same values inside the band.
Value zeroInBand(OpBuilder &b, Value v, const Band &band, int64_t sq, int64_t skv,
                 llvm::DenseMap<Value, bool> &constant, int depth = 0) {
  Operation *op = v.getDefiningOp();
  if (!op || depth > 16)
    return v;
  if (fromConstants(v, constant)) {
    auto t = typeOf(v);
    std::optional<Band> here = llvm::isa<FloatType>(t.getElementType())
                                   ? constantBand(v, sq, skv)
                                   : std::nullopt;
    if (!here || !(*here == band))
      return v;
    return scalarValue(b, op->getLoc(), t.getElementType(), 0.0);
  }
  // Only elementwise ops (their shapes follow their operands').
  if (!isa<AddOp, SubOp, MulOp, EqualOp, LessOp, LessOrEqualOp, GreaterOp,
           GreaterOrEqualOp, AndOp, OrOp, NotOp, CastOp, WhereOp, NegOp>(op))
    return v;
  SmallVector<Value> operands;
  bool changed = false;
  for (Value x : op->getOperands()) {
    operands.push_back(zeroInBand(b, x, band, sq, skv, constant, depth + 1));
    changed |= operands.back() != x;
  }
  if (!changed)
    return v;
  Value rebuilt = rebuild(b, op, operands);
  return rebuilt ? rebuilt : v;
}

/// `v` with the query axis (the second-to-last of a rank-`rank` result)
/// narrowed to 1 where the values do not vary along it, or null.
Value narrowQueries(OpBuilder &b, Value v, llvm::DenseMap<Value, Value> &memo,
                    int depth = 0) {
  auto t = typeOf(v);
  if (t.getRank() < 2 || t.getDimSize(t.getRank() - 2) == 1)
    return v;
  if (auto it = memo.find(v); it != memo.end())
    return it->second;
  Operation *op = v.getDefiningOp();
  Value narrow;
  if (!op || depth > 16) {
    narrow = Value();
  } else if (auto e = dyn_cast<ExpandOp>(op)) {
    // A broadcast along the queries: what it broadcast (the scores'
    // broadcast covers the rest).
    narrow = narrowQueries(b, e.getX(), memo, depth + 1);
  } else if (isa<AddOp, SubOp, MulOp, DivOp, EqualOp, LessOp, LessOrEqualOp, GreaterOp,
                 GreaterOrEqualOp, AndOp, OrOp, NotOp, CastOp, WhereOp, NegOp>(op)) {
    SmallVector<Value> operands;
    for (Value x : op->getOperands()) {
      operands.push_back(narrowQueries(b, x, memo, depth + 1));
      if (!operands.back())
        break;
    }
    if (operands.size() == op->getNumOperands() && operands.back())
      narrow = rebuild(b, op, operands);
  }
  return memo[v] = narrow;
}

} // namespace

Value queryInvariantBias(OpBuilder &b, Value bias, llvm::DenseMap<Value, Value> &memo) {
  Value narrow = narrowQueries(b, bias, memo);
  return narrow && narrow != bias ? narrow : Value();
}

std::optional<std::pair<Value, Value>> splitConstantOperand(OpBuilder &b, Value cond,
                                                            bool isAnd) {
  SmallVector<UnsqueezeOp> views;
  Value v = cond;
  while (auto u = v.getDefiningOp<UnsqueezeOp>()) {
    views.push_back(u);
    v = u.getX();
  }
  Operation *join = v.getDefiningOp();
  if (!join || !(isAnd ? isa<AndOp>(join) : isa<OrOp>(join)))
    return std::nullopt;
  Value constant = join->getOperand(0), other = join->getOperand(1);
  llvm::DenseMap<Value, bool> memo;
  bool first = fromConstants(constant, memo), second = fromConstants(other, memo);
  if (first == second)
    return std::nullopt;
  if (!first)
    std::swap(constant, other);
  // Each operand at the join's rank, then through the same Unsqueezes.
  int64_t rank = typeOf(v).getRank();
  auto replay = [&](Value x) -> Value {
    auto t = typeOf(x);
    if (t.getRank() < rank) {
      SmallVector<int64_t> shape(rank - t.getRank(), 1);
      shape.append(t.getShape().begin(), t.getShape().end());
      x = reshapeTo(b, join->getLoc(), x, shape);
    }
    for (UnsqueezeOp u : llvm::reverse(views)) {
      auto again = createInferred(b, u.getLoc(), UnsqueezeOp::getOperationName(), {x},
                                  u->getAttrDictionary().getValue());
      if (failed(again))
        return Value();
      x = (*again)->getResult(0);
    }
    return x;
  };
  Value a = replay(constant), c = replay(other);
  if (!a || !c)
    return std::nullopt;
  return std::pair{a, c};
}

std::optional<std::pair<Band, Value>> bandUnderPadding(OpBuilder &b, Value term,
                                                       int64_t sq, int64_t skv) {
  // Through the views that bring the mask to the scores' rank.
  Value v = term;
  while (isa_and_nonnull<ExpandOp, UnsqueezeOp, ReshapeOp, SliceOp>(v.getDefiningOp()) &&
         !isa<WhereOp>(v.getDefiningOp()))
    v = v.getDefiningOp()->getOperand(0);
  auto where = v.getDefiningOp<WhereOp>();
  if (!where || v != term) // (views of it: their bias would need rebuilding)
    return std::nullopt;
  // (FP16's lowest as a fill is exact here: the padding stays the same
  // additive fill; constantBand checks C's rows for it.)
  auto masking = [](std::optional<double> f) { return f && maskingFill(*f); };
  std::optional<double> fx = scalarConstant(where.getX()), fy = scalarConstant(where.getY());
  bool fillIsX = masking(fx);
  if (!fillIsX && !masking(fy))
    return std::nullopt;
  Value kept = fillIsX ? where.getY() : where.getX();
  llvm::DenseMap<Value, bool> constant;
  if (!fromConstants(kept, constant))
    return std::nullopt;
  std::optional<Band> band = constantBand(kept, sq, skv);
  if (!band)
    return std::nullopt;
  Value cond = zeroInBand(b, where.getCondition(), *band, sq, skv, constant);
  auto t = typeOf(term);
  Value zero = scalarValue(b, where.getLoc(), t.getElementType(), 0.0);
  Value fill = fillIsX ? where.getX() : where.getY();
  auto bias = createInferred(b, where.getLoc(), WhereOp::getOperationName(),
                             fillIsX ? ValueRange{cond, fill, zero}
                                     : ValueRange{cond, zero, fill});
  if (failed(bias))
    return std::nullopt;
  return std::pair{*band, (*bias)->getResult(0)};
}

bool masksQueriesFromInput(Value cond) {
  llvm::DenseMap<Value, bool> constant;
  std::function<bool(Value, int)> varies = [&](Value v, int depth) {
    auto t = typeOf(v);
    if ((t.getRank() < 2 || t.getDimSize(t.getRank() - 2) == 1) || fromConstants(v, constant))
      return false; // one row for every query, or known at compile time
    Operation *op = v.getDefiningOp();
    if (!op || depth > 16 ||
        !isa<AddOp, SubOp, MulOp, EqualOp, LessOp, LessOrEqualOp, GreaterOp, GreaterOrEqualOp,
             AndOp, OrOp, NotOp, CastOp, WhereOp, NegOp, ExpandOp>(op))
      return true; // a value from the inputs, one per query
    return llvm::any_of(op->getOperands(), [&](Value x) { return varies(x, depth + 1); });
  };
  return varies(cond, 0);
}

Value splitWhereBias(OpBuilder &b, Location loc, Value term, int64_t sq, int64_t skv) {
  auto w = term.getDefiningOp<WhereOp>();
  if (!w || sq == ShapedType::kDynamic || skv == ShapedType::kDynamic)
    return Value();
  std::optional<double> zero = scalarConstant(w.getX()), fill = scalarConstant(w.getY());
  if (!zero || *zero != 0.0 || !fill || !maskingFill(*fill))
    return Value();
  auto parts = splitConstantOperand(b, w.getCondition(), true);
  if (!parts)
    return Value();
  Type e = typeOf(term).getElementType();
  Value causal = maskBias(b, loc, parts->first, e, *fill, false);
  if (!constantBand(causal, sq, skv))
    return Value();
  Value padding = maskBias(b, loc, parts->second, e, *fill, false);
  return (*createInferred(b, loc, AddOp::getOperationName(), {causal, padding}, {}))
      ->getResult(0);
}

std::optional<Band> bandOfBias(OpBuilder &b, Location loc, Value &bias, int64_t sq,
                               int64_t skv) {
  std::optional<Band> band;
  SmallVector<Value> terms{bias}, kept;
  for (size_t t = 0; t < terms.size(); ++t) {
    Value term = terms[t];
    if (auto add = term.getDefiningOp<AddOp>();
        add && typeOf(add.getA()).getElementType() == typeOf(add.getB()).getElementType()) {
      terms.append({add.getA(), add.getB()});
      continue;
    }
    std::optional<Band> found, merged;
    Value padding; // what stays of the term inside its band
    if (!(found = positionBand(term, sq, skv)) && !(found = triluBand(term, sq, skv)) &&
        !(found = constantBand(term, sq, skv)))
      if (auto split = bandUnderPadding(b, term, sq, skv))
        std::tie(found, padding) = std::pair{split->first, split->second};
    if (found && !band)
      band = found;
    else if (found && (merged = mergeBands(*band, *found)))
      band = merged; // (torch's triu(1) + tril(-w): causal and a window)
    else
      padding = Value(), kept.push_back(term);
    if (padding)
      kept.push_back(padding);
  }
  if (band) {
    bias = Value();
    for (Value term : kept)
      bias = bias ? (*createInferred(b, loc, AddOp::getOperationName(), {bias, term}, {}))
                        ->getResult(0)
                  : term;
  }
  for (Value term : kept)
    if (Value folded = constantMaskBias(b, term); term == bias)
      bias = folded;
  return band;
}

} // namespace mlir::mpc::attention_patterns
