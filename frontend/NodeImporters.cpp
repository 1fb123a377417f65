//===- NodeImporters.cpp - ONNX ops with an importer function each --------===//
//
// Ops whose signature changed across opsets (axes/split/pads moving from
// attributes to inputs, training modes...) or that need extra logic have a
// function each; all normalise to one mpc form. The 1:1 ops are table rows
// in SimpleImporters.cpp.
//
//===----------------------------------------------------------------------===//

#include "frontend/ImporterImpl.h"
#include "ir/MpcOps.h"
#include "ir/ShapeRules.h"

#include "mlir/IR/Matchers.h"
#include "mlir/IR/TypeUtilities.h"
#include "llvm/ADT/StringMap.h"

using namespace mlir;

namespace mlir::mpc::importer {
namespace {

//===----------------------------------------------------------------------===//
// Ops with opset-dependent signatures or extra logic
//===----------------------------------------------------------------------===//

/// A scalar constant of `elem` (float or integer) holding `value`.
Value getConstantScalar(NodeContext &c, Type elem, double value) {
  auto type = RankedTensorType::get({}, elem);
  if (auto f = llvm::dyn_cast<FloatType>(elem)) {
    bool lost;
    APFloat v(value);
    v.convert(f.getFloatSemantics(), APFloat::rmNearestTiesToEven, &lost);
    return c.constant(DenseElementsAttr::get(type, v));
  }
  return c.constant(DenseElementsAttr::get(
      type, APInt(elem.getIntOrFloatBitWidth(), (int64_t)value, true)));
}

/// A 1-D i64 constant.
Value intsConstant(NodeContext &c, ArrayRef<int64_t> values) {
  return c.constant(DenseElementsAttr::get(
      RankedTensorType::get({(int64_t)values.size()}, c.b.getI64Type()),
      values));
}

LogicalResult importConstant(NodeContext &c) {
  if (failed(c.checkAttrs({"value", "value_float", "value_floats", "value_int",
                           "value_ints"})))
    return c.fail("only tensor, float(s) and int(s) constants are supported");
  DenseElementsAttr value;
  Builder &b = c.b;
  if (auto t = c.getTensor("value")) {
    value = *t;
  } else if (c.attr("value_float")) {
    value = DenseElementsAttr::get(RankedTensorType::get({}, b.getF32Type()),
                                   c.getFloat("value_float", 0));
  } else if (c.attr("value_int")) {
    value = DenseElementsAttr::get(RankedTensorType::get({}, b.getI64Type()),
                                   c.getInt("value_int", 0));
  } else if (auto *a = c.attr("value_floats")) {
    SmallVector<float> v(a->floats().begin(), a->floats().end());
    value = DenseElementsAttr::get(
        RankedTensorType::get({(int64_t)v.size()}, b.getF32Type()), ArrayRef(v));
  } else if (auto ints = c.getInts("value_ints")) {
    value = DenseElementsAttr::get(
        RankedTensorType::get({(int64_t)ints->size()}, b.getI64Type()),
        ArrayRef(*ints));
  }
  if (c.failed())
    return failure();
  if (!value)
    return c.fail("Constant has no value attribute");
  return c.setOutputs(c.constant(value));
}

LogicalResult importCast(NodeContext &c) {
  Type elem;
  if (failed(c.requireInputs(c.node.op_type() == "CastLike" ? 2 : 1)))
    return failure();
  // saturate and round_mode (opset 24) only change conversions to float8
  // types, which mpc does not have.
  if (c.node.op_type() == "CastLike") {
    if (failed(c.checkAttrs({"saturate", "round_mode"})))
      return failure();
    elem = getElementTypeOrSelf(c.input(1));
  } else {
    if (failed(c.checkAttrs({"to", "saturate", "round_mode"})))
      return failure();
    int64_t to = c.getInt("to", 0);
    elem = elementTypeOf(to, c.b.getContext());
    if (!elem)
      return c.fail("cast to " + dataTypeName(to) + " is not supported");
  }
  return c.setOutputs(c.buildCast(c.input(0), elem));
}

LogicalResult importClip(NodeContext &c) {
  if (failed(c.requireInputs(1)))
    return failure();
  Value lo = c.input(1), hi = c.input(2);
  if (c.opset < 11) { // min and max were attributes
    if (failed(c.checkAttrs({"min", "max"})))
      return failure();
    Type elem = getElementTypeOrSelf(c.input(0));
    if (c.attr("min"))
      lo = getConstantScalar(c, elem, c.getFloat("min", 0));
    if (c.attr("max"))
      hi = getConstantScalar(c, elem, c.getFloat("max", 0));
  } else if (failed(c.checkAttrs({}))) {
    return failure();
  }
  SmallVector<Value> operands{c.input(0)};
  for (Value bound : {lo, hi})
    if (bound)
      operands.push_back(bound);
  return c.emit("mpc.clip", operands, {}, {1, lo ? 1 : 0, hi ? 1 : 0});
}

LogicalResult importBatchNorm(NodeContext &c) {
  if (failed(c.requireInputs(5)))
    return failure();
  if (failed(c.checkAttrs({"epsilon", "momentum", "training_mode", "spatial"})))
    return failure();
  if (c.getInt("spatial", 1) != 1)
    return c.fail("spatial=0 is not supported");
  bool training = c.getInt("training_mode", 0) != 0;
  float momentum = c.getFloat("momentum", 0.9f);
  // Batch statistics where torch used them: torch 2's exporter writes a
  // module in train mode with an inference-mode node (the FX node says).
  bool torchRule = false;
  if (auto torchMomentum = torchTrainingBatchNorm(c.node); !training && torchMomentum) {
    training = torchRule = true;
    momentum = 1.0f - *torchMomentum;
  }
  if (c.opset < 14 && c.numOutputs() > 1)
    return c.fail("training-mode BatchNormalization before opset 14 is not "
                  "supported; re-export with opset >= 15");
  SmallVector<NamedAttribute> attrs{
      c.named("epsilon", c.b.getF32FloatAttr(c.getFloat("epsilon", 1e-5f)))};
  if (!training)
    return c.emit("mpc.batch_norm", c.inputs, attrs);
  attrs.push_back(c.named("momentum", c.b.getF32FloatAttr(momentum)));
  if (torchRule)
    attrs.push_back(c.named("unbiased_running_var", c.b.getBoolAttr(true)));
  return c.emit("mpc.batch_norm_train", c.inputs, attrs);
}

LogicalResult importLayerNorm(NodeContext &c) {
  if (failed(c.requireInputs(2)))
    return failure();
  if (failed(c.checkAttrs({"axis", "epsilon", "stash_type"})))
    return failure();
  if (c.getInt("stash_type", 1) != 1)
    return c.fail("stash_type other than 1 (float) is not supported");
  auto operands = denseOperands(c);
  if (failed(operands))
    return failure();
  return c.emit("mpc.layer_norm", *operands,
                {c.named("axis", c.b.getI64IntegerAttr(c.getInt("axis", -1))),
                 c.named("epsilon",
                         c.b.getF32FloatAttr(c.getFloat("epsilon", 1e-5f)))});
}

LogicalResult importSoftmax(NodeContext &c) {
  if (failed(c.requireInputs(1)))
    return failure();
  if (failed(c.checkAttrs({"axis"})))
    return failure();
  int64_t rank = llvm::cast<RankedTensorType>(c.input(0).getType()).getRank();
  int64_t axis = c.getInt("axis", c.opset < 13 ? 1 : -1);
  // Before opset 13 the input was coerced to 2-D at `axis`; that equals the
  // per-axis form only when `axis` is the last dimension.
  if (c.opset < 13 && axis != -1 && axis != rank - 1)
    return c.fail("axis " + Twine(axis) +
                  " with the coerced-2D semantics of opset < 13 is not "
                  "supported");
  StringRef name =
      c.node.op_type() == "Softmax" ? "mpc.softmax" : "mpc.log_softmax";
  return c.emit(name, {c.input(0)},
                {c.named("axis", c.b.getI64IntegerAttr(axis))});
}

LogicalResult importDropout(NodeContext &c) {
  if (failed(c.requireInputs(1)))
    return failure();
  if (failed(c.checkAttrs({"seed", "ratio"})))
    return failure();
  SmallVector<Value> operands{c.input(0)};
  Value ratio = c.input(1);
  if (c.opset < 12 && c.attr("ratio"))
    ratio = c.constant(DenseElementsAttr::get(
        RankedTensorType::get({}, c.b.getF32Type()), c.getFloat("ratio", 0.5f)));
  Value training = c.opset < 12 ? Value() : c.input(2);
  if (ratio)
    operands.push_back(ratio);
  if (training)
    operands.push_back(training);
  SmallVector<NamedAttribute> attrs;
  if (c.attr("seed"))
    attrs.push_back(c.named("seed", c.b.getI64IntegerAttr(c.getInt("seed", 0))));
  attrs.push_back(
      c.named("stream", c.b.getI64IntegerAttr(streamOf(c.node.output(0)))));
  return c.emit("mpc.dropout", operands, attrs,
                {1, ratio ? 1 : 0, training ? 1 : 0, 0});
}

constexpr char kCumSum[] = "mpc.cum_sum", kCumProd[] = "mpc.cum_prod";

/// CumSum and CumProd (`op`: their mpc op).
template <const char *op> LogicalResult importCumulative(NodeContext &c) {
  if (failed(c.requireInputs(2)))
    return failure();
  if (failed(c.checkAttrs({"exclusive", "reverse"})))
    return failure();
  auto axis = c.constantInts(1, "axis");
  if (failed(axis))
    return failure();
  return c.emit(
      op, {c.input(0)},
      {c.named("axis", c.b.getI64IntegerAttr(axis->front())),
       c.named("exclusive", c.b.getBoolAttr(c.getInt("exclusive", 0))),
       c.named("reverse", c.b.getBoolAttr(c.getInt("reverse", 0)))});
}

LogicalResult importTrilu(NodeContext &c) {
  if (failed(c.requireInputs(1)))
    return failure();
  if (failed(c.checkAttrs({"upper"})))
    return failure();
  int64_t k = 0;
  if (c.input(1)) {
    auto v = c.constantInts(1, "k");
    if (failed(v))
      return failure();
    k = v->front();
  }
  return c.emit("mpc.trilu", {c.input(0)},
                {c.named("k", c.b.getI64IntegerAttr(k)),
                 c.named("upper", c.b.getBoolAttr(c.getInt("upper", 1)))});
}

LogicalResult importOneHot(NodeContext &c) {
  if (failed(c.requireInputs(3)))
    return failure();
  if (failed(c.checkAttrs({"axis"})))
    return failure();
  DenseElementsAttr depthAttr;
  if (!matchPattern(c.input(1), m_Constant(&depthAttr)) ||
      depthAttr.getNumElements() != 1)
    return c.fail("depth (input 1) must be a constant scalar");
  int64_t depth =
      llvm::isa<FloatType>(depthAttr.getElementType())
          ? (int64_t)(*depthAttr.getValues<APFloat>().begin()).convertToDouble()
          : (*depthAttr.getValues<APInt>().begin()).getSExtValue();
  return c.emit("mpc.one_hot", {c.input(0), c.input(2)},
                {c.named("depth", c.b.getI64IntegerAttr(depth)),
                 c.named("axis", c.b.getI64IntegerAttr(c.getInt("axis", -1)))});
}

/// EyeLike (torch.diagonal's export) as the constant it is: ones on
/// diagonal k of a 2-D shape, zeros elsewhere, in `dtype` or X's type.
LogicalResult importEyeLike(NodeContext &c) {
  if (failed(c.requireInputs(1)) || failed(c.checkAttrs({"dtype", "k"})))
    return failure();
  auto x = llvm::cast<RankedTensorType>(c.input(0).getType());
  if (x.getRank() != 2 || !x.hasStaticShape())
    return c.fail("input must be 2-D with a static shape");
  Type elem = x.getElementType();
  if (c.attr("dtype")) {
    int64_t dtype = c.getInt("dtype", 0);
    elem = elementTypeOf(dtype, c.b.getContext());
    if (!elem)
      return c.fail("dtype " + dataTypeName(dtype) +
                    ": element type not supported");
  }
  int64_t rows = x.getDimSize(0), cols = x.getDimSize(1), k = c.getInt("k", 0);
  auto type = RankedTensorType::get({rows, cols}, elem);
  SmallVector<Attribute> values;
  Attribute zero = c.b.getZeroAttr(elem),
            one = llvm::isa<FloatType>(elem)
                      ? (Attribute)c.b.getFloatAttr(elem, 1.0)
                      : (Attribute)c.b.getIntegerAttr(elem, 1);
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j)
      values.push_back(j - i == k ? one : zero);
  return c.setOutputs({c.constant(DenseElementsAttr::get(type, values))});
}

/// TopK as mpc.top_k (the indices) and Values gathered by them, so the
/// values' gradient is gather_elements' rule. k: attribute (opset 1),
/// constant input 1 (10+); sorted = 0 leaves the order to us: sorted.
LogicalResult importTopK(NodeContext &c) {
  if (failed(c.requireInputs(1)) ||
      failed(c.checkAttrs({"k", "axis", "largest", "sorted"})))
    return failure();
  int64_t k = c.getInt("k", -1);
  if (c.input(1)) {
    auto v = c.constantInts(1, "K");
    if (failed(v))
      return failure();
    if (v->size() != 1)
      return c.fail("K (input 1) must hold one value");
    k = v->front();
  } else if (!c.attr("k")) {
    return c.fail("needs K (input 1, or attribute k before opset 10)");
  }
  int64_t axis = c.getInt("axis", -1);
  auto indices = c.build(
      "mpc.top_k", {c.input(0)},
      {c.named("k", c.b.getI64IntegerAttr(k)),
       c.named("axis", c.b.getI64IntegerAttr(axis)),
       c.named("largest", c.b.getBoolAttr(c.getInt("largest", 1) != 0))});
  if (failed(indices))
    return failure();
  auto values = c.build("mpc.gather_elements", {c.input(0), (*indices)[0]},
                        {c.named("axis", c.b.getI64IntegerAttr(axis))});
  if (failed(values))
    return failure();
  return c.setOutputs({(*values)[0], (*indices)[0]});
}

const llvm::StringMap<llvm::StringLiteral> &reduceOps() {
  static const llvm::StringMap<llvm::StringLiteral> table = {
      {"ReduceSum", "mpc.reduce_sum"},
      {"ReduceMean", "mpc.reduce_mean"},
      {"ReduceMax", "mpc.reduce_max"},
      {"ReduceMin", "mpc.reduce_min"},
      {"ReduceProd", "mpc.reduce_prod"},
      {"ReduceL1", "mpc.reduce_l1"},
      {"ReduceL2", "mpc.reduce_l2"},
      {"ReduceSumSquare", "mpc.reduce_sum_square"},
      {"ReduceLogSum", "mpc.reduce_log_sum"},
      {"ReduceLogSumExp", "mpc.reduce_log_sum_exp"}};
  return table;
}

LogicalResult importReduce(NodeContext &c) {
  if (failed(c.requireInputs(1)))
    return failure();
  if (failed(c.checkAttrs({"axes", "keepdims", "noop_with_empty_axes"})))
    return failure();
  auto axes = c.intsFromAttrOrInput("axes", 1);
  if (failed(axes))
    return failure();
  SmallVector<NamedAttribute> attrs{
      c.named("keepdims", c.b.getBoolAttr(c.getInt("keepdims", 1))),
      c.named("noop_with_empty_axes",
              c.b.getBoolAttr(c.getInt("noop_with_empty_axes", 0)))};
  if (*axes)
    attrs.push_back(c.named("axes", c.b.getDenseI64ArrayAttr(**axes)));
  StringRef op = reduceOps().find(c.node.op_type())->second;
  auto type = llvm::cast<RankedTensorType>(c.input(0).getType());
  bool anyAll = op == "mpc.reduce_max" || op == "mpc.reduce_min";
  if (!anyAll || !type.getElementType().isInteger(1))
    return c.emit(op, {c.input(0)}, attrs);
  // Boolean Max/Min are any/all: reduce as int32 and test > 0, which also
  // gives the empty set's identities (false for Max, true for Min).
  auto reduced = c.build(op, {c.buildCast(c.input(0), c.b.getI32Type())},
                         attrs);
  if (failed(reduced))
    return failure();
  Value zero = c.constant(DenseElementsAttr::get(
      RankedTensorType::get({}, c.b.getI32Type()), int32_t(0)));
  return c.emit("mpc.greater", {(*reduced)[0], zero});
}

LogicalResult importSplit(NodeContext &c) {
  if (failed(c.requireInputs(1)))
    return failure();
  if (failed(c.checkAttrs({"axis", "split", "num_outputs"})))
    return failure();
  auto split = c.intsFromAttrOrInput("split", 1);
  if (failed(split))
    return failure();
  int64_t n = c.numOutputs();
  if (c.attr("num_outputs") && c.getInt("num_outputs", n) != n)
    return c.fail("num_outputs disagrees with the node's " + Twine(n) +
                  " outputs");
  SmallVector<NamedAttribute> attrs{
      c.named("axis", c.b.getI64IntegerAttr(c.getInt("axis", 0))),
      c.named("num_outputs", c.b.getI64IntegerAttr(n))};
  if (*split)
    attrs.push_back(c.named("split", c.b.getDenseI64ArrayAttr(**split)));
  return c.emit("mpc.split", {c.input(0)}, attrs);
}

LogicalResult importSlice(NodeContext &c) {
  if (c.opset < 10) { // starts, ends and axes were attributes
    if (failed(c.requireInputs(1)) ||
        failed(c.checkAttrs({"starts", "ends", "axes"})))
      return failure();
    auto starts = c.getInts("starts"), ends = c.getInts("ends");
    if (!starts || !ends)
      return c.fail("Slice needs attributes starts and ends");
    SmallVector<Value> operands{c.input(0), intsConstant(c, *starts),
                                intsConstant(c, *ends)};
    if (auto axes = c.getInts("axes"))
      operands.push_back(intsConstant(c, *axes));
    return c.emit("mpc.slice", operands, {},
                  {1, 1, 1, operands.size() > 3 ? 1 : 0, 0});
  }
  if (failed(c.requireInputs(3)))
    return failure();
  if (failed(c.checkAttrs({})))
    return failure();
  auto operands = denseOperands(c);
  if (failed(operands))
    return failure();
  if (operands->size() < 3)
    return c.fail("Slice needs data, starts and ends");
  return c.emit("mpc.slice", *operands, {},
                {1, 1, 1, operands->size() > 3 ? 1 : 0,
                 operands->size() > 4 ? 1 : 0});
}

LogicalResult importSqueeze(NodeContext &c) {
  if (failed(c.requireInputs(1)))
    return failure();
  if (failed(c.checkAttrs({"axes"})))
    return failure();
  auto axes = c.intsFromAttrOrInput("axes", 1);
  if (failed(axes))
    return failure();
  bool squeeze = c.node.op_type() == "Squeeze";
  if (!squeeze && !*axes)
    return c.fail("Unsqueeze needs axes");
  SmallVector<NamedAttribute> attrs;
  if (*axes)
    attrs.push_back(c.named("axes", c.b.getDenseI64ArrayAttr(**axes)));
  return c.emit(squeeze ? "mpc.squeeze" : "mpc.unsqueeze", {c.input(0)},
                attrs);
}

LogicalResult importPad(NodeContext &c) {
  Type elem = c.input(0) ? getElementTypeOrSelf(c.input(0)) : Type();
  FailureOr<SmallVector<int64_t>> pads = failure();
  Value value;
  if (c.opset < 11) { // pads and value were attributes
    if (failed(c.requireInputs(1)) ||
        failed(c.checkAttrs({"mode", "pads", "value"})))
      return failure();
    auto attr = c.getInts("pads");
    if (!attr)
      return c.fail("Pad needs attribute pads");
    pads = *attr;
    value = getConstantScalar(c, elem, c.getFloat("value", 0));
  } else {
    if (failed(c.requireInputs(2)) || failed(c.checkAttrs({"mode"})))
      return failure();
    pads = c.constantInts(1, "pads");
    if (failed(pads))
      return failure();
    value = c.input(2) ? c.input(2) : getConstantScalar(c, elem, 0);
  }
  SmallVector<NamedAttribute> attrs{
      c.named("pads", c.b.getDenseI64ArrayAttr(*pads)),
      c.named("mode", c.b.getStringAttr(c.getString("mode", "constant")))};
  if (c.input(3)) {
    auto axes = c.constantInts(3, "axes");
    if (failed(axes))
      return failure();
    attrs.push_back(c.named("axes", c.b.getDenseI64ArrayAttr(*axes)));
  }
  return c.emit("mpc.pad", {c.input(0), value}, attrs);
}

LogicalResult importConstantOfShape(NodeContext &c) {
  if (failed(c.requireInputs(1)))
    return failure();
  if (failed(c.checkAttrs({"value"})))
    return failure();
  DenseElementsAttr value;
  if (auto t = c.getTensor("value"))
    value = *t;
  else if (c.failed())
    return failure();
  else
    value = DenseElementsAttr::get(
        RankedTensorType::get({1}, c.b.getF32Type()), 0.0f);
  return c.emit("mpc.constant_of_shape", {c.input(0)},
                {c.named("value", value)});
}

/// Range: opset 27's stash_type names the type start + i * delta is
/// computed in for fp16/bf16 outputs; mpc computes in float (the default).
LogicalResult importRange(NodeContext &c) {
  if (failed(c.checkAttrs({"stash_type"})) || failed(c.requireInputs(3)))
    return failure();
  int64_t stash = c.getInt("stash_type", onnx::TensorProto::FLOAT);
  if (stash != onnx::TensorProto::FLOAT)
    return c.fail("attribute 'stash_type' " + dataTypeName(stash) +
                  " is not supported (mpc computes Range in FLOAT)");
  return c.emit("mpc.range", {c.input(0), c.input(1), c.input(2)}, {});
}

const llvm::StringMap<NodeImportFn> &customOps() {
  static const llvm::StringMap<NodeImportFn> table = {
      {"Constant", importConstant},
      {"Cast", importCast},
      {"CastLike", importCast},
      {"Clip", importClip},
      {"BatchNormalization", importBatchNorm},
      {"LayerNormalization", importLayerNorm},
      {"Softmax", importSoftmax},
      {"LogSoftmax", importSoftmax},
      {"Dropout", importDropout},
      {"RandomUniform", importRandom},
      {"RandomUniformLike", importRandom},
      {"RandomNormal", importRandom},
      {"RandomNormalLike", importRandom},
      {"CumSum", importCumulative<kCumSum>},
      {"CumProd", importCumulative<kCumProd>},
      {"Trilu", importTrilu},
      {"OneHot", importOneHot},
      {"TopK", importTopK},
      {"EyeLike", importEyeLike},
      {"Split", importSplit},
      {"SplitToSequence", importSplitToSequence},
      {"SequenceAt", importSequenceAt},
      {"Slice", importSlice},
      {"Squeeze", importSqueeze},
      {"Unsqueeze", importSqueeze},
      {"Pad", importPad},
      {"ConvTranspose", importConvTranspose},
      {"Resize", importResize},
      {"Upsample", importUpsample},
      {"ConstantOfShape", importConstantOfShape},
      {"Range", importRange}};
  return table;
}

} // namespace

std::vector<std::pair<std::string, std::string>> supportedOps() {
  std::vector<std::pair<std::string, std::string>> ops;
  std::vector<std::string> simple;
  listSimpleOps(simple);
  for (const std::string &op : simple)
    ops.emplace_back("ai.onnx", op);
  for (const auto &kv : reduceOps())
    ops.emplace_back("ai.onnx", kv.getKey().str());
  for (const auto &kv : customOps())
    ops.emplace_back("ai.onnx", kv.getKey().str());
  std::vector<std::string> composite;
  listCompositeOps(composite);
  for (const std::string &op : composite)
    ops.emplace_back("ai.onnx", op);
  std::vector<std::string> training;
  listTrainingOps(training);
  for (const std::string &op : training)
    ops.emplace_back("ai.onnx.preview.training", op);
  ops.emplace_back("ai.onnx.preview", "FlexAttention");
  llvm::sort(ops);
  return ops;
}

NodeImportFn lookupNodeImporter(StringRef domain, StringRef opType) {
  if (domain == "ai.onnx.preview.training")
    return lookupTrainingImporter(opType);
  if (domain == "ai.onnx.preview")
    return opType == "FlexAttention" ? importFlexAttention : nullptr;
  if (!domain.empty())
    return nullptr;
  if (NodeImportFn simple = lookupSimpleImporter(opType))
    return simple;
  if (reduceOps().count(opType))
    return importReduce;
  if (NodeImportFn composite = lookupCompositeImporter(opType))
    return composite;
  auto it = customOps().find(opType);
  return it == customOps().end() ? nullptr : it->second;
}

/// Dropouts that are the identity (inference, ONNX's default, or a ratio
/// of 0, which a training-mode export of dropout=0.0 writes) become their
/// input where nothing reads the mask: no backend runs them.
void foldIdentityDropouts(Block &body) {
  for (DropoutOp d : llvm::make_early_inc_range(body.getOps<DropoutOp>())) {
    Value training = d.getTrainingMode(), ratio = d.getRatio();
    if (!d.getMask().use_empty() ||
        !(!training || mpc::getConstantScalar(training) == 0.0 ||
          (ratio && mpc::getConstantScalar(ratio) == 0.0)))
      continue;
    d.getY().replaceAllUsesWith(d.getX());
    d.erase();
  }
}

} // namespace mlir::mpc::importer
