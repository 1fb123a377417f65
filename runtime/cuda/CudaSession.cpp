//===- CudaSession.cpp - a plan on the GPU, state resident ----------------===//
//
// One arena (planDeviceMemory) holds every value; inputs, parameters and
// outputs have ranges of their own, so a parameter keeps its value across
// runs and a fed-back output is one device-to-device copy. All work goes
// to one stream; with graphs on, the first run captures the step's
// launches into a CUDA graph and every run launches that graph (the
// kernels' arguments are arena addresses, fixed for the session). What a
// step moves over the bus besides (its batch, the scalars read after it)
// goes through StepTransfers.
//
//===----------------------------------------------------------------------===//

#include "runtime/AppliedOnly.h"
#include "runtime/OpTrace.h"
#include "runtime/WeightCopies.h"
#include "runtime/cuda/CudaDevice.h"
#include "runtime/cuda/CudaDriver.h"
#include "runtime/cuda/KernelCalls.h"
#include "runtime/cuda/KernelConfig.h"
#include "runtime/cuda/KernelModules.h"
#include "runtime/cuda/LibraryConvs.h"
#include "runtime/cuda/LibraryGemms.h"
#include "runtime/cuda/MemoryPlan.h"
#include "runtime/cuda/StepCollectives.h"
#include "runtime/cuda/StepTransfers.h"
#include "runtime/cuda/Tuning.h"
#include "runtime/dist/ProcessGroup.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <set>

namespace mpc::rt {
namespace {

using namespace cu;

class CudaSession : public Session {
public:
  CudaSession(const Plan &plan, bool useGraph)
      : plan(plan), d(driver()), useGraph(useGraph),
        copies(weightCopies(plan)) {}

  ~CudaSession() override {
    for (Handle e : execs)
      if (e)
        d.graphExecDestroy(e);
    if (stream)
      d.streamDestroy(stream);
    if (handoff)
      d.eventDestroy(handoff);
    if (received)
      d.eventDestroy(received);
    if (base)
      d.memFree(base);
  }

  bool open(const std::string &dir, std::string &error) {
    Device dev;
    Handle ctx;
    // A job's ranks on one machine take a GPU each (LOCAL_RANK).
    dist::ProcessGroup *group = dist::currentGroup();
    int ordinal = group ? group->env().localRank : 0, count = 0;
    if (ordinal > 0 &&
        (!d.check(d.deviceCount(&count), "cuDeviceGetCount", error) ||
         ordinal >= count))
      return (error = error.empty()
                          ? "LOCAL_RANK " + std::to_string(ordinal) +
                                " but this machine has " +
                                std::to_string(count) + " GPUs"
                          : error,
              false);
    if (!d.check(d.deviceGet(&dev, ordinal), "cuDeviceGet", error) ||
        !d.check(d.primaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain",
                 error) ||
        !d.check(d.ctxSetCurrent(ctx), "cuCtxSetCurrent", error) ||
        !modules.load(dir, error) ||
        !d.check(d.streamCreate(&stream, 0), "cuStreamCreate", error) ||
        !collectives.open(group, error))
      return false;
    std::vector<bool> launched(plan.steps.size(), false);
    for (size_t i = 0; i < plan.steps.size(); ++i) {
      const Step &s = plan.steps[i];
      if ((s.cuda.kernel.empty() && s.cuda.inOtherKernel()) ||
          (collectives.active() && s.op == OpId::AllReduce))
        continue; // computed in another step's kernel, or by NCCL
      if (s.cuda.kernel.empty())
        return (error = "step '" + s.name + "' (" + opName(s.op) +
                        ") has no CUDA kernel",
                false);
      launched[i] = true;
    }
    if (!gemms.open(plan, gemmSummary, error) ||
        !convs.open(plan, stream, convSummary, error))
      return false;
    int64_t arena = planDeviceMemory(plan, offsets);
    for (const Step &s : plan.steps)
      if (s.cuda.underflowCounter && counter < 0)
        counter = arena, arena += 256; // one u64, after the values
    // The kernels' scratch (partial sums a prologue hands its kernel).
    if (int64_t k = kernelScratchBytes(plan))
      scratch = arena, arena += (k + 255) / 256 * 256;
    // The libraries' scratch, shared: their calls run one after another.
    if (size_t w = std::max(gemms.workspaceBytes(), convs.workspaceBytes()))
      workspace = (arena + 255) / 256 * 256, arena = workspace + (int64_t)w;
    if (!d.check(d.memAlloc(&base, (size_t)std::max<int64_t>(arena, 256)),
                 "allocating " + std::to_string(arena) + " bytes", error))
      return false;
    // Every kernel launch with its arguments: arena addresses, fixed for
    // the session.
    launches.resize(plan.steps.size());
    for (size_t i = 0; i < plan.steps.size(); ++i) {
      if (!launched[i])
        continue;
      for (KernelCall &c : kernelCalls(
               plan, plan.steps[i],
               [&](int v) { return (uint64_t)(base + offsets[v]); },
               (uint64_t)(base + counter), (uint64_t)(base + scratch))) {
        Launch &l = launches[i].emplace_back();
        if (!modules.function(*c.kernel, l.fn, error) ||
            !optInSharedMemory(d, dev, plan, plan.steps[i], *c.kernel, l.fn,
                               c.smem, error))
          return false;
        l.call = std::move(c);
        if (l.call.packed) // one struct: its bytes are the words in order
          l.params.push_back(l.call.args.data());
        else
          for (uint64_t &a : l.call.args)
            l.params.push_back(&a);
      }
    }
    // The inputs fed every step (the batch, the step's scalars) through
    // page-locked slots.
    std::vector<int> fed;
    for (const Binding &b : plan.inputs)
      if (!isWeightCopy(plan, b.name))
        fed.push_back(b.value);
    io.open(fed, stream, base);
    for (const Parameter &p : plan.params)
      if (!upload(p.value, p.init, error) || !uploadCopies(p, p.init, error))
        return false;
    for (const auto &[id, t] : plan.constants)
      if (!upload(id, t, error))
        return false;
    // --gemm/--conv auto: the library or mpc's kernel, whichever is faster
    // for each distinct shape (timed on these buffers before the first
    // run, whose kernels overwrite what the timing wrote).
    // MPC_TUNING=off keeps the library wherever it applies, untimed.
    const char *tuning = std::getenv("MPC_TUNING");
    bool timing = !(tuning && std::string(tuning) == "off");
    auto kernel = [&](size_t i, std::string &e) { return timeStep(i, false, e); };
    auto library = [&](size_t i, std::string &e) { return timeStep(i, true, e); };
    if (timing && plan.cudaGemm == "auto" &&
        !chooseFastest(gemms, kGemmTuning, tuningFile(dir), library, kernel,
                       gemmSummary, error))
      return false;
    if (timing && plan.cudaConv == "auto" &&
        !chooseFastest(convs, kConvTuning, tuningFile(dir), library, kernel,
                       convSummary, error))
      return false;
    traceOps("cuda", plan);
    return true;
  }

  /// Input `name`'s value id, once `t` is what the artifact expects there.
  int inputFor(const std::string &name, const Tensor &t, std::string &error) {
    int v = valueOfName(plan, name);
    if (v < 0)
      return (error = "the plan has no input '" + name + "'", -1);
    const ValueInfo &info = plan.values[v];
    if (t.dtype() != info.dtype || t.shape() != info.shape)
      return (error = "input '" + name + "' is " + dtypeName(t.dtype()) +
                      shapeString(t.shape()) + ", the artifact expects " +
                      dtypeName(info.dtype) + shapeString(info.shape),
              -1);
    return v;
  }

  bool set(const std::string &name, const Tensor &t,
           std::string &error) override {
    int v = inputFor(name, t, error);
    if (v < 0)
      return false;
    noteFlag(v, t);
    if (io.staged(v))
      return io.set(v, t, error);
    io.overwriting(v);
    for (const Parameter &p : plan.params)
      if (p.value == v)
        return upload(v, t, error) && uploadCopies(p, t, error);
    return upload(v, t, error);
  }

  bool prefetch(const std::string &name, const Tensor &t,
                std::string &error) override {
    int v = inputFor(name, t, error);
    if (v < 0)
      return false;
    noteFlag(v, t);
    if (io.prefetch(v, t, error))
      return true;
    return error.empty() && set(name, t, error); // in stream order
  }

  bool run(std::string &error) override {
    return start(error) && finish(error);
  }

  bool start(std::string &error) override {
    if (!io.startRun(error))
      return false;
    uint64_t count = 0;
    if (counter >= 0 &&
        !d.check(d.memcpyHtoD(base + counter, &count, sizeof count, stream),
                 "resetting the underflow counter", error))
      return false;
    // A micro-batch that does not apply the group's update skips the
    // steps only the update needs: a graph of its own.
    skipping = flag >= 0 && !applyNext;
    Handle &exec = execs[skipping];
    if (!useGraph) {
      if (!launchAll(error))
        return false;
    } else {
      if (!exec) {
        Handle graph = nullptr;
        if (!d.check(d.streamBeginCapture(stream, 1 /*THREAD_LOCAL*/),
                     "cuStreamBeginCapture", error))
          return false;
        bool ok = launchAll(error);
        Result ended = d.streamEndCapture(stream, &graph);
        if (!ok || !d.check(ended, "capturing the step's CUDA graph", error) ||
            !d.check(d.graphInstantiate(&exec, graph, 0),
                     "instantiating the step's CUDA graph", error))
          return false;
        d.graphDestroy(graph);
      }
      if (!d.check(d.graphLaunch(exec, stream), "cuGraphLaunch", error))
        return false;
    }
    return true;
  }

  bool finish(std::string &error) override {
    // The counter comes back behind the kernels, with the outputs read
    // every run: one synchronization.
    uint64_t count = 0;
    if (!io.finishRun(counter >= 0 ? base + counter : 0, count, error))
      return false;
    underflowed = (int64_t)count;
    return true;
  }

  bool skipped(size_t index) const override {
    return skipping && index < appliedOnly.size() && appliedOnly[index];
  }

  void readAfterEveryRun(const std::vector<size_t> &outputs) override {
    std::vector<std::pair<size_t, int>> values;
    for (size_t index : outputs)
      if (index < plan.outputs.size())
        values.push_back({index, plan.outputs[index].value});
    io.readAfterEveryRun(values);
  }

  bool output(size_t index, Tensor &t, std::string &error) override {
    if (index >= plan.outputs.size())
      return (error = "no output " + std::to_string(index), false);
    if (skipped(index))
      return (error = skippedOutputError(plan.outputs[index].name), false);
    return io.cached(index, t) ||
           download(plan.outputs[index].value, t, error);
  }

  bool feedBack(size_t index, const std::string &name,
                std::string &error) override {
    int to = valueOfName(plan, name);
    if (index >= plan.outputs.size() || to < 0)
      return (error = "cannot feed output " + std::to_string(index) +
                      " back into '" + name + "'",
              false);
    if (skipped(index))
      return true; // the old value, as the update would have kept it
    int from = plan.outputs[index].value;
    const ValueInfo &a = plan.values[from], &b = plan.values[to];
    if (a.dtype != b.dtype || a.shape != b.shape)
      return (error = "output '" + plan.outputs[index].name +
                      "' does not match input '" + name + "'",
              false);
    if (offsets[from] == offsets[to])
      return true;
    io.overwriting(to);
    return d.check(
        d.memcpyDtoD(base + offsets[to], base + offsets[from],
                     plan.values[to].bytes(), stream),
        "copying '" + plan.outputs[index].name + "' to '" + name + "'", error);
  }

  bool get(const std::string &name, Tensor &t, std::string &error) override {
    int v = valueOfName(plan, name);
    if (v < 0)
      return (error = "the plan has no input '" + name + "'", false);
    return download(v, t, error);
  }

  /// Device to device from another CUDA session (the same GPU: a process
  /// runs its sessions on one), the master and each of its weight copies
  /// from `from`'s copy of the same type; on `from`'s stream, which
  /// this one then waits for, so neither's next run overtakes the copy.
  /// Through the host where `from` lacks a copy this session keeps.
  bool setFrom(Session &source, const std::string &fromName,
               const std::string &name, std::string &error) override {
    auto *from = dynamic_cast<CudaSession *>(&source);
    int v = valueOfName(plan, name);
    int w = from ? valueOfName(from->plan, fromName) : -1;
    if (v < 0 || w < 0 || plan.values[v].dtype != from->plan.values[w].dtype ||
        plan.values[v].shape != from->plan.values[w].shape)
      return Session::setFrom(source, fromName, name, error);
    std::vector<std::pair<int, int>> moves = {{v, w}}; // (here, there)
    for (const WeightCopy &c : copies) {
      if (c.master->value != v)
        continue;
      int there = -1;
      for (const WeightCopy &f : from->copies)
        if (f.master->name == fromName &&
            from->plan.values[f.value].dtype == plan.values[c.value].dtype)
          there = f.value;
      if (there < 0)
        return Session::setFrom(source, fromName, name, error);
      moves.push_back({c.value, there});
    }
    if ((!handoff && !d.check(d.eventCreate(&handoff, 2 /*DISABLE_TIMING*/),
                              "cuEventCreate", error)) ||
        (!received && !d.check(d.eventCreate(&received, 2 /*DISABLE_TIMING*/),
                               "cuEventCreate", error)))
      return false;
    // What this stream has queued (the session's first uploads, a run that
    // reads the old value) comes before the copy on the source's stream.
    if (!d.check(d.eventRecord(received, stream), "cuEventRecord", error) ||
        !d.check(d.streamWaitEvent(from->stream, received, 0),
                 "cuStreamWaitEvent", error))
      return false;
    for (const auto &[here, there] : moves) {
      io.overwriting(here);
      if (!d.check(d.memcpyDtoD(base + offsets[here],
                                from->base + from->offsets[there],
                                plan.values[here].bytes(), from->stream),
                   "copying '" + name + "' from another session", error))
        return false;
    }
    return d.check(d.eventRecord(handoff, from->stream), "cuEventRecord",
                   error) &&
           d.check(d.streamWaitEvent(stream, handoff, 0), "cuStreamWaitEvent",
                   error);
  }

  int64_t underflow() const override { return underflowed; }

  std::string describe() const override {
    std::string line = gemmSummary;
    for (const std::string *part : {&convSummary, &collectives.summary()})
      if (!part->empty())
        line += (line.empty() ? "" : "; ") + *part;
    return line;
  }

private:
  const Plan &plan;
  Driver &d;
  bool useGraph;
  std::vector<WeightCopy> copies; // derived from their masters, never staged
  KernelModules modules{d}; // kernels*.fatbin
  Handle stream = nullptr;
  Handle execs[2] = {nullptr, nullptr}; // the step's graph; without updates
  /// The group flag of a train step under accumulation (-1: none), its
  /// value for the next run, and whether the last run skipped the
  /// applied-only steps, whose outputs it then did not write.
  int flag = appliedOnlyFlag(plan);
  bool applyNext = true, skipping = false;
  std::vector<bool> appliedOnly = appliedOnlyOutputs(plan);
  DevicePtr base = 0;
  struct Launch {
    Handle fn = nullptr;
    KernelCall call;
    std::vector<void *> params; // into call.args, as cuLaunchKernel takes them
  };
  std::vector<std::vector<Launch>> launches; // per step, prologue first
  std::vector<int64_t> offsets;
  LibraryGemms gemms;      // the steps cuBLASLt runs
  LibraryConvs convs;      // the steps cuDNN runs
  std::string gemmSummary, convSummary; // who runs them, a line each
  int64_t workspace = -1;  // arena offset of the library workspace
  StepTransfers io{d, plan, offsets}; // the batch in, the scalars out
  Handle handoff = nullptr; // setFrom(): the copies' end on the source's stream
  Handle received = nullptr; // setFrom(): this stream's work before them
  int64_t counter = -1;    // arena offset of the underflow counter
  int64_t scratch = -1;    // arena offset of the kernel scratch
  int64_t underflowed = 0; // the last run's count
  StepCollectives collectives{d, plan}; // a rank's buckets through NCCL

  /// Step `i`'s kernels on the stream.
  bool launchKernels(size_t i, std::string &error) {
    for (Launch &l : launches[i]) {
      const auto &grid = l.call.grid, &block = l.call.block;
      if (!d.check(d.launch(l.fn, grid[0], grid[1], grid[2], block[0], block[1],
                            block[2], (unsigned)l.call.smem, stream,
                            l.params.data(), nullptr),
                   nodeOf(plan.steps[i]) + "launching " + *l.call.kernel,
                   error))
        return false;
    }
    return true;
  }

  /// "node 'NAME' (Op): ", the ONNX node a kernel computes, for errors.
  static std::string nodeOf(const Step &s) {
    return "node '" + s.name + "' (" + opName(s.op) + "): ";
  }

  /// Milliseconds a run of step `i` takes through its library (`library`:
  /// cuBLASLt or cuDNN) or its own kernels: one warm-up, then the mean of
  /// a few between events.
  double timeStep(size_t i, bool library, std::string &error) {
    constexpr int kRuns = 5;
    auto once = [&] {
      DevicePtr work = workspace >= 0 ? base + workspace : 0;
      auto address = [&](int v) { return base + offsets[v]; };
      int fused = gemms.fusedStep(i); // the library call computes it
      if (!library)
        return launchKernels(i, error) &&
               (fused < 0 || launchKernels((size_t)fused, error));
      return gemms.runs(i) ? gemms.launch(i, address, work, stream, error)
                           : convs.launch(i, address, work, error);
    };
    Handle start = nullptr, end = nullptr;
    float ms = 0;
    bool ok = d.check(d.eventCreate(&start, 0), "cuEventCreate", error) &&
              d.check(d.eventCreate(&end, 0), "cuEventCreate", error) &&
              once() &&
              d.check(d.eventRecord(start, stream), "cuEventRecord", error);
    for (int r = 0; ok && r < kRuns; ++r)
      ok = once();
    ok = ok && d.check(d.eventRecord(end, stream), "cuEventRecord", error) &&
         d.check(d.eventSynchronize(end), "cuEventSynchronize", error) &&
         d.check(d.eventElapsedTime(&ms, start, end), "cuEventElapsedTime",
                 error);
    for (Handle e : {start, end})
      if (e)
        d.eventDestroy(e);
    return ok ? ms / kRuns : -1.0;
  }

  bool profile(std::vector<StepTime> &times, std::string &error) override {
    times.clear();
    for (size_t i = 0; i < plan.steps.size(); ++i) {
      const Step &s = plan.steps[i];
      bool library = gemms.runs(i) || convs.runs(i);
      if ((collectives.active() && s.op == OpId::AllReduce) ||
          gemms.fusedAway(i) || (!library && launches[i].empty()))
        continue; // NCCL's, computed by a library call, or batched away
      std::string what =
          library ? std::string(gemms.runs(i) ? "cuBLASLt " : "cuDNN ") +
                        opName(s.op)
                  : *launches[i].back().call.kernel;
      // Kernels are named <what>_<12 hex digits of a hash>[_xN].
      if (size_t at = what.find_last_of('_');
          !library && at != std::string::npos && at + 13 == what.size())
        what.erase(at);
      else if (size_t x = what.rfind("_x"); !library && x != std::string::npos &&
               x >= 13 && what[x - 13] == '_')
        what.erase(x - 13, 13);
      double ms = timeStep(i, library, error);
      if (ms < 0)
        return false;
      times.push_back({i, what, ms});
    }
    return true;
  }

  bool upload(int v, const Tensor &t, std::string &error) {
    return d.check(d.memcpyHtoD(base + offsets[v], t.raw(), t.bytes(), stream),
                   "upload", error);
  }
  /// Master `p` was set to `t`: its weight copies follow.
  bool uploadCopies(const Parameter &p, const Tensor &t, std::string &error) {
    for (const WeightCopy &c : copies)
      if (c.master == &p &&
          !upload(c.value, castCopy(t, plan.values[c.value].dtype), error))
        return false;
    return true;
  }
  bool download(int v, Tensor &t, std::string &error) {
    const ValueInfo &info = plan.values[v];
    t = Tensor(info.dtype, info.shape);
    return d.check(d.memcpyDtoH(t.raw(), base + offsets[v], t.bytes(), stream),
                   "download", error) &&
           d.check(d.streamSynchronize(stream), "download", error);
  }
  void noteFlag(int v, const Tensor &t) {
    if (v == flag)
      applyNext = t.getInt(0) != 0;
  }

  bool launchAll(std::string &error) {
    std::function<DevicePtr(int)> address = [&](int v) {
      return base + offsets[v];
    };
    collectives.beginRun();
    for (size_t i = 0; i < plan.steps.size(); ++i) {
      DevicePtr work = workspace >= 0 ? base + workspace : 0;
      if (skipping && plan.steps[i].appliedOnly)
        continue;
      if (!collectives.join(i, stream, error))
        return false;
      if (collectives.active() && plan.steps[i].op == OpId::AllReduce) {
        if (!collectives.launch(i, stream, address, error))
          return false;
        continue;
      }
      if (gemms.runs(i)) {
        if (!gemms.launch(i, address, work, stream, error))
          return false;
        continue;
      }
      if (gemms.fusedAway(i)) // its GEMM's library call computed it
        continue;
      if (convs.runs(i)) {
        if (!convs.launch(i, address, work, error))
          return false;
        continue;
      }
      if (!launchKernels(i, error))
        return false;
    }
    // Buckets only the plan's outputs read: joined before the run ends.
    return collectives.join(plan.steps.size(), stream, error);
  }
};

} // namespace

std::unique_ptr<Session> openCudaSession(const Plan &plan,
                                         const std::string &dir, bool graph,
                                         std::string &error) {
  CudaInfo info = probeCuda();
  if (!info.available) {
    error = info.reason;
    return nullptr;
  }
  if (std::string why = archMismatch(plan, dir, deviceArch(info.devices[0]));
      !why.empty()) {
    error = why;
    return nullptr;
  }
  auto s = std::make_unique<CudaSession>(plan, graph);
  if (!s->open(dir, error))
    return nullptr;
  return s;
}

} // namespace mpc::rt
