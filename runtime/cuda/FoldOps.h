//===- FoldOps.h - the ops CUDA fold kernels compute ---------*- C++ -*-===//
//
// Reductions and global pooling: the CUDA emitter's fold kernels compute
// them, and the plan reader checks a split fold's scratch by them (a fold
// too long for one block a output is split over blocks whose partials a
// prologue kernel leaves in the session's kernel scratch).
//
//===----------------------------------------------------------------------===//

#ifndef MPC_RUNTIME_CUDA_FOLDOPS_H
#define MPC_RUNTIME_CUDA_FOLDOPS_H

#include "runtime/OpId.h"

#include <algorithm>
#include <iterator>

namespace mpc::rt::cuda {

inline constexpr OpId kFoldOps[] = {
    OpId::ReduceSum,       OpId::ReduceMean,      OpId::ReduceMax,
    OpId::ReduceMin,       OpId::ReduceProd,      OpId::ReduceL1,
    OpId::ReduceL2,        OpId::ReduceSumSquare, OpId::ReduceLogSum,
    OpId::ReduceLogSumExp, OpId::GlobalAveragePool, OpId::GlobalMaxPool};

inline bool isFoldOp(OpId op) {
  return std::find(std::begin(kFoldOps), std::end(kFoldOps), op) !=
         std::end(kFoldOps);
}

/// A split fold's blocks a output: enough for two blocks an SM of a
/// 132-SM H100/H200 (kFoldTargetBlocks in all), each folding at least
/// kFoldSplitMin elements.
inline constexpr int64_t kFoldTargetBlocks = 264, kFoldSplitMin = 8192;

} // namespace mpc::rt::cuda

#endif // MPC_RUNTIME_CUDA_FOLDOPS_H
