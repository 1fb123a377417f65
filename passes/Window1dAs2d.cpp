//===- Window1dAs2d.cpp - 1-D convolutions and pools as 2-D ones ----------===//
//
// Audio and sequence models convolve and pool sequences (Whisper's and
// wav2vec2's feature encoders: Conv1d; AvgPool1d, MaxPool1d, LpPool1d;
// HiFi-GAN's and Encodec's upsampling decoders: ConvTranspose1d), and the
// CUDA backend's window kernels, cuDNN's included, are 2-D. A 1-D
// convolution of X [N, C, L] by W [M, C/g, k] is the 2-D one of
// X [N, C, 1, L] by W [M, C/g, 1, k] with a window of height 1 (a
// transposed one's W [C, M/g, k] likewise, output_padding 0 in height),
// and a 1-D
// pool the 2-D one of X [N, C, 1, L]: the same products or comparisons in
// the same order, the same memory, and a max pool's flat indices the same
// numbers (row h = 0 of each plane). The views are Unsqueezes and
// Squeezes, which copy nothing, and the gradients follow (the 2-D
// conv_grad and pool_grad kernels).
//
//===----------------------------------------------------------------------===//

#include "ir/MpcOps.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

namespace mlir::mpc {
#define GEN_PASS_DEF_WINDOW1DAS2D
#include "passes/Passes.h.inc"
} // namespace mlir::mpc

using namespace mlir;
using namespace mlir::mpc;

namespace {

/// A 1-D window attribute as the 2-D one of height 1: `first` before the
/// sequence's values (pads: one before each dimension's begin and end).
std::optional<NamedAttribute> heightOne(OpBuilder &b, Operation *op,
                                        StringRef name, int64_t first,
                                        bool pads = false) {
  auto attr = op->getAttrOfType<DenseI64ArrayAttr>(name);
  if (!attr)
    return std::nullopt;
  ArrayRef<int64_t> v = attr.asArrayRef();
  SmallVector<int64_t> out = pads ? SmallVector<int64_t>{first, v[0], first, v[1]}
                                  : SmallVector<int64_t>{first, v[0]};
  return b.getNamedAttr(name, b.getDenseI64ArrayAttr(out));
}

/// Rewrites `op` (a conv, max_pool or average_pool whose first operand is
/// X) over [N, C, L] to its 2-D form; `viewed` is how many operands gain
/// the height (X, and a conv's W).
bool rewrite(Operation *op, unsigned viewed) {
  auto x = llvm::dyn_cast<RankedTensorType>(op->getOperand(0).getType());
  auto last = op->getAttrOfType<BoolAttr>("channels_last");
  if (!x || x.getRank() != 3 || (last && last.getValue()))
    return false;
  for (unsigned i = 1; i < viewed; ++i) {
    auto w = llvm::dyn_cast<RankedTensorType>(op->getOperand(i).getType());
    if (!w || w.getRank() != 3)
      return false;
  }
  for (StringRef name : {"kernel_shape", "strides", "dilations", "output_padding"})
    if (auto a = op->getAttrOfType<DenseI64ArrayAttr>(name); a && a.size() != 1)
      return false;
  if (auto p = op->getAttrOfType<DenseI64ArrayAttr>("pads"); p && p.size() != 2)
    return false;
  OpBuilder b(op);
  Location loc = op->getLoc();
  auto view = [&](Value v, bool squeeze) -> Value {
    StringRef name = squeeze ? SqueezeOp::getOperationName()
                             : UnsqueezeOp::getOperationName();
    auto made = createInferred(b, loc, name, {v},
                               {b.getNamedAttr("axes", b.getDenseI64ArrayAttr({2}))});
    return succeeded(made) ? (*made)->getResult(0) : Value();
  };
  SmallVector<Value> operands;
  for (auto [i, v] : llvm::enumerate(op->getOperands())) {
    operands.push_back(i < viewed ? view(v, false) : v);
    if (!operands.back())
      return false;
  }
  SmallVector<NamedAttribute> attrs;
  for (NamedAttribute a : op->getAttrs()) {
    StringRef n = a.getName().getValue();
    if (n == "kernel_shape" || n == "strides" || n == "dilations" ||
        n == "pads" || n == "output_padding")
      continue;
    attrs.push_back(a);
  }
  for (auto [name, first, pads] :
       {std::tuple{"kernel_shape", 1, false}, std::tuple{"strides", 1, false},
        std::tuple{"dilations", 1, false}, std::tuple{"pads", 0, true},
        std::tuple{"output_padding", 0, false}})
    if (auto a = heightOne(b, op, name, first, pads))
      attrs.push_back(*a);
  auto planar = createInferred(b, loc, op->getName().getStringRef(), operands, attrs);
  if (failed(planar))
    return false;
  SmallVector<Value> results;
  for (auto [mine, theirs] : llvm::zip(op->getResults(), (*planar)->getResults())) {
    results.push_back(view(theirs, true));
    if (!results.back() || results.back().getType() != mine.getType())
      return false;
  }
  op->replaceAllUsesWith(results);
  op->erase();
  return true;
}

struct Window1dAs2d : public mpc::impl::Window1dAs2dBase<Window1dAs2d> {
  void runOnOperation() override {
    SmallVector<std::pair<Operation *, unsigned>> ops;
    getOperation().walk([&](Operation *op) {
      if (isa<ConvOp, ConvTransposeOp>(op))
        ops.push_back({op, 2});
      else if (isa<MaxPoolOp, AveragePoolOp>(op))
        ops.push_back({op, 1});
    });
    for (auto [op, viewed] : ops)
      rewrite(op, viewed);
  }
};

} // namespace
