//===- TrainRanks.cpp - `mpc train` as one rank of a data-parallel job ----===//

#include "TrainRanks.h"

#include <chrono>

using namespace llvm;
namespace rt = ::mpc::rt;

namespace mpc {

RankFlags::RankFlags(cl::SubCommand &sub)
    : collectiveTimeout(
          "collective-timeout",
          cl::desc("Data-parallel ranks: seconds a collective (or a whole "
                   "step) may wait for the others before every rank stops, "
                   "naming the missing ones"),
          cl::init(300), cl::sub(sub)),
      rendezvousTimeout(
          "rendezvous-timeout",
          cl::desc("Data-parallel ranks: seconds to wait for the job's store "
                   "and for every rank to be ready (they import and compile "
                   "at their own pace) before training starts"),
          cl::init(600), cl::sub(sub)),
      bucketMb("bucket-mb",
               cl::desc("Data-parallel ranks: gradient bucket size in MiB "
                        "(each bucket is all-reduced as soon as the backward "
                        "pass fills it)"),
               cl::init(25), cl::sub(sub)),
      gradWire("grad-wire",
               cl::desc("Data-parallel ranks: type the gradients travel in: "
                        "fp32 (default) | fp16 | bf16 (half the bytes, "
                        "rounded sums)"),
               cl::init("fp32"), cl::sub(sub)) {}

bool RankFlags::joinJob(bool cuda, rt::dist::JobEnv &job,
                        std::unique_ptr<rt::dist::ProcessGroup> &group,
                        std::string &error) const {
  if (!rt::dist::readJobEnv(job, error))
    return false;
  if (!job.distributed())
    return true;
  if (!(collectiveTimeout > 0) || !(rendezvousTimeout > 0))
    return (error = "--collective-timeout and --rendezvous-timeout must be "
                    "positive",
            false);
  auto timeout = std::chrono::milliseconds((int64_t)(collectiveTimeout * 1e3));
  auto start = std::chrono::milliseconds((int64_t)(rendezvousTimeout * 1e3));
  group = cuda ? rt::dist::openStoreGroup(job, timeout, start, error)
               : rt::dist::openGlooGroup(job, timeout, start, error);
  if (!group)
    return false;
  rt::dist::setCurrentGroup(group.get());
  return true;
}

void RankFlags::apply(mlir::mpc::TrainPipelineOptions &pipeline) const {
  pipeline.bucketMb = bucketMb.getValue();
  // Pipelines validate the wire type and name the flag.
  const std::string &w = gradWire.getValue();
  pipeline.gradWire = w == "fp32" ? "f32" : w == "fp16" ? "f16" : w;
}

std::string RankFlags::describe(const rt::dist::ProcessGroup &group,
                                const rt::Plan &plan, int64_t batch) const {
  // Under accumulation the applied-only buckets hold the group's sums
  // (sent once a group); the other carries the flag and the loss.
  int buckets = 0, perGroup = 0;
  for (const rt::Step &s : plan.steps)
    if (s.op == rt::OpId::AllReduce) {
      ++buckets;
      perGroup += s.appliedOnly;
    }
  int64_t micro = plan.train ? plan.train->accumulate : 1;
  int n = group.size();
  auto count = [](int k, const char *what) {
    return std::to_string(k) + " " + what + (k == 1 ? "" : "s");
  };
  std::string text =
      "data parallel: " + count(n, "rank") + " (" + group.name() + ", " +
      group.env().launcher + "), global batch " +
      std::to_string(batch * n * micro) + " = " + std::to_string(n) + " x " +
      std::to_string(batch) +
      (micro > 1 ? " x " + std::to_string(micro) + " micro-batches" : "") +
      ", ";
  if (perGroup > 0)
    return text + count(perGroup, "gradient bucket") + " on the wire in " +
           gradWire.getValue() +
           " once a group (the all-finite flag and the loss every "
           "micro-batch)";
  return text + count(buckets, "gradient bucket") + " on the wire in " +
         gradWire.getValue();
}

} // namespace mpc
