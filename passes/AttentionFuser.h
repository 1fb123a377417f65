//===- AttentionFuser.h - mpc-fuse-attention's match and rewrite -*- C++
//-*-===//
//
// Private to passes/: FuseAttention.cpp matches an attention subgraph
// (Fuser::match, with the pass), AttentionFuserBuild.cpp rewrites a match
// to mpc.attention (Fuser::build). The forms are in FuseAttention.cpp's
// header.
//
//===----------------------------------------------------------------------===//

#ifndef MPC_PASSES_ATTENTIONFUSER_H
#define MPC_PASSES_ATTENTIONFUSER_H

#include "passes/AttentionPatterns.h"

#include "mlir/IR/Builders.h"

#include <optional>

namespace mlir::mpc::attention_patterns {

/// A mask on the scores: an additive bias, or a where() that replaces
/// scores by a fill (`scoreWhere`), with the scale applied outside it.
struct Mask {
  Value value;
  double outerScale;
  bool scoreWhere;
  bool merged = false; // added to [b * h, sq, skv] scores
};

struct Match {
  Value q, k, v, bias;
  SmallVector<int64_t> split;   // [b, h] of scores computed as [b * h, sq, skv]
  SmallVector<int64_t> pvSplit; // [b, h] of probabilities P V reads merged
  // (sq, h) of multi-query scores [b, sq * h, skv] viewed [b, sq, h, skv]
  // for the mask and softmax, and of the probabilities P V reads so.
  SmallVector<int64_t> rows, pvRows;
  double scale = 1.0;
  Value qScale; // a per-head (or per-batch) scale tensor on the product
  bool zeroMaskedRows = false;
  double dropout = 0.0; // the fused dropout's ratio, 0 for none
  double softcap = 0.0; // c of c tanh(s / c) on the scaled scores, 0: none
  IntegerAttr seed, stream;
  Operation *pv = nullptr;
  SmallVector<Operation *> dead; // the matched ops, users first
};

class Fuser {
public:
  explicit Fuser(MLIRContext *ctx) : b(ctx) {}

  /// Matches the subgraph ending in `sm`'s consumer; builds nothing.
  std::optional<Match> match(SoftmaxOp sm);
  /// Rewrites a match to mpc.attention.
  void build(Match &m);

private:
  /// `x` [b * h, ..., m, n] as [b, h, ..., m, n]: the tensor a reshape
  /// merged, or a new reshape (through a transpose of the last two
  /// dimensions).
  Value unmerge(Location loc, Value x, ArrayRef<int64_t> split,
                SmallVectorImpl<Operation *> &dead);
  static SmallVector<int64_t> lastTwoSwapped(int64_t rank);
  Value transpose(Location loc, Value x, ArrayRef<int64_t> perm);

  template <typename OpTy>
  Value make(Location loc, ValueRange operands,
             ArrayRef<NamedAttribute> attrs = {}) {
    std::string diag;
    return (*createInferred(b, loc, OpTy::getOperationName(), operands, attrs,
                            &diag))
        ->getResult(0);
  }

  OpBuilder b;
  SmallVector<Mask> pendingMasks;
  llvm::DenseMap<Value, Value> narrowed; // queryInvariantBias's, all layers
};

} // namespace mlir::mpc::attention_patterns

#endif // MPC_PASSES_ATTENTIONFUSER_H
