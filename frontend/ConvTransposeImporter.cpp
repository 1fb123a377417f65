//===- ConvTransposeImporter.cpp - ONNX ConvTranspose -> mpc.conv_transpose ===//
//
// ONNX gives the output size three ways (explicit pads, auto_pad, or
// output_shape); mpc.conv_transpose takes one: explicit pads plus
// output_padding. Resolving here keeps the runtimes and the gradient rule
// free of ONNX's padding rules.
//
//===----------------------------------------------------------------------===//

#include "frontend/ImporterImpl.h"

#include "mlir/IR/BuiltinTypes.h"

namespace mlir::mpc::importer {

LogicalResult importConvTranspose(NodeContext &c) {
  if (failed(c.requireInputs(2)) ||
      failed(c.checkAttrs({"auto_pad", "dilations", "group", "kernel_shape",
                           "output_padding", "output_shape", "pads",
                           "strides"})))
    return failure();
  auto x = llvm::dyn_cast<RankedTensorType>(c.input(0).getType());
  auto w = llvm::dyn_cast<RankedTensorType>(c.input(1).getType());
  if (!x || !w || x.getRank() < 3 || w.getRank() != x.getRank())
    return c.fail("needs X (N x C x D1..Dn) and W of the same "
                  "rank >= 3");
  size_t n = x.getRank() - 2;
  auto ints = [&](StringRef name, size_t size, int64_t dflt,
                  SmallVector<int64_t> &out) -> LogicalResult {
    out.assign(size, dflt);
    if (auto v = c.getInts(name)) {
      if (v->size() != size)
        return c.fail("attribute " + name + " must have " +
                      Twine(size) + " values, got " + Twine(v->size()));
      out = *v;
    }
    return failure(c.failed());
  };
  SmallVector<int64_t> kernel, strides, dilations, pads, extra;
  SmallVector<int64_t> fromW(w.getShape().drop_front(2));
  if (failed(ints("strides", n, 1, strides)) ||
      failed(ints("dilations", n, 1, dilations)) ||
      failed(ints("pads", 2 * n, 0, pads)) ||
      failed(ints("output_padding", n, 0, extra)))
    return failure();
  kernel = c.getInts("kernel_shape").value_or(fromW);
  if (kernel.size() != n)
    return c.fail("kernel_shape must have " + Twine(n) +
                  " values");
  for (size_t i = 0; i < n; ++i)
    if (kernel[i] != fromW[i] && fromW[i] != ShapedType::kDynamic)
      return c.fail("kernel_shape disagrees with W's shape");
  std::string autoPad = c.getString("auto_pad", "NOTSET");
  if (autoPad != "NOTSET" && autoPad != "VALID" && autoPad != "SAME_UPPER" &&
      autoPad != "SAME_LOWER")
    return c.fail("unknown auto_pad '" + autoPad + "'");
  auto outputShape = c.getInts("output_shape");
  if (c.failed())
    return failure();
  if (outputShape && outputShape->size() == n + 2) // N, C given too
    outputShape->erase(outputShape->begin(), outputShape->begin() + 2);
  if (outputShape && outputShape->size() != n)
    return c.fail("output_shape must have " + Twine(n) +
                  " spatial values");
  bool same = autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER";
  // The size without padding; pads (given, or split from the total as ONNX's
  // reference does) take rows off it, output_padding adds rows at the end.
  auto natural = [&](size_t i) {
    return strides[i] * (x.getDimSize(2 + i) - 1) + extra[i] +
           (kernel[i] - 1) * dilations[i] + 1;
  };
  bool explicitPads = c.attr("pads") && !same;
  if (autoPad == "VALID")
    pads.assign(2 * n, 0);
  if ((outputShape || same) && !explicitPads && autoPad != "VALID") {
    for (size_t i = 0; i < n; ++i) {
      if (x.isDynamicDim(2 + i))
        return c.fail("output_shape and auto_pad need a "
                      "static input size");
      int64_t want = outputShape ? (*outputShape)[i]
                                 : x.getDimSize(2 + i) * strides[i];
      // ONNX's reference splits with floor division; a negative end pad
      // (output_shape beyond what the windows reach) is output padding.
      int64_t total = natural(i) - want;
      int64_t half = total >= 0 ? total / 2 : -((-total + 1) / 2);
      pads[i] = autoPad == "SAME_UPPER" ? half : total - half;
      pads[n + i] = total - pads[i];
      if (pads[n + i] < 0) {
        extra[i] -= pads[n + i];
        pads[n + i] = 0;
      }
      if (pads[i] < 0)
        return c.fail("output_shape " + Twine(want) +
                      " needs a negative begin pad, which is not supported");
    }
  } else if (outputShape) {
    // Pads given as well: the rows output_shape asks beyond them are more
    // output padding.
    for (size_t i = 0; i < n; ++i) {
      if (x.isDynamicDim(2 + i))
        return c.fail("output_shape and auto_pad need a static input size");
      int64_t got = natural(i) - pads[i] - pads[n + i];
      if ((*outputShape)[i] < got)
        return c.fail("output_shape " +
                      Twine((*outputShape)[i]) +
                      " is smaller than its pads give (" + Twine(got) + ")");
      extra[i] += (*outputShape)[i] - got;
    }
  }
  SmallVector<NamedAttribute> attrs{
      c.named("group", c.b.getI64IntegerAttr(c.getInt("group", 1))),
      c.named("kernel_shape", c.b.getDenseI64ArrayAttr(kernel)),
      c.named("strides", c.b.getDenseI64ArrayAttr(strides)),
      c.named("pads", c.b.getDenseI64ArrayAttr(pads)),
      c.named("dilations", c.b.getDenseI64ArrayAttr(dilations))};
  if (llvm::any_of(extra, [](int64_t e) { return e != 0; }))
    attrs.push_back(
        c.named("output_padding", c.b.getDenseI64ArrayAttr(extra)));
  auto operands = denseOperands(c);
  if (failed(operands))
    return failure();
  return c.emit("mpc.conv_transpose", *operands, attrs);
}

} // namespace mlir::mpc::importer
