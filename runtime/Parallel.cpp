//===- Parallel.cpp - a small fork-join pool for kernels ------------------===//

#include "runtime/Parallel.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <thread>
#include <vector>

namespace mpc::rt {
namespace {

int defaultThreads() {
  if (const char *env = std::getenv("MPC_NUM_THREADS"))
    if (int n = std::atoi(env); n > 0)
      return n;
  return std::max(1u, std::thread::hardware_concurrency());
}

int &threadCount() {
  static int n = defaultThreads();
  return n;
}

/// Persistent workers; each parallelFor hands out one job to all of them.
/// Workers spin briefly on the job counter before sleeping, and the caller
/// spins for completion: kernels are short, and a condition-variable
/// round trip per op would dominate small graphs.
class Pool {
public:
  explicit Pool(int workers) {
    for (int i = 0; i < workers; ++i)
      threads_.emplace_back([this, i] { loop(i + 1); });
  }
  ~Pool() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
      generation_.fetch_add(1);
    }
    cv_.notify_all();
    for (auto &t : threads_)
      t.join();
  }

  void run(int chunks, const std::function<void(int)> &job) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      job_ = &job;
      chunks_ = chunks;
      pending_.store(chunks - 1);
      generation_.fetch_add(1);
    }
    cv_.notify_all();
    job(0); // the caller takes chunk 0
    while (pending_.load() != 0)
      std::this_thread::yield();
  }

  int size() const { return (int)threads_.size() + 1; }

private:
  void loop(int index) {
    uint64_t seen = 0;
    while (true) {
      // Spin a little for the next job, then sleep.
      for (int i = 0; i < 20000 && generation_.load() == seen; ++i)
        std::this_thread::yield();
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return generation_.load() != seen; });
      if (stop_)
        return;
      seen = generation_.load();
      const auto *job = job_;
      int chunks = chunks_;
      lock.unlock();
      if (index < chunks) {
        (*job)(index);
        pending_.fetch_sub(1);
      }
    }
  }

  std::vector<std::thread> threads_;
  std::mutex mu_;
  std::condition_variable cv_;
  const std::function<void(int)> *job_ = nullptr;
  int chunks_ = 0;
  std::atomic<int> pending_{0};
  std::atomic<uint64_t> generation_{0};
  bool stop_ = false;
};

/// Set while a thread runs a chunk: nested parallelFor calls run inline.
thread_local bool inParallelRegion = false;

Pool &pool() {
  static Pool p(threadCount() - 1);
  return p;
}

} // namespace

int numThreads() { return threadCount(); }
void setNumThreads(int n) { threadCount() = std::max(1, n); }

void parallelFor(int64_t n, int64_t grain,
                 const std::function<void(int64_t, int64_t)> &fn) {
  int threads = std::min<int64_t>(numThreads(), pool().size());
  int64_t chunks = std::min<int64_t>(threads, n / std::max<int64_t>(grain, 1));
  if (chunks <= 1 || inParallelRegion) {
    if (n > 0)
      fn(0, n);
    return;
  }
  int64_t per = (n + chunks - 1) / chunks;
  pool().run((int)chunks, [&](int c) {
    int64_t b = c * per, e = std::min(n, b + per);
    bool outer = inParallelRegion;
    inParallelRegion = true;
    if (b < e)
      fn(b, e);
    inParallelRegion = outer;
  });
}

} // namespace mpc::rt
