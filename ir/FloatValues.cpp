//===- FloatValues.cpp - small FP32 expressions evaluated for folds -------===//
//
// Folders.cpp folds integer arithmetic only; a float expression is
// evaluated here, in FP32 as the CPU backend computes it (FP16 and BF16
// ops rounded to their type), for the one fold that reads it: its cast to
// integers (a shape computed in floats).
//
//===----------------------------------------------------------------------===//

#include "ir/MpcOps.h"
#include "ir/ShapeRules.h"

#include "mlir/IR/Matchers.h"

#include <algorithm>
#include <cmath>

namespace mlir::mpc {

int64_t sliceStart(int64_t start, int64_t dim, int64_t step) {
  start = start < 0 ? start + dim : start;
  return step > 0 ? std::clamp<int64_t>(start, 0, dim)
                  : std::clamp<int64_t>(start, 0, dim - 1);
}

std::optional<SmallVector<float>> floatValues(Value v, int depth) {
  auto t = llvm::dyn_cast<RankedTensorType>(v.getType());
  if (!t || depth > 12 || !t.hasStaticShape() ||
      t.getNumElements() > kMaxFoldElements)
    return std::nullopt;
  SmallVector<float> out;
  Type elem = t.getElementType();
  bool narrow = elem.isF16() || elem.isBF16(); // rounded after each op
  auto toFloat = [](APFloat x) {
    bool lost;
    x.convert(APFloat::IEEEsingle(), APFloat::rmNearestTiesToEven, &lost);
    return x.convertToFloat();
  };
  // Each result in the op's type: FP16/BF16 ops computed in FP32 and
  // rounded once, as the CPU backend does (exact: FP32 holds the
  // unrounded sum, difference, product or quotient to well within that).
  auto rounded = [&](SmallVector<float> values) {
    if (narrow)
      for (float &x : values) {
        APFloat a(x);
        bool lost;
        a.convert(llvm::cast<FloatType>(elem).getFloatSemantics(),
                  APFloat::rmNearestTiesToEven, &lost);
        x = toFloat(a);
      }
    return values;
  };
  DenseElementsAttr attr;
  if (matchPattern(v, m_Constant(&attr))) {
    if (auto f = llvm::dyn_cast<DenseFPElementsAttr>(attr);
        f && (elem.isF32() || narrow)) {
      for (const APFloat &x : f.getValues<APFloat>())
        out.push_back(toFloat(x));
      return out;
    }
    if (auto i = llvm::dyn_cast<DenseIntElementsAttr>(attr);
        i && !i.getElementType().isInteger(1)) {
      for (const APInt &x : i.getValues<APInt>())
        out.push_back((float)x.getSExtValue());
      return out;
    }
    return std::nullopt;
  }
  Operation *op = v.getDefiningOp();
  if (!op || !(elem.isF32() || narrow))
    return std::nullopt;
  auto arg = [&](unsigned k) { return floatValues(op->getOperand(k), depth + 1); };
  if (isa<CastOp, NegOp, CeilOp, FloorOp, ReluOp>(op)) {
    auto x = arg(0);
    if (!x)
      return std::nullopt;
    for (float e : *x)
      out.push_back(isa<CastOp>(op)    ? e
                    : isa<NegOp>(op)   ? -e
                    : isa<CeilOp>(op)  ? std::ceil(e)
                    : isa<FloorOp>(op) ? std::floor(e)
                                       : std::max(e, 0.0f)); // Relu (Range's
                                                             // expanded count)
    return rounded(out);
  }
  if (isa<AddOp, SubOp, MulOp, DivOp>(op)) {
    auto x = arg(0), y = arg(1);
    int64_t n = t.getNumElements();
    if (!x || !y || (x->size() != 1 && (int64_t)x->size() != n) ||
        (y->size() != 1 && (int64_t)y->size() != n))
      return std::nullopt;
    for (int64_t i = 0; i < n; ++i) {
      float a = (*x)[x->size() == 1 ? 0 : i], b = (*y)[y->size() == 1 ? 0 : i];
      out.push_back(isa<AddOp>(op)   ? a + b
                    : isa<SubOp>(op) ? a - b
                    : isa<MulOp>(op) ? a * b
                                     : a / b);
    }
    return rounded(out);
  }
  if (t.getRank() > 1)
    return std::nullopt;
  if (auto cat = dyn_cast<ConcatOp>(op)) {
    for (Value in : cat.getInputs()) {
      auto x = floatValues(in, depth + 1);
      if (!x || llvm::cast<RankedTensorType>(in.getType()).getRank() != 1)
        return std::nullopt;
      out.append(x->begin(), x->end());
    }
    return out;
  }
  if (auto slice = dyn_cast<SliceOp>(op)) {
    auto x = arg(0);
    SmallVector<int64_t> starts, steps{1};
    if (!x || !getConstantInts(slice.getStarts(), starts) || starts.size() != 1 ||
        (slice.getSteps() && !getConstantInts(slice.getSteps(), steps)) ||
        steps.size() != 1 || steps[0] == 0)
      return std::nullopt;
    int64_t dim = (int64_t)x->size(), s0 = sliceStart(starts[0], dim, steps[0]);
    for (int64_t i = 0; i < t.getNumElements(); ++i) {
      int64_t at = s0 + i * steps[0];
      if (at < 0 || at >= dim)
        return std::nullopt;
      out.push_back((*x)[at]);
    }
    return out;
  }
  if (auto g = dyn_cast<GatherOp>(op)) {
    auto x = arg(0);
    SmallVector<int64_t> idx;
    if (!x || llvm::cast<RankedTensorType>(g.getData().getType()).getRank() != 1 ||
        !getConstantInts(g.getIndices(), idx))
      return std::nullopt;
    for (int64_t i : idx) {
      int64_t at = i < 0 ? i + (int64_t)x->size() : i;
      if (at < 0 || at >= (int64_t)x->size())
        return std::nullopt;
      out.push_back((*x)[at]);
    }
    return out;
  }
  return std::nullopt;
}

} // namespace mlir::mpc
