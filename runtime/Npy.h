//===- Npy.h - NumPy .npy files -----------------------------------*- C++ -*-===//

#ifndef MPC_RUNTIME_NPY_H
#define MPC_RUNTIME_NPY_H

#include "runtime/Tensor.h"

#include <string>

namespace mpc::rt {

/// Reads a C-order .npy of float32/float16/int64/int32/bool (int8/uint8,
/// float64 are converted: float64 -> f32, others -> i64 are NOT accepted, to
/// avoid silent precision changes). On failure sets a one-line error.
bool readNpy(const std::string &path, Tensor &tensor, std::string &error);
/// The same from the file's bytes; `path` names it in errors.
bool parseNpy(const std::string &bytes, const std::string &path,
              Tensor &tensor, std::string &error);

/// Writes `tensor` as .npy (bf16 widened exactly to float32, numpy has no
/// bfloat16), atomically: a temporary file renamed into place.
bool writeNpy(const std::string &path, const Tensor &tensor,
              std::string &error);

} // namespace mpc::rt

#endif // MPC_RUNTIME_NPY_H
