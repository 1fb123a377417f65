//===- TensorLimit.h - the largest tensor a model may hold ------*- C++ -*-===//
//
// `--max-tensor-bytes`: the import refuses declared and computed tensors
// past it before anything is allocated, and the plan builder every value
// a plan would hold (what the import let through, such as attention's
// scores, which a fused step never holds).
//
//===----------------------------------------------------------------------===//

#ifndef MPC_RUNTIME_TENSORLIMIT_H
#define MPC_RUNTIME_TENSORLIMIT_H

#include <atomic>
#include <cstdint>

namespace mpc::rt {

/// 16 GiB unless set.
inline std::atomic<uint64_t> gMaxTensorBytes{uint64_t(16) << 30};

inline uint64_t maxTensorBytes() { return gMaxTensorBytes.load(); }
inline void setMaxTensorBytes(uint64_t bytes) { gMaxTensorBytes.store(bytes); }

} // namespace mpc::rt

#endif // MPC_RUNTIME_TENSORLIMIT_H
