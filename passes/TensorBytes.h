//===- TensorBytes.h - a value's size as the plan stores it -----*- C++ -*-===//

#ifndef MPC_PASSES_TENSORBYTES_H
#define MPC_PASSES_TENSORBYTES_H

#include "codegen/PlanBuilder.h"
#include "runtime/Tensor.h"

#include "mlir/IR/BuiltinTypes.h"

#include <optional>

namespace mlir::mpc {

/// Bytes of a static tensor of a plan type, or none.
inline std::optional<uint64_t> bytesOf(Value v) {
  auto t = llvm::dyn_cast<RankedTensorType>(v.getType());
  std::optional<::mpc::rt::DType> dtype =
      t ? dtypeOf(t.getElementType()) : std::nullopt;
  if (!dtype || !t.hasStaticShape() || t.getEncoding())
    return std::nullopt;
  return (uint64_t)t.getNumElements() * ::mpc::rt::dtypeSize(*dtype);
}

} // namespace mlir::mpc

#endif // MPC_PASSES_TENSORBYTES_H
