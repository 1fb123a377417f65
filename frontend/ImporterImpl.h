//===- ImporterImpl.h - shared state of the ONNX importer --------*- C++ -*-===//
//
// NodeContext is what a per-op importer sees of one ONNX node: its inputs as
// values, typed attribute access with errors for wrong types, and `build`,
// which infers result types (reporting shape errors against the node) and
// folds constants as it goes.
//
//===----------------------------------------------------------------------===//

#ifndef MPC_FRONTEND_IMPORTERIMPL_H
#define MPC_FRONTEND_IMPORTERIMPL_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/StringSet.h"

#include <onnx/onnx_pb.h>

#include <functional>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace mlir::mpc::importer {

class NodeContext;
using NodeImportFn = mlir::LogicalResult (*)(NodeContext &);

/// The ranked tensor type of an imported value (every value the importer
/// makes is one).
inline mlir::RankedTensorType typeOf(mlir::Value v) {
  return llvm::cast<mlir::RankedTensorType>(v.getType());
}

/// The importer of (domain, op_type), or null when mpc does not support it.
NodeImportFn lookupNodeImporter(llvm::StringRef domain, llvm::StringRef opType);

/// Every (domain, op_type) with an importer, sorted.
std::vector<std::pair<std::string, std::string>> supportedOps();

/// The table-driven importers of ai.onnx ops that map 1:1 onto an mpc op
/// (SimpleImporters.cpp): the importer of `opType` or null, and their names.
NodeImportFn lookupSimpleImporter(llvm::StringRef opType);
void listSimpleOps(std::vector<std::string> &ops);
/// (ONNX op, mpc op name) of every table row, to check the names exist.
void listSimpleTargets(std::vector<std::pair<std::string, std::string>> &rows);
/// The same for ai.onnx.preview.training (TrainingImporters.cpp).
NodeImportFn lookupTrainingImporter(llvm::StringRef opType);
void listTrainingOps(std::vector<std::string> &ops);

/// Ops imported as the mpc ops of their ONNX definition
/// (CompositeImporters.cpp): Attention, RMSNormalization, RotaryEmbedding,
/// Einsum, the normalizations, DepthToSpace, SpaceToDepth, Swish, SwiGLU,
/// LRN, LpPool, Shrink, Hardmax, ReverseSequence, GridSample, AffineGrid,
/// Col2Im, MaxUnpool, CenterCropPad, TensorScatter, DeformConv,
/// CausalConvWithState, LinearAttention, Scan, Loop, RoiAlign.
NodeImportFn lookupCompositeImporter(llvm::StringRef opType);
void listCompositeOps(std::vector<std::string> &ops);

/// ONNX ConvTranspose, its padding rules resolved (ConvTransposeImporter.cpp).
mlir::LogicalResult importConvTranspose(NodeContext &c);
/// Resize and Upsample as one mpc.resize_axis per resized axis, the ONNX
/// modes resolved into tap tables (ResizeImporter.cpp).
mlir::LogicalResult importResize(NodeContext &c);
mlir::LogicalResult importUpsample(NodeContext &c);
/// Einsum as diagonals, sums and one batched MatMul a pair of terms
/// (EinsumImporter.cpp).
mlir::LogicalResult importEinsum(NodeContext &c);
/// FNV-1a of `s`: a random op's stream (Dropout's, RandomUniform's...)
/// from its node's output name (unique in a graph), so two of them draw
/// different numbers.
inline int64_t streamOf(const std::string &s) {
  uint32_t h = 2166136261u;
  for (unsigned char ch : s)
    h = (h ^ ch) * 16777619u;
  return h;
}
/// RandomUniform(Like) and RandomNormal(Like) as mpc.random
/// (RandomImporters.cpp).
mlir::LogicalResult importRandom(NodeContext &c);
/// SplitToSequence as its parts, SequenceAt at a constant position as one
/// of them (SequenceImporters.cpp).
mlir::LogicalResult importSplitToSequence(NodeContext &c);
mlir::LogicalResult importSequenceAt(NodeContext &c);
/// InstanceNormalization and GroupNormalization as layer_norm over a view
/// of X plus the affine part (NormImporters.cpp).
mlir::LogicalResult importInstanceNorm(NodeContext &c);
/// DepthToSpace and SpaceToDepth as reshape, transpose, reshape
/// (RearrangeImporters.cpp).
mlir::LogicalResult importDepthToSpace(NodeContext &c);
mlir::LogicalResult importSpaceToDepth(NodeContext &c);
/// LSTM, GRU and RNN unrolled over the sequence (RecurrentImporters.cpp).
mlir::LogicalResult importLSTM(NodeContext &c);
mlir::LogicalResult importGRU(NodeContext &c);
mlir::LogicalResult importRNN(NodeContext &c);
/// Swish and SwiGLU as sigmoid and multiplies (SwishImporters.cpp).
mlir::LogicalResult importSwish(NodeContext &c);
mlir::LogicalResult importSwiGLU(NodeContext &c);
mlir::LogicalResult importGroupNorm(NodeContext &c);
/// LRN, LpNormalization, MeanVarianceNormalization and LpPool as their
/// definitions (NormImporters.cpp).
mlir::LogicalResult importLRN(NodeContext &c);
mlir::LogicalResult importLpNormalization(NodeContext &c);
mlir::LogicalResult importMeanVarianceNorm(NodeContext &c);
mlir::LogicalResult importLpPool(NodeContext &c);
/// Shrink, Hardmax and ReverseSequence as selections by comparison and
/// index (SelectionImporters.cpp).
mlir::LogicalResult importShrink(NodeContext &c);
mlir::LogicalResult importHardmax(NodeContext &c);
mlir::LogicalResult importReverseSequence(NodeContext &c);
/// GridSample as gathers of its taps, weighted, and AffineGrid as a MatMul
/// of its base grid (GridSampleImporter.cpp).
mlir::LogicalResult importGridSample(NodeContext &c);
mlir::LogicalResult importAffineGrid(NodeContext &c);
/// Col2Im, MaxUnpool, CenterCropPad and TensorScatter: values placed into
/// another shape
/// (PlacementImporters.cpp).
mlir::LogicalResult importCol2Im(NodeContext &c);
mlir::LogicalResult importMaxUnpool(NodeContext &c);
mlir::LogicalResult importCenterCropPad(NodeContext &c);
mlir::LogicalResult importTensorScatter(NodeContext &c);
/// DeformConv as bilinear gathers at its offsets and a batched MatMul
/// (DeformConvImporter.cpp).
mlir::LogicalResult importDeformConv(NodeContext &c);
/// RoiAlign as bilinear gathers of each roi's samples (RoiAlignImporter.cpp).
mlir::LogicalResult importRoiAlign(NodeContext &c);
/// CausalConvWithState as a concat and a depthwise Conv
/// (RecurrentImporters.cpp).
mlir::LogicalResult importCausalConvWithState(NodeContext &c);
/// LinearAttention's recurrence unrolled over the sequence
/// (LinearAttentionImporter.cpp).
mlir::LogicalResult importLinearAttention(NodeContext &c);
/// Scan unrolled over its static sequence, Loop over its constant trip
/// count and conditions, the body inlined per iteration
/// (LoopImporters.cpp).
mlir::LogicalResult importScan(NodeContext &c);
mlir::LogicalResult importLoop(NodeContext &c);
/// Attention (opset 23) and FlexAttention (ai.onnx.preview 1) as their
/// definitions' scores, mask or modifiers, softmax and product with V
/// (AttentionImporters.cpp).
mlir::LogicalResult importAttention(NodeContext &c);
mlir::LogicalResult importFlexAttention(NodeContext &c);

/// torch.export's graph signature as torch.onnx.export records it
/// (TorchExportSignature.cpp): what each initializer is to the torch module.
class TorchSignature {
public:
  explicit TorchSignature(const onnx::GraphProto &graph);
  /// Whether the exporter recorded a signature at all.
  bool present() const { return !kinds.empty(); }
  /// PARAMETER, BUFFER, CONSTANT_TENSOR (also a non-persistent buffer)...;
  /// null for an initializer the signature does not name (one the
  /// exporter's optimizer made).
  const std::string *kind(const std::string &init) const;
  /// One line saying why the model cannot train as the torch module would
  /// (parameters the exporter's optimizer folded into constants or merged
  /// by value), or "".
  std::string foldedByExporter(const onnx::GraphProto &graph) const;

private:
  std::unordered_map<std::string, std::string> kinds;
  std::unordered_map<std::string, std::string> placeholders; // p_m_fc_weight
};

/// A node's name for messages and locations: its name, else its first
/// output (NodeOrder.cpp).
std::string displayName(const onnx::NodeProto &node);
/// The names `graph` reads that it does not define: an If branch's reads
/// of the enclosing graph (NodeOrder.cpp).
void outerReads(const onnx::GraphProto &graph, llvm::StringSet<> &reads);
/// The graph's nodes in topological order (ONNX requires it, but not every
/// producer complies; an If after what its branches read), smallest index first, so that a graph in order
/// imports in file order; and each node's readers. Fails naming a node
/// whose output is defined twice (or is `defined` already) or that is
/// part of a cycle.
mlir::LogicalResult nodeOrder(const onnx::GraphProto &graph,
                              llvm::function_ref<bool(llvm::StringRef)> defined,
                              std::vector<int> &order,
                              std::vector<std::vector<int>> &users, std::string &error);

/// torch's Embedding padding_idx of a Gather, read from the aten op
/// torch.onnx.export recorded for it (TorchExportSignature.cpp).
std::optional<int64_t> torchPaddingIdx(const onnx::NodeProto &node);
/// torch's momentum of a BatchNormalization that torch ran in training
/// mode (aten._native_batch_norm_legit_functional, training=True), which
/// torch 2's exporter writes in inference mode; nullopt otherwise.
std::optional<float> torchTrainingBatchNorm(const onnx::NodeProto &node);

/// What a main-graph initializer imports as (InitializerRoles.cpp): a
/// constant, or state (mpc.param), trainable or not.
enum class InitializerRole { Constant, State, Trainable };
class InitializerRoles {
public:
  explicit InitializerRoles(const onnx::ModelProto &model);
  InitializerRole role(const onnx::TensorProto &init, mlir::Type type) const;
  const TorchSignature &torchSignature() const { return signature; }

private:
  TorchSignature signature;
  // Each value's readers (node, input index); what update bindings write.
  std::unordered_map<std::string,
                     std::vector<std::pair<const onnx::NodeProto *, int>>>
      uses;
  std::unordered_set<std::string> bound;
};

/// Replaces the dropouts of `body` that are the identity and whose mask
/// nothing reads by their input (NodeImporters.cpp).
void foldIdentityDropouts(mlir::Block &body);

/// Operands up to the last given input; a gap in the middle is an error
/// (mpc ops take their optional operands positionally).
mlir::FailureOr<llvm::SmallVector<mlir::Value>> denseOperands(NodeContext &c);

/// The MLIR element type of an ONNX data type, or null when unsupported.
mlir::Type elementTypeOf(int32_t onnxType, mlir::MLIRContext *ctx);
/// "FLOAT", "DOUBLE"...
std::string dataTypeName(int32_t onnxType);

/// Node `idx` of `graph` as a FLOAT Constant where it is a float64 one
/// that only Casts to FLOAT read (`users`: the nodes reading it), with the
/// values those Casts make (TensorReader.cpp); nullopt otherwise.
std::optional<onnx::NodeProto>
narrowedDoubleConstant(const onnx::GraphProto &graph, int idx,
                       const std::vector<int> &users);

/// Reads a TensorProto (inline or external data) into an elements attribute.
mlir::FailureOr<mlir::DenseElementsAttr>
readTensor(const onnx::TensorProto &tensor, mlir::MLIRContext *ctx,
           const std::string &modelDir, std::string &error);

class NodeContext {
public:
  NodeContext(const onnx::NodeProto &node, int64_t opset, mlir::OpBuilder &b,
              mlir::Location loc, llvm::SmallVector<mlir::Value> inputs,
              const std::string &modelDir)
      : node(node), opset(opset), b(b), loc(loc), inputs(std::move(inputs)),
        modelDir(modelDir) {}

  const onnx::NodeProto &node;
  const int64_t opset;
  mlir::OpBuilder &b;
  const mlir::Location loc;
  /// One entry per node input; null for an omitted optional input ("").
  const llvm::SmallVector<mlir::Value> inputs;
  const std::string &modelDir;
  /// The value of a tensor name in the current graph, or null.
  std::function<mlir::Value(llvm::StringRef)> lookup;
  /// Imports the graph attribute `attr` in place, its inputs bound to
  /// `args` (FlexAttention's score_mod): its outputs, or failure with the
  /// error naming the attribute and the subgraph's node.
  std::function<mlir::FailureOr<llvm::SmallVector<mlir::Value>>(
      const onnx::AttributeProto &attr, llvm::ArrayRef<mlir::Value> args)>
      inlineGraph;
  /// The graph's sequences by name, each the list of its parts
  /// (SequenceImporters.cpp).
  llvm::StringMap<llvm::SmallVector<mlir::Value>> *sequences = nullptr;

  /// Results mapped to node outputs, in order.
  llvm::SmallVector<mlir::Value> outputs;
  /// Results past --max-tensor-bytes let through (Attention's scores,
  /// which the fused op never holds): the plan builder bounds what a plan
  /// would hold of them.
  bool largeResults = false;
  /// First error, without the node prefix.
  std::string error;

  mlir::Value input(unsigned i) const {
    return i < inputs.size() ? inputs[i] : mlir::Value();
  }
  unsigned numOutputs() const { return node.output_size(); }

  mlir::LogicalResult fail(const llvm::Twine &message);
  /// Fails unless inputs 0..n-1 are present.
  mlir::LogicalResult requireInputs(unsigned n);
  bool failed() const { return !error.empty(); }

  /// Errors for any attribute not in `known` (semantics we would drop).
  mlir::LogicalResult checkAttrs(llvm::ArrayRef<llvm::StringRef> known);

  const onnx::AttributeProto *attr(llvm::StringRef name) const;
  // Typed attribute access; a wrong type records an error and returns the
  // default.
  int64_t getInt(llvm::StringRef name, int64_t dflt);
  float getFloat(llvm::StringRef name, float dflt);
  std::string getString(llvm::StringRef name, llvm::StringRef dflt);
  std::optional<llvm::SmallVector<int64_t>> getInts(llvm::StringRef name);
  std::optional<llvm::SmallVector<std::string>>
  getStrings(llvm::StringRef name);
  std::optional<mlir::DenseElementsAttr> getTensor(llvm::StringRef name);

  /// Values of input `i`, which must be a constant (after folding).
  mlir::FailureOr<llvm::SmallVector<int64_t>> constantInts(unsigned i,
                                                           llvm::StringRef what);
  /// An axes-like list given as attribute `name` (older opsets) or as
  /// constant input `i` (newer); nullopt when neither is present.
  mlir::FailureOr<std::optional<llvm::SmallVector<int64_t>>>
  intsFromAttrOrInput(llvm::StringRef name, unsigned i);

  /// Creates `opName` with inferred result types and folds it when possible.
  /// Shape errors become node errors.
  mlir::FailureOr<llvm::SmallVector<mlir::Value>>
  build(llvm::StringRef opName, mlir::ValueRange operands,
        llvm::ArrayRef<mlir::NamedAttribute> attrs = {},
        llvm::ArrayRef<int32_t> segments = {});
  /// Creates an op with explicit result types (mpc.cast).
  mlir::Value buildCast(mlir::Value x, mlir::Type elementType);
  mlir::Value constant(mlir::DenseElementsAttr value);

  /// Builds and maps all results to the node's outputs.
  mlir::LogicalResult emit(llvm::StringRef opName, mlir::ValueRange operands,
                           llvm::ArrayRef<mlir::NamedAttribute> attrs = {},
                           llvm::ArrayRef<int32_t> segments = {});
  /// Maps results to node outputs; errors if the node wants more outputs.
  mlir::LogicalResult setOutputs(mlir::ValueRange results);

  mlir::NamedAttribute named(llvm::StringRef name, mlir::Attribute value) {
    return b.getNamedAttr(name, value);
  }
};

} // namespace mlir::mpc::importer

#endif // MPC_FRONTEND_IMPORTERIMPL_H
