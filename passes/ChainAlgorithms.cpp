//===- ChainAlgorithms.cpp - several training algorithms as one step ------===//
//
// A model may carry several TrainingInfoProto algorithms; one training
// iteration runs them in order, each seeing what the earlier ones bound.
// Cloning them into one function keeps the runtime's contract (one plan,
// one set of bindings fed back after each step) and lets the plan builder
// schedule across them.
//
//===----------------------------------------------------------------------===//

#include "ir/MpcOps.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/MapVector.h"

namespace mlir::mpc {
#define GEN_PASS_DEF_CHAINALGORITHMS
#include "passes/Passes.h.inc"
} // namespace mlir::mpc

using namespace mlir;
using namespace mlir::mpc;

namespace {

struct ChainAlgorithms
    : public mpc::impl::ChainAlgorithmsBase<ChainAlgorithms> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<func::FuncOp> algos;
    for (auto f : module.getOps<func::FuncOp>())
      if (f->hasAttr("mpc.update_binding"))
        algos.push_back(f);
    if (algos.size() < 2)
      return;
    if (failed(chain(module, algos)))
      signalPassFailure();
  }

  /// The argument key that identifies a value across algorithms: its
  /// parameter symbol or graph-input name.
  static Attribute keyOf(func::FuncOp f, unsigned i) {
    if (Attribute p = f.getArgAttr(i, "mpc.param"))
      return p;
    return f.getArgAttr(i, "mpc.input");
  }

  LogicalResult chain(ModuleOp module, SmallVectorImpl<func::FuncOp> &algos) {
    MLIRContext *ctx = module.getContext();
    OpBuilder b(ctx);
    b.setInsertionPoint(algos.front());
    // Arguments: the union over the algorithms, in order of appearance.
    llvm::MapVector<Attribute, std::pair<Type, DictionaryAttr>> args;
    for (func::FuncOp f : algos)
      for (unsigned i = 0; i < f.getNumArguments(); ++i) {
        Attribute key = keyOf(f, i);
        if (!key)
          return f.emitError("argument ")
                 << i << " is neither a parameter nor a graph input";
        auto [it, added] = args.insert(
            {key, {f.getArgumentTypes()[i], f.getArgAttrDict(i)}});
        if (!added && it->second.first != f.getArgumentTypes()[i])
          return f.emitError("argument ")
                 << key << " has type " << f.getArgumentTypes()[i]
                 << " here and " << it->second.first << " in an earlier algorithm";
      }
    auto fused = b.create<func::FuncOp>(algos.front().getLoc(),
                                        "training_algorithms",
                                        b.getFunctionType({}, {}));
    Block *body = fused.addEntryBlock();
    llvm::DenseMap<Attribute, Value> current; // key -> latest value
    for (auto &[key, typeAndAttrs] : args) {
      fused.insertArgument(fused.getNumArguments(), typeAndAttrs.first,
                           typeAndAttrs.second, fused.getLoc());
      current[key] = body->getArguments().back();
    }
    b.setInsertionPointToEnd(body);
    // Bound initializer -> its latest value, in order of first binding
    // (within an algorithm, the bindings' name order).
    llvm::MapVector<StringAttr, Value> bound;
    SmallVector<Value> firstInference;
    SmallVector<DictionaryAttr> firstInferenceAttrs;
    for (size_t k = 0; k < algos.size(); ++k) {
      func::FuncOp f = algos[k];
      IRMapping map;
      for (unsigned i = 0; i < f.getNumArguments(); ++i)
        map.map(f.getArgument(i), current.lookup(keyOf(f, i)));
      Operation *ret = f.getBody().front().getTerminator();
      for (Operation &op : f.getBody().front().without_terminator())
        b.clone(op, map);
      // The outputs this algorithm binds become the initializers' values.
      auto bindings = f->getAttrOfType<DictionaryAttr>("mpc.update_binding");
      for (NamedAttribute nb : bindings) {
        auto output = llvm::cast<StringAttr>(nb.getValue());
        Value v;
        for (unsigned i = 0; i < f.getNumResults() && !v; ++i)
          if (f.getResultAttr(i, "mpc.output") == output)
            v = map.lookup(ret->getOperand(i));
        if (!v)
          return f.emitError("binding of '")
                 << nb.getName().getValue() << "' names '" << output.getValue()
                 << "', which the algorithm does not output";
        bound[nb.getName()] = v;
        current[FlatSymbolRefAttr::get(nb.getName())] = v;
      }
      if (k == 0)
        if (auto n = f->getAttrOfType<IntegerAttr>("mpc.inference_outputs"))
          for (unsigned i = f.getNumResults() - n.getInt(); i < f.getNumResults();
               ++i) {
            firstInference.push_back(map.lookup(ret->getOperand(i)));
            firstInferenceAttrs.push_back(f.getResultAttrDict(i));
          }
    }
    SmallVector<Value> results;
    SmallVector<Attribute> resultAttrs;
    SmallVector<NamedAttribute> merged;
    for (auto &[name, v] : bound) {
      std::string out = ("mpc.updated." + name.getValue()).str();
      results.push_back(v);
      resultAttrs.push_back(b.getDictionaryAttr(
          b.getNamedAttr("mpc.output", b.getStringAttr(out))));
      merged.push_back(b.getNamedAttr(name, b.getStringAttr(out)));
    }
    llvm::append_range(results, firstInference);
    llvm::append_range(resultAttrs, firstInferenceAttrs);
    b.create<func::ReturnOp>(fused.getLoc(), results);
    fused.setFunctionType(
        b.getFunctionType(fused.getArgumentTypes(), ValueRange(results).getTypes()));
    fused.setAllResultAttrs(resultAttrs);
    fused->setAttr("mpc.update_binding", b.getDictionaryAttr(merged));
    fused->setAttr("mpc.inference_outputs",
                   b.getI64IntegerAttr((int64_t)firstInference.size()));
    for (func::FuncOp f : algos)
      f.erase();
    return success();
  }
};

} // namespace
