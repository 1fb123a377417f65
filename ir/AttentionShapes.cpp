//===- AttentionShapes.cpp - types of mpc.attention and its gradient ------===//

#include "ir/MpcOps.h"
#include "ir/ShapeRules.h"

using namespace mlir;
using namespace mlir::mpc;

namespace {

/// Checks q: ... x Hq x Sq x D, k: ... x Hkv x Skv x D, v: ... x Hkv x
/// Skv x Dv with one element type, equal leading dimensions but for the
/// heads, Hkv dividing Hq (grouped-query attention: q head h reads k and v
/// head h / (Hq / Hkv), as ONNX Attention repeats them).
LogicalResult checkQkv(std::optional<Location> loc, RankedTensorType q,
                       RankedTensorType k, RankedTensorType v) {
  int64_t r = q.getRank();
  if (r < 3 || k.getRank() != r || v.getRank() != r)
    return shapeError(loc, "attention expects q, k and v of one rank >= 3, "
                           "got ", q, ", ", k, " and ", v);
  if (q.getElementType() != k.getElementType() ||
      q.getElementType() != v.getElementType())
    return shapeError(loc, "attention expects q, k and v of one element "
                           "type, got ", q, ", ", k, " and ", v);
  auto same = [](int64_t a, int64_t b) {
    return a == kDyn || b == kDyn || a == b;
  };
  for (int64_t i = 0; i < r - 3; ++i)
    if (!same(q.getDimSize(i), k.getDimSize(i)) ||
        !same(q.getDimSize(i), v.getDimSize(i)))
      return shapeError(loc, "attention's leading dimensions differ: ", q,
                        ", ", k, " and ", v);
  int64_t hq = q.getDimSize(r - 3), hk = k.getDimSize(r - 3);
  if (!same(hk, v.getDimSize(r - 3)) ||
      (hq != kDyn && hk != kDyn && (hk <= 0 || hq % hk != 0)))
    return shapeError(loc, "attention's k and v heads must be equal and "
                           "divide q's: ", q, ", ", k, " and ", v);
  if (!same(q.getDimSize(r - 1), k.getDimSize(r - 1)))
    return shapeError(loc, "attention's q and k head sizes differ: ", q,
                      " and ", k);
  if (!same(k.getDimSize(r - 2), v.getDimSize(r - 2)))
    return shapeError(loc, "attention's k and v lengths differ: ", k, " and ",
                      v);
  return success();
}

} // namespace

LogicalResult AttentionOp::inferReturnTypes(MLIRContext *ctx,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &types) {
  auto q = rankedOf(adaptor.getQ()), k = rankedOf(adaptor.getK()),
       v = rankedOf(adaptor.getV());
  if (failed(checkQkv(loc, q, k, v)))
    return failure();
  SmallVector<int64_t> shape(q.getShape());
  shape.back() = v.getShape().back();
  types.push_back(q.clone(shape));
  shape.pop_back();
  types.push_back(RankedTensorType::get(shape, Float32Type::get(ctx)));
  return success();
}

LogicalResult AttentionOp::verify() {
  float drop = getDropout().convertToFloat();
  if (!(drop >= 0.0f && drop < 1.0f))
    return emitOpError("dropout ") << drop << " is not in [0, 1)";
  if (!(getSoftcap().convertToFloat() >= 0.0f))
    return emitOpError("softcap ") << getSoftcap().convertToFloat()
                                   << " is negative";
  for (auto [name, w] : {std::pair{"window_left", getWindowLeftAttr()},
                         std::pair{"window_right", getWindowRightAttr()}})
    if (w && w.getInt() < 0)
      return emitOpError(name) << " " << w.getInt() << " is negative";
  if (!getBias())
    return success();
  auto q = rankedOf(getQ()), k = rankedOf(getK()), b = rankedOf(getBias());
  int64_t r = q.getRank();
  SmallVector<int64_t> scores(q.getShape());
  scores[r - 1] = k.getDimSize(r - 2);
  if (b.getRank() > r)
    return emitOpError("bias ") << b << " has a higher rank than the scores";
  for (int64_t i = 0; i < b.getRank(); ++i) {
    int64_t d = b.getDimSize(b.getRank() - 1 - i), s = scores[r - 1 - i];
    if (d != 1 && d != kDyn && s != kDyn && d != s)
      return emitOpError("bias ") << b << " does not broadcast to the "
                                  << "scores' " << q.clone(scores);
  }
  return success();
}

LogicalResult AttentionGradOp::inferReturnTypes(MLIRContext *,
                                                std::optional<Location> loc,
                                                Adaptor adaptor,
                                                SmallVectorImpl<Type> &types) {
  auto q = rankedOf(adaptor.getQ()), k = rankedOf(adaptor.getK()),
       v = rankedOf(adaptor.getV());
  if (failed(checkQkv(loc, q, k, v)))
    return failure();
  types.append({q, k, v});
  if (adaptor.getWithScoresGrad()) { // dS: [..., Sq, Skv] in q's type
    SmallVector<int64_t> scores(q.getShape());
    scores.back() = k.getDimSize(k.getRank() - 2);
    types.push_back(q.clone(scores));
  }
  return success();
}
