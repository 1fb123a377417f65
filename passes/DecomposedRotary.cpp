//===- DecomposedRotary.cpp - rotary embeddings spelled out ---------------===//
//
// Hugging Face's Llama (and Mistral, Qwen, GPT-NeoX, Gemma) applies rotary
// position embeddings as
//
//   q * cos + rotate_half(q) * sin,  rotate_half(q) = cat(-q2, q1)
//
// with cos and sin (..., seq, head) tables whose halves repeat
// (cat(freqs, freqs)). Exported, that is two Slices, a Neg, a Concat, two
// Muls and an Add a tensor, each a kernel and a pass over q or k in the
// forward and more in the backward. It is mpc.rotary (ONNX
// RotaryEmbedding, non-interleaved, over the whole head) on the tables'
// first halves: one pass computed in FP32, its gradient the same op.
//
//===----------------------------------------------------------------------===//

#include "passes/DecomposedRotary.h"

#include "mlir/IR/Matchers.h"

#include <optional>

namespace mlir::mpc {

namespace {

RankedTensorType typeOf(Value v) {
  return llvm::cast<RankedTensorType>(v.getType());
}

bool lastAxis(int64_t axis, int64_t rank) { return axis == -1 || axis == rank - 1; }

/// The one element of a constant integer tensor.
std::optional<int64_t> oneInt(Value v) {
  DenseIntElementsAttr attr;
  if (!v || !matchPattern(v, m_Constant(&attr)) || attr.getNumElements() != 1)
    return std::nullopt;
  return (*attr.value_begin<APInt>()).getSExtValue();
}

/// `v` = x[..., from:to] along the last axis (step 1, bounds normalized),
/// `v` used once.
struct LastAxisSlice {
  Value x;
  int64_t from, to;
};

std::optional<LastAxisSlice> lastAxisSlice(Value v) {
  auto s = v.getDefiningOp<SliceOp>();
  if (!s || !v.hasOneUse() || !s.getAxes())
    return std::nullopt;
  auto t = typeOf(s.getData());
  const int64_t rank = t.getRank(), n = t.getDimSize(rank - 1);
  std::optional<int64_t> axis = oneInt(s.getAxes()), from = oneInt(s.getStarts()),
                         to = oneInt(s.getEnds());
  std::optional<int64_t> step = s.getSteps() ? oneInt(s.getSteps()) : 1;
  if (!axis || !lastAxis(*axis, rank) || !from || !to || step != 1 ||
      ShapedType::isDynamic(n))
    return std::nullopt;
  auto clamp = [&](int64_t i) {
    return std::min(std::max(i < 0 ? i + n : i, int64_t(0)), n);
  };
  return LastAxisSlice{s.getData(), clamp(*from), clamp(*to)};
}

/// Whether `v`'s last axis repeats itself as a rotary table's does: its
/// two halves equal (cat(freqs, freqs)), or, `interleaved`, each even
/// element equal to the next (GPT-J's and CodeGen's repeat_interleave(
/// freqs, 2): an element broadcast to a new last axis of 2 and merged into
/// the one before, in torch 1.13's export a Concat of such parts). Through
/// elementwise ops of one operand and shape ops that keep the last axis
/// (the tables' cos, sin, [None, None], [:seq], and Hugging Face's
/// cos_cached[position_ids]), or a constant that does.
bool duplicatedTable(Value v, bool interleaved, int depth = 0) {
  Operation *op = v.getDefiningOp();
  if (!op || depth > 8)
    return false;
  auto t = typeOf(v);
  const int64_t rank = t.getRank(), n = t.getDimSize(rank - 1);
  if (ShapedType::isDynamic(n) || n % 2)
    return false;
  DenseElementsAttr attr;
  if (matchPattern(v, m_Constant(&attr))) {
    if (!llvm::isa<FloatType>(attr.getElementType()))
      return false;
    if (attr.isSplat())
      return true;
    auto values = attr.getValues<APFloat>();
    for (int64_t i = 0; i < t.getNumElements(); ++i) {
      bool first = interleaved ? i % 2 == 0 : i % n < n / 2;
      int64_t partner = interleaved ? i + 1 : i + n / 2;
      if (first && values[i].compare(values[partner]) != APFloat::cmpEqual)
        return false;
    }
    return true;
  }
  if (auto cat = dyn_cast<ConcatOp>(op)) {
    if (!lastAxis((int64_t)cat.getAxis(), rank))
      return false;
    if (!interleaved)
      return cat.getInputs().size() == 2 && cat.getInputs()[0] == cat.getInputs()[1];
    return llvm::all_of(cat.getInputs(),
                        [&](Value x) { return duplicatedTable(x, true, depth + 1); });
  }
  if (auto r = dyn_cast<ReshapeOp>(op); r && interleaved) {
    // (..., n / 2, 2) merged, the pair axis a broadcast of one element.
    auto in = typeOf(r.getData());
    auto e = r.getData().getDefiningOp<ExpandOp>();
    if (e && in.getRank() == rank + 1 && in.getDimSize(rank) == 2 &&
        in.getDimSize(rank - 1) * 2 == n && typeOf(e.getX()).getRank() == rank + 1 &&
        typeOf(e.getX()).getDimSize(rank) == 1 &&
        in.getShape().drop_back(2) == t.getShape().drop_back())
      return true;
  }
  if (isa<CosOp, SinOp, NegOp, CastOp>(op))
    return duplicatedTable(op->getOperand(0), interleaved, depth + 1);
  // Times or over one number (Hugging Face 4.4x scales the tables by
  // attention_scaling).
  if (isa<MulOp, DivOp>(op)) {
    auto one = [](Value x) {
      return typeOf(x).hasStaticShape() && typeOf(x).getNumElements() == 1;
    };
    Value a = op->getOperand(0), b = op->getOperand(1);
    if (one(b) && typeOf(a) == t)
      return duplicatedTable(a, interleaved, depth + 1);
    return isa<MulOp>(op) && one(a) && typeOf(b) == t &&
           duplicatedTable(b, interleaved, depth + 1);
  }
  // Rows stay rows where the last axis keeps its size.
  Value in;
  if (auto u = dyn_cast<UnsqueezeOp>(op))
    in = u.getX();
  else if (auto r = dyn_cast<ReshapeOp>(op))
    in = r.getData();
  else if (auto g = dyn_cast<GatherOp>(op); // rows of the table by position
           g && typeOf(g.getData()).getRank() >= 2 &&
           !lastAxis((int64_t)g.getAxis(), typeOf(g.getData()).getRank()))
    in = g.getData();
  else if (auto s = dyn_cast<SliceOp>(op); s && s.getAxes()) {
    DenseIntElementsAttr axes;
    const int64_t inRank = typeOf(s.getData()).getRank();
    if (!matchPattern(s.getAxes(), m_Constant(&axes)))
      return false;
    for (const APInt &a : axes.getValues<APInt>())
      if (lastAxis(a.getSExtValue(), inRank))
        return false;
    in = s.getData();
  }
  if (!in || typeOf(in).getRank() < 1 ||
      typeOf(in).getDimSize(typeOf(in).getRank() - 1) != n)
    return false;
  return duplicatedTable(in, interleaved, depth + 1);
}

/// `v` = x[..., start::2] along the last axis to its end, `v` used once.
std::optional<std::pair<Value, int64_t>> everyOther(Value v) {
  auto s = v.getDefiningOp<SliceOp>();
  if (!s || !v.hasOneUse() || !s.getAxes() || !s.getSteps())
    return std::nullopt;
  auto t = typeOf(s.getData());
  const int64_t rank = t.getRank(), n = t.getDimSize(rank - 1);
  std::optional<int64_t> axis = oneInt(s.getAxes()), from = oneInt(s.getStarts()),
                         to = oneInt(s.getEnds()), step = oneInt(s.getSteps());
  if (!axis || !lastAxis(*axis, rank) || !from || !to || step != 2 ||
      ShapedType::isDynamic(n) || (*from != 0 && *from != 1) || *to < n)
    return std::nullopt;
  return std::pair{s.getData(), *from};
}

/// The rotation of x's pairs a rotary embedding multiplies by sin:
/// rotate_half(x) = cat(-x[..., h:], x[..., :h]) (`interleaved` false), or
/// rotate_every_two(x) = stack(-x[..., 1::2], x[..., 0::2], -1).flatten(-2)
/// (GPT-J, CodeGen: `interleaved`). `ops` gets the pattern's ops, those
/// reading x last.
struct Rotation {
  Value x;
  bool interleaved;
  SmallVector<Operation *> ops;
};

std::optional<Rotation> rotationOf(Value half) {
  if (!half.hasOneUse())
    return std::nullopt;
  if (auto cat = half.getDefiningOp<ConcatOp>(); cat && cat.getInputs().size() == 2) {
    auto neg = cat.getInputs()[0].getDefiningOp<NegOp>();
    if (!neg || !cat.getInputs()[0].hasOneUse())
      return std::nullopt;
    auto second = lastAxisSlice(neg.getX()), first = lastAxisSlice(cat.getInputs()[1]);
    if (!second || !first || second->x != first->x)
      return std::nullopt;
    auto xt = typeOf(first->x);
    if (xt.getRank() != 4 || !xt.hasStaticShape())
      return std::nullopt;
    const int64_t n = xt.getDimSize(3), h = n / 2;
    if (n % 2 || !lastAxis((int64_t)cat.getAxis(), 4) || first->from != 0 ||
        first->to != h || second->from != h || second->to != n)
      return std::nullopt;
    return Rotation{first->x, false,
                    {cat, neg, neg.getX().getDefiningOp(),
                     cat.getInputs()[1].getDefiningOp()}};
  }
  // stack(-x2, x1, -1).flatten(-2): unsqueezed to a new last axis,
  // concatenated on it, merged into the head again.
  auto flat = half.getDefiningOp<ReshapeOp>();
  auto stack = flat ? flat.getData().getDefiningOp<ConcatOp>() : ConcatOp();
  if (!stack || !flat.getData().hasOneUse() || stack.getInputs().size() != 2 ||
      !lastAxis((int64_t)stack.getAxis(), typeOf(stack).getRank()))
    return std::nullopt;
  auto u0 = stack.getInputs()[0].getDefiningOp<UnsqueezeOp>(),
       u1 = stack.getInputs()[1].getDefiningOp<UnsqueezeOp>();
  auto lastNew = [](UnsqueezeOp u) {
    return u && u.getResult().hasOneUse() && u.getAxes().size() == 1 &&
           lastAxis(u.getAxes()[0], typeOf(u.getResult()).getRank());
  };
  if (!lastNew(u0) || !lastNew(u1))
    return std::nullopt;
  auto neg = u0.getX().getDefiningOp<NegOp>();
  if (!neg || !u0.getX().hasOneUse())
    return std::nullopt;
  auto odd = everyOther(neg.getX()), even = everyOther(u1.getX());
  if (!odd || !even || odd->first != even->first || odd->second != 1 || even->second != 0)
    return std::nullopt;
  Value x = even->first;
  auto xt = typeOf(x);
  if (xt.getRank() != 4 || !xt.hasStaticShape() || xt.getDimSize(3) % 2 ||
      typeOf(half) != xt)
    return std::nullopt;
  return Rotation{x, true,
                  {flat, stack, u0, u1, neg, neg.getX().getDefiningOp(),
                   u1.getX().getDefiningOp()}};
}

/// rotary(x, cos, sin) at `b`'s point: the value replacing the pattern,
/// or null. Where x is the heads transpose (0, 2, 1, 3) of the
/// projection's (batch, seq, heads, head) and only the pattern's ops
/// (`inPattern`) read it, the rotation runs before it (seq_axis 1) and
/// the transpose after, so that the transpose meets attention, which
/// reads heads in place; `moved` is then the old transpose.
Value buildRotary(OpBuilder &b, Location loc, Value x, Value cos, Value sin,
                  int64_t seqAxis, int64_t rotaryDim, bool interleaved,
                  llvm::function_ref<bool(Operation *)> inPattern,
                  Operation *&moved) {
  moved = nullptr;
  Value in = x;
  auto tr = x.getDefiningOp<TransposeOp>();
  if (tr && seqAxis == 2 && tr.getPerm() &&
      *tr.getPerm() == ArrayRef<int64_t>{0, 2, 1, 3} &&
      llvm::all_of(x.getUsers(), inPattern))
    in = tr.getX(), seqAxis = 1;
  auto rot = createInferred(
      b, loc, RotaryOp::getOperationName(), {in, cos, sin},
      {b.getNamedAttr("seq_axis", b.getI64IntegerAttr(seqAxis)),
       b.getNamedAttr("rotary_dim", b.getI64IntegerAttr(rotaryDim)),
       b.getNamedAttr("interleaved", b.getBoolAttr(interleaved))});
  if (failed(rot))
    return Value();
  if (in == x)
    return (*rot)->getResult(0);
  auto back = createInferred(b, tr.getLoc(), TransposeOp::getOperationName(),
                             {(*rot)->getResult(0)},
                             {b.getNamedAttr("perm", tr.getPermAttr())});
  if (failed(back))
    return Value();
  moved = tr;
  return (*back)->getResult(0);
}

} // namespace

bool fuseDecomposedRotary(OpBuilder &b, AddOp add, RotaryTables &tables) {
  for (int order = 0; order < 2; ++order) {
    Value direct = order ? add.getB() : add.getA(),
          rotated = order ? add.getA() : add.getB();
    auto mc = direct.getDefiningOp<MulOp>(), ms = rotated.getDefiningOp<MulOp>();
    if (!mc || !ms || !direct.hasOneUse() || !rotated.hasOneUse())
      continue;
    for (int side = 0; side < 2; ++side) {
      Value half = side ? ms.getB() : ms.getA(), sin = side ? ms.getA() : ms.getB();
      std::optional<Rotation> rotation = rotationOf(half);
      if (!rotation)
        continue;
      Value x = rotation->x;
      auto xt = typeOf(x);
      const int64_t n = xt.getDimSize(3), h = n / 2;
      const bool interleaved = rotation->interleaved;
      if (typeOf(add) != xt)
        continue;
      Value cos = mc.getA() == x ? mc.getB() : mc.getB() == x ? mc.getA() : Value();
      if (!cos || typeOf(cos).getShape() != typeOf(sin).getShape() ||
          !duplicatedTable(cos, interleaved) || !duplicatedTable(sin, interleaved))
        continue;
      // The tables against x's (batch, d1, d2, head), leading 1s added:
      // (c0, 1, seq, head) with x (batch, heads, seq, head), or (c0, seq,
      // 1, head) with x (batch, seq, heads, head); c0 is 1 or the batch.
      SmallVector<int64_t> c(typeOf(cos).getShape());
      if (c.size() > 4 || c.empty() || c.back() != n)
        continue;
      c.insert(c.begin(), 4 - c.size(), 1);
      int64_t seqAxis = c[1] == 1 && c[2] == xt.getDimSize(2)   ? 2
                        : c[2] == 1 && c[1] == xt.getDimSize(1) ? 1
                                                                : 0;
      if (!seqAxis || (c[0] != 1 && c[0] != xt.getDimSize(0)))
        continue;
      const int64_t seq = xt.getDimSize(seqAxis);
      Location loc = add.getLoc();
      // One of each duplicated pair as (c0, seq, head / 2), once a table:
      // its first half, or its even elements.
      auto firstOfPairs = [&](Value table) -> Value {
        if (Value known = tables.lookup({table, (unsigned)interleaved}))
          return known;
        b.setInsertionPointAfterValue(table);
        Location at = table.getLoc();
        const int64_t last = typeOf(table).getRank() - 1;
        auto s = createInferred(
            b, at, SliceOp::getOperationName(),
            {table, i64Constant(b, at, {0}),
             i64Constant(b, at, {interleaved ? n : h}),
             i64Constant(b, at, {last}),
             i64Constant(b, at, {interleaved ? 2 : 1})},
            {b.getNamedAttr("operandSegmentSizes",
                            b.getDenseI32ArrayAttr({1, 1, 1, 1, 1}))});
        if (failed(s))
          return Value();
        return tables[{table, (unsigned)interleaved}] =
                   reshapeTo(b, at, (*s)->getResult(0), {c[0], seq, h});
      };
      Value cosHalf = firstOfPairs(cos), sinHalf = firstOfPairs(sin);
      b.setInsertionPoint(add);
      Operation *moved = nullptr;
      auto readsX = ArrayRef(rotation->ops).take_back(2);
      Value y = cosHalf && sinHalf
                    ? buildRotary(b, loc, x, cosHalf, sinHalf, seqAxis, n, interleaved,
                                  [&](Operation *u) {
                                    return u == mc || llvm::is_contained(readsX, u);
                                  },
                                  moved)
                    : Value();
      if (!y)
        return false; // (the halves built, unused, go with the dead ops)
      add.getResult().replaceAllUsesWith(y);
      SmallVector<Operation *> dead{add, ms, mc};
      dead.append(rotation->ops);
      dead.push_back(moved);
      for (Operation *op : dead)
        if (op && op->use_empty())
          op->erase();
      return true;
    }
  }
  return false;
}

bool fusePartialRotary(OpBuilder &b, ConcatOp cat) {
  auto inputs = cat.getInputs();
  if (inputs.size() != 2 || typeOf(cat).getRank() != 4 ||
      !lastAxis((int64_t)cat.getAxis(), 4) || !inputs[0].hasOneUse())
    return false;
  auto rot = inputs[0].getDefiningOp<RotaryOp>();
  if (!rot)
    return false;
  const int64_t r = (int64_t)rot.getRotaryDim();
  auto first = lastAxisSlice(rot.getX()), rest = lastAxisSlice(inputs[1]);
  if (!first || !rest || first->x != rest->x || first->from != 0 || first->to != r ||
      typeOf(rot.getX()).getDimSize(3) != r || rest->from != r ||
      rest->to != typeOf(rest->x).getDimSize(3) || typeOf(rest->x) != typeOf(cat))
    return false;
  b.setInsertionPoint(cat);
  Operation *sliceRot = rot.getX().getDefiningOp(),
            *slicePass = inputs[1].getDefiningOp(), *moved = nullptr;
  Value whole = buildRotary(
      b, cat.getLoc(), first->x, rot.getCos(), rot.getSin(), (int64_t)rot.getSeqAxis(),
      r, rot.getInterleaved(), [&](Operation *u) { return u == sliceRot || u == slicePass; }, moved);
  if (!whole)
    return false;
  cat.getResult().replaceAllUsesWith(whole);
  for (Operation *dead :
       {cat.getOperation(), rot.getOperation(), sliceRot, slicePass, moved})
    if (dead && dead->use_empty())
      dead->erase();
  return true;
}

} // namespace mlir::mpc
