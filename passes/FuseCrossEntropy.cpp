//===- FuseCrossEntropy.cpp - log-softmax and NLL as one loss -------------===//
//
// torch exports F.cross_entropy as LogSoftmax then NegativeLogLikelihoodLoss
// (and hand-written losses spell the log-softmax x - logsumexp(x)). ONNX
// defines SoftmaxCrossEntropyLoss as exactly that composition (its function
// body), so this pass puts the loss back:
//
//   p = log_softmax(x, axis = 1)                  loss, p =
//     | x - reduce_log_sum_exp(x, [1], keepdims)    softmax_cross_entropy_loss(
//   loss = nll_loss(p, t, w?) {reduction,          x, t, w?) {reduction,
//                              ignore_index}                   ignore_index}
//
// (axis 1 is NLL's class axis; -1 is the same for N x C scores). Then the
// loss and its gradient are one row kernel each way: softmax - one-hot in
// one pass backward, where the NLL gradient wrote an N x C tensor of
// mostly zeros that the log-softmax gradient read twice. At GPT-2's 50k
// vocabulary those are the step's largest tensors.
//
// Only where the log-probabilities are read by the NLL alone, or besides
// returned (the loss's log_prob output takes their place there): the
// loss's gradient rule takes no gradient through log_prob, and a returned
// N x C tensor is no loss (a loss is a scalar), while label smoothing's
// second term on them would lose its gradient, so it stays as written.
//
//===----------------------------------------------------------------------===//

#include "ir/MpcOps.h"
#include "passes/DeadOps.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

namespace mlir::mpc {
#define GEN_PASS_DEF_FUSECROSSENTROPY
#include "passes/Passes.h.inc"
} // namespace mlir::mpc

using namespace mlir;
using namespace mlir::mpc;

namespace {

/// Whether `axis` of a rank-`rank` tensor is NLL's class axis, 1.
bool isClassAxis(int64_t axis, int64_t rank) {
  return rank >= 2 && (axis < 0 ? axis + rank : axis) == 1;
}

/// The scores x whose log-softmax over the class axis `p` is, and the ops
/// computing it (to fuse their locations), or null.
Value logSoftmaxOf(Value p, SmallVectorImpl<Location> &locs) {
  auto t = llvm::dyn_cast<RankedTensorType>(p.getType());
  if (!t)
    return {};
  int64_t rank = t.getRank();
  if (auto ls = p.getDefiningOp<LogSoftmaxOp>()) {
    if (!isClassAxis(ls.getAxis(), rank))
      return {};
    locs.push_back(ls.getLoc());
    return ls.getX();
  }
  // x - reduce_log_sum_exp(x, [class axis], keepdims), the sum read by the
  // Sub alone.
  auto sub = p.getDefiningOp<SubOp>();
  if (!sub)
    return {};
  auto lse = sub.getB().getDefiningOp<ReduceLogSumExpOp>();
  if (!lse || lse.getX() != sub.getA() || !lse.getKeepdims() ||
      !lse.getResult().hasOneUse() || sub.getA().getType() != t)
    return {};
  auto axes = lse.getAxes();
  if (!axes || axes->size() != 1 || !isClassAxis((*axes)[0], rank))
    return {};
  locs.push_back(lse.getLoc());
  locs.push_back(sub.getLoc());
  return sub.getA();
}

/// Whether the NLL is the one reader of `p` but returns.
bool readByLossAlone(Value p, Operation *nll) {
  for (Operation *user : p.getUsers())
    if (user != nll && !isa<func::ReturnOp>(user))
      return false;
  return true;
}

struct FuseCrossEntropy
    : public mpc::impl::FuseCrossEntropyBase<FuseCrossEntropy> {
  void runOnOperation() override {
    for (auto f : getOperation().getOps<func::FuncOp>()) {
      bool changed = false;
      for (auto nll :
           llvm::to_vector(f.getOps<NegativeLogLikelihoodLossOp>())) {
        Value p = nll.getInput();
        SmallVector<Location> locs;
        Value x = readByLossAlone(p, nll) ? logSoftmaxOf(p, locs) : Value();
        if (!x)
          continue;
        locs.push_back(nll.getLoc());
        OpBuilder b(nll);
        auto sce = b.create<SoftmaxCrossEntropyLossOp>(
            b.getFusedLoc(locs), TypeRange{nll.getType(), p.getType()}, x,
            nll.getTarget(), nll.getWeight(), nll.getReductionAttr(),
            nll.getIgnoreIndexAttr());
        nll.getLoss().replaceAllUsesWith(sce.getLoss());
        nll.erase();
        p.replaceAllUsesWith(sce.getLogProb()); // the returns
        changed = true;
      }
      if (changed)
        eraseDeadOps(f.getBody().front());
    }
  }
};

} // namespace
