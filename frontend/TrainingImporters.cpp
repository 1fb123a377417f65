//===- TrainingImporters.cpp - the ai.onnx.preview.training ops -----------===//
//
// Gradient (lowered by mpc-inline-inference and mpc-lower-gradient) and the
// Momentum, Adagrad and Adam updates of TrainingInfoProto algorithms.
//
//===----------------------------------------------------------------------===//

#include "frontend/ImporterImpl.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringMap.h"

using namespace mlir;

namespace mlir::mpc::importer {
namespace {

LogicalResult importGradient(NodeContext &c) {
  if (failed(c.checkAttrs({"xs", "zs", "y"})))
    return failure();
  auto xs = c.getStrings("xs");
  auto zs = c.getStrings("zs").value_or(SmallVector<std::string>());
  std::string y = c.getString("y", "");
  if (!xs || y.empty())
    return c.fail("Gradient needs attributes xs and y");
  auto strs = [&](ArrayRef<std::string> v) {
    return c.b.getStrArrayAttr(llvm::map_to_vector(
        v, [](const std::string &s) { return StringRef(s); }));
  };
  // y computed in this graph becomes the target the lowering differentiates;
  // in a training algorithm it lives in the inference graph instead.
  SmallVector<Value> operands(c.inputs);
  Value target = c.lookup ? c.lookup(y) : Value();
  if (target)
    operands.push_back(target);
  return c.emit("mpc.gradient", operands,
                {c.named("xs", strs(*xs)), c.named("zs", strs(zs)),
                 c.named("y", c.b.getStringAttr(y))},
                {(int32_t)c.inputs.size(), target ? 1 : 0});
}

LogicalResult importMomentum(NodeContext &c) {
  if (failed(c.checkAttrs({"alpha", "beta", "mode", "norm_coefficient"})))
    return failure();
  for (StringRef required : {"alpha", "beta", "mode", "norm_coefficient"})
    if (!c.attr(required))
      return c.fail("Momentum needs attribute '" + required + "'");
  return c.emit(
      "mpc.momentum", c.inputs,
      {c.named("alpha", c.b.getF32FloatAttr(c.getFloat("alpha", 0))),
       c.named("beta", c.b.getF32FloatAttr(c.getFloat("beta", 0))),
       c.named("mode", c.b.getStringAttr(c.getString("mode", ""))),
       c.named("norm_coefficient",
               c.b.getF32FloatAttr(c.getFloat("norm_coefficient", 0)))});
}

LogicalResult importAdagrad(NodeContext &c) {
  if (failed(c.checkAttrs({"decay_factor", "epsilon", "norm_coefficient"})))
    return failure();
  return c.emit(
      "mpc.adagrad", c.inputs,
      {c.named("decay_factor", c.b.getF32FloatAttr(c.getFloat("decay_factor", 0))),
       c.named("epsilon", c.b.getF32FloatAttr(c.getFloat("epsilon", 1e-6f))),
       c.named("norm_coefficient",
               c.b.getF32FloatAttr(c.getFloat("norm_coefficient", 0)))});
}

LogicalResult importAdam(NodeContext &c) {
  if (failed(c.checkAttrs({"alpha", "beta", "epsilon", "norm_coefficient",
                           "norm_coefficient_post"})))
    return failure();
  return c.emit(
      "mpc.adam", c.inputs,
      {c.named("alpha", c.b.getF32FloatAttr(c.getFloat("alpha", 0.9f))),
       c.named("beta", c.b.getF32FloatAttr(c.getFloat("beta", 0.999f))),
       c.named("epsilon", c.b.getF32FloatAttr(c.getFloat("epsilon", 1e-6f))),
       c.named("norm_coefficient",
               c.b.getF32FloatAttr(c.getFloat("norm_coefficient", 0))),
       c.named("norm_coefficient_post",
               c.b.getF32FloatAttr(c.getFloat("norm_coefficient_post", 0)))});
}

const llvm::StringMap<NodeImportFn> &trainingOps() {
  static const llvm::StringMap<NodeImportFn> table = {
      {"Gradient", importGradient},
      {"Momentum", importMomentum},
      {"Adagrad", importAdagrad},
      {"Adam", importAdam}};
  return table;
}

} // namespace

NodeImportFn lookupTrainingImporter(StringRef opType) {
  auto it = trainingOps().find(opType);
  return it == trainingOps().end() ? nullptr : it->second;
}

void listTrainingOps(std::vector<std::string> &ops) {
  for (const auto &kv : trainingOps())
    ops.push_back(kv.getKey().str());
}

} // namespace mlir::mpc::importer
