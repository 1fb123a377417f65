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
    if (llvm::isa<AttentionOp>(user) && use.getOperandNumber() < 3)
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
  return llvm::all_of(t.getShape().drop_back(), [](int64_t d) { return d == 1; });
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
      !llvm::all_of(split.getResults(), [](Value p) { return onlyAttentionReads(p); }))
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
  RankedTensorType rows = rankedOf(r1.getReshaped()), out = rankedOf(r2.getReshaped());
  if (!rows || !out || !rows.hasStaticShape() || !out.hasStaticShape() ||
      rows.getRank() != 2 || (g.getC() && !rowBias(g.getC(), out.getShape().back())))
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

struct TransposesToAttention
    : public mpc::impl::TransposesToAttentionBase<TransposesToAttention> {
  void runOnOperation() override {
    for (auto f : getOperation().getOps<func::FuncOp>())
      for (TransposeOp t : llvm::to_vector(f.getOps<TransposeOp>()))
        if (!sinkIntoParts(t))
          hoistAboveGemm(t);
  }
};

} // namespace
