//===- CheckpointBlocks.cpp - blocks recomputed for the backward ----------===//
//
// Activation checkpointing (torch.utils.checkpoint, Hugging Face's
// gradient_checkpointing_enable) over the blocks a model repeats. A train
// step holds what its backward reads from the forward until the backward
// reads it: every block's activations at once, at the end of the forward.
// With a block's forward computed again right before its backward, the
// step holds the blocks' inputs instead, for one more forward.
//
// A block is the forward ops whose ONNX node name (kept as the op's
// location) contains the same match of the pattern: "blocks\.[0-9]+" puts
// /blocks.3/attn/MatMul in block "blocks.3"; `auto` takes the path
// component NAME.<index> the node names number most (blocks.N, h.N,
// layers.N, layer.N: a torch ModuleList's entries). The forward is what comes
// before the loss (mpc-autodiff appends the backward after it). A block's
// recomputed values are those that only its own forward ops and the
// backward read (what another block or the step's outputs read stays, as
// torch keeps a checkpoint's inputs and outputs). Its ops are cloned, in
// order, before the first backward op that reads one of them, that op and
// the later ones read the clones, and the clones nothing reads are
// dropped. The same ops on the same values: the same numbers (a dropout's
// mask is a pure function of its key and counter, as its gradient's).
//
// With save=products (torch's selective activation checkpointing with a
// policy that saves matmuls and attention), the tensor-core ops are not
// recomputed: their results are held from the forward, and what the
// block computes from them (norms, activations, residual sums, dropout)
// is recomputed - the memory of those for a few elementwise launches
// rather than a whole forward's FLOPs.
//
//===----------------------------------------------------------------------===//

#include "ir/MpcOps.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Transforms/RegionUtils.h"

#include "llvm/ADT/MapVector.h"
#include "llvm/Support/Regex.h"

#include <map>
#include <set>

namespace mlir::mpc {
#define GEN_PASS_DEF_CHECKPOINTBLOCKS
#include "passes/Passes.h.inc"
} // namespace mlir::mpc

using namespace mlir;
using namespace mlir::mpc;

namespace {

/// The first match of `re` in a name of `loc` (fused locations: each
/// part's), or "".
std::string blockOf(Location loc, llvm::Regex &re) {
  std::string key;
  loc->walk([&](Location l) {
    if (auto name = dyn_cast<NameLoc>(l)) {
      SmallVector<StringRef, 1> match;
      if (re.match(name.getName().getValue(), &match)) {
        key = match[0].str();
        return WalkResult::interrupt();
      }
    }
    return WalkResult::advance();
  });
  return key;
}

/// For `auto`: the path component NAME.<index> (a torch ModuleList's
/// entries: blocks.3, h.3, layers.3, layer.3) that the forward's node
/// names number with the most distinct indices, at least two, as a
/// pattern matching "NAME.<index>" at a component's start; "" when none.
std::string repeatedBlocks(Block &body, Operation *last) {
  llvm::Regex component("^([A-Za-z_][A-Za-z0-9_]*)\\.([0-9]+)$");
  std::map<std::string, std::set<std::string>> indices;
  for (Operation &op : body) {
    op.getLoc()->walk([&](Location l) {
      if (auto name = dyn_cast<NameLoc>(l)) {
        SmallVector<StringRef> parts;
        name.getName().getValue().split(parts, '/');
        SmallVector<StringRef, 3> match;
        for (StringRef part : parts)
          if (component.match(part, &match))
            indices[match[1].str()].insert(match[2].str());
      }
      return WalkResult::advance();
    });
    if (&op == last)
      break;
  }
  std::string best;
  size_t most = 1;
  for (auto &[name, seen] : indices)
    if (seen.size() > most)
      best = name, most = seen.size();
  return best.empty() ? "" : "(^|/)" + llvm::Regex::escape(best) + "\\.[0-9]+";
}

struct CheckpointBlocks
    : public mpc::impl::CheckpointBlocksBase<CheckpointBlocks> {
  using Base::Base;

  void runOnOperation() override {
    llvm::Regex re(pattern);
    std::string why;
    if (save != "" && save != "all" && save != "products") {
      getOperation().emitError("checkpoint-blocks: save='")
          << save << "' is not all or products";
      return signalPassFailure();
    }
    if (pattern != "auto" && (pattern.empty() || !re.isValid(why))) {
      getOperation().emitError("checkpoint-blocks: '")
          << pattern << "' is not a regular expression"
          << (why.empty() ? "" : ": " + why);
      return signalPassFailure();
    }
    for (auto f : getOperation().getOps<func::FuncOp>())
      if (f->hasAttr("mpc.train_step") && failed(checkpoint(f)))
        return signalPassFailure();
  }

  LogicalResult checkpoint(func::FuncOp f) {
    Block &body = f.getBody().front();
    Operation *ret = body.getTerminator();
    auto lossIndex = f->getAttrOfType<IntegerAttr>("mpc.loss_index");
    if (!lossIndex || lossIndex.getInt() >= ret->getNumOperands())
      return success();
    Operation *loss = ret->getOperand(lossIndex.getInt()).getDefiningOp();
    if (!loss || loss->getBlock() != &body)
      return success();
    std::string chosen = pattern;
    if (pattern == "auto") {
      chosen = repeatedBlocks(body, loss);
      if (chosen.empty())
        return f.emitError("checkpoint-blocks: auto finds no repeated blocks "
                           "(NAME.<index> in two or more node names) in "
                           "the forward");
    }
    llvm::Regex re(chosen);
    auto backward = [&](Operation *op) {
      return op->getBlock() == &body && op != ret && loss->isBeforeInBlock(op);
    };

    // The forward's ops by block, in program order.
    llvm::MapVector<std::string, SmallVector<Operation *>,
                    std::map<std::string, unsigned>>
        blocks;
    for (Operation &op : body) {
      if (&op == loss->getNextNode())
        break;
      if (isa<ConstantOp>(op) || op.getNumResults() == 0)
        continue;
      std::string key = blockOf(op.getLoc(), re);
      if (!key.empty())
        blocks[key].push_back(&op);
    }
    if (blocks.empty())
      return f.emitError("checkpoint-blocks: '")
             << pattern << "' matches no node name of the forward";

    // save=products: the tensor-core ops' results (matmul, GEMM,
    // convolution, attention: the FLOPs) are held from the forward as
    // the blocks' inputs are, and only what follows them is recomputed.
    auto keptOp = [&](Operation *op) {
      return save == "products" && op->hasTrait<AmpAllow>();
    };
    for (auto &[key, ops] : blocks) {
      llvm::SmallPtrSet<Operation *, 32> members(ops.begin(), ops.end());
      // What the backward reads of the block and only the block's own
      // forward ops read besides.
      SmallVector<Value> recomputed;
      Operation *first = nullptr;
      for (Operation *op : ops) {
        if (keptOp(op))
          continue;
        for (Value v : op->getResults()) {
          bool held = false, read = false;
          for (Operation *user : v.getUsers()) {
            if (user == ret || (!backward(user) && !members.count(user)))
              held = true;
            else if (backward(user))
              read = true;
          }
          if (held || !read)
            continue;
          recomputed.push_back(v);
          for (Operation *user : v.getUsers())
            if (backward(user) && (!first || user->isBeforeInBlock(first)))
              first = user;
        }
      }
      if (recomputed.empty())
        continue;
      // The block again, before the first backward op that reads it (its
      // kept ops' results read where they are).
      OpBuilder b(first);
      IRMapping map;
      SmallVector<Operation *> clones;
      for (Operation *op : ops) {
        if (keptOp(op)) {
          for (Value v : op->getResults())
            map.map(v, v);
          continue;
        }
        clones.push_back(b.clone(*op, map));
      }
      llvm::SmallPtrSet<Operation *, 32> cloned(clones.begin(), clones.end());
      for (Value v : recomputed)
        v.replaceUsesWithIf(map.lookup(v), [&](OpOperand &use) {
          return backward(use.getOwner()) && !cloned.count(use.getOwner());
        });
      for (Operation *c : llvm::reverse(clones))
        if (isOpTriviallyDead(c))
          c->erase();
    }
    return success();
  }
};

} // namespace
