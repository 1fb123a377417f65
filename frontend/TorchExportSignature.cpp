//===- TorchExportSignature.cpp - what torch.export says each input is ----===//
//
// torch.onnx.export's torch.export-based exporter (torch 2.x; the default
// from 2.9) records torch.export's graph signature: the value_info of each
// lifted input carries `pkg.torch.export.graph_signature.InputSpec.kind`
// (PARAMETER, BUFFER, CONSTANT_TENSOR, USER_INPUT) and its placeholder's
// name (`p_m_layer_0_weight`), and each node the FX node it came from. That
// is the module's own word on what trains, where the importer otherwise
// guesses from types and names: Llama's rotary `inv_freq` is a float
// buffer, not a parameter.
//
// Its optimizer (optimize=True, the default) folds constants: W^T of each
// linear, embedding lookups of constant positions, masks; and merges
// initializers of equal value, so every freshly initialised LayerNorm's
// gamma becomes one initializer. The folded constants are no parameter in
// the signature, and a merged one is read by nodes whose FX nodes name
// other parameters. Neither can be trained as torch would: the model is
// imported for inference and training refuses it, naming what was folded.
//
// The IR 10 fields (ValueInfoProto.metadata_props = 4, NodeProto's = 9)
// are unknown to the onnx 1.12 headers mpc builds with; protobuf keeps them
// as unknown fields, read here.
//
//===----------------------------------------------------------------------===//

#include "frontend/ImporterImpl.h"

#include "llvm/ADT/StringExtras.h"

#include <google/protobuf/unknown_field_set.h>

#include <set>

namespace mlir::mpc::importer {
namespace {

constexpr int kValueInfoMetadata = 4, kNodeMetadata = 9;
constexpr const char *kInputKind = "pkg.torch.export.graph_signature.InputSpec.kind";
constexpr const char *kPersistent =
    "pkg.torch.export.graph_signature.InputSpec.persistent";
constexpr const char *kPlaceholder = "pkg.torch.onnx.original_node_name";
constexpr const char *kFxNode = "pkg.torch.onnx.fx_node";

/// The value of `key` among a message's metadata_props (unknown field
/// `field`), or "".
std::string metadataValue(const google::protobuf::UnknownFieldSet &fields,
                          int field, StringRef key) {
  for (int i = 0; i < fields.field_count(); ++i) {
    const auto &f = fields.field(i);
    if (f.number() != field ||
        f.type() != google::protobuf::UnknownField::TYPE_LENGTH_DELIMITED)
      continue;
    onnx::StringStringEntryProto entry;
    if (entry.ParseFromString(f.length_delimited()) && entry.key() == key)
      return entry.value();
  }
  return "";
}

/// The placeholders an FX node's text reads (`%p_...` parameters, `%b_...`
/// buffers, `%c_...` lifted constants).
std::set<std::string> placeholdersRead(StringRef fxNode) {
  std::set<std::string> names;
  // The node's own name comes first ("%linear : [...] = call_function...").
  size_t args = fxNode.find(" = ");
  for (size_t p = fxNode.find('%', args); p != StringRef::npos;
       p = fxNode.find('%', p + 1)) {
    StringRef rest = fxNode.substr(p + 1);
    StringRef name = rest.take_while(
        [](char c) { return llvm::isAlnum(c) || c == '_'; });
    if (name.size() > 2 && name[1] == '_' &&
        (name[0] == 'p' || name[0] == 'b' || name[0] == 'c'))
      names.insert(name.str());
  }
  return names;
}

size_t commonSuffix(StringRef a, StringRef b) {
  size_t n = 0;
  while (n < a.size() && n < b.size() && a[a.size() - 1 - n] == b[b.size() - 1 - n])
    ++n;
  return n;
}

} // namespace

namespace {
/// The positional arguments of the aten op `target` if `node`'s FX node
/// calls it ("%x : [...] = call_function[target=torch.ops.aten.OP](args =
/// (%a, %b, 1), kwargs = {})"), split at the top level.
std::optional<SmallVector<std::string>> fxArgs(const onnx::NodeProto &node,
                                               StringRef target) {
  std::string fx = metadataValue(node.unknown_fields(), kNodeMetadata, kFxNode);
  std::string call = ("target=torch.ops." + target + "](args = (").str();
  size_t at = fx.find(call);
  if (at == std::string::npos)
    return std::nullopt;
  SmallVector<std::string> args(1);
  int depth = 0;
  for (size_t i = at + call.size(); i < fx.size(); ++i) {
    char ch = fx[i];
    if (depth == 0 && ch == ')')
      return args;
    if (ch == '(' || ch == '[')
      ++depth;
    else if (ch == ')' || ch == ']')
      --depth;
    if (depth == 0 && ch == ',') {
      args.emplace_back();
      continue;
    }
    if (!(ch == ' ' && args.back().empty()))
      args.back() += ch;
  }
  return std::nullopt; // cut short
}
} // namespace

std::optional<int64_t> torchPaddingIdx(const onnx::NodeProto &node) {
  auto args = fxArgs(node, "aten.embedding.default");
  int64_t p;
  if (!args || args->size() < 3 || StringRef((*args)[2]).getAsInteger(10, p) || p < 0)
    return std::nullopt;
  return p;
}

std::optional<float> torchTrainingBatchNorm(const onnx::NodeProto &node) {
  // (input, weight, bias, running_mean, running_var, training, momentum, eps)
  auto args = fxArgs(node, "aten._native_batch_norm_legit_functional.default");
  double momentum;
  if (!args || args->size() < 7 || (*args)[5] != "True" ||
      StringRef((*args)[6]).getAsDouble(momentum))
    return std::nullopt;
  return (float)momentum;
}

TorchSignature::TorchSignature(const onnx::GraphProto &graph) {
  std::unordered_set<std::string> initializers;
  for (const auto &init : graph.initializer())
    initializers.insert(init.name());
  for (const auto &info : graph.value_info()) {
    if (!initializers.count(info.name()))
      continue;
    std::string k = metadataValue(info.unknown_fields(), kValueInfoMetadata,
                                  kInputKind);
    if (k.empty())
      continue;
    // A non-persistent buffer (Llama's inv_freq) is no state of the
    // module: nothing saves or writes it.
    if (k == "BUFFER" &&
        metadataValue(info.unknown_fields(), kValueInfoMetadata,
                      kPersistent) == "False")
      k = "CONSTANT_TENSOR";
    kinds[info.name()] = k;
    placeholders[info.name()] = metadataValue(
        info.unknown_fields(), kValueInfoMetadata, kPlaceholder);
  }
}

const std::string *TorchSignature::kind(const std::string &init) const {
  auto it = kinds.find(init);
  return it == kinds.end() ? nullptr : &it->second;
}

std::string TorchSignature::foldedByExporter(const onnx::GraphProto &graph) const {
  if (!present())
    return "";
  std::vector<std::string> folded;
  for (const auto &init : graph.initializer())
    if (!kinds.count(init.name()) && init.dims_size() > 0 &&
        (init.data_type() == onnx::TensorProto::FLOAT ||
         init.data_type() == onnx::TensorProto::FLOAT16 ||
         init.data_type() == onnx::TensorProto::BFLOAT16 ||
         init.data_type() == onnx::TensorProto::DOUBLE))
      folded.push_back(init.name());

  // A parameter read where torch read another one: merged by value.
  std::unordered_set<std::string> present;
  for (const auto &[name, placeholder] : placeholders)
    present.insert(placeholder);
  std::string merged, mergedInto;
  for (const auto &node : graph.node()) {
    if (!merged.empty())
      break;
    std::set<std::string> read =
        placeholdersRead(metadataValue(node.unknown_fields(), kNodeMetadata, kFxNode));
    if (read.empty())
      continue;
    for (const auto &input : node.input()) {
      auto it = placeholders.find(input);
      if (it == placeholders.end() || it->second.empty() ||
          read.count(it->second))
        continue;
      // Name the missing placeholder most like the one read instead
      // (its "_bias" for a bias).
      std::string best;
      for (const auto &r : read)
        if (!present.count(r) &&
            (best.empty() || commonSuffix(r, it->second) >
                                 commonSuffix(best, it->second)))
          best = r;
      if (best.empty())
        continue;
      merged = input;
      mergedInto = best;
      break;
    }
  }
  if (folded.empty() && merged.empty())
    return "";
  std::string what;
  if (!folded.empty()) {
    what = "initializer" + std::string(folded.size() > 1 ? "s" : "") + " '" +
           folded[0] + "'";
    if (folded.size() > 1)
      what += " and " + std::to_string(folded.size() - 1) + " more";
    what += std::string(folded.size() > 1 ? " are" : " is") +
            " neither parameter nor buffer of the torch module";
  }
  if (!merged.empty())
    what += (what.empty() ? "" : "; ") + std::string("'") + merged +
            "' is also read for torch's '" + mergedInto + "'";
  return "torch.onnx.export's optimizer folded and merged the module's "
         "parameters (" +
         what +
         "): trained, they would freeze or tie; export it with "
         "torch.onnx.export(..., optimize=False) to train";
}

} // namespace mlir::mpc::importer
