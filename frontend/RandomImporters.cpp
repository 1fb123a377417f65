//===- RandomImporters.cpp - ONNX random number generators ----------------===//
//
// torch's exporter writes bernoulli (torchvision's and timm's stochastic
// depth), rand_like and randn_like as RandomUniformLike and
// RandomNormalLike; RandomUniform and RandomNormal take their shape from
// an attribute. All four become mpc.random, drawn from Philox as Dropout
// is (runtime/Philox.h), so torch's own generator's numbers are not
// reproduced: the distribution is.
//
//===----------------------------------------------------------------------===//

#include "frontend/ImporterImpl.h"

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/TypeUtilities.h"

namespace mlir::mpc::importer {

LogicalResult importRandom(NodeContext &c) {
  const std::string &op = c.node.op_type();
  const bool like = op == "RandomUniformLike" || op == "RandomNormalLike";
  const bool normal = op == "RandomNormal" || op == "RandomNormalLike";
  if (like && failed(c.requireInputs(1)))
    return failure();
  SmallVector<StringRef> known = {"dtype", "seed"};
  known.append(normal ? SmallVector<StringRef>{"mean", "scale"}
                      : SmallVector<StringRef>{"low", "high"});
  if (!like)
    known.push_back("shape");
  if (failed(c.checkAttrs(known)))
    return failure();
  // dtype: the attribute, else the input's type (Like) or float.
  Type elem = c.b.getF32Type();
  if (c.attr("dtype")) {
    int64_t dtype = c.getInt("dtype", 1);
    elem = elementTypeOf(dtype, c.b.getContext());
    if (!elem || !isa<FloatType>(elem))
      return c.fail("dtype " + dataTypeName(dtype) +
                    " is not supported (float, float16 or bfloat16)");
  } else if (like) {
    elem = getElementTypeOrSelf(c.input(0));
    if (!isa<FloatType>(elem))
      return c.fail("the input is not a float tensor: give dtype");
  }
  SmallVector<NamedAttribute> attrs{
      c.named("distribution", c.b.getStringAttr(normal ? "normal" : "uniform")),
      c.named("a", c.b.getF32FloatAttr(normal ? c.getFloat("mean", 0.0f)
                                              : c.getFloat("low", 0.0f))),
      c.named("b", c.b.getF32FloatAttr(normal ? c.getFloat("scale", 1.0f)
                                              : c.getFloat("high", 1.0f))),
      c.named("dtype", TypeAttr::get(elem)),
      c.named("stream", c.b.getI64IntegerAttr(streamOf(c.node.output(0))))};
  // ONNX's seed is a float; its value keys the draw (0 when absent).
  if (c.attr("seed"))
    attrs.push_back(c.named("seed", c.b.getI64IntegerAttr((int64_t)c.getFloat("seed", 0))));
  if (!like) {
    auto shape = c.getInts("shape");
    if (!shape)
      return c.fail("shape attribute is required");
    if (llvm::any_of(*shape, [](int64_t d) { return d < 0; }))
      return c.fail("shape has a negative dimension");
    attrs.push_back(c.named("shape", c.b.getDenseI64ArrayAttr(*shape)));
    return c.emit("mpc.random", {}, attrs, {0, 0});
  }
  return c.emit("mpc.random", {c.input(0)}, attrs, {1, 0});
}

} // namespace mlir::mpc::importer
