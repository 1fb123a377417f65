//===- RecomputeColumns.cpp - copied columns rebuilt for the backward ----===//
//
// A filter gradient reads what its forward convolution read. Where that is
// a tensor copied out of one smaller one -- the depth taps of
// mpc-conv3d-as-2d, kd depth-shifted rows of X stacked as channels --
// keeping it from the forward holds kd copies of X across the whole
// forward and backward, the largest saved activations of a 3-D network.
// Copies are cheap next to the convolution's products: this pass rebuilds
// them right before the filter gradient from the value they were copied
// from, so the forward's copy dies after the forward convolution. The
// rebuilt ops are the same ops on the same values: every backend computes
// the same numbers.
//
// Only chains of data movement (reshape, transpose, slice, pad, concat,
// unsqueeze, squeeze, flatten, cast, gather at constant indices), at most
// 64 ops in a train step, from a single value smaller than their result
// that the step holds at the gradient anyway (an argument, or a value read
// there or later: a ReLU's result, which its gradient reads), so nothing
// lives longer than before. The cost is the copies made twice, and for a
// moment each rebuild's own copies: a step rebuilds its columns only where
// those it holds add up to more than `ratio` (2) times the largest rebuild.
//
//===----------------------------------------------------------------------===//

#include "ir/MpcOps.h"
#include "passes/Passes.h"
#include "passes/TensorBytes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/IRMapping.h"

namespace mlir::mpc {
#define GEN_PASS_DEF_RECOMPUTECOLUMNS
#include "passes/Passes.h.inc"
} // namespace mlir::mpc

using namespace mlir;
using namespace mlir::mpc;

namespace {

bool movesData(Operation *op) {
  if (auto g = dyn_cast<GatherOp>(op)) // rows at constant indices
    return isa_and_nonnull<ConstantOp>(g.getIndices().getDefiningOp());
  return isa<ReshapeOp, TransposeOp, SliceOp, PadOp, ConcatOp, UnsqueezeOp,
             SqueezeOp, FlattenOp, CastOp>(op);
}

/// The data-movement ops computing `v` (in program order) from one value
/// that is not a constant, written to `root`; false when `v` is not such
/// a chain.
bool chainOf(Value v, SmallVectorImpl<Operation *> &ops, Value &root) {
  SmallVector<Value> work = {v};
  llvm::SmallPtrSet<Operation *, 16> seen;
  while (!work.empty()) {
    Value u = work.pop_back_val();
    Operation *def = u.getDefiningOp();
    if (def && isa<ConstantOp>(def))
      continue;
    if (!def || !movesData(def)) {
      if (root && root != u)
        return false; // copied from two values
      root = u;
      continue;
    }
    if (!seen.insert(def).second)
      continue;
    if (seen.size() > 64)
      return false;
    ops.push_back(def);
    for (Value operand : def->getOperands())
      work.push_back(operand);
  }
  llvm::sort(ops,
             [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });
  return root && !ops.empty();
}

/// Whether `v` is held at `op` anyway: an argument of the step, or read
/// at or after it (a ReLU's result its gradient reads).
bool liveAt(Value v, Operation *op) {
  if (llvm::isa<BlockArgument>(v))
    return true;
  return llvm::any_of(v.getUsers(), [&](Operation *user) {
    return user->getBlock() == op->getBlock() && !user->isBeforeInBlock(op);
  });
}

/// Bytes a rebuild of `ops` writes at once: every op's result but views
/// (reshapes and unit dims alias their input).
int64_t transientBytes(ArrayRef<Operation *> ops) {
  int64_t bytes = 0;
  for (Operation *op : ops)
    if (!isa<ReshapeOp, UnsqueezeOp, SqueezeOp, FlattenOp>(op))
      bytes += (int64_t)bytesOf(op->getResult(0)).value_or(0);
  return bytes;
}

struct Candidate {
  ConvGradWeightOp grad;
  SmallVector<Operation *> ops;
};

struct RecomputeColumns
    : public mlir::mpc::impl::RecomputeColumnsBase<RecomputeColumns> {
  using Base::Base;

  void runOnOperation() override {
    getOperation().walk([&](func::FuncOp f) {
      if (!f->hasAttr("mpc.train_step"))
        return;
      SmallVector<Candidate> found;
      llvm::SmallPtrSet<Value, 16> counted;
      int64_t held = 0, transient = 0;
      f.walk([&](ConvGradWeightOp g) {
        Value cols = g.getX();
        Candidate c{g, {}};
        Value root;
        if (!cols.getDefiningOp() || !chainOf(cols, c.ops, root) ||
            cols.getDefiningOp()->getBlock() != g->getBlock())
          return;
        std::optional<uint64_t> whole = bytesOf(cols), part = bytesOf(root);
        if (!whole || !part || *part >= *whole || !liveAt(root, g))
          return;
        if (counted.insert(cols).second)
          held += (int64_t)*whole;
        transient = std::max(transient, transientBytes(c.ops));
        found.push_back(std::move(c));
      });
      // The rebuilds free what the step held from the forward, each for a
      // moment of its own copies: worth it where the columns held add up
      // to more than `ratio` (2) times the largest rebuild (a deep 3-D network,
      // not a shallow one, whose backward peak the rebuild would raise).
      if ((double)held <= ratio * (double)transient)
        return;
      for (Candidate &c : found) {
        // Rebuilt just before the gradient, each op at its own location.
        OpBuilder b(c.grad);
        IRMapping map;
        for (Operation *op : c.ops)
          b.clone(*op, map);
        c.grad.getXMutable().assign(map.lookup(c.grad.getX()));
      }
    });
  }
};

} // namespace
