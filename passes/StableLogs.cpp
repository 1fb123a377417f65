//===- StableLogs.cpp - logs of sigmoid and softmax in finite forms -------===//
//
// torch exports BCE-with-logits as Log(Sigmoid(x)) and Log(1 - Sigmoid(x)),
// and many models end in Log(Softmax(x)). Once the sigmoid or softmax rounds
// to 1 or 0 (|x| above about 7.6 in fp16, 17 in fp32) the log is -inf and
// the loss NaN. The rewritten forms never leave the finite range:
//
//   log(sigmoid(x))      ->  neg(softplus(neg(x)))     (log-sigmoid)
//   log(1 - sigmoid(x))  ->  neg(softplus(x))          (log-sigmoid of -x)
//   log(softmax(x, a))   ->  log_softmax(x, a)
//
// The softplus is marked `mpc.amp_fp32`, so mpc-amp-classify computes it in
// FP32 as PyTorch's autocast does binary_cross_entropy_with_logits; the
// log_softmax is deny-class already. The sigmoid or softmax stays for any
// other user.
//
//===----------------------------------------------------------------------===//

#include "ir/MpcOps.h"
#include "passes/DeadOps.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Matchers.h"

namespace mlir::mpc {
#define GEN_PASS_DEF_STABLELOGS
#include "passes/Passes.h.inc"
} // namespace mlir::mpc

using namespace mlir;
using namespace mlir::mpc;

namespace {

bool isSplatOne(Value v) {
  DenseElementsAttr attr;
  return v && matchPattern(v, m_Constant(&attr)) && attr.isSplat() &&
         llvm::isa<FloatType>(attr.getElementType()) &&
         attr.getSplatValue<APFloat>().convertToDouble() == 1.0;
}

/// The x of sigmoid(x) when `v` is 1 - sigmoid(x) of sigmoid's own type.
Value oneMinusSigmoid(Value v) {
  auto sub = v.getDefiningOp<SubOp>();
  if (!sub || !isSplatOne(sub.getA()) || sub.getType() != sub.getB().getType())
    return {};
  auto sig = sub.getB().getDefiningOp<SigmoidOp>();
  return sig ? sig.getX() : Value();
}

/// -softplus(x), the softplus kept in FP32.
Value negSoftplus(OpBuilder &b, Location loc, Value x) {
  auto sp = b.create<SoftplusOp>(loc, x.getType(), x);
  sp->setAttr("mpc.amp_fp32", b.getStringAttr("a log-sigmoid (mpc-stable-logs)"));
  return b.create<NegOp>(loc, x.getType(), sp);
}

struct StableLogs : public mpc::impl::StableLogsBase<StableLogs> {
  void runOnOperation() override {
    for (auto f : getOperation().getOps<func::FuncOp>()) {
      bool changed = false;
      for (LogOp log : llvm::to_vector(f.getOps<LogOp>())) {
        OpBuilder b(log);
        Location loc = log.getLoc();
        Value in = log.getX(), y;
        if (auto sig = in.getDefiningOp<SigmoidOp>())
          y = negSoftplus(b, loc, b.create<NegOp>(loc, in.getType(),
                                                  sig.getX()));
        else if (Value x = oneMinusSigmoid(in))
          y = negSoftplus(b, loc, x);
        else if (auto sm = in.getDefiningOp<SoftmaxOp>())
          y = b.create<LogSoftmaxOp>(loc, in.getType(), sm.getX(),
                                     sm.getAxisAttr());
        if (!y)
          continue;
        log.replaceAllUsesWith(y);
        log.erase();
        changed = true;
      }
      if (changed)
        eraseDeadOps(f.getBody().front());
    }
  }
};

} // namespace
