//===- FakeCudaDriver.cpp - a CUDA driver double that runs on the host ----===//
//
// libmpc-fake-cuda.so exports the driver API entry points mpc's runtime
// uses (runtime/cuda/CudaDriver.h). Pointed at with MPC_CUDA_DRIVER, it
// lets the tests run `mpc train --device cuda` and `mpc run DIR --device
// cuda` end to end without a GPU: "device memory" is host memory, and
// cuModuleLoad(DIR/kernels.fatbin) builds DIR/kernels.cu for the host
// (FakeCudaHostBuild.h; MPC_FAKE_CUDA_SRC = the mpc source tree) and runs
// its emulated kernels. Stream capture records
// launches into a graph that cuGraphLaunch replays; copies during a
// capture are refused, as mpc never makes them. With MPC_FAKE_CUDA_LOG set,
// appends what crossed the "bus" at exit: kernel and graph launches and
// bytes copied each way.
//
// Streams are asynchronous, as on a GPU: work waits in its stream's queue
// until something waits for it (cuStreamSynchronize, cuEventSynchronize,
// a copy into pageable memory, cuMemFree), and a stream's queue runs past
// a cuStreamWaitEvent only after the event's stream has run to the event.
// A copy from page-locked memory reads it when it runs, so a host that
// rewrites a staging buffer before the copy it fed has run sends the new
// bytes, where a GPU would send either: a missing wait shows as wrong
// numbers. Copies from pageable memory read it at the call, as the driver
// stages them. MPC_FAKE_CUDA_DEFER=0 runs all work at the call instead;
// MPC_FAKE_CUDA_DEFER=copies-first runs a copy to the device as soon as
// its stream allows (everything before it run, its waits met) while other
// work still waits: the other order a GPU may take, in which a copy that
// does not wait for the kernels reading its buffer overtakes them.
//
//===----------------------------------------------------------------------===//

#include "FakeCudaHostBuild.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <dlfcn.h>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

namespace {

using Result = int;
using DevicePtr = unsigned long long;
constexpr Result kOk = 0, kInvalidValue = 1, kNotFound = 301,
                 kInvalidImage = 200, kCaptureUnsupported = 900;

struct Kernel {
  void (*fn)(void **);
  int params;
  bool packed; // one struct parameter of `params` 8-byte words
  int smem;    // dynamic shared memory its code uses (emu_<name>_smem)
  int optIn = 0; // CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
};
constexpr int kDefaultSharedBytes = 48 * 1024;
/// The GPU the double stands for: sm_80 (an A100), or MPC_FAKE_CUDA_SM
/// (86: a 100 KiB SM, as an RTX 3090), so artifacts sized for another
/// architecture run too.
int fakeSm() {
  const char *v = std::getenv("MPC_FAKE_CUDA_SM");
  return v && std::atoi(v) >= 70 ? std::atoi(v) : 80;
}
/// Dynamic shared memory a block may opt in to on that GPU.
int optInSharedBytes() {
  int sm = fakeSm();
  return (sm == 80 || sm == 87 ? 163 : sm >= 90 ? 227 : 99) * 1024;
}
/// A kernel launch, or a host function a library double enqueued
/// (mpcFakeCudaEnqueue: the cuBLASLt double's matmuls).
struct Launch {
  const Kernel *kernel;
  std::vector<void *> args;
  void (*host)(void *) = nullptr;
  void *hostArg = nullptr;
};
using Graph = std::vector<Launch>;

/// A loaded module: the artifact's host build, and the fatbin's bytes,
/// which name the kernels it holds (a lookup of any other kernel fails, as
/// on a GPU).
struct Module {
  const mpc::fake::HostBuild *build;
  std::string image;
};

struct Stats {
  long long launches = 0, graphLaunches = 0, htod = 0, dtoh = 0, dtod = 0,
            missedLookups = 0, libraryCalls = 0, pinnedAllocs = 0,
            htodBesideKernels = 0, hostWaits = 0;
  ~Stats() {
    if (const char *log = std::getenv("MPC_FAKE_CUDA_LOG"))
      if (FILE *f = std::fopen(log, "a")) {
        std::fprintf(f,
                     "kernel launches %lld, graph launches %lld, bytes to "
                     "device %lld, to host %lld, device to device %lld, "
                     "kernel lookups missed %lld, library calls %lld, "
                     "pinned buffers %lld, bytes to device while "
                     "kernels were queued on another stream %lld, host "
                     "waits for a stream %lld\n",
                     launches, graphLaunches, htod, dtoh, dtod,
                     missedLookups, libraryCalls, pinnedAllocs,
                     htodBesideKernels, hostWaits);
        std::fclose(f);
      }
  }
} stats;
void *capturing = nullptr; // the stream being captured
Graph *recording = nullptr;
/// Streams that joined the capture by waiting on an event recorded in it
/// (CUDA's fork/join capture): their work is recorded too, in call order,
/// which is one valid order of the forked graph.
std::set<void *> joined;
bool captured(void *stream) {
  return capturing && (stream == capturing || joined.count(stream));
}
/// Where an event was recorded: its stream, and how much of that
/// stream's work comes before it.
struct Event {
  bool inCapture = false;
  void *stream = nullptr;
  unsigned long long position = 0;
  bool recorded = false;
};

const char *deferMode() {
  const char *v = std::getenv("MPC_FAKE_CUDA_DEFER");
  return v ? v : "";
}
bool deferring() {
  static const bool on = std::string(deferMode()) != "0";
  return on;
}
bool copiesFirst() {
  static const bool on = std::string(deferMode()) == "copies-first";
  return on;
}
/// A stream's queued work. An entry is work, or a wait for another
/// stream to have run `position` entries (cuStreamWaitEvent).
struct Queued {
  std::function<void()> work;
  bool kernels = false; // launches kernels (for the overlap count)
  bool upload = false;  // a copy to the device
  void *waitStream = nullptr;
  unsigned long long waitPosition = 0;
};
struct Queue {
  std::deque<Queued> entries;
  unsigned long long enqueued = 0, ran = 0;
};
std::map<void *, Queue> queues;

/// Runs `stream`'s work until `position` entries have run.
void drain(void *stream, unsigned long long position) {
  Queue &q = queues[stream];
  while (q.ran < position && !q.entries.empty()) {
    Queued e = std::move(q.entries.front());
    q.entries.pop_front();
    ++q.ran; // before the work: a wait on this stream's own past is done
    if (e.waitStream)
      drain(e.waitStream, e.waitPosition);
    else
      e.work();
  }
}
void drainAll() {
  for (auto &[stream, q] : queues)
    drain(stream, q.enqueued);
}
/// copies-first: runs `stream`'s leading copies to the device and the
/// waits already met before them.
void runLeadingUploads(void *stream) {
  Queue &q = queues[stream];
  while (!q.entries.empty()) {
    Queued &e = q.entries.front();
    if (e.waitStream ? queues[e.waitStream].ran < e.waitPosition : !e.upload)
      return;
    Queued ready = std::move(e);
    q.entries.pop_front();
    ++q.ran;
    if (!ready.waitStream)
      ready.work();
  }
}
/// Queues work on `stream` (runs it now when not deferring; the legacy
/// default stream waits for every other stream and runs at once).
void enqueue(void *stream, std::function<void()> work, bool kernels = false,
             bool upload = false) {
  if (!deferring())
    return work();
  if (!stream) {
    drainAll();
    return work();
  }
  Queue &q = queues[stream];
  q.entries.push_back(Queued{std::move(work), kernels, upload});
  ++q.enqueued;
  if (upload && copiesFirst())
    runLeadingUploads(stream);
}
/// Whether kernels queued on another stream than `stream` have not run:
/// a copy queued now could overlap them on a GPU.
bool kernelsQueuedBeside(void *stream) {
  for (auto &[s, q] : queues)
    if (s != stream)
      for (const Queued &e : q.entries)
        if (e.kernels)
          return true;
  return false;
}
/// Page-locked allocations (cuMemHostAlloc): copies from them read the
/// memory when they run.
std::map<const char *, size_t> pinned;
bool isPinned(const void *p, size_t n) {
  auto c = static_cast<const char *>(p);
  auto it = pinned.upper_bound(c);
  if (it == pinned.begin())
    return false;
  --it;
  return c >= it->first && c + n <= it->first + it->second;
}

void run(const Launch &l) {
  if (l.host) {
    ++stats.libraryCalls;
    return l.host(l.hostArg);
  }
  l.kernel->fn(const_cast<void **>(l.args.data()));
}

/// MPC_FAKE_CUDA_RACECHECK=1: the kernels are built with ThreadSanitizer,
/// which the shim then runs as fibers it orders by their barriers only, so
/// a race of two GPU threads is reported (the process must start with
/// libtsan preloaded: racecheck.test).
bool raceCheck() { return mpc::fake::envFlag("MPC_FAKE_CUDA_RACECHECK"); }
} // namespace

extern "C" {

Result cuInit(unsigned) { return kOk; }
Result cuDriverGetVersion(int *v) { return *v = 13000, kOk; }
/// MPC_FAKE_CUDA_DEVICES GPUs (default 1), all alike: the ranks of a fake
/// GPU job on one machine take one each.
static int deviceCount() {
  const char *n = std::getenv("MPC_FAKE_CUDA_DEVICES");
  return n && std::atoi(n) > 0 ? std::atoi(n) : 1;
}
Result cuDeviceGetCount(int *n) { return *n = deviceCount(), kOk; }
Result cuDeviceGet(int *d, int i) {
  return *d = i, i >= 0 && i < deviceCount() ? kOk : kInvalidValue;
}
Result cuDeviceGetName(char *name, int len, int) {
  std::snprintf(name, len, "mpc host emulation");
  return kOk;
}
Result cuDeviceGetAttribute(int *v, int attr, int) {
  *v = attr == 75   ? fakeSm() / 10 // compute capability
       : attr == 76 ? fakeSm() % 10
       : attr == 97 ? optInSharedBytes() // MAX_SHARED_MEMORY_PER_BLOCK_OPTIN
       : attr == 8  ? kDefaultSharedBytes // MAX_SHARED_MEMORY_PER_BLOCK
                    : 0;
  return kOk;
}
Result cuDevicePrimaryCtxRetain(void **ctx, int) {
  static int context;
  return *ctx = &context, kOk;
}
Result cuCtxSetCurrent(void *) { return kOk; }

Result cuModuleLoad(void **module, const char *path) {
  struct stat st;
  if (stat(path, &st) != 0)
    return kNotFound;
  std::string dir(path);
  dir = dir.substr(0, dir.rfind('/'));
  const char *src = std::getenv("MPC_FAKE_CUDA_SRC");
  if (!src)
    return kInvalidImage;
  if (raceCheck() && !dlsym(RTLD_DEFAULT, "__tsan_init")) {
    std::fprintf(stderr, "fake CUDA: MPC_FAKE_CUDA_RACECHECK needs "
                         "ThreadSanitizer loaded first (LD_PRELOAD=libtsan.so.2)\n");
    return kInvalidImage;
  }
  // Every module of an artifact is its kernels.cu built for the host, once
  // a process; the libraries stay loaded until it exits.
  static std::map<std::string, mpc::fake::HostBuild> builds;
  static std::mutex building; // (ranks may load modules on threads of their own)
  std::lock_guard<std::mutex> lock(building);
  std::string key = dir + (raceCheck() ? " tsan" : "");
  auto found = builds.find(key);
  if (found == builds.end()) {
    mpc::fake::HostBuild build;
    if (!mpc::fake::buildHost(src, dir, raceCheck(), build))
      return kInvalidImage;
    found = builds.emplace(key, std::move(build)).first;
  }
  std::string image;
  mpc::fake::readFile(path, image);
  *module = new Module{&found->second, image};
  return kOk;
}
Result cuModuleUnload(void *module) {
  delete static_cast<Module *>(module);
  return kOk;
}
Result cuModuleGetFunction(void **fn, void *module, const char *name) {
  auto *m = static_cast<Module *>(module);
  std::string emu = std::string("emu_") + name;
  void *lib = m->build->libraryOf(emu);
  auto f = lib ? (void (*)(void **))dlsym(lib, emu.c_str()) : nullptr;
  auto n = lib ? (int *)dlsym(lib, (emu + "_nparams").c_str()) : nullptr;
  // An empty image (a test's stand-in fatbin) holds every kernel.
  if (!f || !n || (!m->image.empty() && m->image.find(name) == std::string::npos))
    return ++stats.missedLookups, kNotFound;
  auto packed = (int *)dlsym(lib, (emu + "_packed").c_str());
  auto smem = (int *)dlsym(lib, (emu + "_smem").c_str());
  *fn = new Kernel{f, *n, packed && *packed, smem ? *smem : 0};
  return kOk;
}
Result cuFuncSetAttribute(void *f, int attr, int value) {
  if (attr != 8) // only MAX_DYNAMIC_SHARED_SIZE_BYTES is asked for
    return kInvalidValue;
  if (value < 0 || value > optInSharedBytes())
    return kInvalidValue;
  return ((Kernel *)f)->optIn = value, kOk;
}

Result cuMemAlloc_v2(DevicePtr *p, size_t bytes) {
  void *m = std::aligned_alloc(256, (bytes + 255) / 256 * 256);
  if (!m)
    return 2; // CUDA_ERROR_OUT_OF_MEMORY
  // Poisoned: an unwritten fp32, fp16 or bf16 element reads as NaN.
  std::memset(m, 0xFF, bytes);
  return *p = (DevicePtr)m, kOk;
}
Result cuMemFree_v2(DevicePtr p) {
  drainAll(); // cuMemFree waits for work that may use the memory
  return std::free((void *)p), kOk;
}
// Page-locked host memory is host memory; counted, to show it is used.
Result cuMemHostAlloc(void **p, size_t bytes, unsigned) {
  *p = std::malloc(bytes ? bytes : 1);
  if (!*p)
    return 2;
  pinned[static_cast<const char *>(*p)] = bytes;
  return ++stats.pinnedAllocs, kOk;
}
Result cuMemFreeHost(void *p) {
  drainAll();
  pinned.erase(static_cast<const char *>(p));
  return std::free(p), kOk;
}
Result cuMemcpyHtoDAsync_v2(DevicePtr to, const void *from, size_t n, void *s) {
  if (capturing && s == capturing)
    return kCaptureUnsupported;
  if (deferring() && kernelsQueuedBeside(s))
    stats.htodBesideKernels += n;
  if (isPinned(from, n)) // read when the copy runs
    enqueue(s, [=] { std::memcpy((void *)to, from, n); }, false, true);
  else { // staged by the driver at the call
    auto staged = std::make_shared<std::vector<char>>(
        static_cast<const char *>(from), static_cast<const char *>(from) + n);
    enqueue(s, [=] { std::memcpy((void *)to, staged->data(), n); }, false,
            true);
  }
  return stats.htod += n, kOk;
}
Result cuMemcpyDtoHAsync_v2(void *to, DevicePtr from, size_t n, void *s) {
  if (capturing && s == capturing)
    return kCaptureUnsupported;
  enqueue(s, [=] { std::memcpy(to, (const void *)from, n); });
  // Into pageable memory the call returns once the copy is done.
  if (!isPinned(to, n)) {
    ++stats.hostWaits;
    if (deferring() && s)
      drain(s, queues[s].enqueued);
  }
  return stats.dtoh += n, kOk;
}
Result cuMemcpyDtoDAsync_v2(DevicePtr to, DevicePtr from, size_t n, void *s) {
  if (capturing && s == capturing)
    return kCaptureUnsupported;
  enqueue(s, [=] { std::memmove((void *)to, (const void *)from, n); });
  return stats.dtod += n, kOk;
}

Result cuStreamCreate(void **s, unsigned) { return *s = new int(0), kOk; }
Result cuStreamDestroy_v2(void *s) {
  drain(s, queues[s].enqueued); // its work still runs
  queues.erase(s);
  return delete (int *)s, kOk;
}
Result cuStreamSynchronize(void *s) {
  ++stats.hostWaits;
  if (!s)
    drainAll();
  else
    drain(s, queues[s].enqueued);
  return kOk;
}
Result cuStreamBeginCapture_v2(void *s, int) {
  if (capturing)
    return kInvalidValue;
  capturing = s;
  recording = new Graph;
  return kOk;
}
Result cuStreamEndCapture(void *s, void **graph) {
  if (s != capturing)
    return kInvalidValue;
  capturing = nullptr;
  joined.clear();
  *graph = recording;
  recording = nullptr;
  return kOk;
}
Result cuGraphInstantiateWithFlags(void **exec, void *graph, unsigned long long) {
  return *exec = new Graph(*(Graph *)graph), kOk;
}
Result cuGraphLaunch(void *exec, void *stream) {
  enqueue(
      stream,
      [g = *(Graph *)exec] {
        for (const Launch &l : g)
          run(l);
      },
      true);
  return ++stats.graphLaunches, kOk;
}
Result cuGraphExecDestroy(void *exec) { return delete (Graph *)exec, kOk; }
Result cuGraphDestroy(void *graph) { return delete (Graph *)graph, kOk; }

Result cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz,
                      unsigned bx, unsigned by, unsigned bz, unsigned smem,
                      void *stream, void **params, void **) {
  auto *k = (const Kernel *)f;
  // A GPU's limits: 2^31 - 1 x 65535 x 65535 blocks of at most 1024
  // threads (1024 x 1024 x 64).
  if (gx < 1 || gx > 2147483647u || gy < 1 || gy > 65535 || gz < 1 ||
      gz > 65535 || bx < 1 || by < 1 || bz < 1 || bx > 1024 || by > 1024 ||
      bz > 64 || (unsigned long long)bx * by * bz > 1024)
    return kInvalidValue;
  // A GPU refuses a launch asking more than 48 KiB the kernel did not opt
  // in to; one giving less than its code uses reads past its allocation
  // (the double refuses that too, or the emulation's big buffer hides it).
  if ((int)smem > std::max(kDefaultSharedBytes, k->optIn) || (int)smem < k->smem)
    return kInvalidValue;
  Launch l{k, {}};
  for (int i = 0; i < k->params; ++i) // each param points at a DevicePtr
    l.args.push_back(k->packed ? (void *)((DevicePtr *)params[0])[i]
                               : (void *)*(DevicePtr *)params[i]);
  if (captured(stream)) {
    recording->push_back(std::move(l));
    return kOk;
  }
  enqueue(stream, [l] { run(l); }, true);
  return ++stats.launches, kOk;
}

/// For the library doubles: runs fn(arg) on `stream`, or records it in
/// the graph being captured there.
int mpcFakeCudaEnqueue(void *stream, void (*fn)(void *), void *arg) {
  Launch l{nullptr, {}, fn, arg};
  if (captured(stream)) {
    recording->push_back(std::move(l));
    return kOk;
  }
  enqueue(stream, [l] { run(l); }, true);
  return kOk;
}

Result cuEventCreate(void **e, unsigned) { return *e = new Event, kOk; }
Result cuEventDestroy_v2(void *e) { return delete (Event *)e, kOk; }
Result cuEventRecord(void *e, void *stream) {
  auto *ev = (Event *)e;
  ev->inCapture = captured(stream);
  if (!ev->inCapture && deferring()) {
    if (!stream)
      drainAll();
    ev->stream = stream, ev->recorded = true;
    ev->position = stream ? queues[stream].enqueued : 0;
  }
  return kOk;
}
Result cuEventSynchronize(void *e) {
  auto *ev = (Event *)e;
  if (ev->recorded && ev->stream)
    drain(ev->stream, ev->position);
  return kOk;
}
// The double's work takes no device time: every timed candidate ties (and
// a session keeps the library on a tie), so runs stay deterministic.
Result cuEventElapsedTime(float *ms, void *, void *) { return *ms = 0, kOk; }
Result cuStreamWaitEvent(void *stream, void *e, unsigned) {
  auto *ev = (Event *)e;
  if (ev->inCapture && stream != capturing)
    joined.insert(stream);
  if (!ev->inCapture && ev->recorded && ev->stream && ev->stream != stream &&
      !captured(stream)) {
    if (!stream) {
      drain(ev->stream, ev->position);
      return kOk;
    }
    Queue &q = queues[stream];
    q.entries.push_back(Queued{{}, false, false, ev->stream, ev->position});
    ++q.enqueued;
  }
  return kOk;
}

// mpc's runtime asks (runtime/cuda/CudaDriver.h): cuModuleLoad builds
// kernels.cu, so `mpc train --device cuda` builds no device code for it
// (the device compilers are tested by the artifacts `mpc compile` builds).
int mpcRunsKernelSource() { return 1; }

Result cuGetErrorString(Result r, const char **s) {
  *s = r == kNotFound         ? "CUDA_ERROR_NOT_FOUND"
       : r == kInvalidImage   ? "CUDA_ERROR_INVALID_IMAGE"
       : r == kCaptureUnsupported ? "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED"
                              : "CUDA_ERROR_INVALID_VALUE";
  return kOk;
}

} // extern "C"
