//===- KernelConfig.h - launch shapes shared by emitter and emulation -*- C++ -*-===//
//
// One definition of the block and tile sizes the CUDA emitter bakes into
// launches, the prelude's GEMM templates use (the emitter writes them at
// the top of every kernels.cu) and the host emulation's stand-in GEMM
// walks. MLIR-free: the runtime and the test shim include it too.
//
//===----------------------------------------------------------------------===//

#ifndef MPC_RUNTIME_CUDA_KERNELCONFIG_H
#define MPC_RUNTIME_CUDA_KERNELCONFIG_H

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

namespace mpc::rt::cuda {

/// Threads per block of the kernels that give each thread one element (or
/// one row) and of the block-wide reductions.
inline constexpr int64_t kThreads = 256;

/// tc_gemm (fp16/bf16 on tensor cores): a kTcTileM x kTcTileN output tile
/// per block of 2x2 warps, each 32x32 in WMMA 16x16x16 fragments, K in
/// steps of kTcTileK through shared memory.
inline constexpr int64_t kTcTileM = 64, kTcTileN = 64, kTcTileK = 32;
inline constexpr int64_t kTcThreads = 128;
static_assert(kTcThreads == (kTcTileM / 32) * (kTcTileN / 32) * 32,
              "one warp per 32x32 sub-tile");
/// tc_gemm_mma (fp16/bf16 Gemm and MatMul on strided operands): 2x2 warps
/// of mma.sync over a 64x64 or 128x128 tile, the larger when it makes at
/// least kMmaGemmWave blocks.
inline constexpr int64_t kMmaGemmThreads = 128, kMmaGemmWave = 128;
/// Its K step and deepest pipeline: up to kMmaGemmMaxStages K steps in
/// shared memory at once, the copies of the next ones in flight while the
/// warps multiply one (CUTLASS's multistage sm_80 GEMM runs 3-5).
inline constexpr int64_t kMmaGemmTileK = 32, kMmaGemmMaxStages = 4;
/// The bytes of one stage of tc_gemm_mma's BM x BN tile of
/// `elemBytes`-byte operands: its A and B tiles, contiguous axis last,
/// each row padded by 8 elements (no bank conflicts in ldmatrix).
inline constexpr int64_t mmaGemmStageBytes(int64_t bm, int64_t bn, bool ta,
                                           bool tb, int64_t elemBytes) {
  int64_t a = ta ? kMmaGemmTileK * (bm + 8) : bm * (kMmaGemmTileK + 8);
  int64_t b = tb ? bn * (kMmaGemmTileK + 8) : kMmaGemmTileK * (bn + 8);
  return (a + b) * elemBytes;
}
/// Its stages: as many as `sharedBytes` holds (what keeps two blocks an
/// SM), at most kMmaGemmMaxStages, at least 2. A 128 x 128 fp16 tile: 4
/// (74 KiB, dynamic: above the 48 KiB a kernel gets without opting in)
/// on sm_80 and sm_90, 2 where an SM has 100 KiB (sm_86/89).
inline constexpr int64_t mmaGemmStages(int64_t stageBytes,
                                       int64_t sharedBytes) {
  int64_t n = sharedBytes / stageBytes;
  return n > kMmaGemmMaxStages ? kMmaGemmMaxStages : n < 2 ? 2 : n;
}

/// The blocks a grid may have along x, and along y and z (every GPU since
/// sm_30): a launch past them fails.
inline constexpr int64_t kMaxGridX = 2147483647, kMaxGridYZ = 65535;

/// Dynamic shared memory a kernel may use without opting in, and the most
/// any GPU mpc targets lets a block opt in to (sm_90: 227 KiB); a launch's
/// own limit is the device's (CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_
/// BLOCK_OPTIN), checked when a session opens.
inline constexpr int64_t kDefaultSharedBytes = 48 * 1024,
                         kMaxSharedBytes = 227 * 1024;

/// Shared memory an SM of architecture `arch` ("sm_90", "sm_90a") has:
/// the data-centre GPUs' 164 KiB (sm_80, sm_87) or 228 KiB (sm_90,
/// sm_100, sm_103); 100 KiB for the others (sm_86, sm_89, sm_120: the
/// least of the sm_80+ parts, so an unknown one is not overcommitted).
inline int64_t sharedBytesPerSm(const std::string &arch) {
  int sm = std::atoi(arch.c_str() + (arch.rfind("sm_", 0) == 0 ? 3 : 0));
  if (sm == 80 || sm == 87)
    return 164 * 1024;
  if (sm == 90 || sm == 100 || sm == 103)
    return 228 * 1024;
  return 100 * 1024;
}

/// The shared memory a block may take so that `blocks` blocks fit an SM
/// of every architecture in `archs` (1 KiB of each SM's is the system's
/// per block): 2 for most kernels, 1 for the attention backward's widest
/// key blocks; the 48 KiB any kernel gets when `archs` is empty or small.
inline int64_t sharedBytesPerBlock(const std::vector<std::string> &archs,
                                   int64_t blocks) {
  int64_t most = kMaxSharedBytes;
  for (const std::string &a : archs)
    most = std::min(most, sharedBytesPerSm(a) / blocks - 1024);
  return archs.empty() ? kDefaultSharedBytes : std::max(most, kDefaultSharedBytes);
}

/// simt_gemm (fp32): one output per thread, kSimtTile x kSimtTile threads.
inline constexpr int64_t kSimtTile = 16;
inline constexpr int64_t kSimtThreads = kSimtTile * kSimtTile;

/// Channels-last batch norm over C channels of `bytes`-byte elements: a
/// thread holds batchNormVector neighbouring channels (16 bytes of them
/// where C is a multiple, else one), a block up to 32 threads' worth side
/// by side (a power of two), batchNormChannelsPerBlock in all, so its grid
/// is ceil(C / that) blocks a row split.
inline int64_t batchNormVector(int64_t channels, int64_t bytes) {
  int64_t v = 16 / bytes;
  return channels % v == 0 ? v : 1;
}
inline int64_t batchNormChannelsPerBlock(int64_t channels, int64_t bytes) {
  int64_t v = batchNormVector(channels, bytes), groups = (channels + v - 1) / v;
  int64_t lanes = 1;
  while (lanes < 32 && lanes < groups)
    lanes *= 2;
  return lanes * v;
}
/// Whether `blocks` can be a channels-last batch norm's grid.x: the
/// channels over batchNormChannelsPerBlock or a power-of-two fraction of
/// it down to one thread's (the code generator narrows the group until
/// its grid fills the GPU).
inline bool batchNormChannelBlocks(int64_t channels, int64_t bytes,
                                   int64_t blocks) {
  int64_t v = batchNormVector(channels, bytes);
  for (int64_t g = batchNormChannelsPerBlock(channels, bytes); g >= v; g /= 2)
    if (blocks == (channels + g - 1) / g)
      return true;
  return false;
}

} // namespace mpc::rt::cuda

#endif // MPC_RUNTIME_CUDA_KERNELCONFIG_H
