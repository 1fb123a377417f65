//===- FakeNccl.cpp - an NCCL double on the CUDA driver double ------------===//
//
// libmpc-fake-nccl.so exports the NCCL entry points runtime/cuda/Nccl.cpp
// loads (MPC_NCCL points at it). A communicator of one rank, as a job of
// WORLD_SIZE=1 has: the all-reduce averages over that one rank, i.e.
// copies, and runs on the stream it is given through the driver double
// (mpcFakeCudaEnqueue), so graph capture and the stream order it is
// issued in are exercised as on a GPU. A communicator of more ranks is
// refused: the processes of a fake GPU job share no memory.
//
//===----------------------------------------------------------------------===//

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>

namespace {

constexpr int kSuccess = 0, kInvalidArgument = 4, kInvalidUsage = 5;
struct UniqueId {
  char internal[128];
};
struct Comm {
  int ranks, rank;
};
struct Copy {
  const void *from;
  void *to;
  size_t bytes;
};
int groupDepth = 0;
long long calls = 0;

struct Log {
  ~Log() {
    if (const char *log = std::getenv("MPC_FAKE_CUDA_LOG"))
      if (FILE *f = std::fopen(log, "a")) {
        std::fprintf(f, "nccl all-reduces %lld\n", calls);
        std::fclose(f);
      }
  }
} logAtExit;

void copy(void *arg) {
  auto *c = static_cast<Copy *>(arg);
  if (c->from != c->to)
    std::memmove(c->to, c->from, c->bytes);
}

} // namespace

extern "C" {

int ncclGetVersion(int *v) { return *v = 22803, kSuccess; }
const char *ncclGetErrorString(int r) {
  return r == kSuccess ? "no error" : "invalid argument (fake NCCL)";
}
int ncclGetUniqueId(UniqueId *id) {
  std::memset(id->internal, 0, sizeof id->internal);
  std::strcpy(id->internal, "mpc-fake-nccl");
  return kSuccess;
}
int ncclCommInitRank(Comm **comm, int ranks, UniqueId id, int rank) {
  if (std::strcmp(id.internal, "mpc-fake-nccl") != 0)
    return kInvalidArgument; // the id did not travel intact
  if (ranks != 1 || rank != 0) {
    std::fprintf(stderr, "fake NCCL: a communicator of %d ranks (only 1 is "
                         "emulated)\n", ranks);
    return kInvalidUsage;
  }
  *comm = new Comm{ranks, rank};
  return kSuccess;
}
int ncclCommDestroy(Comm *c) { return delete c, kSuccess; }
int ncclCommAbort(Comm *c) { return delete c, kSuccess; }
int ncclGroupStart() { return ++groupDepth, kSuccess; }
int ncclGroupEnd() { return groupDepth ? (--groupDepth, kSuccess) : kInvalidUsage; }

int ncclAllReduce(const void *send, void *recv, size_t count, int type,
                  int op, Comm *comm, void *stream) {
  size_t size = type == 7 ? 4 : (type == 6 || type == 9) ? 2 : 0;
  if (!comm || !size || (op != 0 && op != 4))
    return kInvalidArgument;
  using Enqueue = int (*)(void *, void (*)(void *), void *);
  const char *driver = std::getenv("MPC_CUDA_DRIVER");
  void *lib = driver ? dlopen(driver, RTLD_NOW | RTLD_NOLOAD) : nullptr;
  auto enqueue = lib ? (Enqueue)dlsym(lib, "mpcFakeCudaEnqueue") : nullptr;
  if (!enqueue)
    return kInvalidUsage; // not on the driver double
  ++calls;
  // Kept for the graph's replays (a few per run).
  return enqueue(stream, copy, new Copy{send, recv, count * size}) == 0
             ? kSuccess
             : kInvalidArgument;
}

} // extern "C"
