//===- FoldLinearBias.cpp - linears as torch exports them to one Gemm -----===//
//
// torch exports nn.Linear on [batch, tokens, features] as MatMul then Add
// of the bias, where its eager step runs one addmm: the bias added to the
// FP32 accumulator and the sum rounded once. This pass gives mpc the same
// single op, so the bias rides in the GEMM's epilogue (cuBLASLt BIAS, or
// GELU_AUX_BIAS with the activation after it) instead of a kernel of its
// own, and the backends round once, as torch's does:
//
//   %m = mpc.matmul %x, %w   : [B.., K] x [K, N]     %x2 = mpc.reshape %x [R, K]
//   %y = mpc.add %m, %b      : + [N]             ->  %g  = mpc.gemm %x2, %w, %b
//                                                    %y  = mpc.reshape %g [B.., N]
//
// A training-mode export (no constant folding) keeps the weight as the
// module holds it, [N, K], and transposes it in the graph:
// MatMul(x, Transpose(W)). The Gemm reads W with transB instead, biased or
// not, so neither the step nor its backward (whose weight gradient would
// be transposed back) moves the weight: cuBLASLt reads it transposed.
//
// After the precision passes: the MatMul, the Add and the bias already have
// one element type (nothing to decide); any other mix, a bias that is not
// a vector of N, a MatMul result read elsewhere or dynamic shapes stay as
// written.
//
//===----------------------------------------------------------------------===//

#include "ir/MpcOps.h"
#include "ir/ShapeRules.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

namespace mlir::mpc {
#define GEN_PASS_DEF_FOLDLINEARBIAS
#include "passes/Passes.h.inc"
} // namespace mlir::mpc

using namespace mlir;
using namespace mlir::mpc;

namespace {

/// The weight a Gemm reads for MatMul operand `w`, and whether it reads it
/// transposed: a 2-D mpc.transpose is read through.
std::pair<Value, bool> gemmWeight(Value w) {
  if (Value held = transposedMatrix(w))
    return {held, true};
  return {w, false};
}

/// `mm` (times a static 2-D weight) as one Gemm of its rows, plus `bias`
/// when given; `replaced` takes the result's reshape back. False when the
/// shapes do not allow it.
bool toGemm(MatMulOp mm, Value bias, Operation *replaced, Location loc) {
  RankedTensorType x = rankedOf(mm.getA()), w = rankedOf(mm.getB()),
                   y = rankedOf(replaced->getResult(0));
  if (!x || !w || !y || !y.hasStaticShape() || !x.hasStaticShape() ||
      !w.hasStaticShape() || x.getRank() < 2 || w.getRank() != 2 ||
      !llvm::isa<FloatType>(y.getElementType()) ||
      x.getElementType() != y.getElementType() ||
      w.getElementType() != y.getElementType())
    return false;
  int64_t k = w.getDimSize(0);
  auto [weight, transB] = gemmWeight(mm.getB());
  Operation *transpose = transB ? mm.getB().getDefiningOp() : nullptr;
  OpBuilder b(replaced);
  Value x2 = reshapeTo(b, loc, mm.getA(), {x.getNumElements() / k, k});
  SmallVector<Value> operands{x2, weight};
  if (bias)
    operands.push_back(bias);
  SmallVector<NamedAttribute> attrs;
  if (transB)
    attrs.push_back(b.getNamedAttr("transB", b.getBoolAttr(true)));
  auto g = createInferred(b, loc, GemmOp::getOperationName(), operands, attrs);
  if (failed(g)) // cannot happen for the shapes checked above
    return false;
  replaced->getResult(0).replaceAllUsesWith(
      reshapeTo(b, loc, (*g)->getResult(0), y.getShape()));
  if (replaced != mm)
    replaced->erase();
  mm.erase();
  if (transpose && transpose->use_empty())
    transpose->erase();
  return true;
}

/// Folds `add` when it is matmul(x, w) + bias as above.
bool fold(AddOp add) {
  RankedTensorType y = rankedOf(add.getResult());
  for (int side = 0; side < 2; ++side) {
    Value mv = side ? add.getB() : add.getA();
    Value bias = side ? add.getA() : add.getB();
    auto mm = mv.getDefiningOp<MatMulOp>();
    RankedTensorType w = mm ? rankedOf(mm.getB()) : RankedTensorType(),
                     bt = rankedOf(bias);
    if (!mm || !mm->hasOneUse() || rankedOf(mv) != y || !w || !bt ||
        w.getRank() != 2 || bt.getElementType() != y.getElementType())
      continue;
    int64_t n = w.getDimSize(1);
    if (!(bt.getShape() == ArrayRef<int64_t>{n} ||
          bt.getShape() == ArrayRef<int64_t>{1, n}))
      continue;
    Location loc = OpBuilder(add).getFusedLoc({mm.getLoc(), add.getLoc()});
    if (toGemm(mm, bias, add, loc))
      return true;
  }
  return false;
}

struct FoldLinearBias : public mpc::impl::FoldLinearBiasBase<FoldLinearBias> {
  void runOnOperation() override {
    for (auto f : getOperation().getOps<func::FuncOp>()) {
      for (AddOp add : llvm::to_vector(f.getOps<AddOp>()))
        fold(add);
      // Unbiased linears of a transposed weight (GPT-2's tied head).
      for (MatMulOp mm : llvm::to_vector(f.getOps<MatMulOp>()))
        if (gemmWeight(mm.getB()).second)
          toGemm(mm, Value(), mm, mm.getLoc());
    }
  }
};

} // namespace
