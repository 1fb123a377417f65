//===- Checkpoint.h - train state to and from a directory ---------*- C++ -*-===//
//
// A checkpoint directory holds step.npy, param.<name>.npy for the FP32
// master weights and state.<name>.npy for optimizer and loss-scale state.
//
//===----------------------------------------------------------------------===//

#ifndef MPC_RUNTIME_CHECKPOINT_H
#define MPC_RUNTIME_CHECKPOINT_H

#include "runtime/StoredLayouts.h"
#include "runtime/Tensor.h"

#include <cstdint>
#include <map>
#include <string>

namespace mpc::rt {

/// Writes the checkpoint into a fresh directory and renames it over `dir`,
/// so a crash leaves either the old or the new checkpoint, never half.
/// Tensors `layouts` lists are written as ONNX lays them out, so a
/// checkpoint resumes whatever layout the next run keeps them in.
bool saveCheckpoint(const std::string &dir, int64_t step,
                    const std::map<std::string, Tensor> &params,
                    const std::map<std::string, Tensor> &state,
                    const StoredLayouts &layouts, std::string &error);

/// Reads `dir` into `params` and `state`, whose names (and, for params,
/// shapes and types) say what to expect; those `layouts` lists come back
/// in their stored layout.
bool loadCheckpoint(const std::string &dir, int64_t &step,
                    std::map<std::string, Tensor> &params,
                    std::map<std::string, Tensor> &state,
                    const StoredLayouts &layouts, std::string &error);

} // namespace mpc::rt

#endif // MPC_RUNTIME_CHECKPOINT_H
