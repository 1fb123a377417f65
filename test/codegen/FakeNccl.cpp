//===- FakeNccl.cpp - an NCCL double on the CUDA driver double ------------===//
//
// libmpc-fake-nccl.so exports the NCCL entry points runtime/cuda/Nccl.cpp
// loads (MPC_NCCL points at it). Its all-reduce runs on the stream it is
// given through the driver double (mpcFakeCudaEnqueue), so graph capture
// and stream order are exercised as on a GPU; FP32, fp16 and bf16. The ranks of a fake GPU job
// are processes whose "device memory" is their own: they meet in a
// directory under /dev/shm named by the unique id (which must travel
// through the job's store intact): each posts its buffer for the
// operation's sequence number, waits for every rank's, and sums them in
// rank order (then x 1/ranks for ncclAvg), so every rank gets the same
// bits, as NCCL's ring gives them.
//
//===----------------------------------------------------------------------===//

#include "runtime/Half.h"

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <string>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace {

constexpr int kSuccess = 0, kSystemError = 2, kInvalidArgument = 4,
              kInvalidUsage = 5;
struct UniqueId {
  char internal[128];
};
struct Comm {
  int ranks, rank;
  std::string dir;
  long long seq = 0; // all-reduces issued, in the same order on every rank
};
struct Reduce {
  Comm *comm;
  const void *from;
  void *to;
  size_t count;
  int type, op;
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

/// fp16 / bf16 bits to and from float, as mpc's CPU backend rounds.
float widen(uint16_t h, bool bf16) { return mpc::rt::widen16(h, bf16); }
uint16_t narrow(float f, bool bf16) { return mpc::rt::narrow16(f, bf16); }
float element(const char *p, size_t i, int type) {
  if (type == 7) {
    float f;
    std::memcpy(&f, p + 4 * i, 4);
    return f;
  }
  uint16_t h;
  std::memcpy(&h, p + 2 * i, 2);
  return widen(h, type == 9);
}
/// The value stored in `type` (16-bit types round).
float rounded(float f, int type) {
  return type == 7 ? f : widen(narrow(f, type == 9), type == 9);
}

/// Runs when the stream reaches the all-reduce (at each graph replay).
void reduce(void *arg) {
  auto *r = static_cast<Reduce *>(arg);
  Comm &c = *r->comm;
  long long seq = c.seq++;
  size_t size = r->type == 7 ? 4 : 2;
  std::vector<char> mine(static_cast<const char *>(r->from),
                         static_cast<const char *>(r->from) + r->count * size);
  auto file = [&](long long s, int rank) {
    return c.dir + "/" + std::to_string(s) + "." + std::to_string(rank);
  };
  std::string tmp = file(seq, c.rank) + ".tmp";
  if (FILE *f = std::fopen(tmp.c_str(), "wb")) {
    std::fwrite(mine.data(), 1, mine.size(), f);
    std::fclose(f);
    std::rename(tmp.c_str(), file(seq, c.rank).c_str());
  }
  std::vector<float> total(r->count, 0.0f);
  for (int k = 0; k < c.ranks; ++k) {
    std::vector<char> theirs;
    for (int tries = 0; tries < 60000; ++tries) { // a minute
      if (FILE *f = std::fopen(file(seq, k).c_str(), "rb")) {
        theirs.resize(mine.size());
        size_t got = std::fread(theirs.data(), 1, theirs.size(), f);
        std::fclose(f);
        if (got == theirs.size())
          break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    if (theirs.size() != mine.size()) {
      std::fprintf(stderr, "fake NCCL: rank %d never posted all-reduce %lld\n",
                   k, seq);
      std::_Exit(1);
    }
    // Partial sums in the data type, as gloo's and NCCL's are.
    for (size_t i = 0; i < r->count; ++i) {
      float x = element(theirs.data(), i, r->type);
      total[i] = k == 0 ? x : rounded(total[i] + x, r->type);
    }
  }
  if (r->op == 4)
    for (float &v : total)
      v = rounded(v * (float)(1.0 / c.ranks), r->type);
  for (size_t i = 0; i < r->count; ++i) {
    if (r->type == 7) {
      std::memcpy(static_cast<char *>(r->to) + 4 * i, &total[i], 4);
    } else {
      uint16_t h = narrow(total[i], r->type == 9);
      std::memcpy(static_cast<char *>(r->to) + 2 * i, &h, 2);
    }
  }
  // A rank in all-reduce seq has seen every rank post seq - 1, so every
  // rank has read seq - 2.
  if (seq >= 2)
    std::remove(file(seq - 2, c.rank).c_str());
}

} // namespace

extern "C" {

int ncclGetVersion(int *v) { return *v = 22803, kSuccess; }
const char *ncclGetErrorString(int r) {
  return r == kSuccess ? "no error" : "invalid argument (fake NCCL)";
}
int ncclGetUniqueId(UniqueId *id) {
  std::memset(id->internal, 0, sizeof id->internal);
  std::snprintf(id->internal, sizeof id->internal, "mpc-fake-nccl-%d-%lld",
                (int)getpid(),
                (long long)std::chrono::steady_clock::now()
                    .time_since_epoch()
                    .count());
  return kSuccess;
}
int ncclCommInitRank(Comm **comm, int ranks, UniqueId id, int rank) {
  if (std::strncmp(id.internal, "mpc-fake-nccl-", 14) != 0)
    return kInvalidArgument; // the id did not travel intact
  if (ranks < 1 || rank < 0 || rank >= ranks)
    return kInvalidArgument;
  // MPC_FAKE_NCCL_DIR: where the ranks meet (a test's own folder, so a
  // killed rank's files go with it).
  const char *base = std::getenv("MPC_FAKE_NCCL_DIR");
  std::string dir = std::string(base && *base ? base : "/dev/shm") + "/" +
                    id.internal;
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST)
    return kSystemError;
  *comm = new Comm{ranks, rank, dir};
  return kSuccess;
}
int ncclCommDestroy(Comm *c) {
  // The last files stay until every rank is done: rank 0 removes the
  // directory once the others' files of the last two operations are read.
  for (long long s = c->seq - 2; s < c->seq; ++s)
    if (s >= 0)
      std::remove((c->dir + "/" + std::to_string(s) + "." +
                   std::to_string(c->rank)).c_str());
  ::rmdir(c->dir.c_str()); // succeeds for the last rank out
  return delete c, kSuccess;
}
int ncclCommAbort(Comm *c) { return ncclCommDestroy(c); }
int ncclGroupStart() { return ++groupDepth, kSuccess; }
int ncclGroupEnd() { return groupDepth ? (--groupDepth, kSuccess) : kInvalidUsage; }

int ncclAllReduce(const void *send, void *recv, size_t count, int type,
                  int op, Comm *comm, void *stream) {
  if (!comm || (type != 7 && type != 6 && type != 9) || (op != 0 && op != 4))
    return kInvalidArgument; // FP32, fp16 or bf16 sums and means
  using Enqueue = int (*)(void *, void (*)(void *), void *);
  const char *driver = std::getenv("MPC_CUDA_DRIVER");
  void *lib = driver ? dlopen(driver, RTLD_NOW | RTLD_NOLOAD) : nullptr;
  auto enqueue = lib ? (Enqueue)dlsym(lib, "mpcFakeCudaEnqueue") : nullptr;
  if (!enqueue)
    return kInvalidUsage; // not on the driver double
  ++calls;
  // Kept for the graph's replays.
  return enqueue(stream, reduce, new Reduce{comm, send, recv, count, type, op}) == 0
             ? kSuccess
             : kInvalidArgument;
}

} // extern "C"
