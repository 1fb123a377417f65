//===- SequenceImporters.cpp - ONNX sequences known at import -------------===//
//
// torch.onnx.export writes torch.split and torch.chunk as SplitToSequence
// read by SequenceAt at constant positions (torch 2.x without the
// exporter's optimizer: GPT-2's q, k, v). mpc has no sequence type: a
// sequence is the list of its parts while the graph imports, and each
// SequenceAt picks one. A sequence read otherwise is refused by the
// caller (importNodes); a position that is not a constant by SequenceAt.
//
//===----------------------------------------------------------------------===//

#include "frontend/ImporterImpl.h"
#include "ir/ShapeRules.h"

#include "mlir/IR/BuiltinTypes.h"

namespace mlir::mpc::importer {

LogicalResult importSplitToSequence(NodeContext &c) {
  SmallVector<Value> parts;
  if (failed(c.requireInputs(1)) || failed(c.checkAttrs({"axis", "keepdims"})))
    return failure();
  auto type = dyn_cast<RankedTensorType>(c.input(0).getType());
  bool keepdims = c.getInt("keepdims", 1) != 0;
  std::optional<int64_t> normalized =
      type ? normalizeAxis(c.getInt("axis", 0), type.getRank()) : std::nullopt;
  if (!normalized)
    return c.fail("axis " + Twine(c.getInt("axis", 0)) + " is out of range for the input");
  int64_t axis = *normalized;
  int64_t size = type.getDimSize(axis);
  if (ShapedType::isDynamic(size))
    return c.fail("the split axis must have a static size");

  SmallVector<int64_t> sizes;
  bool squeeze = false;
  if (!c.input(1)) { // parts of one: keepdims says whether the axis stays
    sizes.assign(size, 1);
    squeeze = !keepdims;
  } else {
    auto split = c.constantInts(1, "split");
    if (failed(split))
      return failure();
    auto splitType = cast<RankedTensorType>(c.input(1).getType());
    if (splitType.getRank() == 0) { // one length; the last part smaller
      int64_t chunk = (*split)[0];
      if (chunk <= 0)
        return c.fail("split " + Twine(chunk) + " must be positive");
      for (int64_t at = 0; at < size; at += chunk)
        sizes.push_back(std::min(chunk, size - at));
    } else {
      sizes.assign(split->begin(), split->end());
      int64_t total = 0;
      for (int64_t s : sizes) {
        if (s < 0)
          return c.fail("split lengths must not be negative");
        total += s;
      }
      if (total != size)
        return c.fail("split lengths sum to " + Twine(total) +
                      ", not the axis size " + Twine(size));
    }
  }
  if (sizes.empty())
    return c.fail("SplitToSequence of an empty axis gives an empty sequence");
  auto split = c.build(
      "mpc.split", {c.input(0)},
      {c.named("axis", c.b.getI64IntegerAttr(axis)),
       c.named("num_outputs", c.b.getI64IntegerAttr((int64_t)sizes.size())),
       c.named("split", c.b.getDenseI64ArrayAttr(sizes))});
  if (failed(split))
    return failure();
  for (Value part : *split) {
    if (squeeze) {
      auto squeezed =
          c.build("mpc.squeeze", {part},
                  {c.named("axes", c.b.getDenseI64ArrayAttr({axis}))});
      if (failed(squeezed))
        return failure();
      part = (*squeezed)[0];
    }
    parts.push_back(part);
  }
  (*c.sequences)[c.node.output(0)] = std::move(parts);
  return success();
}

LogicalResult importSequenceAt(NodeContext &c) {
  if (failed(c.checkAttrs({})))
    return failure();
  auto it = c.sequences->find(c.node.input(0));
  if (it == c.sequences->end())
    return c.fail("input '" + c.node.input(0) + "' is not a sequence");
  ArrayRef<Value> parts = it->second;
  if (!c.input(1))
    return c.fail("SequenceAt needs a position");
  auto position = c.constantInts(1, "position");
  if (failed(position))
    return failure();
  int64_t n = parts.size(), at = (*position)[0];
  if (at < -n || at >= n)
    return c.fail("position " + Twine(at) + " is outside the sequence of " +
                  Twine(n));
  return c.setOutputs({parts[at < 0 ? at + n : at]});
}

} // namespace mlir::mpc::importer
