//===- mpc-gpu-run.cpp - run an artifact on the GPU, no MLIR needed -------===//
//
// mpc-gpu-run DIR [--repeat N] [--expect NAME=FILE.npy]... NAME=FILE.npy...
//   Runs an `mpc compile` artifact with the CUDA runtime, prints each
//   output's largest difference from an expected .npy (relative to its
//   largest magnitude) and the median time of N more runs.
// mpc-gpu-run DIR --steps N [--lr LR] [--expect-losses FILE.jsonl] NAME=FILE.npy...
//   Trains a train-step artifact (mpc compile --train) for N steps on the
//   given batch with mpc train's loop (runtime/Trainer.h): weights and
//   state stay on the device, optimizer state starts at zero, the loss
//   scale where the artifact says. Prints the losses' largest relative
//   difference from an `mpc train --metrics` file and the median step time
//   (the batch uploaded, the captured graph, loss and all-finite flag read
//   back).
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

static int train(const Plan &plan, const std::string &dir,
                 const std::map<std::string, Tensor> &inputs, int steps,
                 float lr, const std::string &expectLosses) {
  std::string error;
  if (!plan.train)
    return fail(dir + " is not a train-step artifact (mpc compile --train)");
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
  auto s = openCudaSession(plan, dir, /*graph=*/true, error);
  if (!s)
    return fail(error);
  if (!s->describe().empty())
    std::printf("libraries: %s\n", s->describe().c_str());
  // The same batch every step (it is uploaded every step, as in training).
  TrainerOptions o;
  o.steps = steps;
  o.batch = inputs.begin()->second.dim(0);
  o.shuffle = false;
  o.lr = lr;
  o.progress = false;
  o.group = group.get();
  Trainer trainer(plan, *s, o);
  std::map<std::string, Tensor> params;
  for (const Parameter &p : plan.params)
    params[p.name] = p.init;
  if (!trainer.train(inputs, params, error))
    return fail(error);
  const std::vector<StepRecord> &h = trainer.history();
  int64_t skipped = 0;
  for (const StepRecord &r : h)
    skipped += r.skipped;
  std::printf("train: %d steps (%lld skipped), loss %.6f -> %.6f, loss scale "
              "%g -> %g\n",
              steps, (long long)skipped, h.front().loss, h.back().loss,
              h.front().lossScale, h.back().lossScale);
  if (!expectLosses.empty()) {
    std::vector<double> want = readLosses(expectLosses);
    if (want.size() < h.size())
      return fail(expectLosses + " has " + std::to_string(want.size()) +
                  " losses, need " + std::to_string(h.size()));
    double diff = 0;
    for (size_t i = 0; i < h.size(); ++i)
      diff = std::max(diff, std::isfinite(h[i].loss)
                                ? std::fabs(h[i].loss - want[i]) /
                                      std::max(std::fabs(want[i]), 1e-30)
                                : INFINITY);
    std::printf("losses: max relative difference vs CPU backend %.3g\n", diff);
  }
  // The first step captures the graph: timed from the second.
  std::vector<double> timed;
  for (size_t i = h.size() > 1; i < h.size(); ++i)
    timed.push_back(h[i].ms);
  std::sort(timed.begin(), timed.end());
  std::printf("time: median %.4f ms per train step over %zu steps\n",
              timed[timed.size() / 2], timed.size());
  // The step on the device alone: graph replays on the batch already
  // there (the trainer uploads the batch and reads scalars back per step).
  std::vector<double> device;
  for (int r = 0; r < 10; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    if (!s->run(error))
      return fail(error);
    device.push_back(std::chrono::duration<double, std::milli>(
                         std::chrono::steady_clock::now() - t0)
                         .count());
  }
  std::sort(device.begin(), device.end());
  std::printf("device: median %.4f ms per step without the batch upload "
              "(10 graph replays)\n",
              device[device.size() / 2]);
  if (group && !group->finish(error))
    return fail(error);
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    std::fprintf(stderr,
                 "usage: mpc-gpu-run DIR [--repeat N | --steps N [--lr LR] "
                 "[--expect-losses FILE.jsonl]] [--gemm auto|cublaslt|mpc] "
                 "[--conv auto|cudnn|mpc] "
                 "[--expect NAME=FILE.npy]... "
                 "NAME=FILE.npy...\n");
    return 2;
  }
  std::string dir = argv[1], error, expectLosses, gemmMode, convMode;
  int repeat = 0, steps = 0;
  float lr = 0.01f;
  std::map<std::string, Tensor> inputs, expected;
  for (int i = 2; i < argc; ++i) {
    std::string a = argv[i];
    bool value = i + 1 < argc;
    if (a == "--repeat" && value) {
      repeat = std::atoi(argv[++i]);
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
  Plan plan;
  if (!loadPlan(dir, plan, error))
    return fail(error);
  if (!gemmMode.empty()) {
    if (gemmMode != "auto" && gemmMode != "cublaslt" && gemmMode != "mpc")
      return fail("--gemm must be auto, cublaslt or mpc");
    plan.cudaGemm = gemmMode;
  }
  if (!convMode.empty()) {
    if (convMode != "auto" && convMode != "cudnn" && convMode != "mpc")
      return fail("--conv must be auto, cudnn or mpc");
    plan.cudaConv = convMode;
  }
  std::printf("gpu: %s\n", gpu.devices[0].c_str());
  if (steps > 0)
    return train(plan, dir, inputs, steps, lr, expectLosses);
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
