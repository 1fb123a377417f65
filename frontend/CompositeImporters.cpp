//===- CompositeImporters.cpp - ONNX ops imported as their definition -----===//
//
// RMSNormalization (23) and RotaryEmbedding (23) are imported as the mpc
// ops of their ONNX definitions (the reference implementation in
// onnx/reference/ops, step for step), so the CPU backend,
// autodiff and the precision passes handle them with no rule of their own.
// An attribute or input form outside what is built here is a one-line error
// naming it; nothing is dropped.
//
//===----------------------------------------------------------------------===//

#include "frontend/Composer.h"
#include "frontend/ImporterImpl.h"
#include "ir/MpcOps.h"

#include "mlir/IR/Matchers.h"
#include "llvm/ADT/APFloat.h"

#include <cmath>

using namespace mlir;
using namespace mlir::mpc;
using namespace mlir::mpc::importer;

namespace {

LogicalResult importRMSNorm(NodeContext &c) {
  if (failed(c.requireInputs(2)) ||
      failed(c.checkAttrs({"axis", "epsilon", "stash_type"})))
    return failure();
  int64_t stash = c.getInt("stash_type", onnx::TensorProto::FLOAT);
  if (stash != onnx::TensorProto::FLOAT)
    return c.fail("attribute 'stash_type' " + dataTypeName(stash) +
                  " is not supported (mpc normalises in FLOAT)");
  Composer m{c};
  Value x = c.input(0);
  Type type = typeOf(x).getElementType();
  if (!llvm::isa<FloatType>(type))
    return c.fail("X must be a float tensor");
  int64_t rank = typeOf(x).getRank();
  int64_t axis = c.getInt("axis", -1);
  if (axis < -rank || axis >= rank)
    return c.fail("axis " + Twine(axis) + " is out of range for rank " +
                  Twine(rank));
  // One mpc.rms_norm when the scale is a trailing part of the normalized
  // shape (as exporters write it); its definition otherwise.
  int64_t first = axis < 0 ? axis + rank : axis;
  ArrayRef<int64_t> norm = typeOf(x).getShape().drop_front(first),
                    scaleShape = typeOf(c.input(1)).getShape();
  while (!scaleShape.empty() && scaleShape.front() == 1)
    scaleShape = scaleShape.drop_front();
  if (scaleShape.size() <= norm.size() &&
      scaleShape == norm.take_back(scaleShape.size()) &&
      typeOf(c.input(1)).getElementType() == type)
    return c.emit("mpc.rms_norm", {x, c.input(1)},
                  {c.named("axis", c.b.getI64IntegerAttr(first)),
                   c.named("epsilon",
                           c.b.getF32FloatAttr(c.getFloat("epsilon", 1e-5f)))});
  SmallVector<int64_t> axes;
  for (int64_t a = first; a < rank; ++a)
    axes.push_back(a);
  // In FLOAT: x * 1/sqrt(mean(x^2) + epsilon), then back to X's type and
  // times scale.
  Value wide = m.cast(x, c.b.getF32Type());
  Value meanSquare =
      m.op("mpc.reduce_mean", {m.bin("mpc.mul", wide, wide)},
           {c.named("keepdims", c.b.getBoolAttr(true)),
            c.named("noop_with_empty_axes", c.b.getBoolAttr(false)),
            c.named("axes", c.b.getDenseI64ArrayAttr(axes))});
  Value eps = m.scalar(c.b.getF32Type(), c.getFloat("epsilon", 1e-5f));
  Value inv = m.op("mpc.reciprocal",
                   {m.op("mpc.sqrt", {m.bin("mpc.add", meanSquare, eps)})});
  Value y = m.bin("mpc.mul", m.cast(m.bin("mpc.mul", wide, inv), type),
                  c.input(1));
  if (c.failed())
    return failure();
  return c.setOutputs({y});
}

LogicalResult importRotaryEmbedding(NodeContext &c) {
  if (failed(c.requireInputs(3)) ||
      failed(c.checkAttrs({"interleaved", "num_heads", "rotary_embedding_dim"})))
    return failure();
  Composer m{c};
  Value x = c.input(0), cosC = c.input(1), sinC = c.input(2);
  int64_t rank = typeOf(x).getRank();
  if (rank != 3 && rank != 4)
    return c.fail("X must be 3-D or 4-D");
  // 4-D X is (batch, heads, sequence, head size) and rotates where it is;
  // 3-D X is (batch, sequence, heads * head size), viewed as 4-D.
  Value h = x;
  if (rank == 3) {
    int64_t heads = c.getInt("num_heads", 0);
    if (heads <= 0)
      return c.fail("3-D X needs attribute num_heads");
    h = m.reshape(x, {0, 0, heads, -1});
  }
  if (c.failed())
    return failure();
  int64_t head = typeOf(h).getShape()[3];
  if (head == ShapedType::kDynamic)
    return c.fail("the head size must be static");
  int64_t dim = c.getInt("rotary_embedding_dim", 0);
  if (dim == 0)
    dim = head;
  if (dim < 0 || dim > head || dim % 2)
    return c.fail("rotary_embedding_dim " + Twine(dim) +
                  " must be even and at most the head size " + Twine(head));
  if (Value pos = c.input(3)) {
    cosC = m.op("mpc.gather", {cosC, pos},
                {c.named("axis", c.b.getI64IntegerAttr(0))});
    sinC = m.op("mpc.gather", {sinC, pos},
                {c.named("axis", c.b.getI64IntegerAttr(0))});
  }
  if (c.failed())
    return failure();
  for (Value cache : {cosC, sinC}) {
    auto shape = typeOf(cache).getShape();
    if (shape.empty() || shape.back() != dim / 2)
      return c.fail("the cos and sin caches' last dimension must be "
                    "rotary_embedding_dim / 2 = " + Twine(dim / 2));
  }
  // One pass over X (mpc.rotary): no transposes, slices or concatenations.
  Value out = m.op("mpc.rotary", {h, cosC, sinC},
                   {c.named("seq_axis", c.b.getI64IntegerAttr(rank == 4 ? 2 : 1)),
                    c.named("rotary_dim", c.b.getI64IntegerAttr(dim)),
                    c.named("interleaved",
                            c.b.getBoolAttr(c.getInt("interleaved", 0) != 0))});
  if (rank == 3)
    out = m.reshape(out, {0, 0, -1});
  if (c.failed())
    return failure();
  return c.setOutputs({out});
}

const llvm::StringMap<NodeImportFn> &compositeOps() {
  static const llvm::StringMap<NodeImportFn> table = {
      {"Attention", importAttention}, // AttentionImporters.cpp
      {"RMSNormalization", importRMSNorm},
      {"RotaryEmbedding", importRotaryEmbedding},
      {"Einsum", importEinsum},
      {"InstanceNormalization", importInstanceNorm},
      {"GroupNormalization", importGroupNorm},
      {"LRN", importLRN},
      {"LpNormalization", importLpNormalization},
      {"MeanVarianceNormalization", importMeanVarianceNorm},
      {"LpPool", importLpPool},
      {"Shrink", importShrink},
      {"Hardmax", importHardmax},
      {"ReverseSequence", importReverseSequence},
      {"GridSample", importGridSample},
      {"AffineGrid", importAffineGrid},
      {"Col2Im", importCol2Im},
      {"MaxUnpool", importMaxUnpool},
      {"CenterCropPad", importCenterCropPad},
      {"TensorScatter", importTensorScatter},
      {"DeformConv", importDeformConv},
      {"RoiAlign", importRoiAlign},
      {"CausalConvWithState", importCausalConvWithState},
      {"LinearAttention", importLinearAttention},
      {"Scan", importScan},
      {"Loop", importLoop},
      {"DepthToSpace", importDepthToSpace},
      {"SpaceToDepth", importSpaceToDepth},
      {"Swish", importSwish},
      {"SwiGLU", importSwiGLU},
      {"LSTM", importLSTM},
      {"GRU", importGRU},
      {"RNN", importRNN}};
  return table;
}

} // namespace

namespace mlir::mpc::importer {

NodeImportFn lookupCompositeImporter(StringRef opType) {
  auto it = compositeOps().find(opType);
  return it == compositeOps().end() ? nullptr : it->second;
}

void listCompositeOps(std::vector<std::string> &ops) {
  for (const auto &kv : compositeOps())
    ops.push_back(kv.getKey().str());
}

} // namespace mlir::mpc::importer
