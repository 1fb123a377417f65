//===- ScatterNDFold.cpp - ScatterND that writes every element ----------===//
//
// Hugging Face 4.38+ lays its padding over the causal mask by a slice
// assignment that torch exports as ScatterND with an index tuple per
// element (2 x 4096^2 at 4k tokens). Where the tuples enumerate every
// element in order, proven from the constants or from the concat of
// expanded aranges torch builds (never materialized), the ScatterND is
// its updates.
//
//===----------------------------------------------------------------------===//

#include "ir/MpcOps.h"

#include "mlir/IR/Matchers.h"

using namespace mlir;
using namespace mlir::mpc;

/// Whether `v`, shaped `data` (or broadcast to it), holds at every
/// element its own coordinate along axis `k`: an arange along k,
/// expanded over the other axes.
static bool isCoordinate(Value v, int64_t k, ArrayRef<int64_t> data) {
  if (auto e = v.getDefiningOp<ExpandOp>())
    return isCoordinate(e.getX(), k, data);
  DenseIntElementsAttr attr;
  auto t = llvm::dyn_cast<RankedTensorType>(v.getType());
  const int64_t rank = data.size();
  if (!t || !t.hasStaticShape() || t.getRank() > rank ||
      !matchPattern(v, m_Constant(&attr)) || t.getNumElements() > (int64_t(1) << 20))
    return false;
  // Axis k of the data is axis k - (rank - t's rank) of the constant.
  const int64_t a = k - (rank - t.getRank());
  const int64_t n = a >= 0 ? t.getDimSize(a) : 1;
  if (n != data[k] && !(n == 1 && data[k] == 1))
    return false;
  int64_t inner = 1;
  for (int64_t d = a + 1; d < t.getRank(); ++d)
    inner *= t.getDimSize(d);
  int64_t i = 0;
  for (const APInt &x : attr.getValues<APInt>()) {
    if (x.getSExtValue() != (a >= 0 ? i / inner % n : 0))
      return false;
    ++i;
  }
  return true;
}

/// Whether `indices` ([data's shape..., rank]) holds each element's own
/// index tuple, in order: a constant, or a concat over the last axis of
/// coordinates, each unsqueezed at the end (torch's export of
/// `x[..., :n] = y` with n the whole axis).
static bool enumeratesAll(Value indices, ArrayRef<int64_t> data) {
  auto t = llvm::dyn_cast<RankedTensorType>(indices.getType());
  const int64_t rank = data.size();
  if (!t || !t.hasStaticShape() || t.getRank() != rank + 1 ||
      t.getShape().drop_back() != data || t.getShape().back() != rank)
    return false;
  DenseIntElementsAttr attr;
  if (matchPattern(indices, m_Constant(&attr))) {
    if (t.getNumElements() > (int64_t(1) << 24))
      return false;
    int64_t i = 0;
    for (const APInt &x : attr.getValues<APInt>()) {
      int64_t element = i / rank, k = i % rank, coordinate = element;
      for (int64_t d = rank - 1; d > k; --d)
        coordinate /= data[d];
      if (x.getSExtValue() != coordinate % data[k])
        return false;
      ++i;
    }
    return true;
  }
  auto cat = indices.getDefiningOp<ConcatOp>();
  // (The axis attribute reads back unsigned: -1 through int64_t.)
  int64_t catAxis = cat ? (int64_t)cat.getAxis() : 0;
  if (!cat || (catAxis != rank && catAxis != -1) ||
      (int64_t)cat.getInputs().size() != rank)
    return false;
  for (auto [k, part] : llvm::enumerate(cat.getInputs())) {
    auto u = part.getDefiningOp<UnsqueezeOp>();
    if (!u || u.getAxes().size() != 1 ||
        (u.getAxes()[0] != rank && u.getAxes()[0] != -1) ||
        !isCoordinate(u.getX(), k, data))
      return false;
  }
  return true;
}

OpFoldResult ScatterNDOp::fold(FoldAdaptor) {
  auto t = llvm::cast<RankedTensorType>(getType());
  if (getReduction() == "none" && t.hasStaticShape() &&
      getUpdates().getType() == t && enumeratesAll(getIndices(), t.getShape()))
    return getUpdates();
  return {};
}
