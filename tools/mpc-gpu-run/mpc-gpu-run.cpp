//===- mpc-gpu-run.cpp - run an artifact on the GPU, no MLIR needed -------===//
//
// mpc-gpu-run DIR [--repeat N] [--expect NAME=FILE.npy]... NAME=FILE.npy...
//   Runs an `mpc compile` artifact with the CUDA runtime, prints each
//   output's largest difference from an expected .npy (relative to its
//   largest magnitude) and the median time of N more runs.
// mpc-gpu-run DIR --steps N [--lr LR] [--expect-losses FILE.jsonl] NAME=FILE.npy...
//   Trains a train-step artifact (mpc compile --train) for N steps on the
//   given batch: weights and state stay on the device (TrainProtocol);
//   unset optimizer and loss-scale state starts at zero, the loss scale at
//   65536 (mpc's dynamic default). Prints the losses' largest relative
//   difference from an `mpc train --metrics` file and the median step time
//   (inputs for the step, the captured graph, loss and all-finite flag
//   read back).
// mpc-gpu-run --probe: prints "gpu: NAME (sm_XY)".
// Without a GPU: one line, exit 1. Built alone with -DMPC_RUNTIME_ONLY=ON.
//
//===----------------------------------------------------------------------===//

#include "runtime/Npy.h"
#include "runtime/PlanIO.h"
#include "runtime/TrainProtocol.h"
#include "runtime/cuda/CudaDevice.h"

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
  TrainProtocol protocol(plan);
  int lossIndex = -1;
  for (size_t i = 0; i < plan.outputs.size() && lossIndex < 0; ++i)
    if (plan.outputs[i].name == "loss")
      lossIndex = (int)i;
  if (!protocol.isTrainStep() || lossIndex < 0)
    return fail(dir + " is not a train-step artifact (mpc compile --train) "
                      "with an output 'loss'");
  auto s = openCudaSession(plan, dir, /*graph=*/true, error);
  if (!s)
    return fail(error);
  for (const Binding &b : plan.inputs) {
    auto it = inputs.find(b.name);
    Tensor t = it != inputs.end()
                   ? it->second
                   : Tensor(plan.values[b.value].dtype, plan.values[b.value].shape);
    if (it == inputs.end() && b.name == "mpc.loss_scale")
      t.setFloat(0, 65536.0f);
    else if (it == inputs.end() && b.name.rfind("mpc.", 0) != 0)
      return fail("missing input '" + b.name + "'");
    if (!s->set(b.name, t, error))
      return fail(error);
  }
  std::vector<double> losses, ms;
  int64_t taken = 0;
  for (int step = 0; step < steps; ++step) {
    auto t0 = std::chrono::steady_clock::now();
    Tensor loss, flag;
    for (const auto &[name, t] : optimizerScalars(plan, taken + 1, lr))
      if (!s->set(name, t, error))
        return fail(error);
    if (!s->run(error) || !s->output(lossIndex, loss, error) ||
        (protocol.foundInf >= 0 && !s->output(protocol.foundInf, flag, error)))
      return fail("step " + std::to_string(step + 1) + ": " + error);
    bool skip = protocol.foundInf >= 0 && flag.getInt(0);
    if (!protocol.advance(*s, !skip, error))
      return fail(error);
    taken += !skip;
    ms.push_back(std::chrono::duration<double, std::milli>(
                     std::chrono::steady_clock::now() - t0)
                     .count());
    losses.push_back(loss.getFloat(0));
  }
  std::printf("train: %d steps (%lld skipped), loss %.6f -> %.6f\n", steps,
              (long long)(steps - taken), losses.front(), losses.back());
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
  std::vector<double> timed(ms.begin() + (ms.size() > 1), ms.end());
  std::sort(timed.begin(), timed.end());
  std::printf("time: median %.4f ms per train step over %zu steps\n",
              timed[timed.size() / 2], timed.size());
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    std::fprintf(stderr,
                 "usage: mpc-gpu-run DIR [--repeat N | --steps N [--lr LR] "
                 "[--expect-losses FILE.jsonl]] [--expect NAME=FILE.npy]... "
                 "NAME=FILE.npy...\n");
    return 2;
  }
  std::string dir = argv[1], error, expectLosses;
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
  std::printf("gpu: %s\n", gpu.devices[0].c_str());
  if (steps > 0)
    return train(plan, dir, inputs, steps, lr, expectLosses);
  std::vector<Tensor> outputs;
  double ms = 0;
  if (!runPlanCuda(plan, dir, inputs, outputs, error, repeat, &ms))
    return fail(error);
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
