//===- GradientRules.cpp - the reverse sweep over gradient rules ----------===//
//
// Each op's rule is its GradientOpInterface model, attached per op family
// (passes/gradients/*.cpp); this file dispatches to them and accumulates
// the gradients of values read more than once.
//
//===----------------------------------------------------------------------===//

#include "passes/GradientRules.h"
#include "passes/AmpLists.h"
#include "passes/gradients/GradientBuilder.h"

#include "llvm/ADT/DenseSet.h"

using namespace mlir;
using namespace mlir::mpc;

Value mpc::unbroadcast(OpBuilder &b, Location loc, Value grad, Type type) {
  auto target = llvm::cast<RankedTensorType>(type);
  auto g = grad::typeOf(grad);
  if (g == target)
    return grad;
  SmallVector<int64_t> axes;
  int64_t lead = g.getRank() - target.getRank();
  for (int64_t i = 0; i < g.getRank(); ++i)
    if (i < lead || (target.getDimSize(i - lead) == 1 && g.getDimSize(i) != 1))
      axes.push_back(i);
  Value sum = grad;
  if (!axes.empty())
    sum = grad::make<ReduceSumOp>(
        b, loc, grad,
        {b.getNamedAttr("axes", b.getDenseI64ArrayAttr(axes)),
         b.getNamedAttr("keepdims", b.getBoolAttr(false))});
  return grad::reshapeTo(b, loc, sum, target);
}

void mpc::registerGradientInterfaces(DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *ctx, MpcDialect *) {
    grad::attachElementwiseRules(ctx);
    grad::attachActivationRules(ctx);
    grad::attachLinalgRules(ctx);
    grad::attachNnRules(ctx);
    grad::attachShapeRules(ctx);
  });
}

LogicalResult mpc::buildOperandGradients(OpBuilder &b, Operation *op,
                                         ArrayRef<Value> resultGrads,
                                         ArrayRef<bool> wanted,
                                         SmallVectorImpl<Value> &grads) {
  grads.assign(op->getNumOperands(), Value());
  // Nothing flows back without the first result's gradient (the loss
  // rules look at it themselves).
  if ((resultGrads.empty() || !resultGrads[0]) &&
      !isa<SoftmaxCrossEntropyLossOp>(op))
    return success();
  auto rule = dyn_cast<GradientOpInterface>(op);
  if (!rule) {
    const AmpOpInfo *facts = opFacts(op->getName().stripDialect());
    auto diag = op->emitError("no gradient rule for ");
    if (facts && !facts->onnx.empty())
      diag << facts->onnx << " (" << op->getName() << ")";
    else
      diag << op->getName();
    return diag << " yet";
  }
  return rule.buildGradients(b, resultGrads, wanted, grads);
}

LogicalResult mpc::reverseSweep(OpBuilder &b, ArrayRef<Operation *> ops,
                                Value target, ArrayRef<Value> wrt,
                                SmallVectorImpl<Value> &result) {
  // Float values that depend on one of `wrt`: only their producers need
  // rules. Integers and booleans carry no gradient (torch's nanmean
  // counts not-NaN elements through Not and a cast from bool).
  llvm::DenseSet<Value> needsGrad(wrt.begin(), wrt.end());
  for (Operation *op : ops)
    if (llvm::any_of(op->getOperands(),
                     [&](Value v) { return needsGrad.contains(v); }))
      for (Value r : op->getResults())
        if (isFloatTensor(r.getType()))
          needsGrad.insert(r);
  llvm::DenseMap<Value, Value> grads;
  auto type = llvm::cast<RankedTensorType>(target.getType());
  // The seed is tagged so mpc-loss-scaling can replace it by the scale.
  auto seed = b.create<ConstantOp>(
      target.getLoc(),
      DenseElementsAttr::get(type, b.getFloatAttr(type.getElementType(), 1.0)));
  seed->setAttr("mpc.grad_seed", b.getUnitAttr());
  grads[target] = seed;
  for (Operation *op : llvm::reverse(ops)) {
    SmallVector<Value> resultGrads;
    bool any = false;
    for (Value r : op->getResults()) {
      resultGrads.push_back(grads.lookup(r));
      any |= (bool)resultGrads.back();
    }
    if (!any || llvm::none_of(op->getOperands(),
                              [&](Value v) { return needsGrad.contains(v); }))
      continue;
    SmallVector<Value> operandGrads;
    SmallVector<bool> wanted;
    for (Value v : op->getOperands())
      wanted.push_back(needsGrad.contains(v));
    if (failed(buildOperandGradients(b, op, resultGrads, wanted, operandGrads)))
      return failure();
    for (auto [i, v, gv] : llvm::enumerate(op->getOperands(), operandGrads)) {
      // A float operand that depends on what is differentiated must get a
      // gradient: a rule that leaves it null would train it with zeros.
      // (Floor, Ceil, Round and Sign are flat almost everywhere: nothing
      // flows through them, as in PyTorch; Random reads only a shape.)
      bool flat = isa<FloorOp, CeilOp, RoundOp, SignOp, RandomOp>(op);
      if (!gv && !flat && needsGrad.contains(v) && isFloatTensor(v.getType()))
        return op->emitError("no gradient for operand ")
               << i << " of " << op->getName()
               << ", which depends on a trained parameter";
      if (!gv || !needsGrad.contains(v))
        continue;
      Value &acc = grads[v];
      acc = acc ? (*createInferred(b, op->getLoc(), AddOp::getOperationName(),
                                   {acc, gv}))
                      ->getResult(0)
                : gv;
    }
  }
  result.clear();
  for (Value w : wrt)
    result.push_back(grads.lookup(w));
  return success();
}
