//===- FoldLinearBias.cpp - MatMul + bias Add to one Gemm -----------------===//
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

/// Folds `add` when it is matmul(x, w) + bias as above.
bool fold(AddOp add) {
  RankedTensorType y = rankedOf(add.getResult());
  for (int side = 0; side < 2; ++side) {
    Value mv = side ? add.getB() : add.getA();
    Value bias = side ? add.getA() : add.getB();
    auto mm = mv.getDefiningOp<MatMulOp>();
    if (!mm || !mm->hasOneUse() || rankedOf(mv) != y)
      continue;
    RankedTensorType x = rankedOf(mm.getA()), w = rankedOf(mm.getB()),
                     bt = rankedOf(bias);
    if (!x || !w || !bt || !y.hasStaticShape() || !x.hasStaticShape() ||
        !w.hasStaticShape() || x.getRank() < 2 || w.getRank() != 2 ||
        !llvm::isa<FloatType>(y.getElementType()) ||
        x.getElementType() != y.getElementType() ||
        w.getElementType() != y.getElementType() ||
        bt.getElementType() != y.getElementType())
      continue;
    int64_t n = w.getDimSize(1), k = w.getDimSize(0);
    if (!(bt.getShape() == ArrayRef<int64_t>{n} ||
          bt.getShape() == ArrayRef<int64_t>{1, n}))
      continue;
    OpBuilder b(add);
    Location loc = b.getFusedLoc({mm.getLoc(), add.getLoc()});
    int64_t rows = x.getNumElements() / k;
    Value x2 = reshapeTo(b, loc, mm.getA(), {rows, k});
    auto g = createInferred(b, loc, GemmOp::getOperationName(),
                            {x2, mm.getB(), bias});
    if (failed(g)) // cannot happen for the shapes checked above
      return false;
    add.replaceAllUsesWith(reshapeTo(b, loc, (*g)->getResult(0), y.getShape()));
    add.erase();
    mm.erase();
    return true;
  }
  return false;
}

struct FoldLinearBias : public mpc::impl::FoldLinearBiasBase<FoldLinearBias> {
  void runOnOperation() override {
    for (auto f : getOperation().getOps<func::FuncOp>())
      for (AddOp add : llvm::to_vector(f.getOps<AddOp>()))
        fold(add);
  }
};

} // namespace
