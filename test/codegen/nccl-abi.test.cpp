// Checked by nccl-abi.test (not a lit test itself: lit reads *.test).
#include "runtime/cuda/Nccl.h"

#include <nccl.h>
#include <type_traits>

namespace nc = mpc::rt::nccl;
static_assert(nc::kFloat16 == ncclFloat16 && nc::kFloat32 == ncclFloat32 &&
              nc::kBfloat16 == ncclBfloat16);
static_assert(nc::kSum == ncclSum && nc::kAvg == ncclAvg);
static_assert(sizeof(nc::UniqueId) == sizeof(ncclUniqueId) &&
              alignof(nc::UniqueId) == alignof(ncclUniqueId));
// The entry points' types, as Nccl.h's pointers call them.
static_assert(std::is_same_v<decltype(&ncclAllReduce),
                             ncclResult_t (*)(const void *, void *, size_t,
                                              ncclDataType_t, ncclRedOp_t,
                                              ncclComm_t, cudaStream_t)>);
static_assert(std::is_same_v<decltype(&ncclCommInitRank),
                             ncclResult_t (*)(ncclComm_t *, int, ncclUniqueId,
                                              int)>);
static_assert(sizeof(ncclResult_t) == sizeof(nc::Result) &&
              sizeof(ncclDataType_t) == sizeof(int) &&
              sizeof(ncclRedOp_t) == sizeof(int));
