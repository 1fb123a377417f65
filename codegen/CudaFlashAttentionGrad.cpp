//===- CudaFlashAttentionGrad.cpp - attention's backward on mma.sync ------===//
//
// The tensor-core backward of attention for fp16/bf16 with head sizes that
// are multiples of 8 up to 256 (rounded up to 16: mmaDims): dK and dV
// accumulated in key blocks' registers (CudaAttentionKeyBlocks.cpp), dQ
// recomputed in query blocks, from their FP32 partial sums or added
// atomically (--attention-dq, CudaAttentionDq.cpp), as FlashAttention-2's
// backward. Here: the layout, each form's kernels and the query blocks.
//
//===----------------------------------------------------------------------===//

#include "codegen/CudaAttentionGrad.h"
#include "runtime/cuda/KernelCalls.h"
#include "runtime/cuda/KernelConfig.h"

#include <algorithm>
#include <sstream>

namespace mlir::mpc::cuda {

namespace {
constexpr auto &L = i64Lit;
} // namespace

/// dq, dk and dv on the tensor cores (mma.sync, FlashAttention-2's
/// register layout). Key blocks own 128 keys (32 a warp) up to head size
/// 64; past it, 128 keys in 8 warps in FlashAttention-2's block layout
/// (pairsKeyRole: warps split S^T by keys and queries, dK and dV by keys
/// and halves of the head, P^T and dS^T through shared memory), or where
/// that does not fit or dQ takes partial sums, 64 (16 a warp); their
/// warps read K's and V's fragments from shared memory (or, where those
/// tiles do not fit, 64 keys hold them in registers, one block computing
/// dK and another dV past head size 64, so neither spills), and loop over
/// the queries that see them, computing S^T = K Q^T, P^T = exp(scale S^T
/// + bias - lse), dP^T = V dO^T, dS^T = P^T (dP^T - D) and accumulating
/// dV += P^T dO and dK += dS^T Q in registers. D = rowsum(dO y) in FP32, computed once by a prologue
/// (recompute, atomic) or by the key blocks for each tile (accumulate,
/// whose prologue is its key kernel). The tiles of Q and dO stream
/// through two shared buffers by cp.async, as the forward's K and V do.
/// P and dS are rounded to the operand type for the products, as
/// FlashAttention does; every sum is FP32. dQ = dS K (attentionDqSplits):
/// - accumulate: the key block also writes its dS^T to shared memory and
///   adds dS K, over its keys, to an FP32 partial sum of dQ in the
///   kernel scratch: blocks (s, b) take key tiles s, s + splits, ... one
///   after another, so each partial has one writer and a fixed order, and
///   a second kernel sums the splits in order (FlashAttention-2's
///   deterministic mode; five products a tile, scratch splits x dQ in FP32);
/// - recompute (auto): blocks of their own (blockIdx.z == 1) own 64
///   queries (128 beside the 8-warp key blocks) and loop over keys for dQ += dS K, the scores and dP once
///   more (seven products; scratch: D);
/// - atomic: a key block per key tile adds dS K to one FP32 dQ by vector
///   reductions, and the block that completes a chunk of queries' count
///   writes its dQ (atomicDqChunks; FlashAttention-2's default; the
///   order of the adds varies run to run).
/// The shared memory of a backward kernel with `tq` queries a tile and
/// key tiles of `keyRows`: two buffers of Q and dO tiles (the query
/// role's K and V tiles in them), K's tile and dS^T for dQ's part
/// (`acc`), V's tile where `kv` (the K and V fragments read from shared
/// memory; past head size 128 the query role's Q and dO tiles in them),
/// the tile's lse and D (`stats`).
int64_t attentionGradSharedBytes(const Dims &g, int64_t tq, bool kv,
                                 int64_t keyRows, bool acc, int64_t tk,
                                 bool stats) {
  const int64_t P = g.d + 8, PV = g.dv + 8;
  int64_t rowsA = acc ? tq : std::max(tq, tk);
  int64_t bytes = 2 * 2 * rowsA * (P + PV) + (stats ? 2 * tq * 4 : 0);
  if (kv || acc)
    bytes += 2 * keyRows * P;
  if (kv)
    bytes += 2 * keyRows * PV;
  if (acc)
    bytes += 2 * keyRows * (tq + 8);
  return bytes;
}

// (The wide layout's tiles: 64 keys a key block, TQ 32 queries a tile
// and TK 32 keys a query tile, or 16 and 16 where compact.)
bool compactWideGrad(const Dims &g, int64_t blockBytes) {
  return wideHeads(g) && attentionGradSharedBytes(g, 32, true, 64, false) > blockBytes;
}

bool mmaGradFits(const Dims &g, const Plan &plan) {
  const int64_t block = ::mpc::rt::cuda::sharedBytesPerBlock(plan.cudaArch, 1);
  return !wideHeads(g) || !compactWideGrad(g, block) ||
         attentionGradSharedBytes(g, 16, true, 64, false, 16, false) <= block;
}

void Emitter::attentionGradMma(Step &s, const std::string &name) {
  AttentionGrad(*this, s).emit(name);
}

AttentionGrad::AttentionGrad(Emitter &e, Step &s)
    : e(e), s(s), g(mmaDims(stepDims(s, e.val(s.inputs[1]).shape,
                                     e.val(s.inputs[2]).shape,
                                     e.val(s.inputs[3]).shape))),
      hasBias(s.inputs.size() > 6 && s.inputs[6] >= 0),
      causal(g.band.boundsEnd()),
      plainBand(!g.band.boundsStart() && (!causal || g.band.lo == 0)),
      drop(e, s, g, 7),
      T(ctype(e.val(s.inputs[1]).dtype)),
      scale(flt((float)s.getFloat("scale", 1.0))), D(g.d), DV(g.dv), P(D + 8),
      PV(DV + 8) {
  auto sharedFor = [&](int64_t tq, bool kv, int64_t keyRows, bool acc,
                       int64_t tk = 32, bool stats = true) {
    return attentionGradSharedBytes(g, tq, kv, keyRows, acc, tk, stats);
  };
  // The key blocks' layout, as FlashAttention-2's backward keeps K and V
  // in shared memory:
  // - up to head size 64, 32 keys a warp (two row tiles, 128 a block),
  //   K's and V's fragments read from shared memory: each Q and dO
  //   fragment read feeds two mma.sync (64 KiB at head size 64), where
  //   two blocks fit an SM of every target (sm_80 and sm_90; not
  //   sm_86/89, whose SMs have 100 KiB);
  // - past it (head sizes multiples of 32), where one block an SM of
  //   every target holds it, FlashAttention-2's layout (`pairs`): 8
  //   warps, 128 keys a block, 64 queries a tile, each warp S^T and dP^T
  //   for 32 keys x 32 queries, P^T and dS^T through shared memory, then
  //   dV and dK for its 32 keys x half the head: a fragment read feeds
  //   two mma.sync in every product (0.45 ldmatrix a product at head
  //   size 128, where 16 keys a warp read 0.63), and a Q and dO tile
  //   serves 128 keys. Not for the partial sums (whose scratch a split
  //   per 64 keys sizes);
  // - else past 64, 16 keys a warp, K and V from shared memory, so that
  //   the registers hold dK and dV both (73 KiB at head size 128), where
  //   two blocks fit an SM;
  // - else 16 keys a warp holding K's and V's fragments in registers,
  //   and past head size 64 dK and dV as separate roles (z = 0 and the
  //   last: S^T computed twice, Q and dO read twice), with 16 queries a
  //   tile where the accumulating key role's tiles would pass 48 KiB;
  // - past head size 128 (wideHeads: a row tile's dK or dV alone takes
  //   up to 128 registers), 16 keys a warp, K and V from shared memory,
  //   dK and dV in blocks of their own (z = 0 and 2: S^T computed twice),
  //   and dQ recomputed by query blocks that read Q's and dO's fragments
  //   from shared tiles (where K's and V's are in the key blocks): 135
  //   KiB at head size 256, one block an SM (FlashAttention-2 runs 256 on
  //   sm_80 with one block of 8 warps; mmaGradFits); where that does not
  //   fit a block (`compact`: SMs of 100 KiB, head sizes 192-256), tiles
  //   of 16 queries and 16 keys with each lane's lse and D in registers
  //   (99 KiB at 256, the most sm_86/89/120 give a block).
  const bool wide = g.d > 64 || g.dv > 64, widest = wideHeads(g);
  const int64_t budget =
      ::mpc::rt::cuda::sharedBytesPerBlock(e.plan.cudaArch, 2);
  const bool narrow = e.plan.cudaAttentionRows == 64; // 16 keys a warp
  // (atomic: no block adds to a row that sees no key, as under a causal
  // mask with more queries than keys; those recompute.)
  const bool atomicMode = e.plan.cudaAttentionDq == "atomic",
             rowless = causal && g.band.off < 0;
  // (Sliding windows and grouped-query heads: recomputed, the forms that
  // count blocks per query chunk or split count them for a causal band or
  // none, and a q head's key blocks each.)
  // (dS wanted under a band: the key blocks skip the tiles it hides, so a
  // prologue zeroes dS first, as the recomputing and atomic forms have.)
  zeroScoresGrad = wantsScoresGrad() && (causal || g.band.boundsStart());
  auto dqSplits = [&](int64_t keyRows) {
    return (atomicMode && rowless) || !plainBand || g.group > 1 ||
                   (zeroScoresGrad && !atomicMode)
               ? 0
               : attentionDqSplits(g, e.plan.cudaAttentionDq, keyRows);
  };
  // The pairs layout's shared memory: Q and dO tiles in two buffers, K
  // and V, P^T and dS^T in one buffer or two, the tile's lse and D.
  constexpr int64_t kPairQueries = 64, kPairKeys = 128;
  auto pairShared = [&](int64_t probBuffers) {
    return 2 * 2 * kPairQueries * (P + PV) + 2 * kPairKeys * (P + PV) +
           probBuffers * 2 * kPairKeys * (kPairQueries + 8) +
           2 * kPairQueries * 4;
  };
  const int64_t oneBlock =
      ::mpc::rt::cuda::sharedBytesPerBlock(e.plan.cudaArch, 1);
  pairs = !widest && wide && !narrow && g.d % 32 == 0 && g.dv % 32 == 0 &&
          (atomicMode || dqSplits(kPairKeys) == 0) && pairShared(1) <= oneBlock;
  // Two buffers spare a barrier a tile where they fit (sm_90 alone).
  probBuffers = pairs && pairShared(2) <= oneBlock ? 2 : 1;
  for (int64_t tiles : {wide || narrow ? 1 : 2, 0}) { // 0: K and V in registers
    KT = std::max<int64_t>(tiles, 1);
    kvShared = tiles > 0;
    if (widest) { // dQ recomputed: no registers for its part in key blocks
      splits = 0;
      break;
    }
    splits = dqSplits(pairs ? kPairKeys : 64 * KT);
    if (pairs) {
      KT = 2;
      break;
    }
    if (!kvShared || sharedFor(32, true, 64 * KT, splits > 0) <= budget)
      break;
  }
  accumulate = splits > 0, atomic = accumulate && atomicMode;
  split = widest || (wide && !kvShared);
  TQ = pairs ? kPairQueries : accumulate && split ? 16 : 32;
  compact = widest && compactWideGrad(g, oneBlock);
  if (compact)
    TQ = 16, TK = 16;
  kRows = pairs ? kPairKeys : 64 * KT;
  kThreads = pairs ? 256 : 128, kQueryRows = kThreads / 2;
  // D = rowsum(dO y) a query: computed once by the recomputing and atomic
  // forms' prologue into the scratch's end (the key blocks would each
  // read dO and y again for every query tile: at 4096 tokens and head
  // size 128, 32 times over on average).
  rowDFromScratch = !accumulate || atomic;
  rowDWords =
      atomic ? ::mpc::rt::attentionAtomicDqBytes(g.batch, g.sq, g.d) / 4 : 0;
  rowDs = "((const float *)scratch + " + std::to_string(rowDWords) + "LL)";
  keyTilesOfWarp = RowTiles{KT};
  // Dropout's factor z of probability (b, i, j) in the key role: P^T for
  // dV keeps the kept p (dV scaled once at the end), dS^T = p (z dP^T -
  // D). A lane's pairs run along queries, so each of its scores is a
  // group of its own; where the keys are a multiple of 4 in number, the
  // four lanes g = 4m .. 4m + 3 of a t hold keys 4m .. 4m + 3 of the same
  // queries, four groups' words between them: each draws one
  // (mpc_quad_words) and three shuffles hand out the rest, one draw where
  // there were four (`keyWords`, before a fragment's four scores).
  const bool quadDraws = drop.on && g.skv % 4 == 0;
  keyWords = quadDraws
                 ? "        unsigned w[4], words[4];\n        " +
                       drop.draw.words(
                           "(unsigned long long)(" +
                               AttentionDropout::index(
                                   g, "b", "qw0 + n * 8 + 2 * t + (g & 1)",
                                   "((g & 2) ? rows[mt][1] : rows[mt][0])") +
                               ") >> 2",
                           "w") +
                       "\n        mpc_quad_words(w, words);\n"
                 : std::string();
  keyZ = !drop.on ? std::string()
         : quadDraws
             ? "        const float z = words[f] >= " +
                   std::to_string(drop.draw.threshold) + "ull ? " +
                   flt(drop.draw.scale) + " : 0.0f;\n"
             : "        const float z = " +
                   drop.keep(AttentionDropout::index(g, "b", "i", "j")) +
                   " ? " + flt(drop.draw.scale) + " : 0.0f;\n";
  PS = TQ + 8;
  off = g.band.off; // key j is visible to query i: j <= i + off
  // p = 2^(v mult - lse log2(e)) on the SFU (mpc_exp2): one FFMA and
  // MUFU.EX2 a score, as FlashAttention-2's backward. Without a bias and
  // with a positive scale v is the raw score and mult = scale log2(e);
  // else v = scale s + bias and mult = log2(e). The rows' lse are read
  // into log2 units once (mpc_lse2), an all-masked row's -inf as +inf, so
  // that its p is 0 with no select.
  const double log2e = 1.4426950408889634,
               scaleValue = s.getFloat("scale", 1.0),
               softcap = s.getFloat("softcap", 0.0);
  const bool raw = !hasBias && scaleValue > 0 && softcap <= 0.0;
  const std::string mult = flt((float)(raw ? scaleValue * log2e : log2e));
  // Score (i, j) into v from the accumulator `acc`, or -inf when masked;
  // `unmasked` where (i, j) is known to be seen. A softcap c: v = c th
  // with th = tanh(scale acc / c) (mpc_tanh_approx), dS's factor 1 - th^2
  // (`slope`).
  const std::string capped =
      softcap > 0.0 ? "th = mpc_tanh_approx(" + flt((float)(scaleValue / softcap)) +
                          " * acc); v = " + flt((float)softcap) + " * th;"
                    : "v = " + scale + " * acc;";
  scaled = raw ? std::string("v = acc;")
               : capped +
                     (hasBias ? " " + biasOffset(g, e.val(s.inputs[6]).shape) +
                                    " v += ld(in6, off);"
                              : std::string());
  // (th: t is the lane's column.)
  capDecl = softcap > 0.0 ? "float th = 0.0f; " : "";
  slope = softcap > 0.0 ? " * (1.0f - th * th)" : "";
  keyVisible = visibleColumns(g, false, "qw0", "rows[mt][h]", KT);
  queryVisible = visibleColumns(g, true, "j0", "rows[h]", 1, "0");
  unmasked = softcap > 0.0 ? "float th, v; " + scaled : "float " + scaled;
  // p from the score and the row's lse2 (an all-masked row's +inf: 0).
  prob = "const float p = mpc_exp2(fmaf(v, " + mult + ", -lse));";
  bufA = accumulate ? TQ * P : std::max(TQ * P, TK * P);
  bufB = accumulate ? TQ * PV : std::max(TQ * PV, TK * PV);
  sharedKeyBytes = pairs ? pairShared(probBuffers)
                         : sharedFor(TQ, kvShared, kRows, accumulate, TK, !compact);
}

std::string AttentionGrad::at(const std::string &operand,
                              const std::string &row) {
  return e.operandRow(s, operand, row);
}

// Score (i, j) of a masked tile where `seen` (visibleColumns), else -inf.
std::string AttentionGrad::score(const VisibleColumns &visible) {
  return capDecl + "float v = -INFINITY; if (" + visible.seen + ") { " + scaled +
         " }";
}

// The shared memory and lane coordinates every role starts from.
std::string AttentionGrad::kernelHead(const std::string &kernel, bool withDq) {
  std::ostringstream os;
  os << e.header(s, kernel, kThreads) << " {\n";
  // Dynamic shared memory (past 48 KiB where K and V have tiles), its
  // bytes the launch's.
  e.sharedBytes = sharedKeyBytes;
  std::string at = "(" + T + " *)mpc_dynamic_smem()";
  auto carve = [&](const std::string &name, int64_t elems) {
    os << "  " << T << " *const " << name << " = " << at << ";\n";
    at = name + " + " + std::to_string(elems);
  };
  carve("ta", 2 * bufA);
  carve("tb", 2 * bufB);
  if (withDq || kvShared)
    carve("ks", kRows * P);
  if (kvShared)
    carve("vs", kRows * PV);
  if (pairs)
    carve("pts", kRows * PS);
  if (pairs ? probBuffers == 2 : withDq)
    carve("dss", kRows * PS);
  if (!compact) // (its lanes hold their queries' lse and D)
    os << "  float *const rowLse = (float *)(" << at << "), *const rowD = rowLse + "
       << TQ << ";\n";
  os << "  const int lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;\n"
     // Heads along x, jobs along y: the GPU starts blocks in linear
     // order (x fastest), and a block's work falls as its job grows (a
     // key tile or split further right sees fewer queries; query blocks
     // count from the last), so the longest blocks start first over all
     // heads and the shortest fill the last wave (causal 2 x 12 x 4096
     // with dQ accumulated: the key blocks' time 1.44x shorter than head
     // by head, by a model of the block scheduler:
     // bench/attention_schedule.py). Both read from special registers,
     // so they cost a key block no register.
     << "  const i64 b = blockIdx.x, job = blockIdx.y;\n";
  return os.str();
}

// The prologue's D: 4 consecutive lanes a query row of all heads.
std::string AttentionGrad::rowDPrologue() {
  return "  {\n    const i64 r = ((i64)blockIdx.x * 256 + threadIdx.x) / 4;\n"
         "    const int part = threadIdx.x % 4;\n"
         "    const i64 b = r / " + L(g.sq) + ", i = r % " + L(g.sq) + ";\n"
         "    float dd = 0.0f;\n    if (r < " + L(g.batch * g.sq) + ")\n" +
         rowDot("      ", "part", "i") +
         "    dd += __shfl_xor_sync(0xffffffffu, dd, 1);\n"
         "    dd += __shfl_xor_sync(0xffffffffu, dd, 2);\n"
         "    if (part == 0 && r < " + L(g.batch * g.sq) + ") ((float *)scratch + " +
         std::to_string(rowDWords) + "LL)[r] = dd;\n" +
         (zeroScoresGrad
              ? "    if (r < " + L(g.batch * g.sq) + ")\n      for (i64 j = part; j < " +
                    L(g.skv) + "; j += 4) st(out3, " + scoresGradIndex(g, "0", "r", "j") +
                    ", 0.0f);\n"
              : std::string()) +
         "  }\n";
}

void AttentionGrad::emit(const std::string &name) {
  if (atomic)
    emitAtomic(name);
  else if (accumulate)
    emitPartialSums(name);
  else
    emitRecompute(name);
  // S^T, dP^T, dV, dK and dQ (S^T once more for the dV blocks past head
  // size 64); recompute: S and dP once more in the query blocks.
  double gemms = accumulate ? 3.0 * g.dData + 2.0 * g.dvData
                            : 4.0 * g.dData + 3.0 * g.dvData;
  if (split)
    gemms += g.dData;
  e.countFlops(2.0 * g.batch * g.sq * g.skv * gemms * g.band.seenFraction(), true);
}

// atomic: a block a key tile (blockIdx.y), after a prologue that zeroes
// dQ's FP32 sums and the chunks' counts and computes D.
void AttentionGrad::emitAtomic(const std::string &name) {
  s.cuda.scratch = rowDWords * 4 + ::mpc::rt::attentionRowDBytes(g.batch, g.sq);
  std::ostringstream os;
  os << kernelHead(name, true) << "  const i64 kb = job;\n"
     << "  if (blockIdx.z == 0) {\n"
     << (pairs ? pairsKeyRole(true) : keyRole(true, !split, true))
     << atomicDqChunks(g, causal, kRows, TQ, firstQueries("kb"), scale,
                       at("out0", "i"), kThreads)
     << "  }\n";
  if (split)
    os << "  if (blockIdx.z == 1) {\n"
       << keyRole(false, true, false) << "  }\n";
  os << "}\n\n"
     << atomicDqZero(e.header(s, name + "_zero", 256), rowDWords * 4,
                     rowDPrologue());
  e.cu << os.str();
  const int64_t keyShared = e.sharedBytes; // kernelHead's, for the key blocks
  e.sharedBytes = 0;
  e.barrier = true; // D's lanes meet in shuffles
  e.launch(s, name + "_zero",
           {std::max((rowDWords / 4 + 255) / 256, rowDBlocks()), 1, 1},
           {256, 1, 1},
           /*prologue=*/true);
  e.sharedBytes = keyShared;
  e.barrier = true;
  e.launch(s, name, {g.batch, keyTiles(), split ? 2 : 1}, {kThreads, 1, 1});
}

// accumulate: blocks (split, b, role) walk key tiles split, split +
// splits, ..., and a second kernel sums the splits' dQ in order.
void AttentionGrad::emitPartialSums(const std::string &name) {
  s.cuda.scratch = splits * g.batch * g.sq * D * 4; // the headers take it
  std::ostringstream os;
  os << kernelHead(name + "_keys", true);
  auto walk = [&](const std::string &role) {
    return "    for (i64 kb = job; kb < " + L(keyTiles()) +
           "; kb += " + L(splits) + ") {\n" +
           "    __syncthreads(); // every warp is done with the key tile before\n" +
           role + "    }\n";
  };
  os << "  if (blockIdx.z == 0) {\n"
     << walk(keyRole(true, !split, true)) << "  }\n";
  if (split)
    os << "  if (blockIdx.z == 1) {\n"
       << walk(keyRole(false, true, false)) << "  }\n";
  os << "}\n\n";
  // dQ = scale x the splits' partial sums, in split order; split s has
  // written the rows from its first key tile's first query on. (The
  // sums' rows are D wide, the head size rounded up; dQ's DD, its own.)
  const int64_t DD = g.dData;
  os << e.header(s, name, 256) << " {\n"
     << "  const i64 e = ((i64)blockIdx.x * 256 + threadIdx.x) * 2;\n"
     << "  if (e >= " << L(g.batch * g.sq * DD) << ") return;\n"
     << "  const i64 b = e / " << L(g.sq * DD) << ", i = e / " << L(DD) << " % "
     << L(g.sq) << ";\n"
     << "  const int c = (int)(e % " << L(DD) << ");\n"
     << "  const float *part = (const float *)scratch;\n"
     << "  float x = 0.0f, y = 0.0f;\n"
     << "  for (i64 sp = 0; sp < " << L(splits) << "; ++sp) {\n"
     << "    if (i < " << firstQueries("sp") << ") continue;\n"
     << "    float v[2];\n    ldv<2>(part + ((sp * " << L(g.batch) << " + b) * "
     << L(g.sq) << " + i) * " << L(D) << " + c, v);\n"
     << "    x += v[0];\n    y += v[1];\n  }\n"
     << "  st(out0, " << at("out0", "i") << " + c, " << scale << " * x);\n"
     << "  st(out0, " << at("out0", "i") << " + c + 1, " << scale << " * y);\n"
     << "}\n\n";
  e.cu << os.str();
  e.barrier = true;
  e.launch(s, name + "_keys", {g.batch, splits, split ? 2 : 1},
           {kThreads, 1, 1},
           /*prologue=*/true);
  e.launch(s, name, {(g.batch * g.sq * DD / 2 + 255) / 256, 1, 1}, {256, 1, 1});
}

// recompute: a prologue computes D; key blocks (blockIdx.z 0, and 2 for
// dV apart) and query blocks (1), which recompute S and dP for dQ, share
// one kernel.
void AttentionGrad::emitRecompute(const std::string &name) {
  s.cuda.scratch = ::mpc::rt::attentionRowDBytes(g.batch, g.sq);
  e.cu << e.header(s, name + "_rowd", 256) << " {\n" << rowDPrologue() << "}\n\n";
  e.barrier = true; // D's lanes meet in shuffles
  e.launch(s, name + "_rowd", {rowDBlocks(), 1, 1}, {256, 1, 1}, /*prologue=*/true);
  // Key blocks are K and V heads (x below batch / group), query blocks q
  // heads.
  const std::string kvHeadsEnd =
      g.group > 1 ? " || blockIdx.x >= " + std::to_string(g.batch / g.group) : "";
  std::ostringstream os;
  os << kernelHead(name, false)
     << "  if (blockIdx.z == 0) {\n    const i64 kb = job;\n"
     << "    if (kb * " << L(kRows) << " >= " << L(g.skv) << kvHeadsEnd << ") return;\n"
     << (pairs ? pairsKeyRole(false) : keyRole(true, !split, false))
     << "    return;\n  }\n"
     << (split ? "  if (blockIdx.z == 2) {\n    const i64 kb = job;\n    if (kb * " +
                     L(kRows) + " >= " + L(g.skv) + kvHeadsEnd + ") return;\n" +
                     keyRole(false, true, false) + "    return;\n  }\n"
               : std::string())
     << queryRole() << "}\n\n";
  e.cu << os.str();
  e.barrier = true;
  int64_t blocks = std::max((g.sq + kQueryRows - 1) / kQueryRows, keyTiles());
  e.launch(s, name, {g.batch, blocks, split ? 3 : 2}, {kThreads, 1, 1});
}

// The query blocks: kQueryRows queries (16 a warp, the last block
// first) loop over the keys they see for dQ += dS K, the scores and dP
// once more.
std::string AttentionGrad::queryRole() {
  // The factors z[n][f]: a lane's pairs run along keys, a draw a pair
  // when the keys are even in number.
  std::string queryZ;
  if (drop.on)
    queryZ = "    float z[" + std::to_string(TK / 8) + "][4];\n" +
             forKeepPairs(drop, g, TK,
                          "        z[n][2 * h] = keep[0] ? " + flt(drop.draw.scale) +
                              " : 0.0f;\n        z[n][2 * h + 1] = keep[1] ? " +
                              flt(drop.draw.scale) + " : 0.0f;\n");
  const bool sharedQuery = wideHeads(g); // Q's and dO's fragments
  std::ostringstream os;
  os << "  // dQ for " << kQueryRows
     << " queries: rows are queries, the last block first.\n"
     << "  const i64 qb = (i64)gridDim.y - 1 - job;\n"
     << "  if (qb * " << L(kQueryRows) << " >= " << L(g.sq) << ") return;\n"
     << "  const i64 w0 = qb * " << L(kQueryRows) << " + (threadIdx.x / 32) * 16;\n"
     << "  const i64 rows[2] = {w0 + g, w0 + g + 8};\n"
     << (sharedQuery ? std::string()
                     : fragments("qf", "in1", D, g.sq, {}) +
                           fragments("of", "in0", DV, g.sq, {}))
     << "  float dq[" << D / 8 << "][4];\n"
     << "  for (int n = 0; n < " << D / 8 << "; ++n) for (int f = 0; f < 4; ++f) dq[n][f] = 0.0f;\n"
     // D (the prologue's) and lse of the lane's two rows.
     << "  float rd[2], rl[2];\n"
     << "  for (int h = 0; h < 2; ++h) {\n"
     << "    rd[h] = rows[h] < " << L(g.sq) << " ? " << rowDs << "[b * " << L(g.sq)
     << " + rows[h]] : 0.0f;\n"
     << "    rl[h] = rows[h] < " << L(g.sq) << " ? "
     << "mpc_lse2(ld(in5, b * " << L(g.sq) << " + rows[h]))" << " : 0.0f;\n  }\n";
  const int64_t QR = kQueryRows;
  // The block's keys: to its last query's last (the band's end, j = i +
  // off - lo), from the tile of its first query's first (j = i + off - hi).
  const int64_t endAt = QR + off - g.band.lo, startAt = off - g.band.hi;
  std::string jEnd = causal ? "(qb * " + L(QR) + " + " + L(endAt) +
                                  " < " + L(g.skv) + " ? qb * " + L(QR) +
                                  " + " + L(endAt) + " : " + L(g.skv) + ")"
                            : L(g.skv);
  std::string jStart =
      g.band.boundsStart()
          ? "(qb * " + L(QR) + " + " + L(startAt) + " > 0 ? (qb * " + L(QR) +
                " + " + L(startAt) + ") / " + L(TK) + " * " + L(TK) + " : 0LL)"
          : "0LL";
  std::ostringstream body;
  if (sharedQuery)
    body << sharedAPairsAlongCols(T, "sc", "qs + (threadIdx.x / 32) * " +
                                               std::to_string(16 * P),
                                  P, "ta_", P, D, TK)
         << sharedAPairsAlongCols(T, "dp", "dos + (threadIdx.x / 32) * " +
                                               std::to_string(16 * PV),
                                  PV, "tb_", PV, DV, TK);
  else
    body << pairsAlongCols(T, "sc", "qf", "ta_", P, D, TK)
         << pairsAlongCols(T, "dp", "of", "tb_", PV, DV, TK);
  body << queryZ;
  auto derivatives = [&](const std::string &scoreOf,
                         const std::string &bounds = "") {
    return bounds + "#pragma unroll\n      for (int n = 0; n < " + std::to_string(TK / 8) +
           "; ++n)\n#pragma unroll\n      for (int f = 0; f < 4; ++f) {\n"
           "        const i64 i = rows[f >> 1], j = j0 + n * 8 + 2 * t + (f & 1);\n"
           "        const float acc = sc[n][f], lse = rl[f >> 1];\n"
           "        " + scoreOf + "\n        " + prob + "\n" +
           (drop.on ? "        dp[n][f] = p * (dp[n][f] * z[n][f] - rd[f >> 1])" + slope +
                          ";\n      }\n"
                    : "        dp[n][f] = p * (dp[n][f] - rd[f >> 1])" + slope + ";\n      }\n");
  };
  // A tile whose every key all the warp's queries see skips the mask,
  // but for an additive mask, as in the key role (two copies of its loads
  // took 8 bytes of stack at head size 64).
  if (hasBias)
    body << derivatives(score(queryVisible), queryVisible.bounds);
  else
    body << "    const bool full = " << unmaskedTile(g, "w0", 16, "j0", TK)
         << ";\n    if (full) {\n" << derivatives(unmasked) << "    } else {\n"
         << derivatives(score(queryVisible), queryVisible.bounds) << "    }\n";
  body << packA(T, "ds", "dp", TK) << pairsAlongRows(T, "dq", "ds", "ta_", P, TK / 16, D);
  os << "  const i64 jEnd = " << jEnd << ", jStart = " << jStart << ";\n";
  // Past head size 128 the block's Q and dO rows in the key blocks' K and
  // V tiles (the first tile's copies wait for them).
  if (sharedQuery)
    os << "  " << T << " *const qs = ks, *const dos = vs;\n"
       << "  if (jStart < jEnd) {\n"
       << asyncTile("qs", P, "in1", at("in1", "qb * " + L(QR) + " + r"),
                    e.operandRowStride(s, "in1"), D, e.operandRowWidth(s, "in1"),
                    QR, "qb * " + L(QR), g.sq, kThreads)
       << asyncTile("dos", PV, "in0", at("in0", "qb * " + L(QR) + " + r"),
                    e.operandRowStride(s, "in0"), DV,
                    e.operandRowWidth(s, "in0"), QR, "qb * " + L(QR), g.sq,
                    kThreads)
       << "  }\n";
  os << tileLoop("j0", "jStart", "jEnd", g.skv, TK, "in2", D, "in3", DV, "", body.str())
     << store("out0", "dq", D, g.sq, scale + " * ", {}, "");
  return os.str();
}

} // namespace mlir::mpc::cuda
