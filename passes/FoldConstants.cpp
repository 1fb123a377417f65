//===- FoldConstants.cpp - compute once what constants alone compute ------===//
//
// Exporters leave computations on constants in the graph, and every step
// would run them again: Swin's shifted-window mask (18 float ScatterND
// slice assignments, then Sub, Equal, Where, 76 launches of its 429),
// Llama's and ModernBERT's rotary tables (cos and sin of positions times
// inv_freq), casts and transposes of index tables. This pass evaluates
// them once, at compile time, with the CPU backend's kernels, and the
// values the rest of the graph reads become constants.
//
// The CPU backend is the numerics contract's reference (runtime/Formulas.h
// is the one definition of each elementwise op), so a folded value holds
// the bits the CPU backend computes every step. Only ops whose result is
// fixed by that contract are evaluated: elementwise ops, casts, comparisons
// and selection, data movement, Trilu, Range, OneHot, ArgMax/ArgMin and
// ReduceMax/ReduceMin. Not GEMMs, convolutions, attention, norms, softmax
// or float sums (their accumulation order is the backend's), nor random
// draws or training ops. No value over `max-bytes` is computed here, and
// a broadcast (Expand, Tile) at the edge stays, its input folded: a
// constant should not outgrow the work it saves. Runs after the fusion
// passes, which read masks computed from constants as attention bands
// without materializing them.
//
//===----------------------------------------------------------------------===//

#include "codegen/PlanBuilder.h"
#include "ir/MpcOps.h"
#include "passes/Passes.h"
#include "passes/TensorBytes.h"
#include "runtime/Executor.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"

namespace mlir::mpc {
#define GEN_PASS_DEF_FOLDCONSTANTS
#include "passes/Passes.h.inc"
} // namespace mlir::mpc

using namespace mlir;
using namespace mlir::mpc;

namespace {

/// Ops whose every backend's result is the CPU backend's (elementwise by
/// one formula, exact selection and movement of elements).
bool evaluable(Operation *op) {
  if (op->getNumRegions() != 0)
    return false;
  if (isa<ExpOp, LogOp, SqrtOp, ReciprocalOp, TanhOp, SigmoidOp, ErfOp, SinOp,
          CosOp, SoftplusOp, SoftsignOp, FloorOp, CeilOp, RoundOp, HardSwishOp,
          MishOp, AtanOp, GeluOp, LeakyReluOp, EluOp, CeluOp, SeluOp,
          HardSigmoidOp, ThresholdedReluOp, AbsOp, NegOp, ReluOp, SignOp,
          IdentityOp, NotOp, IsNaNOp, IsInfOp, ClipOp, CastOp>(op))
    return true;
  if (isa<AddOp, SubOp, MulOp, DivOp, ModOp, PReluOp, AndOp, OrOp, XorOp, PowOp,
          MaxOp, MinOp, EqualOp, LessOp, LessOrEqualOp, GreaterOp,
          GreaterOrEqualOp, WhereOp>(op))
    return true;
  if (isa<ShapeOp, SizeOp, ReshapeOp, TransposeOp, ConcatOp, SplitOp, SliceOp,
          SqueezeOp, UnsqueezeOp, FlattenOp, ExpandOp, TileOp, PadOp, GatherOp,
          GatherElementsOp, GatherNDOp, ScatterNDOp, ScatterElementsOp,
          ConstantOfShapeOp, RangeOp>(op))
    return true;
  return isa<TriluOp, OneHotOp, ArgMaxOp, ArgMinOp, ReduceMaxOp, ReduceMinOp>(
      op);
}

struct Folder {
  func::FuncOp func;
  uint64_t maxBytes;
  llvm::SetVector<Operation *> folded; // in block order

  bool isConstant(Value v) {
    Operation *d = v.getDefiningOp();
    return d && (isa<ConstantOp>(d) || folded.contains(d));
  }

  void collect() {
    for (Operation &op : func.getBody().front()) {
      if (!evaluable(&op) || op.getNumOperands() == 0)
        continue;
      if (!llvm::all_of(op.getOperands(),
                        [&](Value v) { return isConstant(v); }))
        continue;
      // Nothing over max-bytes is computed here, not even on the way to a
      // small result: the compile would hold it.
      if (llvm::all_of(op.getResults(), [&](Value r) {
            std::optional<uint64_t> bytes = bytesOf(r);
            return bytes && *bytes <= maxBytes;
          }))
        folded.insert(&op);
    }
  }

  /// Results some op outside the folded set reads.
  bool readOutside(Value r) {
    return llvm::any_of(r.getUsers(),
                        [&](Operation *u) { return !folded.contains(u); });
  }

  /// Leaves `op` to be computed, and what reads it among the folded.
  void drop(Operation *op) {
    if (!folded.remove(op))
      return;
    for (Operation *user : op->getUsers())
      drop(user);
  }

  /// Leaves a broadcast (Expand, Tile) whose larger result is read outside
  /// to be computed: its input becomes the constant instead.
  void keepBroadcastEdges() {
    for (Operation *op : llvm::to_vector(llvm::reverse(folded.getArrayRef()))) {
      if (!folded.contains(op) || !isa<ExpandOp, TileOp>(op))
        continue;
      uint64_t in = bytesOf(op->getOperand(0)).value_or(0);
      if (readOutside(op->getResult(0)) && *bytesOf(op->getResult(0)) > in)
        drop(op);
    }
  }

  /// Evaluates the folded ops as a plan of their own; replaces the values
  /// read outside by constants. Leaves the IR as it was where the CPU
  /// backend refuses (the run reports it, as it would have).
  void fold() {
    SmallVector<Value> edge;
    for (Operation *op : folded)
      for (Value r : op->getResults())
        if (readOutside(r))
          edge.push_back(r);
    if (edge.empty())
      return;
    Location loc = func.getLoc();
    OpBuilder b(func.getContext());
    OwningOpRef<ModuleOp> scratch = ModuleOp::create(loc);
    b.setInsertionPointToEnd(scratch->getBody());
    SmallVector<Type> types;
    for (Value v : edge)
      types.push_back(v.getType());
    auto eval = b.create<func::FuncOp>(loc, "fold_constants",
                                       b.getFunctionType({}, types));
    b.setInsertionPointToEnd(eval.addEntryBlock());
    IRMapping map;
    for (Operation &op : func.getBody().front()) {
      bool feedsFolded =
          isa<ConstantOp>(op) && llvm::any_of(op.getUsers(), [&](Operation *u) {
            return folded.contains(u);
          });
      if (feedsFolded || folded.contains(&op))
        b.clone(op, map);
    }
    SmallVector<Value> results;
    for (Value v : edge)
      results.push_back(map.lookup(v));
    b.create<func::ReturnOp>(loc, results);

    ::mpc::rt::Plan plan;
    std::vector<::mpc::rt::Tensor> values;
    std::string error;
    if (!buildPlan(eval, plan, error) ||
        !::mpc::rt::runPlan(plan, {}, values, error) ||
        values.size() != edge.size())
      return;
    for (auto [v, t] : llvm::zip(edge, values)) {
      DenseElementsAttr attr = toAttr(t, func.getContext());
      if (attr.getType() != v.getType())
        continue;
      Operation *def = v.getDefiningOp();
      b.setInsertionPoint(def);
      v.replaceAllUsesWith(b.create<ConstantOp>(def->getLoc(), attr));
    }
    // The folded ops, then the constants that fed them, where now unread.
    llvm::SetVector<Operation *> feeds;
    for (Operation *op : folded)
      for (Value v : op->getOperands())
        if (auto c = v.getDefiningOp<ConstantOp>())
          feeds.insert(c);
    for (Operation *op : llvm::reverse(folded.getArrayRef()))
      if (op->use_empty())
        op->erase();
    for (Operation *c : feeds)
      if (c->use_empty())
        c->erase();
  }
};

struct FoldConstants
    : public mlir::mpc::impl::FoldConstantsBase<FoldConstants> {
  using FoldConstantsBase::FoldConstantsBase;
  void runOnOperation() override {
    for (auto f : getOperation().getOps<func::FuncOp>()) {
      if (f.isExternal())
        continue;
      Folder folder{f, (uint64_t)maxBytes, {}};
      folder.collect();
      folder.keepBroadcastEdges();
      folder.fold();
    }
  }
};

} // namespace
