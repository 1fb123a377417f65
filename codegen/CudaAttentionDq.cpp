//===- CudaAttentionDq.cpp - how the attention backward gets dQ ------------===//
//
// The choice among the mma.sync backward's forms of dQ (recompute,
// partial sums, atomic adds: --attention-dq) and the code of the atomic
// form's ends: the key blocks' chunk counts and their prologue.
//
//===----------------------------------------------------------------------===//

#include "codegen/CudaAttention.h"
#include "runtime/cuda/KernelCalls.h"

#include <algorithm>
#include <sstream>

namespace mlir::mpc::cuda {

int64_t attentionDqSplits(const Dims &g, const std::string &mode,
                          int64_t keyRows) {
  // auto recomputes: on an H200 (2026-12-04) the recomputing backward beat
  // the partial sums at every causal shape of bench/gpu/run.sh (2 x 12
  // heads; 1024 tokens: 0.078 against 0.102 ms at head size 64, 0.135
  // against 0.164 at 128; 4096 tokens: 0.743 against 0.917, 1.602
  // against 3.595), the partial sums' DRAM round trips costing more than
  // the two products they save. The atomic adds (0.133, 0.238, 0.713,
  // 1.685) won once, by 4%, and their order varies run to run.
  int64_t cap = 0;
  if (mode == "recompute" || mode == "auto" ||
      !::mpc::rt::parseAttentionDq(mode, cap))
    return 0;
  const int64_t keyTiles = (g.skv + keyRows - 1) / keyRows;
  if (mode == "atomic") // a block a key tile, one dQ
    return ::mpc::rt::attentionAtomicDqBytes(g.batch, g.sq, g.d) <=
                   ::mpc::rt::kKernelScratchLimit
               ? keyTiles
               : 0;
  // Partial sums: 4 blocks of 128 threads an SM of a 132-SM GPU (H100,
  // H200), and at most 16 partial sums a dQ element (scratch linear in
  // the sequence).
  constexpr int64_t kTargetBlocks = 4 * 132, kMaxSplits = 16;
  int64_t splits = std::min({keyTiles, (kTargetBlocks + g.batch - 1) / g.batch,
                             cap > 0 ? cap : kMaxSplits});
  auto bytes = [&](int64_t n) { return n * g.batch * g.sq * g.d * 4; };
  while (splits > 0 && bytes(splits) > ::mpc::rt::kKernelScratchLimit)
    --splits;
  return splits;
}

/// The atomic form's end of a key block that added dS K to dQ's FP32 sums
/// (`first`: its first query tile): it counts itself into each chunk of
/// kAttentionDqChunk queries it added to, and the block whose count
/// completes a chunk (every key tile that sees it) writes that chunk's dQ,
/// `scale` x the sums read from the L2, so no kernel after it is needed.
/// The fence orders the block's adds before its counts; the flags of a
/// pass of chunks sit where the tile's lse and D were.
std::string atomicDqChunks(const Dims &g, bool causal, int64_t keyRows,
                           int64_t tq, const std::string &first,
                           const std::string &scale, const std::string &outRow,
                           int64_t threads) {
  const int64_t C = ::mpc::rt::kAttentionDqChunk, D = g.d,
                chunks = (g.sq + C - 1) / C,
                keyTiles = (g.skv + keyRows - 1) / keyRows, pass = 2 * tq,
                queryEnd = (g.sq + tq - 1) / tq * tq;
  // Key tile kb adds to chunk c when its first query tile starts before
  // the chunk's end (query tiles start at multiples of tq): kb keyRows -
  // off < min((c + 1) C, queryEnd), off = skv - sq.
  const std::string off = i64Lit(g.skv - g.sq), rows = i64Lit(keyRows),
                    tiles = i64Lit(keyTiles);
  std::string expect =
      causal ? "const i64 end = (c + 1) * " + i64Lit(C) + " < " + i64Lit(queryEnd) +
                   " ? (c + 1) * " + i64Lit(C) + " : " + i64Lit(queryEnd) +
                   ", lim = end + " + off + ", n = (lim + " + rows + " - 1) / " +
                   rows + ";\n            const i64 expect = lim <= 0 ? 0 : n < " +
                   tiles + " ? n : " + tiles + ";\n"
             : "const i64 expect = " + tiles + ";\n";
  std::ostringstream os;
  os << "    __threadfence();\n    __syncthreads();\n    {\n"
     << "      const i64 firstQ = " << first << ";\n"
     << "      int *const last = (int *)rowLse;\n"
     << "      const float *const sums = (const float *)scratch + b * " << i64Lit(g.sq * D)
     << ";\n      unsigned *const counts = (unsigned *)((float *)scratch + "
     << i64Lit(g.batch * g.sq * D) << ") + b * " << i64Lit(chunks) << ";\n"
     << "      for (i64 c0 = firstQ < " << i64Lit(g.sq) << " ? firstQ / " << i64Lit(C) << " : "
     << i64Lit(chunks) << "; c0 < " << i64Lit(chunks) << "; c0 += " << pass << ") {\n"
     << "        if (threadIdx.x < " << pass << ") {\n"
     << "          const i64 c = c0 + threadIdx.x;\n          int done = 0;\n"
     << "          if (c < " << i64Lit(chunks) << ") {\n            " << expect
     << "            done = atomicAdd(counts + c, 1u) + 1u == (unsigned)expect;\n"
     << "          }\n          last[threadIdx.x] = done;\n        }\n"
     << "        __syncthreads();\n"
     << "        for (int k = 0; k < " << pass << "; ++k) {\n"
     << "          if (!last[k]) continue;\n          __threadfence();\n"
     << "          const i64 c = c0 + k;\n"
     << "          for (i64 e = threadIdx.x * 4; e < " << i64Lit(C * D) << "; e += " << 4 * threads << ") {\n"
     << "            const i64 i = c * " << i64Lit(C) << " + e / " << i64Lit(D) << ";\n"
     << "            if (i >= " << i64Lit(g.sq) << ") break;\n"
     << "            const int col = (int)(e % " << i64Lit(D) << ");\n"
     << "            const float4 v = __ldcg((const float4 *)(sums + i * " << i64Lit(D)
     << " + col));\n"
     << "            const i64 o = " << outRow << " + col;\n"
     << "            st(out0, o, " << scale << " * v.x);\n"
     << "            st(out0, o + 1, " << scale << " * v.y);\n"
     << "            st(out0, o + 2, " << scale << " * v.z);\n"
     << "            st(out0, o + 3, " << scale << " * v.w);\n"
     << "          }\n        }\n        __syncthreads();\n      }\n    }\n";
  return os.str();
}

/// The atomic form's prologue (`head`: its signature): zeroes the
/// `bytes` of scratch (dQ's sums and the counts), 16 a thread, then
/// `rowD`, the code of D.
std::string atomicDqZero(const std::string &head, int64_t bytes,
                         const std::string &rowD) {
  std::ostringstream os;
  os << head << " {\n"
     << "  const i64 e = ((i64)blockIdx.x * 256 + threadIdx.x) * 4;\n"
     << "  if (e < " << i64Lit(bytes / 4)
     << ") mpc_st16((float *)scratch + e, make_uint4(0u, 0u, 0u, 0u));\n";
  os << rowD << "}\n\n";
  return os.str();
}

} // namespace mlir::mpc::cuda
