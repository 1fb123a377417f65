//===- CudaAttentionDq.cpp - how the attention backward gets dQ ------------===//
//
// The choice among the mma.sync backward's forms of dQ (recompute,
// partial sums, atomic adds: --attention-dq), the key blocks' code that
// adds their part of dQ (in both key-block layouts), and the atomic
// form's ends: the key blocks' chunk counts and their prologue.
//
//===----------------------------------------------------------------------===//

#include "codegen/CudaMmaTiles.h"
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

std::string keyBlockDq(const Dims &g, const std::string &T, int64_t keyTiles,
                       int64_t tq, int64_t keyRows, bool atomic) {
  // dS^T to shared memory (the values dK used), then warp w computes rows
  // w % RG of the tq queries (RG groups of 16) and its share of dQ's
  // column pairs (16 wide) from A = dS (queries x keys, ldmatrix's
  // transposed form of dS^T) and B = K's tile, and adds them to the
  // split's partial sum: its first key tile stores, the later ones add
  // (the same lane owns an element each time).
  auto &L = i64Lit;
  const int64_t D = g.d, P = D + 8, PS = tq + 8, RG = tq / 16, CP = 4 / RG,
                NP = D / 16, maxPairs = (NP + CP - 1) / CP, keySteps = keyRows / 16;
  std::ostringstream os;
  os << RowTiles{keyTiles}.each(
            "    ",
            "    for (int kt = 0; kt < " + std::to_string(tq / 16) + "; ++kt)\n"
            "      for (int f = 0; f < 4; ++f)\n"
            "        *(unsigned *)(dss + ((threadIdx.x / 32) * " +
                std::to_string(16 * keyTiles) + " + mt * 16 + g + (f & 1) * 8) * " +
                std::to_string(PS) + " + kt * 16 + 2 * t + (f >> 1) * 8) = dst[mt][kt][f];\n")
     << "    __syncthreads();\n    {\n"
     << "      const int rg = threadIdx.x / 32 % " << RG << ", cp = threadIdx.x / 32 / "
     << RG << ";\n"
     << "      const int p0 = cp * " << NP << " / " << CP << ", p1 = (cp + 1) * " << NP
     << " / " << CP << ";\n"
     << "      unsigned da[" << keySteps << "][4];\n"
     << "      for (int kt = 0; kt < " << keySteps << "; ++kt)\n"
     << "        mpc_ldsm<4, true>(da[kt], dss + (kt * 16 + lane / 16 * 8 + lane % 8) * "
     << PS << " + rg * 16 + lane / 8 % 2 * 8);\n"
     << "      float dqa[" << 2 * maxPairs << "][4];\n"
     << "      for (int n = 0; n < " << 2 * maxPairs
     << "; ++n) for (int f = 0; f < 4; ++f) dqa[n][f] = 0.0f;\n"
     << "#pragma unroll\n      for (int p = 0; p < " << maxPairs << "; ++p) {\n"
     << "        if (p0 + p >= p1) break;\n"
     << "        for (int kt = 0; kt < " << keySteps << "; ++kt) {\n"
     << "          unsigned bb[4];\n"
     << "          mpc_ldsm<4, true>(bb, ks + (kt * 16 + lane / 8 % 2 * 8 + lane % 8) * "
     << P << " + lane / 16 * 8 + (p0 + p) * 16);\n"
     << "          mma_16816<" << T << ">(dqa[2 * p], da[kt], bb);\n"
     << "          mma_16816<" << T << ">(dqa[2 * p + 1], da[kt], bb + 2);\n"
     << "        }\n      }\n"
     << "      float *part = (float *)scratch + (" << (atomic ? "" : "job * " + L(g.batch) + " + ")
     << "b) * " << L(g.sq * D) << ";\n"
     << (atomic ? "" : "      const bool firstTile = kb == job;\n")
     << "      for (int h = 0; h < 2; ++h) {\n"
     << "        const i64 i = q0 + rg * 16 + g + h * 8;\n"
     << "        if (i >= " << L(g.sq) << ") continue;\n"
     << "#pragma unroll\n        for (int p = 0; p < " << maxPairs << "; ++p) {\n"
     << "          if (p0 + p >= p1) break;\n"
     << "          for (int e = 0; e < 2; ++e) {\n"
     << "            float *a = part + i * " << L(D)
     << " + (p0 + p) * 16 + e * 8 + 2 * t;\n"
     << (atomic ? "            mpc_red_add2(a, dqa[2 * p + e][2 * h], dqa[2 * p + e][2 * h + 1]);\n"
                : "            float v[2] = {dqa[2 * p + e][2 * h], dqa[2 * p + e][2 * h + 1]};\n"
                  "            if (!firstTile) { float o[2]; ldv<2>(a, o); v[0] = o[0] + v[0]; v[1] = o[1] + v[1]; }\n"
                  "            stv<2>(a, v);\n")
     << "          }\n        }\n      }\n    }\n";
  return os.str();
}

std::string pairsDq(const Dims &g, const std::string &T, const std::string &ds,
                    int64_t tq, int64_t keyRows) {
  // Warps of 16 MT queries (QW groups of them) and CW of the head's
  // columns each: 32 x 32 where the head is a multiple of 64, so that
  // each fragment read feeds two mma.sync, else 16 x D/2.
  auto &L = i64Lit;
  const int64_t D = g.d, P = D + 8, PS = tq + 8, QW = D % 64 == 0 ? 2 : 4,
                MT = tq / 16 / QW, CW = D / (8 / QW);
  std::ostringstream os;
  os << "    {\n      const int qi = threadIdx.x / 32 % " << QW
     << ", di = threadIdx.x / 32 / " << QW << ";\n"
     << "      float dqa[" << MT << "][" << CW / 8 << "][4];\n"
     << "      for (int mt = 0; mt < " << MT << "; ++mt) for (int n = 0; n < " << CW / 8
     << "; ++n) for (int f = 0; f < 4; ++f) dqa[mt][n][f] = 0.0f;\n"
     << "#pragma unroll\n      for (int kt = 0; kt < " << keyRows / 16 << "; ++kt) {\n"
     << "        unsigned da[" << MT << "][4];\n"
     << "#pragma unroll\n        for (int mt = 0; mt < " << MT << "; ++mt)\n"
     << "          mpc_ldsm<4, true>(da[mt], " << ds
     << " + (kt * 16 + lane / 16 * 8 + lane % 8) * " << PS << " + qi * " << 16 * MT
     << " + mt * 16 + lane / 8 % 2 * 8);\n"
     << "#pragma unroll\n        for (int n = 0; n < " << CW / 8 << "; n += 2) {\n"
     << "          unsigned bb[4];\n"
     << "          mpc_ldsm<4, true>(bb, ks + (kt * 16 + lane / 8 % 2 * 8 + lane % 8) * " << P
     << " + lane / 16 * 8 + di * " << CW << " + n * 8);\n"
     << "#pragma unroll\n          for (int mt = 0; mt < " << MT << "; ++mt) {\n"
     << "            mma_16816<" << T << ">(dqa[mt][n], da[mt], bb);\n"
     << "            mma_16816<" << T << ">(dqa[mt][n + 1], da[mt], bb + 2);\n"
     << "          }\n        }\n      }\n"
     << "      float *const part = (float *)scratch + b * " << L(g.sq * D) << ";\n"
     << "#pragma unroll\n      for (int mt = 0; mt < " << MT << "; ++mt)\n"
     << "        for (int h = 0; h < 2; ++h) {\n"
     << "          const i64 i = q0 + qi * " << 16 * MT << " + mt * 16 + g + h * 8;\n"
     << "          if (i >= " << L(g.sq) << ") continue;\n"
     << "#pragma unroll\n          for (int n = 0; n < " << CW / 8 << "; ++n)\n"
     << "            mpc_red_add2(part + i * " << L(D) << " + di * " << CW
     << " + n * 8 + 2 * t, dqa[mt][n][2 * h], dqa[mt][n][2 * h + 1]);\n"
     << "        }\n    }\n";
  return os.str();
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
  const int64_t C = ::mpc::rt::kAttentionDqChunk, D = g.d, DD = g.dData,
                chunks = (g.sq + C - 1) / C,
                keyTiles = (g.skv + keyRows - 1) / keyRows, pass = 2 * tq,
                queryEnd = (g.sq + tq - 1) / tq * tq;
  // Key tile kb adds to chunk c when its first query tile starts before
  // the chunk's end (query tiles start at multiples of tq): kb keyRows -
  // off < min((c + 1) C, queryEnd), off the causal offset.
  const std::string off = i64Lit(g.band.off), rows = i64Lit(keyRows),
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
     << "          for (i64 e = threadIdx.x * 4; e < " << i64Lit(C * DD) << "; e += " << 4 * threads << ") {\n"
     << "            const i64 i = c * " << i64Lit(C) << " + e / " << i64Lit(DD) << ";\n"
     << "            if (i >= " << i64Lit(g.sq) << ") break;\n"
     << "            const int col = (int)(e % " << i64Lit(DD) << ");\n"
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
