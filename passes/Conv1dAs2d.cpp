//===- Conv1dAs2d.cpp - 1-D convolutions as 2-D ones of height 1 ---------===//
//
// Audio models convolve sequences (Whisper's and wav2vec2's feature
// encoders: Conv1d), and the CUDA backend's convolution kernels, cuDNN's
// included, are 2-D. A 1-D convolution of X [N, C, L] by W [M, C/g, k] is
// the 2-D one of X [N, C, 1, L] by W [M, C/g, 1, k] with a window of
// height 1: the same products in the same order, the same memory. The
// views are Unsqueezes and a Squeeze, which copy nothing, and the
// gradients follow (conv_grad's 2-D kernels).
//
//===----------------------------------------------------------------------===//

#include "ir/MpcOps.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

namespace mlir::mpc {
#define GEN_PASS_DEF_CONV1DAS2D
#include "passes/Passes.h.inc"
} // namespace mlir::mpc

using namespace mlir;
using namespace mlir::mpc;

namespace {

/// A 1-D window attribute as the 2-D one of height 1: `first` before the
/// sequence's values (pads: one before each dimension's begin and end).
std::optional<NamedAttribute> heightOne(OpBuilder &b, ConvOp conv, StringRef name,
                                        int64_t first, bool pads = false) {
  auto attr = conv->getAttrOfType<DenseI64ArrayAttr>(name);
  if (!attr)
    return std::nullopt;
  ArrayRef<int64_t> v = attr.asArrayRef();
  SmallVector<int64_t> out = pads ? SmallVector<int64_t>{first, v[0], first, v[1]}
                                  : SmallVector<int64_t>{first, v[0]};
  return b.getNamedAttr(name, b.getDenseI64ArrayAttr(out));
}

bool rewrite(ConvOp conv) {
  auto x = llvm::dyn_cast<RankedTensorType>(conv.getX().getType());
  auto w = llvm::dyn_cast<RankedTensorType>(conv.getW().getType());
  if (!x || !w || x.getRank() != 3 || w.getRank() != 3 || conv.getChannelsLast())
    return false;
  for (StringRef name : {"kernel_shape", "strides", "dilations"})
    if (auto a = conv->getAttrOfType<DenseI64ArrayAttr>(name); a && a.size() != 1)
      return false;
  if (auto p = conv->getAttrOfType<DenseI64ArrayAttr>("pads"); p && p.size() != 2)
    return false;
  OpBuilder b(conv);
  Location loc = conv.getLoc();
  auto unsqueeze = [&](Value v) -> Value {
    auto made = createInferred(b, loc, UnsqueezeOp::getOperationName(), {v},
                               {b.getNamedAttr("axes", b.getDenseI64ArrayAttr({2}))});
    return succeeded(made) ? (*made)->getResult(0) : Value();
  };
  SmallVector<Value> operands{unsqueeze(conv.getX()), unsqueeze(conv.getW())};
  if (!operands[0] || !operands[1])
    return false;
  if (conv.getBias())
    operands.push_back(conv.getBias());
  SmallVector<NamedAttribute> attrs;
  for (NamedAttribute a : conv->getAttrs()) {
    StringRef n = a.getName().getValue();
    if (n == "kernel_shape" || n == "strides" || n == "dilations" || n == "pads")
      continue;
    attrs.push_back(a);
  }
  for (auto [name, first, pads] :
       {std::tuple{"kernel_shape", 1, false}, std::tuple{"strides", 1, false},
        std::tuple{"dilations", 1, false}, std::tuple{"pads", 0, true}})
    if (auto a = heightOne(b, conv, name, first, pads))
      attrs.push_back(*a);
  auto conv2d = createInferred(b, loc, ConvOp::getOperationName(), operands, attrs);
  if (failed(conv2d))
    return false;
  auto y = createInferred(b, loc, SqueezeOp::getOperationName(), {(*conv2d)->getResult(0)},
                          {b.getNamedAttr("axes", b.getDenseI64ArrayAttr({2}))});
  if (failed(y) || (*y)->getResult(0).getType() != conv.getType())
    return false;
  conv.getY().replaceAllUsesWith((*y)->getResult(0));
  conv.erase();
  return true;
}

struct Conv1dAs2d : public mpc::impl::Conv1dAs2dBase<Conv1dAs2d> {
  void runOnOperation() override {
    SmallVector<ConvOp> convs;
    getOperation().walk([&](ConvOp conv) { convs.push_back(conv); });
    for (ConvOp conv : convs)
      rewrite(conv);
  }
};

} // namespace
