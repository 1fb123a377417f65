//===- CudaChainViews.h - splits and concats inside fused chains -*- C++ -*-===//
//
// A chain kernel (CudaFusion.cpp) may compute a split by reading each
// part at its offset in the split's input, the step computing that input
// once a part from its operands, and a concat of parts of one shape as its
// last step, storing each part at its offset (CudaChainViews.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef MPC_CODEGEN_CUDACHAINVIEWS_H
#define MPC_CODEGEN_CUDACHAINVIEWS_H

#include "runtime/Plan.h"

#include <map>
#include <vector>

namespace mlir::mpc::cuda {

class Emitter;

/// A chain kernel's operand: `value` read at the chain's elements, or,
/// for a split the chain computes, at `offset` elements in with `strides`
/// over the chain's elements: the split's part `part` of `value`, or, where
/// a member `whole` computes the split's input, its operand `operand` for
/// part `piece` (the member is computed once a part).
struct ChainOperand {
  int value;
  int part = -1;
  int64_t offset = 0;
  ::mpc::rt::Shape strides = {}; // empty: `value` broadcast to the chain
  int whole = -1, piece = -1, operand = -1;
};
/// A chain's operands from outside (its `cuda.inputs`, in order), from its
/// members in plan order.
std::vector<ChainOperand> chainExternals(const ::mpc::rt::Plan &plan,
                                         const std::vector<int> &members);
/// The chain's split members whose input another member computes, each
/// to that member (computed once a part: an LSTM step's x W + h R).
std::map<int, int> splitWholes(const ::mpc::rt::Plan &plan,
                               const std::vector<int> &members);
/// Whether split `s` can be a member of a chain over `shape`: one input,
/// every part of that shape and of the input's type, not already in place.
bool splitReadInChain(Emitter &e, const ::mpc::rt::Step &s,
                      const ::mpc::rt::Shape &shape);
/// Whether concat `s` can be the last step of a chain over its parts.
bool concatOfParts(Emitter &e, const ::mpc::rt::Step &s);

} // namespace mlir::mpc::cuda

#endif // MPC_CODEGEN_CUDACHAINVIEWS_H
