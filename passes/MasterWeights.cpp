//===- MasterWeights.cpp - FP32 master parameters, one copy per step ------===//

#include "ir/MpcOps.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/TypeUtilities.h"

namespace mlir::mpc {
#define GEN_PASS_DEF_MASTERWEIGHTS
#include "passes/Passes.h.inc"
} // namespace mlir::mpc

using namespace mlir;
using namespace mlir::mpc;

namespace {

struct MasterWeights : public mpc::impl::MasterWeightsBase<MasterWeights> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    for (auto f : module.getOps<func::FuncOp>())
      if (failed(run(module, f)))
        return signalPassFailure();
  }

  LogicalResult run(ModuleOp module, func::FuncOp f) {
    Block &body = f.getBody().front();
    OpBuilder b(f.getContext());
    Operation *after = nullptr; // the last master copy placed so far
    llvm::DenseMap<Attribute, Type> paramTypes;
    for (BlockArgument arg : body.getArguments()) {
      auto sym = f.getArgAttrOfType<FlatSymbolRefAttr>(arg.getArgNumber(),
                                                       "mpc.param");
      if (!sym)
        continue;
      paramTypes[sym] = arg.getType();
      auto param = module.lookupSymbol<ParamOp>(sym);
      if (!param || !param.getTrainable())
        continue;
      if (!getElementTypeOrSelf(arg).isF32())
        return f.emitError("parameter ")
               << sym << " is " << arg.getType()
               << "; master weights need FP32 parameters "
                  "(mpc-promote-half-params makes them)";
      // One copy per low-precision type, first in the body.
      llvm::SmallDenseMap<Type, CastOp> copies;
      for (Operation *user : llvm::to_vector(arg.getUsers())) {
        auto c = llvm::dyn_cast<CastOp>(user);
        Type t = c ? getElementTypeOrSelf(c.getY()) : Type();
        if (!c || !(t.isF16() || t.isBF16()))
          continue;
        if (CastOp first = copies.lookup(t)) {
          c.getY().replaceAllUsesWith(first.getY());
          c.erase();
          continue;
        }
        copies[t] = c;
        if (after)
          c->moveAfter(after);
        else
          c->moveBefore(&body, body.begin());
        after = c;
        c->setAttr("mpc.master_copy", sym);
      }
    }
    // Gradients reach the optimizer in the parameter's FP32 type.
    Operation *ret = body.getTerminator();
    b.setInsertionPoint(ret);
    bool changed = false;
    for (unsigned i = 0; i < f.getNumResults(); ++i) {
      auto sym = f.getResultAttr(i, "mpc.gradient");
      Type want = sym ? paramTypes.lookup(sym) : Type();
      Value g = ret->getOperand(i);
      if (!want || g.getType() == want)
        continue;
      ret->setOperand(i, b.create<CastOp>(g.getLoc(), want, g));
      changed = true;
    }
    if (changed)
      f.setFunctionType(b.getFunctionType(body.getArgumentTypes(),
                                          ret->getOperandTypes()));
    return success();
  }
};

} // namespace
