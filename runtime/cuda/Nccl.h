//===- Nccl.h - NCCL, loaded at run time --------------------------*- C++ -*-===//
//
// Private to runtime/cuda/. The NCCL entry points GPU ranks use, looked up
// with dlsym: the library MPC_NCCL names (the tests point it at a host
// double, test/codegen/FakeNccl.cpp), else libnccl.so.2 on the loader's
// path, in the toolkit, or in NVIDIA's pip wheel. The constants are
// nccl.h's (NCCL 2.28); test/codegen/nccl-abi.test compiles them against
// the real header.
//
//===----------------------------------------------------------------------===//

#ifndef MPC_RUNTIME_CUDA_NCCL_H
#define MPC_RUNTIME_CUDA_NCCL_H

#include <cstddef>
#include <string>

namespace mpc::rt::nccl {

using Result = int; // ncclResult_t
using Comm = void *;
/// ncclUniqueId: passed by value, so the layout matters.
struct UniqueId {
  char internal[128];
};
// ncclDataType_t, ncclRedOp_t.
constexpr int kFloat16 = 6, kFloat32 = 7, kBfloat16 = 9;
constexpr int kSum = 0, kAvg = 4;

struct Library {
  void *lib = nullptr;
  std::string path;
  Result (*getVersion)(int *);
  const char *(*errorString)(Result);
  Result (*getUniqueId)(UniqueId *);
  Result (*commInitRank)(Comm *, int, UniqueId, int);
  Result (*commDestroy)(Comm);
  Result (*commAbort)(Comm);
  Result (*allReduce)(const void *, void *, size_t, int, int, Comm, void *);
  Result (*groupStart)();
  Result (*groupEnd)();

  /// Loads the library once; "" on success, else why not.
  std::string load();
  /// "NCCL 2.28.3 (path)".
  std::string describe() const;
};

Library &library();

} // namespace mpc::rt::nccl

#endif // MPC_RUNTIME_CUDA_NCCL_H
