//===- InitializerRoles.cpp - what each initializer of a model becomes ----===//
//
// An initializer is model state (an mpc.param, trainable or not) or a
// constant the importers may read. The rule lives here, apart from the
// graph walk, because it looks at the whole model: the nodes that use an
// initializer and the TrainingInfoProto bindings that write it.
//
//===----------------------------------------------------------------------===//

#include "frontend/ImporterImpl.h"

#include "mlir/IR/BuiltinTypes.h"

namespace mlir::mpc::importer {
namespace {

/// The (node, input index) pairs of `graph` that read `name`.
template <typename Fn>
void forEachUse(const onnx::GraphProto &graph, const std::string &name,
                Fn fn) {
  for (const auto &node : graph.node())
    for (int i = 0; i < node.input_size(); ++i)
      if (node.input(i) == name)
        fn(node, i);
}

/// Inputs that configure their op rather than carry data (Resize's roi
/// and scales, Upsample's scales): the importers read them as constants.
bool configures(const onnx::NodeProto &node, int input) {
  return (node.op_type() == "Resize" && (input == 1 || input == 2)) ||
         (node.op_type() == "Upsample" && input == 1);
}

} // namespace

InitializerRole initializerRole(const onnx::ModelProto &model,
                                const onnx::TensorProto &init, Type type) {
  // What an update binding writes is state whatever its type (an integer
  // step counter, a scalar).
  bool bound = false;
  for (const auto &info : model.training_info())
    for (const auto &binding : info.update_binding())
      bound |= binding.key() == init.name();
  auto t = llvm::cast<RankedTensorType>(type);
  if (!llvm::isa<FloatType>(t.getElementType()) || t.getRank() == 0)
    return bound ? InitializerRole::State
                 : InitializerRole::Constant; // folded into their readers
  // State the model reads but nothing trains: BatchNormalization's running
  // statistics, a loss's class weights.
  bool used = false, onlyConfig = true, onlyStats = true;
  forEachUse(model.graph(), init.name(),
             [&](const onnx::NodeProto &node, int i) {
               used = true;
               onlyConfig &= configures(node, i);
               onlyStats &= (node.op_type() == "BatchNormalization" && i >= 3) ||
                            ((node.op_type() == "SoftmaxCrossEntropyLoss" ||
                              node.op_type() == "NegativeLogLikelihoodLoss") &&
                             i == 2);
             });
  if (used && onlyConfig)
    return bound ? InitializerRole::State : InitializerRole::Constant;
  // Float tensors are state; trainable unless unused or only read as
  // statistics or class weights.
  return used && !onlyStats ? InitializerRole::Trainable
                            : InitializerRole::State;
}

} // namespace mlir::mpc::importer
