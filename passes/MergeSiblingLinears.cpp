//===- MergeSiblingLinears.cpp - linears of one input become one GEMM -----===//
//
// BERT's and ViT's self-attention (Hugging Face, timm) project the same
// hidden states three times, by separate query, key and value Linears:
// three GEMMs of [tokens, d] x [d, d] forward, and backward three weight
// GEMMs, three data GEMMs and two adds of [tokens, d]. GPT-2 and
// nn.MultiheadAttention hold the three as one [d, 3d] weight: one GEMM
// each way, three times the width, which tensor cores run better. This
// pass gives the separate form the same shape: MatMuls of one input by
// 2-D weights of the same height (each result read only by an Add of a
// vector bias, or none of them biased) become one MatMul by the weights
// concatenated along N (and one Add of the concatenated biases), split
// back into the parts. The weights stay separate parameters (the concat
// runs each step; its gradient is a split). Weights a training-mode export
// transposes in the graph (MatMul(x, Transpose(W)), W as nn.Linear holds
// it, [N, K]) are concatenated as held, along their rows, and transposed
// once: mpc-fold-linear-bias then reads the whole [3N, K] with transB.
// Each output element is the same dot product; the backward's data
// gradient becomes one GEMM over the concatenated width, summed in another
// order.
//
//===----------------------------------------------------------------------===//

#include "ir/MpcOps.h"
#include "ir/ShapeRules.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Dominance.h"
#include "llvm/ADT/SetVector.h"

namespace mlir::mpc {
#define GEN_PASS_DEF_MERGESIBLINGLINEARS
#include "passes/Passes.h.inc"
} // namespace mlir::mpc

using namespace mlir;
using namespace mlir::mpc;

namespace {

/// One linear: its MatMul, the Add of its bias (when biased), and the
/// weight as held: `held`, or its transpose when `transposed`.
struct Linear {
  MatMulOp mm;
  AddOp add;
  Value bias;
  Value held;
  bool transposed = false;
};

/// A static 2-D weight: a function argument or a constant.
bool isWeight(Value w) {
  auto t = llvm::dyn_cast<RankedTensorType>(w.getType());
  return t && t.getRank() == 2 && t.hasStaticShape() &&
         (llvm::isa<BlockArgument>(w) || w.getDefiningOp<ConstantOp>());
}

/// The weight MatMul operand `w` holds, seen through a 2-D transpose, and
/// whether it is transposed; a null value when `w` is no weight.
std::pair<Value, bool> heldWeight(Value w) {
  if (isWeight(w))
    return {w, false};
  Value held = transposedMatrix(w);
  if (held && isWeight(held))
    return {held, true};
  return {Value(), false};
}

/// `mm` as a linear: its weight, and its bias Add when that is its one
/// reader and adds a static vector of N.
Linear linearOf(MatMulOp mm) {
  auto [held, transposed] = heldWeight(mm.getB());
  Linear l{mm, {}, {}, held, transposed};
  if (!mm.getResult().hasOneUse())
    return l;
  auto add = llvm::dyn_cast<AddOp>(*mm.getResult().getUsers().begin());
  if (!add || add.getNumOperands() != 2)
    return l;
  Value b = add.getOperand(0) == mm.getResult() ? add.getOperand(1)
                                                : add.getOperand(0);
  auto bt = llvm::dyn_cast<RankedTensorType>(b.getType());
  auto wt = llvm::cast<RankedTensorType>(mm.getB().getType());
  if (b == mm.getResult() || !bt || bt.getRank() != 1 ||
      bt.getDimSize(0) != wt.getDimSize(1) ||
      bt.getElementType() != wt.getElementType() ||
      add.getType() != mm.getType())
    return l;
  l.add = add;
  l.bias = b;
  return l;
}

struct MergeSiblingLinears
    : public mpc::impl::MergeSiblingLinearsBase<MergeSiblingLinears> {
  void runOnOperation() override {
    getOperation().walk([&](func::FuncOp f) {
      DominanceInfo dom(f);
      // The inputs again after each merge: a merged MatMul's result may be
      // another's input (LoRA's x A read by its B), gone with the MatMul.
      for (bool merged = true; merged;) {
        merged = false;
        llvm::SetVector<Value> inputs; // in program order, each once
        f.walk([&](MatMulOp mm) { inputs.insert(mm.getA()); });
        for (Value x : inputs)
          if ((merged = merge(x, dom)))
            break;
      }
    });
  }

  /// Merges the linears reading `x`, biased ones and unbiased ones apart;
  /// whether any merged.
  bool merge(Value x, DominanceInfo &dom) {
    auto xt = llvm::dyn_cast<RankedTensorType>(x.getType());
    if (!xt || xt.getRank() < 2 || !xt.hasStaticShape())
      return false;
    SmallVector<Linear> groups[2][2]; // [biased][transposed]
    for (Operation *user : x.getUsers()) {
      auto mm = llvm::dyn_cast<MatMulOp>(user);
      if (!mm || mm.getA() != x || mm.getB() == x ||
          !heldWeight(mm.getB()).first ||
          llvm::cast<RankedTensorType>(mm.getB().getType()).getElementType() !=
              xt.getElementType())
        continue;
      Linear l = linearOf(mm);
      groups[l.add ? 1 : 0][l.transposed].push_back(l);
    }
    bool merged = false;
    for (auto &byForm : groups)
      for (SmallVector<Linear> &group : byForm)
        merged |= rewrite(group, dom);
    return merged;
  }

  bool rewrite(SmallVector<Linear> &group, DominanceInfo &dom) {
    if (group.size() < 2)
      return false;
    Block *block = group.front().mm->getBlock();
    for (Linear &l : group)
      if (l.mm->getBlock() != block || (l.add && l.add->getBlock() != block))
        return false;
    llvm::sort(group, [](Linear a, Linear b) { // op handles: by value
      return a.mm->isBeforeInBlock(b.mm);
    });
    Operation *first = group.front().mm;
    for (Linear &l : group)
      if (!dom.properlyDominates(l.held, first) ||
          (l.bias && !dom.properlyDominates(l.bias, first)))
        return false;
    SmallVector<Location> locs;
    SmallVector<Value> weights, biases;
    SmallVector<int64_t> sizes;
    for (Linear &l : group) {
      locs.push_back(l.mm.getLoc());
      if (l.add)
        locs.push_back(l.add.getLoc());
      weights.push_back(l.held);
      if (l.bias)
        biases.push_back(l.bias);
      sizes.push_back(
          llvm::cast<RankedTensorType>(l.mm.getB().getType()).getDimSize(1));
    }
    OpBuilder b(first);
    Location loc = b.getFusedLoc(locs);
    auto concat = [&](ValueRange parts, int64_t axis) {
      return createInferred(b, loc, ConcatOp::getOperationName(), parts,
                            {b.getNamedAttr("axis", b.getI64IntegerAttr(axis))});
    };
    bool transposed = group.front().transposed;
    auto w = concat(weights, transposed ? 0 : 1);
    if (failed(w))
      return false;
    Value weight = (*w)->getResult(0);
    if (transposed)
      weight = b.create<TransposeOp>(
          loc, permutedType(rankedOf(weight), {1, 0}), weight,
          b.getDenseI64ArrayAttr({1, 0}));
    auto y = createInferred(b, loc, MatMulOp::getOperationName(),
                            {group.front().mm.getA(), weight});
    if (failed(y))
      return false;
    Value whole = (*y)->getResult(0);
    if (!biases.empty()) {
      auto bias = concat(biases, 0);
      if (failed(bias))
        return false;
      auto sum = createInferred(b, loc, AddOp::getOperationName(),
                                {whole, (*bias)->getResult(0)});
      if (failed(sum))
        return false;
      whole = (*sum)->getResult(0);
    }
    SmallVector<Type> types;
    for (Linear &l : group)
      types.push_back(l.add ? l.add.getType() : l.mm.getType());
    int64_t last = llvm::cast<RankedTensorType>(whole.getType()).getRank() - 1;
    auto split = b.create<SplitOp>(loc, types, whole, b.getI64IntegerAttr(last),
                                   b.getI64IntegerAttr((int64_t)group.size()),
                                   b.getDenseI64ArrayAttr(sizes));
    for (auto [k, l] : llvm::enumerate(group)) {
      Operation *transpose = l.transposed ? l.mm.getB().getDefiningOp() : nullptr;
      if (l.add) {
        l.add.getResult().replaceAllUsesWith(split.getResult(k));
        l.add->erase();
      } else {
        l.mm.getResult().replaceAllUsesWith(split.getResult(k));
      }
      l.mm->erase();
      if (transpose && transpose->use_empty())
        transpose->erase();
    }
    return true;
  }
};

} // namespace
