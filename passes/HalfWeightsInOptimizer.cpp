//===- HalfWeightsInOptimizer.cpp - updates write the fp16 weight copies --===//
//
// mpc-master-weights casts each FP32 master to the compute type at the start
// of the step: every step reads the master (4 bytes a parameter) and writes
// the copy (2) before the forward starts, and the update that wrote the
// master a moment before could have written the copy with it. In a step the
// optimizer updates, the copy becomes step state:
//
//   %h = mpc.cast %w {mpc.master_copy = @w}       (first in the body)
//   return ..., %w1                                {mpc.output = "mpc.new.w"}
// becomes
//   %h: an argument                               {mpc.input = "mpc.half.w"}
//   %h1 = mpc.cast %w1                             (after %w1's update)
//   return ..., %w1, %h1                           {mpc.output = "mpc.half.w"}
//
// and chain fusion computes %h1 in the update's kernel (apex's FP16
// optimizer keeps its model copy the same way). %w1 is the guarded master
// (unchanged on a skipped step), so the copy is always cast(master) and the
// runtime derives it from the master when the master is set from outside
// (runtime/WeightCopies.h): checkpoints hold the masters only.
//
//===----------------------------------------------------------------------===//

#include "ir/MpcOps.h"
#include "passes/Passes.h"
#include "passes/StepResults.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

namespace mlir::mpc {
#define GEN_PASS_DEF_HALFWEIGHTSINOPTIMIZER
#include "passes/Passes.h.inc"
} // namespace mlir::mpc

using namespace mlir;
using namespace mlir::mpc;

namespace {

/// The one master copy mpc-master-weights made of `arg`, or null (none, or
/// one per type: a step computing in two low types keeps its casts).
CastOp masterCopyOf(BlockArgument arg) {
  CastOp copy;
  for (Operation *user : arg.getUsers())
    if (auto c = dyn_cast<CastOp>(user); c && c->hasAttr("mpc.master_copy")) {
      if (copy)
        return nullptr;
      copy = c;
    }
  return copy;
}

void keepCopies(func::FuncOp f) {
  Block &body = f.getBody().front();
  Operation *ret = body.getTerminator();
  OpBuilder b(ret);
  llvm::StringMap<unsigned> newMaster; // parameter name -> result index
  for (unsigned i = 0; i < f.getNumResults(); ++i)
    if (auto n = f.getResultAttrOfType<StringAttr>(i, "mpc.output");
        n && n.getValue().starts_with("mpc.new."))
      newMaster[n.getValue().drop_front(8)] = i;
  SmallVector<Value> results(ret->getOperands());
  SmallVector<DictionaryAttr> attrs;
  f.getAllResultAttrs(attrs);
  unsigned params = body.getNumArguments();
  for (unsigned a = 0; a < params; ++a) {
    auto sym = f.getArgAttrOfType<FlatSymbolRefAttr>(a, "mpc.param");
    auto it = sym ? newMaster.find(sym.getValue()) : newMaster.end();
    CastOp copy = it != newMaster.end() ? masterCopyOf(body.getArgument(a))
                                        : CastOp();
    if (!copy)
      continue;
    std::string name = ("mpc.half." + sym.getValue()).str();
    f.insertArgument(f.getNumArguments(), copy.getType(),
                     b.getDictionaryAttr(b.getNamedAttr(
                         "mpc.input", b.getStringAttr(name))),
                     copy.getLoc());
    copy.getY().replaceAllUsesWith(body.getArguments().back());
    // Beside the update, whose kernel computes it (a cast before the return
    // would hold every update's inputs until then).
    Value master = results[it->second];
    b.setInsertionPointAfterValue(master);
    results.push_back(b.create<CastOp>(copy.getLoc(), copy.getType(), master));
    attrs.push_back(b.getDictionaryAttr(
        b.getNamedAttr("mpc.output", b.getStringAttr(name))));
    copy.erase();
  }
  if (results.size() == ret->getNumOperands())
    return;
  setResults(f, results, attrs);
}

struct HalfWeightsInOptimizer
    : public mpc::impl::HalfWeightsInOptimizerBase<HalfWeightsInOptimizer> {
  void runOnOperation() override {
    for (auto f : getOperation().getOps<func::FuncOp>())
      if (f->hasAttr("mpc.optimizer"))
        keepCopies(f);
  }
};

} // namespace
