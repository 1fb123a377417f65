//===- InlineInference.cpp - inference graph into training algorithms -----===//
//
// A TrainingInfoProto algorithm reads the inference graph's tensors by name
// and takes Gradients of them. This pass clones the inference function
// into each algorithm function (`mpc.inference_graph = @f`) ahead of its
// own ops, sharing parameters (by `mpc.param`) and adding the inference
// graph's inputs as arguments (by `mpc.input`), gives every Gradient whose
// `y` is an inference output that value as its `target` (so
// mpc-lower-gradient can lower it) and returns the inference outputs too
// (for logging the loss).
//
//===----------------------------------------------------------------------===//

#include "ir/MpcOps.h"
#include "passes/Passes.h"
#include "passes/StepResults.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"

namespace mlir::mpc {
#define GEN_PASS_DEF_INLINEINFERENCE
#include "passes/Passes.h.inc"
} // namespace mlir::mpc

using namespace mlir;
using namespace mlir::mpc;

namespace {

struct InlineInference : public mpc::impl::InlineInferenceBase<InlineInference> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    for (auto algo : llvm::to_vector(module.getOps<func::FuncOp>())) {
      auto ref = algo->getAttrOfType<FlatSymbolRefAttr>("mpc.inference_graph");
      if (!ref)
        continue;
      auto inference = module.lookupSymbol<func::FuncOp>(ref);
      if (!inference) {
        algo.emitError("inference graph ") << ref << " not found";
        return signalPassFailure();
      }
      if (failed(inlineInto(algo, inference)))
        return signalPassFailure();
    }
  }

  LogicalResult inlineInto(func::FuncOp algo, func::FuncOp inference) {
    Block &body = algo.getBody().front();
    OpBuilder b(algo.getContext());
    IRMapping map;
    // Parameters are shared; graph inputs become new arguments.
    for (BlockArgument arg : inference.getArguments()) {
      unsigned i = arg.getArgNumber();
      if (auto p = inference.getArgAttr(i, "mpc.param")) {
        Value shared;
        for (BlockArgument a : body.getArguments())
          if (algo.getArgAttr(a.getArgNumber(), "mpc.param") == p)
            shared = a;
        if (!shared) {
          algo.insertArgument(algo.getNumArguments(), arg.getType(),
                              inference.getArgAttrDict(i), arg.getLoc());
          shared = body.getArguments().back();
        }
        map.map(arg, shared);
      } else {
        algo.insertArgument(algo.getNumArguments(), arg.getType(),
                            inference.getArgAttrDict(i), arg.getLoc());
        map.map(arg, body.getArguments().back());
      }
    }
    b.setInsertionPointToStart(&body);
    llvm::StringMap<Value> outputs;
    SmallVector<Value> results;
    SmallVector<DictionaryAttr> resultAttrs;
    for (Operation &op : inference.getBody().front()) {
      if (auto ret = dyn_cast<func::ReturnOp>(op)) {
        for (auto [i, v] : llvm::enumerate(ret.getOperands())) {
          Value mapped = map.lookupOrDefault(v);
          results.push_back(mapped);
          resultAttrs.push_back(inference.getResultAttrDict(i));
          if (auto name =
                  inference.getResultAttrOfType<StringAttr>(i, "mpc.output"))
            outputs[name.getValue()] = mapped;
        }
        continue;
      }
      b.clone(op, map);
    }
    // Gradients of inference outputs get their target.
    for (GradientOp g : llvm::to_vector(body.getOps<GradientOp>())) {
      if (g.getTarget())
        continue;
      Value y = outputs.lookup(g.getY());
      if (!y)
        return g.emitError("Gradient of '")
               << g.getY()
               << "', which is not an output of the inference graph "
                  "(only outputs can be differentiated yet)";
      b.setInsertionPoint(g);
      OperationState state(g.getLoc(), g->getName());
      state.addOperands(g.getInputs());
      state.addOperands(y);
      state.addTypes(g.getResultTypes());
      NamedAttrList attrs(g->getAttrDictionary());
      attrs.set("operandSegmentSizes",
                b.getDenseI32ArrayAttr({(int32_t)g.getInputs().size(), 1}));
      state.propertiesAttr = attrs.getDictionary(algo.getContext());
      Operation *with = b.create(state);
      g->replaceAllUsesWith(with->getResults());
      g->erase();
    }
    // The inference outputs are results too (the loss, for logging).
    Operation *ret = body.getTerminator();
    SmallVector<Value> all(ret->getOperands());
    SmallVector<DictionaryAttr> attrs;
    algo.getAllResultAttrs(attrs);
    llvm::append_range(all, results);
    llvm::append_range(attrs, resultAttrs);
    setResults(algo, all, attrs);
    algo->setAttr("mpc.inference_outputs",
                  b.getI64IntegerAttr((int64_t)results.size()));
    return success();
  }
};

} // namespace
