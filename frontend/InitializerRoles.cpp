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
#include "llvm/ADT/StringExtras.h"

namespace mlir::mpc::importer {
namespace {

/// Inputs that configure their op rather than carry data (Resize's roi
/// and scales, Upsample's scales): the importers read them as constants.
bool configures(const onnx::NodeProto &node, int input) {
  return (node.op_type() == "Resize" && (input == 1 || input == 2)) ||
         (node.op_type() == "Upsample" && input == 1);
}

/// Whether `name` is a module's parameter path as torch names them
/// ("m.logit_scale", "encoder.layer.0.gamma", nn.Sequential's "0.alpha"):
/// a float scalar so named is state (CLIP's learned temperature), where
/// one named otherwise is a constant an exporter folded ("onnx::Div_12",
/// "const_fold_opt__3") that its readers take as a number (an attention's
/// scale).
bool moduleParameter(StringRef name) {
  SmallVector<StringRef> parts;
  name.split(parts, '.');
  return parts.size() >= 2 && llvm::all_of(parts, [](StringRef p) {
           return !p.empty() && llvm::all_of(p, [](char c) {
             return llvm::isAlnum(c) || c == '_';
           });
         });
}

} // namespace

// One pass over the model, so a role costs its initializer's uses, not a
// walk of every node (13k-node models have thousands of initializers).
InitializerRoles::InitializerRoles(const onnx::ModelProto &model)
    : signature(model.graph()) {
  for (const auto &node : model.graph().node())
    for (int i = 0; i < node.input_size(); ++i)
      uses[node.input(i)].push_back({&node, i});
  for (const auto &info : model.training_info())
    for (const auto &binding : info.update_binding())
      bound.insert(binding.key());
}

InitializerRole InitializerRoles::role(const onnx::TensorProto &init,
                                       Type type) const {
  // What an update binding writes is state whatever its type (an integer
  // step counter, a scalar).
  bool isBound = bound.count(init.name()) != 0;
  auto t = llvm::cast<RankedTensorType>(type);
  bool isFloat = llvm::isa<FloatType>(t.getElementType());
  // torch.export's word, where the exporter gave it: only parameters
  // train; float buffers are state; what its optimizer folded is constant.
  const std::string *torchKind = signature.kind(init.name());
  bool torchParameter = torchKind && *torchKind == "PARAMETER";
  if (signature.present() && (!torchParameter || !isFloat))
    return isBound || (isFloat && torchKind && *torchKind == "BUFFER")
               ? InitializerRole::State
               : InitializerRole::Constant;
  if (!isFloat ||
      (t.getRank() == 0 && !moduleParameter(init.name()) && !torchParameter))
    return isBound ? InitializerRole::State
                   : InitializerRole::Constant; // folded into their readers
  // State the model reads but nothing trains: BatchNormalization's running
  // statistics, a loss's class weights.
  bool used = false, onlyConfig = true, onlyStats = true;
  if (auto it = uses.find(init.name()); it != uses.end())
    for (const auto &[node, i] : it->second) {
      used = true;
      onlyConfig &= configures(*node, i);
      onlyStats &= (node->op_type() == "BatchNormalization" && i >= 3) ||
                   ((node->op_type() == "SoftmaxCrossEntropyLoss" ||
                     node->op_type() == "NegativeLogLikelihoodLoss") &&
                    i == 2);
    }
  if (used && onlyConfig)
    return isBound ? InitializerRole::State : InitializerRole::Constant;
  // Float tensors are state; trainable unless unused or only read as
  // statistics or class weights.
  return used && !onlyStats ? InitializerRole::Trainable
                            : InitializerRole::State;
}

} // namespace mlir::mpc::importer
