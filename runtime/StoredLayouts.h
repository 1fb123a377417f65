//===- StoredLayouts.h - tensors kept in another layout than ONNX's -*- C++ -*-===//
//
// mpc-channels-last keeps a train step's filter parameters KRSC (and their
// optimizer state with them): the plan's `layouts` map says, by name,
// which tensors the runtime holds as transpose(ONNX value, perm). Only
// where weights leave or enter the runtime - the trained model written
// out, checkpoints, seeded draws - are they permuted.
//
//===----------------------------------------------------------------------===//

#ifndef MPC_RUNTIME_STOREDLAYOUTS_H
#define MPC_RUNTIME_STOREDLAYOUTS_H

#include "runtime/Tensor.h"

#include <map>
#include <string>
#include <vector>

namespace mpc::rt {

/// Stored permutations by tensor name (Plan::layouts).
using StoredLayouts = std::map<std::string, std::vector<int64_t>>;

/// `t` with its dims reordered: dim i of the result is dim perm[i] of `t`
/// (any element type).
Tensor permuted(const Tensor &t, const std::vector<int64_t> &perm);

/// `shape` reordered as `permuted` reorders a tensor's dims.
Shape permutedShape(const Shape &shape, const std::vector<int64_t> &perm);

/// The permutation undoing `perm`.
std::vector<int64_t> inversePerm(const std::vector<int64_t> &perm);

/// Whether `perm` reorders `rank` dims (each once).
bool isPerm(const std::vector<int64_t> &perm, size_t rank);

/// Tensor `name` as ONNX lays it out (from how the runtime stores it), and
/// back; unchanged for names `layouts` does not list.
Tensor toOnnxLayout(const StoredLayouts &layouts, const std::string &name,
                    const Tensor &t);
Tensor toStoredLayout(const StoredLayouts &layouts, const std::string &name,
                      const Tensor &t);

} // namespace mpc::rt

#endif // MPC_RUNTIME_STOREDLAYOUTS_H
