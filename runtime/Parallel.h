//===- Parallel.h - a small fork-join pool for kernels ------------*- C++ -*-===//

#ifndef MPC_RUNTIME_PARALLEL_H
#define MPC_RUNTIME_PARALLEL_H

#include <cstdint>
#include <functional>

namespace mpc::rt {

/// Number of worker threads kernels may use (default: hardware threads;
/// MPC_NUM_THREADS overrides).
int numThreads();
void setNumThreads(int n);

/// Runs fn(begin, end) over [0, n) split into contiguous chunks, one per
/// thread, when n is at least `grain` per thread; inline otherwise (and
/// always inline when called from inside another parallelFor). Chunking
/// depends only on n and the thread count, so results are deterministic for
/// kernels whose chunks write disjoint outputs.
void parallelFor(int64_t n, int64_t grain,
                 const std::function<void(int64_t, int64_t)> &fn);

} // namespace mpc::rt

#endif // MPC_RUNTIME_PARALLEL_H
