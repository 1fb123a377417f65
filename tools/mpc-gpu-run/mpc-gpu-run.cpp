//===- mpc-gpu-run.cpp - run an artifact on the GPU, no MLIR needed -------===//
//
// mpc-gpu-run DIR [--repeat N] [--expect NAME=FILE.npy]... NAME=FILE.npy...
//   Runs an `mpc compile` artifact with the CUDA runtime, prints each
//   output's largest difference from an expected .npy (relative to its
//   largest magnitude) and the median time of N more runs.
// mpc-gpu-run DIR --steps N [--lr LR] [--expect-losses FILE.jsonl]
//             [--replays N] NAME=FILE.npy...
//   Trains a train-step artifact (mpc compile --train) for N steps on the
//   given batch with mpc train's loop (runtime/Trainer.h): weights and
//   state stay on the device, optimizer state starts at zero, the loss
//   scale and learning rate where the artifact says. A phased artifact
//   (--phase: DIR/phases.txt) runs its phases in order each step. Prints the losses' largest relative
//   difference from an `mpc train --metrics` file and the median step time
//   (the batch uploaded, the captured graph, loss and all-finite flag read
//   back), and the median of --replays (default 10) replays of the step on
//   the device alone. --profile N then times each launching step alone and
//   prints the N kinds of launch (kernel, or library and op) taking most.
// mpc-gpu-run --probe: prints "gpu: NAME (sm_XY)".
// Without a GPU: one line, exit 1. Built alone with -DMPC_RUNTIME_ONLY=ON.
//
//===----------------------------------------------------------------------===//

#include "runtime/Npy.h"
#include "runtime/PlanIO.h"
#include "runtime/Trainer.h"
#include "runtime/cuda/CudaDevice.h"
#include "runtime/dist/ProcessGroup.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

using namespace mpc::rt;

static int fail(const std::string &message) {
  std::fprintf(stderr, "mpc-gpu-run: error: %s\n", message.c_str());
  return 1;
}

/// The "loss" of each line of an `mpc train --metrics` file (null: NaN).
static std::vector<double> readLosses(const std::string &path) {
  std::vector<double> losses;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    size_t at = line.find("\"loss\": ");
    if (at != std::string::npos)
      losses.push_back(line.compare(at + 8, 4, "null") == 0
                           ? NAN
                           : std::strtod(line.c_str() + at + 8, nullptr));
  }
  return losses;
}

/// One train step of an artifact: a plan and the directory of its kernels
/// (a phased artifact, mpc compile --train --phase, has one per phase).
struct PhaseArtifact {
  std::string name, dir;
  Plan plan;
};

/// DIR/phases.txt ("loss-scaler shared|per-phase", then "phase SUBDIR
/// LOSS" per phase, in order): the phases of a phased artifact; false with
/// `error` when it is malformed. No file: one phase, DIR itself.
static bool readPhases(const std::string &dir, std::vector<PhaseArtifact> &out,
                       bool &sharedScaler, std::string &error) {
  std::ifstream in(dir + "/phases.txt");
  if (!in) {
    out.push_back({"", dir, {}});
    return loadPlan(dir, out.back().plan, error);
  }
  for (std::string line; std::getline(in, line);) {
    std::istringstream words(line);
    std::string key, a, b;
    words >> key >> a;
    std::getline(words >> std::ws, b);
    if (key == "loss-scaler" && (a == "shared" || a == "per-phase")) {
      sharedScaler = a == "shared";
    } else if (key == "phase" && !a.empty() && !b.empty() &&
               a.find('/') == std::string::npos && a != "..") {
      out.push_back({b, dir + "/" + a, {}});
      if (!loadPlan(out.back().dir, out.back().plan, error))
        return false;
    } else {
      return (error = dir + "/phases.txt: bad line '" + line + "'", false);
    }
  }
  if (out.empty())
    return (error = dir + "/phases.txt names no phase", false);
  return true;
}

/// Where a step's time goes: each launching step of every phase timed
/// alone (after training: the runs write the state), summed by what runs
/// it, the `top` largest printed with their share.
static bool printProfile(std::vector<std::unique_ptr<Session>> &sessions,
                         double graphMs, int top, std::string &error) {
  std::map<std::string, std::pair<double, int>> byWhat;
  double total = 0;
  int launching = 0;
  for (auto &s : sessions) {
    std::vector<Session::StepTime> times;
    if (!s->profile(times, error))
      return false;
    for (const Session::StepTime &t : times) {
      auto &[ms, n] = byWhat[t.what];
      ms += t.ms, ++n, total += t.ms, ++launching;
    }
  }
  std::vector<std::pair<double, std::string>> order;
  for (const auto &[what, v] : byWhat)
    order.push_back({v.first, what});
  std::sort(order.rbegin(), order.rend());
  std::printf("profile: %d launching steps, %.4f ms run one at a time (the "
              "step's graph: %.4f ms)\n",
              launching, total, graphMs);
  for (int k = 0; k < top && k < (int)order.size(); ++k)
    std::printf("profile: %5.1f%% %9.4f ms %4dx %s\n",
                total > 0 ? 100 * order[k].first / total : 0.0, order[k].first,
                byWhat[order[k].second].second, order[k].second.c_str());
  return true;
}

static int train(std::vector<PhaseArtifact> &phases, bool sharedScaler,
                 const std::map<std::string, Tensor> &inputs, int steps,
                 int replays, std::optional<float> lr,
                 const std::string &expectLosses, int profileTop) {
  std::string error;
  for (const PhaseArtifact &p : phases)
    if (!p.plan.train)
      return fail(p.dir + " is not a train-step artifact (mpc compile --train)");
  if (inputs.empty())
    return fail("no batch given (NAME=FILE.npy for each data input)");
  // One rank of a data-parallel job (torchrun's environment): the CUDA
  // session averages the gradient buckets through NCCL.
  dist::JobEnv job;
  std::unique_ptr<dist::ProcessGroup> group;
  if (!dist::readJobEnv(job, error))
    return fail(error);
  if (job.distributed()) {
    group = dist::openStoreGroup(job, std::chrono::minutes(5),
                                 std::chrono::minutes(10), error);
    if (!group)
      return fail(error);
    dist::setCurrentGroup(group.get());
  }
  std::vector<std::unique_ptr<Session>> sessions;
  std::vector<std::unique_ptr<Trainer>> trainers;
  std::vector<Trainer *> order;
  std::vector<std::string> names;
  std::map<std::string, Tensor> params;
  for (PhaseArtifact &p : phases) {
    sessions.push_back(openCudaSession(p.plan, p.dir, /*graph=*/true, error));
    if (!sessions.back())
      return fail(error);
    if (!sessions.back()->describe().empty() && sessions.size() == 1)
      std::printf("libraries: %s\n", sessions.back()->describe().c_str());
    // The same batch every step (it is uploaded every step, as in
    // training); the learning rate the artifact was compiled with.
    TrainerOptions o;
    o.steps = steps;
    o.batch = inputs.begin()->second.dim(0);
    o.shuffle = false;
    o.lr = lr.value_or(p.plan.train->lr.value_or(o.lr));
    o.progress = false;
    o.group = group.get();
    o.sharedLossScale = sharedScaler;
    trainers.push_back(std::make_unique<Trainer>(p.plan, *sessions.back(), o));
    order.push_back(trainers.back().get());
    names.push_back(p.name);
    for (const Parameter &param : p.plan.params)
      params.emplace(param.name, param.init);
  }
  bool ok = order.size() == 1
                ? order[0]->train(inputs, params, error)
                : Trainer::trainPhases(order, names, inputs, params, error);
  if (!ok)
    return fail(error);
  // Losses in the order `mpc train --metrics` writes them: step by step,
  // phase by phase.
  std::vector<double> losses, stepMs(steps, 0.0);
  for (size_t k = 0; k < order.size(); ++k) {
    const std::vector<StepRecord> &h = order[k]->history();
    int64_t skipped = 0;
    for (const StepRecord &r : h)
      skipped += r.skipped;
    std::printf("train%s%s: %d steps (%lld skipped), loss %.6f -> %.6f, loss "
                "scale %g -> %g\n",
                names[k].empty() ? "" : " phase ", names[k].c_str(), steps,
                (long long)skipped, h.front().loss, h.back().loss,
                h.front().lossScale, h.back().lossScale);
    for (size_t i = 0; i < h.size() && i < stepMs.size(); ++i)
      stepMs[i] += h[i].ms;
  }
  for (int s = 0; s < steps; ++s)
    for (Trainer *t : order)
      losses.push_back(t->history()[s].loss);
  if (!expectLosses.empty()) {
    std::vector<double> want = readLosses(expectLosses);
    if (want.size() < losses.size())
      return fail(expectLosses + " has " + std::to_string(want.size()) +
                  " losses, need " + std::to_string(losses.size()));
    double diff = 0;
    for (size_t i = 0; i < losses.size(); ++i)
      diff = std::max(diff, std::isfinite(losses[i])
                                ? std::fabs(losses[i] - want[i]) /
                                      std::max(std::fabs(want[i]), 1e-30)
                                : INFINITY);
    std::printf("losses: max relative difference vs CPU backend %.3g\n", diff);
  }
  // The first step captures the graph: timed from the second.
  std::vector<double> timed(stepMs.begin() + (stepMs.size() > 1), stepMs.end());
  std::sort(timed.begin(), timed.end());
  std::printf("time: median %.4f ms per train step over %zu steps\n",
              timed[timed.size() / 2], timed.size());
  // The step on the device alone: graph replays on the batch already
  // there (the trainer uploads the batch and reads scalars back per step).
  std::vector<double> device;
  for (int r = 0; r < replays; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    for (auto &s : sessions)
      if (!s->run(error))
        return fail(error);
    device.push_back(std::chrono::duration<double, std::milli>(
                         std::chrono::steady_clock::now() - t0)
                         .count());
  }
  std::sort(device.begin(), device.end());
  std::printf("device: median %.4f ms per step without the batch upload "
              "(%d graph replays)\n",
              device[device.size() / 2], replays);
  if (profileTop > 0 &&
      !printProfile(sessions, device[device.size() / 2], profileTop, error))
    return fail(error);
  if (group && !group->finish(error))
    return fail(error);
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    std::fprintf(stderr,
                 "usage: mpc-gpu-run DIR [--repeat N | --steps N [--lr LR] "
                 "[--expect-losses FILE.jsonl] [--replays N] [--profile N]] "
                 "[--gemm auto|cublaslt|mpc] "
                 "[--conv auto|cudnn|mpc] "
                 "[--expect NAME=FILE.npy]... "
                 "NAME=FILE.npy...\n");
    return 2;
  }
  std::string dir = argv[1], error, expectLosses, gemmMode, convMode;
  int repeat = 0, steps = 0, replays = 10, profileTop = 0;
  std::optional<float> lr; // default: the artifact's
  std::map<std::string, Tensor> inputs, expected;
  for (int i = 2; i < argc; ++i) {
    std::string a = argv[i];
    bool value = i + 1 < argc;
    if (a == "--repeat" && value) {
      repeat = std::atoi(argv[++i]);
      continue;
    }
    if (a == "--replays" && value) {
      if ((replays = std::atoi(argv[++i])) < 1)
        return fail("--replays must be at least 1");
      continue;
    }
    if (a == "--profile" && value) {
      profileTop = std::atoi(argv[++i]);
      continue;
    }
    if (a == "--steps" && value) {
      steps = std::atoi(argv[++i]);
      continue;
    }
    if (a == "--lr" && value) {
      lr = std::strtof(argv[++i], nullptr);
      continue;
    }
    if (a == "--gemm" && value) { // overrides the artifact's choice
      gemmMode = argv[++i];
      continue;
    }
    if (a == "--conv" && value) {
      convMode = argv[++i];
      continue;
    }
    if (a == "--expect-losses" && value) {
      expectLosses = argv[++i];
      continue;
    }
    bool expect = a == "--expect" && value;
    std::string spec = expect ? argv[++i] : a;
    size_t eq = spec.find('=');
    Tensor t;
    if (eq == std::string::npos || !readNpy(spec.substr(eq + 1), t, error))
      return fail("bad argument '" + spec + "' " + error);
    (expect ? expected : inputs)[spec.substr(0, eq)] = std::move(t);
  }
  CudaInfo gpu = probeCuda();
  if (!gpu.available)
    return fail("no CUDA GPU here (" + gpu.reason + ")");
  if (dir == "--probe")
    return std::printf("gpu: %s\n", gpu.devices[0].c_str()), 0;
  std::vector<PhaseArtifact> phases;
  bool sharedScaler = false;
  if (!readPhases(dir, phases, sharedScaler, error))
    return fail(error);
  if (!gemmMode.empty() && gemmMode != "auto" && gemmMode != "cublaslt" &&
      gemmMode != "mpc")
    return fail("--gemm must be auto, cublaslt or mpc");
  if (!convMode.empty() && convMode != "auto" && convMode != "cudnn" &&
      convMode != "mpc")
    return fail("--conv must be auto, cudnn or mpc");
  for (PhaseArtifact &p : phases) { // overrides of the artifact's choice
    if (!gemmMode.empty())
      p.plan.cudaGemm = gemmMode;
    if (!convMode.empty())
      p.plan.cudaConv = convMode;
  }
  std::printf("gpu: %s\n", gpu.devices[0].c_str());
  if (steps > 0)
    return train(phases, sharedScaler, inputs, steps, replays, lr,
                 expectLosses, profileTop);
  if (phases.size() > 1)
    return fail(dir + " is a phased train-step artifact: run it with --steps");
  const Plan &plan = phases[0].plan;
  std::vector<Tensor> outputs;
  double ms = 0;
  std::string gemms;
  if (!runPlanCuda(plan, dir, inputs, outputs, error, repeat, &ms, &gemms))
    return fail(error);
  if (!gemms.empty())
    std::printf("libraries: %s\n", gemms.c_str());
  for (size_t k = 0; k < plan.outputs.size(); ++k) {
    auto it = expected.find(plan.outputs[k].name);
    if (it == expected.end())
      continue;
    double diff = 0, scale = 0;
    for (int64_t i = 0; i < outputs[k].size(); ++i) {
      double a = outputs[k].getFloat(i), b = it->second.getFloat(i);
      diff = std::max(diff, std::isfinite(a) ? std::fabs(a - b) : INFINITY);
      scale = std::max(scale, std::fabs(b));
    }
    std::printf("%s: max relative difference vs CPU backend %.3g\n",
                plan.outputs[k].name.c_str(), diff / std::max(scale, 1e-30));
  }
  if (repeat > 0)
    std::printf("time: median %.4f ms over %d runs\n", ms, repeat);
  return 0;
}
