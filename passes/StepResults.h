//===- StepResults.h - a function's new results -----------------*- C++ -*-===//
//
// The train-step passes that add outputs (mpc-loss-scaling, mpc-optimizer,
// mpc-half-weights-in-optimizer, mpc-clip-grad-norm, mpc-inline-inference,
// mpc-grad-accumulation, mpc-ema) end the same way: a return of the new
// results, the function's type and result attributes to match; they find
// the step's parameters and inputs by name.
//
//===----------------------------------------------------------------------===//

#ifndef MPC_PASSES_STEPRESULTS_H
#define MPC_PASSES_STEPRESULTS_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

namespace mlir::mpc {

/// The argument of `f` whose attribute `attr` is `name`: a parameter by
/// its symbol (`mpc.param`) or an input by its name (`mpc.input`); null
/// when none is.
inline Value argumentNamed(func::FuncOp f, StringRef attr, StringRef name) {
  for (BlockArgument a : f.getArguments()) {
    Attribute v = f.getArgAttr(a.getArgNumber(), attr);
    if (auto s = llvm::dyn_cast_or_null<FlatSymbolRefAttr>(v);
        s && s.getValue() == name)
      return a;
    if (auto s = llvm::dyn_cast_or_null<StringAttr>(v);
        s && s.getValue() == name)
      return a;
  }
  return {};
}

/// The first op of the step's `body`, its return aside, that reads one of
/// `values`: where what they feed must be ready (the updates reading the
/// gradients); null when only the return reads them.
template <typename Values>
Operation *firstReader(Block &body, const Values &values) {
  Operation *first = nullptr, *ret = body.getTerminator();
  for (Value v : values)
    for (Operation *user : v.getUsers())
      if (user != ret && user->getBlock() == &body &&
          (!first || user->isBeforeInBlock(first)))
        first = user;
  return first;
}

/// `f` returns `results` (attributes `attrs`) instead, at its return's
/// location.
inline void setResults(func::FuncOp f, ValueRange results,
                       ArrayRef<DictionaryAttr> attrs) {
  Operation *ret = f.getBody().front().getTerminator();
  OpBuilder b(ret);
  b.create<func::ReturnOp>(ret->getLoc(), results);
  ret->erase();
  f.setFunctionType(
      b.getFunctionType(f.getArgumentTypes(), results.getTypes()));
  f.setAllResultAttrs(attrs);
}

} // namespace mlir::mpc

#endif // MPC_PASSES_STEPRESULTS_H
