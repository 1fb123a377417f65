// Kernels with and without the races a GPU has, for racecheck.test: run
// through the host emulation's fibers under ThreadSanitizer, the racy ones
// must be reported (whatever order the fibers run in) and the others not.
// `racecheck_kernels CASE` runs one.
#include "test/codegen/Inputs/cuda_host_shim.h"

#include <string>

static float out[256];

// A block of 64: each thread writes its element of a shared tile, the
// block meets, each reads its neighbour's.
static void barrier() {
  __shared__ float tile[64];
  tile[threadIdx.x] = float(threadIdx.x);
  __syncthreads();
  out[blockIdx.x * 64 + threadIdx.x] = tile[(threadIdx.x + 1) % 64];
}
// The same without the barrier: read before the neighbour wrote (on a
// GPU); fibers in thread order happen to see the write of a lower thread.
static void missingBarrier() {
  __shared__ float tile[64];
  tile[threadIdx.x] = float(threadIdx.x);
  out[threadIdx.x] = tile[(threadIdx.x + 63) % 64];
}
// Two rounds through one tile with a barrier after each write but none
// after the reads: round 2 overwrites what a slower thread still reads.
static void missingSecondBarrier() {
  __shared__ float tile[64];
  float sum = 0.0f;
  for (int round = 0; round < 2; ++round) {
    tile[threadIdx.x] = float(threadIdx.x + round);
    __syncthreads();
    sum += tile[(threadIdx.x + 1) % 64];
  }
  out[threadIdx.x] = sum;
}
// Lanes of a warp through shared memory: a race without __syncwarp.
static void warpExchange(bool sync) {
  __shared__ float lanes[64];
  lanes[threadIdx.x] = float(threadIdx.x);
  if (sync)
    __syncwarp();
  out[threadIdx.x] = lanes[threadIdx.x ^ 1];
}
// cp.async into a shared tile, read by other threads after the barrier:
// the copy lands at the wait, so the wait must come before the barrier.
static float source[64];
static void asyncCopy(bool wait) {
  __shared__ __align__(16) float tile[64];
  if (threadIdx.x < 16)
    mpc_cp_async16(tile + 4 * threadIdx.x, source + 4 * threadIdx.x, true);
  mpc_cp_async_commit();
  if (wait)
    mpc_cp_async_wait<0>();
  __syncthreads();
  out[threadIdx.x] = tile[63 - threadIdx.x];
  if (!wait)
    mpc_cp_async_wait<0>();
}
// Two threads store the same global element.
static void sameOutput() { out[threadIdx.x / 2] = float(threadIdx.x); }
// Each block reads what the next one writes: no order between blocks on a
// GPU. The plain emulation runs blocks first to last (out[0] 1: block 1
// had not written), the race check last to first (out[0] 4).
static void crossBlock() {
  if (threadIdx.x == 0)
    out[blockIdx.x] = 1.0f + (blockIdx.x + 1 < gridDim.x ? out[blockIdx.x + 1] : 0.0f);
}

int main(int argc, char **argv) {
  if (argc != 2)
    return 2;
  std::string c = argv[1];
  for (int i = 0; i < 64; ++i)
    source[i] = float(i);
  dim3 one{1, 1, 1}, four{4, 1, 1}, block{64, 1, 1};
  if (c == "barrier")
    mpc_emulate(four, block, true, barrier);
  else if (c == "missing-barrier")
    mpc_emulate(one, block, false, missingBarrier);
  else if (c == "missing-second-barrier")
    mpc_emulate(one, block, true, missingSecondBarrier);
  else if (c == "warp-sync")
    mpc_emulate(one, block, true, [] { warpExchange(true); });
  else if (c == "warp-no-sync")
    mpc_emulate(one, block, true, [] { warpExchange(false); });
  else if (c == "cp-async-wait")
    mpc_emulate(one, block, true, [] { asyncCopy(true); });
  else if (c == "cp-async-late-wait")
    mpc_emulate(one, block, true, [] { asyncCopy(false); });
  else if (c == "same-output")
    mpc_emulate(one, block, false, sameOutput);
  else if (c == "cross-block")
    mpc_emulate(four, block, false, crossBlock);
  else
    return 2;
  // What the kernel computed (the cp.async cases: tile[63 - t] is 63 - t
  // once the copy landed).
  std::printf("%s: out[0] %g out[1] %g\n", argv[1], out[0], out[1]);
  return 0;
}
