//===- TransposesToAttention.cpp - layout transposes next to attention ----===//
//
// nn.MultiheadAttention(batch_first=True) exports turn the batch-first
// input sequence-first before its input projection and back after its
// output projection:
//
//   x [B, S, E] -> transpose -> matmul W_in (+ b) -> split Q, K, V -> heads
//   attention -> heads back -> reshape [S*B, E] -> gemm W_out -> reshape
//     [S, B, E] -> transpose -> [B, S, E]
//
// Both projections work row by row, so a transpose that keeps the last dim
// commutes with them. This pass moves each such transpose across its
// projection, to the attention side: the input's after the split (one per
// part), the output's before the GEMM. There it meets the reshapes and
// transposes that split heads, which the CUDA attention kernels read and
// write in place (CudaAttentionLayouts.cpp), so no transpose is left to
// copy; every row is computed as before, so the values are the same. It
// only moves a transpose whose other side is attention's alone (the parts
// read only as Q, K, V; the output an attention result through reshapes
// and transposes), and a bias that is the same for every row.
//
// ViTs written as timm and torchvision write them permute the projection
// first and unbind Q, K and V after: qkv.reshape(B, N, 3, H, D)
// .permute(2, 0, 3, 1, 4).unbind(0) (torchvision's Swin indexes qkv[0],
// qkv[1], qkv[2]; mpc-slices-to-split makes both a Split of one-element
// parts, squeezed). The transpose copies the whole projection. Unbound
// before it instead (the Split along the axis the permutation moved to
// the front, each part viewed without it and transposed as the rest of
// the permutation says), each part is a strided view of the projection
// that attention reads in place, as GPT-2's, also where the attention adds
// a learned bias (Swin's relative positions): the bias's gradient comes
// from the attention backward's kernels (mpc.attention_grad's dS), which
// read the views as they read Q and K.
//
//===----------------------------------------------------------------------===//

#include "ir/MpcOps.h"
#include "ir/ShapeRules.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

namespace mlir::mpc {
#define GEN_PASS_DEF_TRANSPOSESTOATTENTION
#include "passes/Passes.h.inc"
} // namespace mlir::mpc

using namespace mlir;
using namespace mlir::mpc;

namespace {

bool keepsLastDim(TransposeOp t) {
  RankedTensorType type = rankedOf(t.getX());
  std::optional<ArrayRef<int64_t>> perm = t.getPerm();
  return type && type.hasStaticShape() && type.getRank() >= 2 && perm &&
         (int64_t)perm->size() == type.getRank() &&
         perm->back() == type.getRank() - 1;
}

/// Whether every use of `v`, through reshapes and transposes keeping the
/// last dim, is a Q, K or V operand of attention.
bool onlyAttentionReads(Value v, int depth = 0) {
  if (depth > 8 || v.use_empty())
    return false;
  for (OpOperand &use : v.getUses()) {
    Operation *user = use.getOwner();
    if (auto a = llvm::dyn_cast<AttentionOp>(user);
        a && use.getOperandNumber() < 3)
      continue;
    auto t = llvm::dyn_cast<TransposeOp>(user);
    if (!(llvm::isa<ReshapeOp>(user) && use.getOperandNumber() == 0) &&
        !(t && keepsLastDim(t)))
      return false;
    if (!onlyAttentionReads(user->getResult(0), depth + 1))
      return false;
  }
  return true;
}

/// Whether `v` is an attention result brought back through reshapes and
/// transposes keeping the last dim, each read only on that path.
bool fromAttention(Value v, int depth = 0) {
  Operation *def = v.getDefiningOp();
  if (depth > 8 || !def)
    return false;
  if (auto a = llvm::dyn_cast<AttentionOp>(def))
    return v == a.getY();
  if (!v.hasOneUse())
    return false;
  if (auto r = llvm::dyn_cast<ReshapeOp>(def))
    return fromAttention(r.getData(), depth + 1);
  if (auto t = llvm::dyn_cast<TransposeOp>(def); t && keepsLastDim(t))
    return fromAttention(t.getX(), depth + 1);
  return false;
}

/// A bias every row shares: [N] or [1, .., 1, N].
bool rowBias(Value bias, int64_t n) {
  RankedTensorType t = rankedOf(bias);
  if (!t || !t.hasStaticShape() || t.getRank() < 1 || t.getShape().back() != n)
    return false;
  return llvm::all_of(t.getShape().drop_back(),
                      [](int64_t d) { return d == 1; });
}

Value build(OpBuilder &b, Operation *like, ValueRange operands) {
  auto op = createInferred(b, like->getLoc(), like->getName().getStringRef(),
                           operands, like->getAttrDictionary().getValue());
  return succeeded(op) ? (*op)->getResult(0) : Value();
}

/// transpose(x) -> matmul(., W) [-> add bias] -> split of the last dim,
/// whose parts only attention reads: the projection on x, the transpose
/// on each part.
bool sinkIntoParts(TransposeOp t) {
  if (!keepsLastDim(t) || !t->hasOneUse())
    return false;
  auto mm = llvm::dyn_cast<MatMulOp>(*t->user_begin());
  RankedTensorType w = mm ? rankedOf(mm.getB()) : nullptr;
  if (!mm || mm.getA() != t.getY() || !w || w.getRank() != 2 ||
      !mm->hasOneUse())
    return false;
  Operation *next = *mm->user_begin();
  auto add = llvm::dyn_cast<AddOp>(next);
  if (add) {
    Value bias = add.getA() == mm.getY() ? add.getB() : add.getA();
    if (!rowBias(bias, w.getDimSize(1)) || !add->hasOneUse())
      return false;
    next = *add->user_begin();
  }
  auto split = llvm::dyn_cast<SplitOp>(next);
  int64_t rank = rankedOf(t.getY()).getRank();
  int64_t axis = split ? (int64_t)split.getAxis() : 0;
  if (!split || (axis < 0 ? axis + rank : axis) != rank - 1 ||
      !llvm::all_of(split.getResults(),
                    [](Value p) { return onlyAttentionReads(p); }))
    return false;
  OpBuilder b(split);
  Value y = build(b, mm, {t.getX(), mm.getB()});
  if (y && add) {
    SmallVector<Value> operands{add.getA(), add.getB()};
    operands[add.getA() == mm.getY() ? 0 : 1] = y;
    y = build(b, add, operands);
  }
  if (!y)
    return false;
  auto parts = createInferred(b, split.getLoc(), SplitOp::getOperationName(),
                              {y}, split->getAttrDictionary().getValue());
  if (failed(parts))
    return false;
  for (auto [old, part] : llvm::zip(split.getResults(), (*parts)->getResults()))
    old.replaceAllUsesWith(build(b, t, ValueRange{Value(part)}));
  split.erase();
  if (add)
    add.erase();
  mm.erase();
  t.erase();
  return true;
}

/// reshape(y, [M, K]) -> gemm(., W, bias) -> reshape [L.., N] -> transpose,
/// y an attention result: the transpose on y's rows, then the projection.
bool hoistAboveGemm(TransposeOp t) {
  auto r2 = t.getX().getDefiningOp<ReshapeOp>();
  auto g = r2 ? r2.getData().getDefiningOp<GemmOp>() : nullptr;
  auto r1 = g ? g.getA().getDefiningOp<ReshapeOp>() : nullptr;
  if (!keepsLastDim(t) || !r1 || !r2->hasOneUse() || !g->hasOneUse() ||
      !r1->hasOneUse() || g.getTransA() || !fromAttention(r1.getData()))
    return false;
  RankedTensorType rows = rankedOf(r1.getReshaped()),
                   out = rankedOf(r2.getReshaped());
  if (!rows || !out || !rows.hasStaticShape() || !out.hasStaticShape() ||
      rows.getRank() != 2 ||
      (g.getC() && !rowBias(g.getC(), out.getShape().back())))
    return false;
  ArrayRef<int64_t> lead = out.getShape().drop_back();
  int64_t k = rows.getDimSize(1), n = out.getShape().back();
  SmallVector<int64_t> inShape(lead), moved;
  inShape.push_back(k);
  ArrayRef<int64_t> perm = *t.getPerm();
  for (int64_t p : perm)
    moved.push_back(out.getDimSize(p));
  moved.back() = n;
  OpBuilder b(g);
  Value y = reshapeTo(b, r1.getLoc(), r1.getReshaped(), inShape);
  y = build(b, t, {y});
  if (!y)
    return false;
  y = reshapeTo(b, r1.getLoc(), y, rows.getShape());
  SmallVector<Value> operands{y, g.getB()};
  if (g.getC())
    operands.push_back(g.getC());
  Value z = build(b, g, operands);
  if (!z)
    return false;
  t.getY().replaceAllUsesWith(reshapeTo(b, r2.getLoc(), z, moved));
  t.erase();
  r2.erase();
  g.erase();
  return true;
}

/// The squeeze of axis `axis` that is a Split part's only reader, or null.
SqueezeOp squeezeOf(Value part, int64_t axis, int64_t rank) {
  if (!part.hasOneUse())
    return nullptr;
  auto sq = llvm::dyn_cast<SqueezeOp>(*part.user_begin());
  if (!sq || !sq.getAxes() || sq.getAxes()->size() != 1)
    return nullptr;
  int64_t a = (*sq.getAxes())[0];
  return (a < 0 ? a + rank : a) == axis ? sq : nullptr;
}

/// transpose(x, perm) -> split of axis a into one-element parts, each
/// squeezed and read only by attention: split x along perm[a], each part
/// viewed without that axis and transposed by the rest of perm.
bool unbindBeforeTranspose(TransposeOp t) {
  if (!keepsLastDim(t) || !t->hasOneUse())
    return false;
  auto split = llvm::dyn_cast<SplitOp>(*t->user_begin());
  RankedTensorType y = rankedOf(t.getY());
  int64_t rank = y.getRank();
  int64_t a = split ? (int64_t)split.getAxis() : 0;
  a = a < 0 ? a + rank : a;
  if (!split || a < 0 || a >= rank || a == rank - 1)
    return false;
  SmallVector<SqueezeOp> squeezes;
  for (Value part : split.getResults()) {
    RankedTensorType pt = rankedOf(part);
    SqueezeOp sq = squeezeOf(part, a, rank);
    if (!pt || pt.getDimSize(a) != 1 || !sq ||
        !onlyAttentionReads(sq.getY()))
      return false;
    squeezes.push_back(sq);
  }
  ArrayRef<int64_t> perm = *t.getPerm();
  int64_t p = perm[a];
  SmallVector<int64_t> rest; // perm without position a, renumbered
  for (auto [j, q] : llvm::enumerate(perm))
    if ((int64_t)j != a)
      rest.push_back(q > p ? q - 1 : q);
  SmallVector<int64_t> viewShape(rankedOf(t.getX()).getShape());
  viewShape.erase(viewShape.begin() + p);
  OpBuilder b(split);
  SmallVector<NamedAttribute> attrs(split->getAttrDictionary().getValue());
  for (NamedAttribute &n : attrs)
    if (n.getName() == "axis")
      n.setValue(b.getI64IntegerAttr(p));
  auto parts = createInferred(b, split.getLoc(), SplitOp::getOperationName(),
                              {t.getX()}, attrs);
  if (failed(parts))
    return false;
  for (auto [sq, part] : llvm::zip(squeezes, (*parts)->getResults())) {
    Value view = reshapeTo(b, sq.getLoc(), part, viewShape);
    auto moved =
        createInferred(b, t.getLoc(), TransposeOp::getOperationName(), {view},
                       {b.getNamedAttr("perm", b.getDenseI64ArrayAttr(rest))});
    if (failed(moved))
      return false;
    sq.getY().replaceAllUsesWith((*moved)->getResult(0));
    sq.erase();
  }
  split.erase();
  t.erase();
  return true;
}

struct TransposesToAttention
    : public mpc::impl::TransposesToAttentionBase<TransposesToAttention> {
  void runOnOperation() override {
    for (auto f : getOperation().getOps<func::FuncOp>())
      for (TransposeOp t : llvm::to_vector(f.getOps<TransposeOp>()))
        if (!sinkIntoParts(t) && !unbindBeforeTranspose(t))
          hoistAboveGemm(t);
  }
};

} // namespace
