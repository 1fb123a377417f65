//===- MemoryPlan.h - device buffer offsets for a plan ------------*- C++ -*-===//

#ifndef MPC_RUNTIME_CUDA_MEMORYPLAN_H
#define MPC_RUNTIME_CUDA_MEMORYPLAN_H

#include "runtime/Plan.h"

#include <cstdint>
#include <vector>

namespace mpc::rt {

/// One arena for a plan: an offset per value, 256-byte aligned. Inputs,
/// parameters, constants and outputs get their own ranges; every other
/// buffer is reused once its last reader ran (first fit); steps tagged
/// `cuda.alias` share their input's range. Returns the arena size.
int64_t planDeviceMemory(const Plan &plan, std::vector<int64_t> &offsets);

} // namespace mpc::rt

#endif // MPC_RUNTIME_CUDA_MEMORYPLAN_H
