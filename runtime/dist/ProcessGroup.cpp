//===- ProcessGroup.cpp - job environment, check-in after a failure -------===//

#include "runtime/dist/ProcessGroup.h"
#include "runtime/Half.h"

#include <cstdio>
#include <cstdlib>
#include <thread>

namespace mpc::rt::dist {
namespace {

/// The integer in environment variable `name`; false when absent.
bool envInt(const char *name, int &out, bool &bad) {
  const char *s = std::getenv(name);
  if (!s || !*s)
    return false;
  char *end;
  long v = std::strtol(s, &end, 10);
  bad |= *end != 0 || v < 0 || v > (1 << 20);
  out = (int)v;
  return true;
}

ProcessGroup *current = nullptr;

/// Checks in as `key`/<rank> and waits a few seconds for the others: the
/// ranks that did not come ("" when all did), or `error` when the store is
/// gone. The survivors of a lost or hung rank reach this within moments of
/// each other; a rank not here after a few seconds is dead or hung.
std::string missingRanks(TcpStore &store, const std::string &key,
                                int rank, int size, std::string &error) {
  if (!store.set(key + "/" + std::to_string(rank), {1}, error))
    return "";
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(3);
  std::string missing;
  for (;;) {
    missing.clear();
    int count = 0;
    for (int r = 0; r < size; ++r) {
      bool here = false;
      if (r != rank && (!store.has(key + "/" + std::to_string(r), here, error) ||
                        !here))
        missing += (count++ ? ", " : "") + std::to_string(r);
    }
    if (!error.empty() || missing.empty() ||
        std::chrono::steady_clock::now() > deadline)
      return missing;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

std::string naming(const std::string &missing) {
  return "rank " + missing +
         (missing.find(',') != std::string::npos ? " are" : " is") +
         " gone or hung";
}

/// Set by the first path that reports a failure (the watchdog or a failed
/// collective), so that one line is printed.
std::atomic<bool> reported{false};

} // namespace

bool readJobEnv(JobEnv &env, std::string &error) {
  bool bad = false;
  const char *rankVar = "RANK", *sizeVar = "WORLD_SIZE";
  bool hasRank = envInt("RANK", env.rank, bad);
  bool hasSize = envInt("WORLD_SIZE", env.size, bad);
  if (hasRank || hasSize) {
    env.launcher = "torchrun";
    envInt("LOCAL_RANK", env.localRank, bad);
  } else if (envInt("OMPI_COMM_WORLD_RANK", env.rank, bad)) {
    rankVar = "OMPI_COMM_WORLD_RANK", sizeVar = "OMPI_COMM_WORLD_SIZE";
    hasRank = true;
    hasSize = envInt(sizeVar, env.size, bad);
    envInt("OMPI_COMM_WORLD_LOCAL_RANK", env.localRank, bad);
    env.launcher = "mpirun";
  } else if (envInt("PMI_RANK", env.rank, bad)) {
    rankVar = "PMI_RANK", sizeVar = "PMI_SIZE";
    hasRank = true;
    hasSize = envInt(sizeVar, env.size, bad);
    envInt("MPI_LOCALRANKID", env.localRank, bad);
    env.launcher = "mpirun";
  } else {
    return true; // one process
  }
  if (bad || !hasRank || !hasSize || env.size < 1 || env.rank >= env.size)
    return (error = std::string(rankVar) + "/" + sizeVar +
                    " in the environment do not describe a job (need 0 <= "
                    "rank < size)",
            false);
  if (const char *a = std::getenv("MASTER_ADDR"); a && *a)
    env.masterAddr = a;
  if (const char *p = std::getenv("MASTER_PORT"); p && *p) {
    char *end;
    long port = std::strtol(p, &end, 10);
    if (*end || port <= 0 || port > 65535)
      return (error = std::string("MASTER_PORT '") + p + "' is not a port",
              false);
    env.masterPort = (int)port;
  }
  return true;
}

std::unique_ptr<TcpStore> openJobStore(const JobEnv &env,
                                       std::chrono::milliseconds start,
                                       std::string &error) {
  auto store = TcpStore::open(env.masterAddr, env.masterPort, env.rank == 0,
                              start, error);
  if (!store)
    error = "rank " + std::to_string(env.rank) + ": " + error;
  return store;
}

ProcessGroup::~ProcessGroup() {
  stopWatchdog();
  if (current == this)
    current = nullptr;
}

bool ProcessGroup::startWatchdog(std::string &error) {
  if (size() == 1)
    return true;
  auto own = TcpStore::open(env_.masterAddr, env_.masterPort, false,
                            startTimeout_, error);
  if (!own || !store_->hello(rank(), error))
    return false;
  watchdog_ = std::make_unique<std::thread>(
      [this, store = std::shared_ptr<TcpStore>(std::move(own))] {
        std::string head = "mpc: error: rank " + std::to_string(rank()) + ": ";
        while (!stopping_) {
          std::vector<char> lost;
          std::string e;
          if (store->get("lost", lost, std::chrono::milliseconds(200), e)) {
            if (stopping_ || reported.exchange(true))
              return;
            std::fprintf(stderr, "%srank %s left the job (its connection to "
                         "the job's store closed); stopping\n", head.c_str(),
                         std::string(lost.begin(), lost.end()).c_str());
            std::_Exit(1);
          }
          if (e.rfind("timed out", 0) != 0) { // the store is gone
            if (stopping_ || reported.exchange(true))
              return;
            std::fprintf(stderr, "%s%s; stopping\n", head.c_str(), e.c_str());
            std::_Exit(1);
          }
          // A step past the timeout: a rank hung inside a collective that
          // has no timeout of its own (NCCL's kernels wait forever).
          int64_t start = stepStart_;
          int64_t now = std::chrono::duration_cast<std::chrono::milliseconds>(
                            std::chrono::steady_clock::now().time_since_epoch())
                            .count();
          if (start >= 0 && now - start > timeout_.count()) {
            if (stopping_ || reported.exchange(true))
              return;
            std::string why,
                missing = missingRanks(*store, "stuck/" + std::to_string(step_),
                                       rank(), size(), why);
            std::fprintf(stderr, "%sstep %lld did not finish in %lld s: %s; "
                         "stopping\n", head.c_str(), (long long)step_.load(),
                         (long long)(timeout_.count() / 1000),
                         !why.empty()       ? why.c_str()
                         : missing.empty() ? "every rank is stuck"
                                           : naming(missing).c_str());
            std::_Exit(1);
          }
        }
      });
  return true;
}

void ProcessGroup::stopWatchdog() {
  if (!watchdog_)
    return;
  stopping_ = true;
  watchdog_->join();
  watchdog_.reset();
}

std::string ProcessGroup::failure(const std::string &what,
                                  const std::string &why) {
  if (reported.exchange(true)) // the watchdog is ending the process
    std::this_thread::sleep_for(std::chrono::seconds(10));
  std::string head = "rank " + std::to_string(rank()) + ": " + what +
                     " failed";
  std::string e;
  std::string missing = missingRanks(*store_, "failed", rank(), size(), e);
  if (!e.empty())
    return head + ": " + e + " (" + why + ")";
  if (missing.empty())
    return head + " on every rank: " + why;
  return head + ": " + naming(missing) + " (" + why + ")";
}

void ProcessGroup::stepStarted(int64_t step) {
  step_ = step;
  stepStart_ = std::chrono::duration_cast<std::chrono::milliseconds>(
                   std::chrono::steady_clock::now().time_since_epoch())
                   .count();
}

void ProcessGroup::stepEnded() { stepStart_ = -1; }

bool ProcessGroup::allReduce(float *data, size_t n, bool average,
                             std::string &error) {
  if (!sum(data, n, error))
    return false;
  if (average) // once, after the sum
    for (size_t i = 0; i < n; ++i)
      data[i] *= (float)(1.0 / size());
  return true;
}

bool ProcessGroup::allReduce16(uint16_t *data, size_t n, bool bf16,
                               bool average, std::string &error) {
  if (!sum16(data, n, bf16, error))
    return false;
  if (average)
    for (size_t i = 0; i < n; ++i)
      data[i] = scale16(data[i], (float)(1.0 / size()), bf16);
  return true;
}

bool ProcessGroup::finish(std::string &error) {
  stopWatchdog();
  int64_t arrived;
  if (!store_->set("finished/" + std::to_string(rank()), {1}, error) ||
      !store_->add("finished", 1, arrived, error))
    return false;
  if (rank() != 0)
    return true;
  // Rank 0 serves the store: it stays until every rank is through with it.
  std::vector<char> v;
  auto deadline = std::chrono::steady_clock::now() + timeout_;
  while (arrived < size()) {
    if (std::chrono::steady_clock::now() > deadline)
      return (error = failure("waiting for every rank to finish",
                              "timed out"),
              false);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    if (!store_->add("finished", 0, arrived, error))
      return false;
  }
  return true;
}

ProcessGroup *currentGroup() { return current; }
void setCurrentGroup(ProcessGroup *group) { current = group; }

} // namespace mpc::rt::dist
