//===- RearrangeImporters.cpp - DepthToSpace, SpaceToDepth ----------------===//
//
// torch's pixel_shuffle and pixel_unshuffle (super-resolution and GAN
// generators, sub-pixel convolutions) export as DepthToSpace (mode CRD)
// and SpaceToDepth. Both are imported as their ONNX definitions: a
// reshape to six dimensions, a transpose and a reshape back, which every
// backend, autodiff and the precision passes already handle (the CUDA
// transpose is one copy kernel, its gradient the inverse permutation).
//
//===----------------------------------------------------------------------===//

#include "frontend/Composer.h"
#include "frontend/ImporterImpl.h"

namespace mlir::mpc::importer {
namespace {

/// X as (batch, C, H, W) with C, H and W static, the block size and mode
/// checked; the batch may stay dynamic (reshapes copy it with 0).
struct Blocks {
  int64_t c = 0, h = 0, w = 0, b = 0;
  bool crd = false;
};

FailureOr<Blocks> checkBlocks(NodeContext &c) {
  if (failed(c.requireInputs(1)) ||
      failed(c.checkAttrs({"blocksize", "mode"})))
    return failure();
  auto x = llvm::cast<RankedTensorType>(c.input(0).getType());
  if (x.getRank() != 4)
    return c.fail("input must be 4-D (N, C, H, W), got rank " +
                  Twine(x.getRank()));
  for (int64_t i = 1; i < 4; ++i)
    if (x.isDynamicDim(i))
      return c.fail("input needs static C, H and W");
  Blocks k{x.getDimSize(1), x.getDimSize(2), x.getDimSize(3),
           c.getInt("blocksize", 0)};
  std::string mode = c.getString("mode", "DCR");
  if (c.failed())
    return failure();
  if (k.b <= 0)
    return c.fail("attribute blocksize must be positive, got " + Twine(k.b));
  if (mode != "DCR" && mode != "CRD")
    return c.fail("attribute mode must be DCR or CRD, got '" + mode + "'");
  k.crd = mode == "CRD";
  return k;
}

} // namespace

LogicalResult importDepthToSpace(NodeContext &c) {
  FailureOr<Blocks> k = checkBlocks(c);
  if (failed(k))
    return failure();
  int64_t b = k->b;
  if (k->c % (b * b))
    return c.fail("C = " + Twine(k->c) + " is not a multiple of blocksize^2 = " +
                  Twine(b * b));
  int64_t d = k->c / (b * b);
  Composer m{c};
  Value y = k->crd
                ? m.transpose(m.reshape(c.input(0), {0, d, b, b, k->h, k->w}),
                              {0, 1, 4, 2, 5, 3})
                : m.transpose(m.reshape(c.input(0), {0, b, b, d, k->h, k->w}),
                              {0, 3, 4, 1, 5, 2});
  y = m.reshape(y, {0, d, k->h * b, k->w * b});
  if (c.failed())
    return failure();
  return c.setOutputs({y});
}

LogicalResult importSpaceToDepth(NodeContext &c) {
  FailureOr<Blocks> k = checkBlocks(c);
  if (failed(k))
    return failure();
  int64_t b = k->b;
  if (k->h % b || k->w % b)
    return c.fail("H = " + Twine(k->h) + " and W = " + Twine(k->w) +
                  " must be multiples of blocksize " + Twine(b));
  Composer m{c};
  Value blocks =
      m.reshape(c.input(0), {0, k->c, k->h / b, b, k->w / b, b});
  // DCR: the block's row and column before the channel; CRD (opset 28):
  // the channel first, as DepthToSpace's CRD reads it back.
  Value y = m.transpose(blocks, k->crd ? ArrayRef<int64_t>{0, 1, 3, 5, 2, 4}
                                       : ArrayRef<int64_t>{0, 3, 5, 1, 2, 4});
  y = m.reshape(y, {0, k->c * b * b, k->h / b, k->w / b});
  if (c.failed())
    return failure();
  return c.setOutputs({y});
}

} // namespace mlir::mpc::importer
