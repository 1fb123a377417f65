//===- SlicesToSplit.cpp - slices that tile a tensor become one Split -----===//
//
// nn.MultiheadAttention's fused input projection comes out of torch's
// exporter as one GEMM whose result three Slices cut into Q, K and V along
// the last axis. Three copies forward; backward, each slice's gradient is
// a zero Pad to the whole width, and the three are added. A Split is what
// those slices mean: one op whose gradient is one Concat, and whose parts
// the CUDA backend can leave in place where only attention reads them.
//
// Slices of one value with constant bounds, step 1, that cut the same
// single axis into ranges tiling it (in any order) become one Split, its
// results in range order; slices of other axes or that overlap or leave a
// gap stay as written. The values are the same: both copy.
//
// Selects are slices too: torchvision's Swin takes q, k, v = qkv[0],
// qkv[1], qkv[2] of its permuted projection, which torch exports as
// Gathers of scalar indices. Two or more such Gathers of one value along
// one axis become slices of one element, squeezed, first (timm's unbind
// exports as exactly that), so they join the Split where they tile it.
//
//===----------------------------------------------------------------------===//

#include "ir/MpcOps.h"
#include "ir/ShapeRules.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/MapVector.h"

#include <algorithm>
#include <map>

namespace mlir::mpc {
#define GEN_PASS_DEF_SLICESTOSPLIT
#include "passes/Passes.h.inc"
} // namespace mlir::mpc

using namespace mlir;
using namespace mlir::mpc;

namespace {

/// A constant integer operand's values (absent: `dflt`).
std::optional<SmallVector<int64_t>> ints(Value v, SmallVector<int64_t> dflt) {
  if (!v)
    return dflt;
  SmallVector<int64_t> out;
  if (!getConstantInts(v, out))
    return std::nullopt;
  return out;
}

/// The axis and [start, end) a slice keeps, when it cuts one axis of a
/// static shape with step 1 (ONNX's clamping applied).
struct Range {
  SliceOp op;
  int64_t axis, start, end;
};

std::optional<Range> rangeOf(SliceOp s) {
  auto t = llvm::dyn_cast<RankedTensorType>(s.getData().getType());
  if (!t || !t.hasStaticShape())
    return std::nullopt;
  int64_t rank = t.getRank();
  SmallVector<int64_t> all;
  for (int64_t d = 0; d < rank; ++d)
    all.push_back(d);
  auto starts = ints(s.getStarts(), {}), ends = ints(s.getEnds(), {});
  if (!starts || !ends || starts->size() != ends->size())
    return std::nullopt;
  auto axes =
      ints(s.getAxes(),
           SmallVector<int64_t>(all.begin(), all.begin() + starts->size()));
  auto steps = ints(s.getSteps(), SmallVector<int64_t>(starts->size(), 1));
  if (!axes || !steps || axes->size() != starts->size() ||
      steps->size() != starts->size())
    return std::nullopt;
  std::optional<Range> cut;
  for (size_t k = 0; k < starts->size(); ++k) {
    int64_t axis = (*axes)[k] < 0 ? (*axes)[k] + rank : (*axes)[k];
    if (axis < 0 || axis >= rank || (*steps)[k] != 1)
      return std::nullopt;
    int64_t dim = t.getDimSize(axis);
    auto clamp = [&](int64_t x) {
      if (x < 0)
        x += dim;
      return std::min(std::max<int64_t>(x, 0), dim);
    };
    int64_t start = clamp((*starts)[k]), end = clamp((*ends)[k]);
    if (start == 0 && end == dim)
      continue; // keeps the whole axis
    if (cut || end <= start)
      return std::nullopt;
    cut = Range{s, axis, start, end};
  }
  return cut;
}

/// A Gather's axis, counted from 0 (the attribute is an unsigned integer:
/// a negative axis reads back as itself only through int64_t).
int64_t gatherAxis(GatherOp g, RankedTensorType data) {
  int64_t axis = (int64_t)g.getAxis();
  return axis < 0 ? axis + data.getRank() : axis;
}

/// The index a Gather of one scalar constant index selects along its axis
/// of static data (negative indices counted from the end), or none.
std::optional<int64_t> selectedIndex(GatherOp g) {
  auto t = llvm::dyn_cast<RankedTensorType>(g.getData().getType());
  auto it = llvm::dyn_cast<RankedTensorType>(g.getIndices().getType());
  SmallVector<int64_t> index;
  if (!t || !t.hasStaticShape() || !it || it.getRank() != 0 ||
      g.getPaddingIdx() || !getConstantInts(g.getIndices(), index) ||
      index.size() != 1)
    return std::nullopt;
  int64_t axis = gatherAxis(g, t);
  if (axis < 0 || axis >= t.getRank())
    return std::nullopt;
  int64_t dim = t.getDimSize(axis),
          i = index[0] < 0 ? index[0] + dim : index[0];
  if (i < 0 || i >= dim)
    return std::nullopt;
  return i;
}

/// Gathers of scalar indices, where a value has two or more along one
/// axis, as squeezed one-element slices.
void selectsToSlices(ModuleOp module) {
  llvm::MapVector<std::pair<Value, int64_t>, SmallVector<GatherOp>> groups;
  module.walk([&](GatherOp g) {
    if (selectedIndex(g))
      groups[{g.getData(), gatherAxis(g, llvm::cast<RankedTensorType>(
                                             g.getData().getType()))}]
          .push_back(g);
  });
  for (auto &[key, gathers] : groups) {
    if (gathers.size() < 2)
      continue;
    int64_t axis = key.second; // counted from 0
    for (GatherOp g : gathers) {
      auto t = llvm::cast<RankedTensorType>(g.getData().getType());
      int64_t i = *selectedIndex(g);
      OpBuilder b(g);
      Location loc = g.getLoc();
      SmallVector<int64_t> shape(t.getShape());
      shape[axis] = 1;
      auto slice = b.create<SliceOp>(
          loc, t.clone(shape), g.getData(), i64Constant(b, loc, {i}),
          i64Constant(b, loc, {i + 1}), i64Constant(b, loc, {axis}), Value());
      auto squeeze = b.create<SqueezeOp>(loc, g.getType(), slice,
                                         b.getDenseI64ArrayAttr({axis}));
      g.replaceAllUsesWith(squeeze.getResult());
      g.erase();
    }
  }
}

struct SlicesToSplit : public mpc::impl::SlicesToSplitBase<SlicesToSplit> {
  void runOnOperation() override {
    selectsToSlices(getOperation());
    SmallVector<Value> sliced;
    getOperation().walk([&](SliceOp s) {
      if (!llvm::is_contained(sliced, s.getData()))
        sliced.push_back(s.getData());
    });
    for (size_t k = 0; k < sliced.size(); ++k)
      rewrite(sliced[k], sliced);
  }

  /// Rewrites the slices of `x`; a slice replaced here that is itself
  /// sliced (GPT-J's rotary takes x[..., ::2] of a head slice) is renamed
  /// in `pending` to its part of the Split.
  void rewrite(Value x, SmallVectorImpl<Value> &pending) {
    std::map<int64_t, SmallVector<Range>> byAxis;
    for (Operation *user : x.getUsers())
      if (auto s = llvm::dyn_cast<SliceOp>(user); s && s.getData() == x)
        if (std::optional<Range> r = rangeOf(s))
          byAxis[r->axis].push_back(*r);
    auto t = llvm::cast<RankedTensorType>(x.getType());
    for (auto &[axis, ranges] : byAxis) {
      if (ranges.size() < 2)
        continue;
      llvm::sort(ranges, [](const Range &a, const Range &b) {
        return a.start < b.start;
      });
      int64_t at = 0;
      for (const Range &r : ranges)
        at = r.start == at ? r.end : -1;
      if (at != t.getDimSize(axis))
        continue; // overlapping, or leaving a gap
      // The Split goes where the first slice was; the slices' users all
      // follow their own slice, so they follow it.
      Operation *first = ranges.front().op;
      if (llvm::any_of(ranges, [&](Range &r) {
            return r.op->getBlock() != first->getBlock();
          }))
        continue;
      for (Range &r : ranges)
        if (r.op->isBeforeInBlock(first))
          first = r.op;
      OpBuilder b(first);
      SmallVector<Location> locs;
      SmallVector<Type> types;
      SmallVector<int64_t> sizes;
      for (Range &r : ranges) {
        locs.push_back(r.op.getLoc());
        types.push_back(r.op.getType());
        sizes.push_back(r.end - r.start);
      }
      auto split = b.create<SplitOp>(
          b.getFusedLoc(locs), types, x, b.getI64IntegerAttr(axis),
          b.getI64IntegerAttr((int64_t)ranges.size()),
          b.getDenseI64ArrayAttr(sizes));
      for (auto [k, r] : llvm::enumerate(ranges)) {
        std::replace(pending.begin(), pending.end(), Value(r.op.getResult()),
                     split.getResult(k));
        r.op.replaceAllUsesWith(split.getResult(k));
        r.op.erase();
      }
    }
  }
};

} // namespace
