//===- CudaFlashAttentionGrad.cpp - attention's backward on mma.sync ------===//
//
// The tensor-core backward of attention for fp16/bf16 with head sizes that
// are multiples of 16 up to 128: dK and dV accumulated in key blocks'
// registers, dQ recomputed in query blocks, from their FP32 partial sums
// or added atomically (--attention-dq, CudaAttentionDq.cpp), as
// FlashAttention-2's backward.
//
//===----------------------------------------------------------------------===//

#include "codegen/CudaMmaTiles.h"
#include "runtime/cuda/KernelCalls.h"
#include "runtime/cuda/KernelConfig.h"

#include <algorithm>
#include <sstream>

namespace mlir::mpc::cuda {

/// dq, dk and dv on the tensor cores (mma.sync, FlashAttention-2's
/// register layout). Key blocks own 128 keys (32 a warp) up to head size
/// 64; past it, 128 keys in 8 warps in FlashAttention-2's block layout
/// (pairsKeyRole: warps split S^T by keys and queries, dK and dV by keys
/// and halves of the head, P^T and dS^T through shared memory), or where
/// that does not fit or dQ takes partial sums, 64 (16 a warp); their
/// warps read K's and V's fragments from shared memory (or, where those
/// tiles do not fit, 64 keys hold them in registers, one block computing
/// dK and another dV past head size 64, so neither spills), and loop over the queries
/// that see them, computing S^T = K
/// Q^T, P^T = exp(scale S^T + bias - lse), dP^T = V dO^T, dS^T = P^T
/// (dP^T - D) and accumulating dV += P^T dO and dK += dS^T Q in
/// registers. D = rowsum(dO y) in FP32, computed once by a prologue
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
///   queries and loop over keys for dQ += dS K, the scores and dP once
///   more (seven products; scratch: D);
/// - atomic: a key block per key tile adds dS K to one FP32 dQ by vector
///   reductions, and the block that completes a chunk of queries' count
///   writes its dQ (atomicDqChunks; FlashAttention-2's default; the
///   order of the adds varies run to run).
void Emitter::attentionGradMma(Step &s, const std::string &name) {
  Dims g = dimsOf(val(s.inputs[1]).shape, val(s.inputs[2]).shape,
                  val(s.inputs[3]).shape);
  bool hasBias = s.inputs.size() > 6 && s.inputs[6] >= 0;
  bool causal = s.getInt("causal", 0) != 0;
  AttentionDropout drop(*this, s, g, 7);
  std::string T = ctype(val(s.inputs[1]).dtype);
  std::string scale = flt((float)s.getFloat("scale", 1.0));
  constexpr int64_t TK = 32;
  const int64_t D = g.d, DV = g.dv, P = D + 8, PV = DV + 8;
  // The shared memory of a kernel with `tq` queries a tile and key tiles
  // of `keyRows`: two buffers of Q and dO tiles (the query role's K and V
  // tiles in them), K's tile and dS^T for dQ's part (`acc`), V's tile
  // where `kv` (the K and V fragments read from shared memory), the
  // tile's lse and D.
  auto sharedFor = [&](int64_t tq, bool kv, int64_t keyRows, bool acc) {
    int64_t rowsA = acc ? tq : std::max(tq, TK);
    int64_t bytes = 2 * 2 * rowsA * (P + PV) + 2 * tq * 4;
    if (kv || acc)
      bytes += 2 * keyRows * P;
    if (kv)
      bytes += 2 * keyRows * PV;
    if (acc)
      bytes += 2 * keyRows * (tq + 8);
    return bytes;
  };
  // The key blocks' layout, the first that fits beside two blocks an SM
  // of every target (sm_80 and sm_90; not sm_86/89, whose SMs have 100
  // KiB), as FlashAttention-2's backward keeps K and V in shared memory:
  // - up to head size 64, 32 keys a warp (two row tiles, 128 a block),
  //   K's and V's fragments read from shared memory: each Q and dO
  //   fragment read feeds two mma.sync (64 KiB at head size 64);
  // - past 64, 16 keys a warp, K and V from shared memory, so that the
  //   registers hold dK and dV both (73 KiB at head size 128);
  // - else 16 keys a warp holding K's and V's fragments in registers,
  //   and past head size 64 dK and dV as separate roles (z = 0 and the
  //   last: S^T computed twice, Q and dO read twice), with 16 queries a
  //   tile where the accumulating key role's tiles would pass 48 KiB.
  // - past head size 64, where one block an SM of every target holds
  //   them (sm_80, sm_90), FlashAttention-2's layout (`pairs`): 8 warps,
  //   128 keys a block, 64 queries a tile, each warp S^T and dP^T for 32
  //   keys x 32 queries, P^T and dS^T through shared memory, then dV and
  //   dK for its 32 keys x half the head: a fragment read feeds two
  //   mma.sync in every product (0.45 ldmatrix a product at head size
  //   128, where 16 keys a warp read 0.63), and a Q and dO tile serves
  //   128 keys. Not for the partial sums (whose scratch a split per 64
  //   keys sizes).
  const bool wide = g.d > 64 || g.dv > 64;
  const int64_t budget = ::mpc::rt::cuda::sharedBytesForTwoBlocks(plan.cudaArch);
  int64_t KT = 1, splits = 0;
  bool kvShared = false;
  const bool narrow = plan.cudaAttentionRows == 64; // 16 keys a warp
  // (atomic: no block adds to a row that sees no key, as under a causal
  // mask with more queries than keys; those recompute.)
  const bool atomicMode = plan.cudaAttentionDq == "atomic",
             rowless = causal && g.sq > g.skv;
  auto dqSplits = [&](int64_t keyRows) {
    return atomicMode && rowless
               ? 0
               : attentionDqSplits(g, plan.cudaAttentionDq, keyRows);
  };
  // The pairs layout's shared memory: Q and dO tiles in two buffers, K
  // and V, P^T and dS^T in one buffer or two, the tile's lse and D.
  constexpr int64_t kPairQueries = 64, kPairKeys = 128;
  auto pairShared = [&](int64_t probBuffers) {
    return 2 * 2 * kPairQueries * (P + PV) + 2 * kPairKeys * (P + PV) +
           probBuffers * 2 * kPairKeys * (kPairQueries + 8) + 2 * kPairQueries * 4;
  };
  const int64_t oneBlock = ::mpc::rt::cuda::sharedBytesForOneBlock(plan.cudaArch);
  const bool pairs = wide && !narrow && g.d % 32 == 0 && g.dv % 32 == 0 &&
                     (atomicMode || dqSplits(kPairKeys) == 0) &&
                     pairShared(1) <= oneBlock;
  // Two buffers spare a barrier a tile where they fit (sm_90 alone).
  const int64_t probBuffers = pairs && pairShared(2) <= oneBlock ? 2 : 1;
  for (int64_t tiles : {wide || narrow ? 1 : 2, 0}) { // 0: K and V in registers
    KT = std::max<int64_t>(tiles, 1);
    kvShared = tiles > 0;
    splits = dqSplits(pairs ? kPairKeys : 64 * KT);
    if (pairs) {
      KT = 2;
      break;
    }
    if (!kvShared || sharedFor(32, true, 64 * KT, splits > 0) <= budget)
      break;
  }
  const bool accumulate = splits > 0, atomic = accumulate && atomicMode;
  const bool split = wide && !kvShared;
  const int64_t TQ = pairs ? kPairQueries : accumulate && split ? 16 : 32,
                kRows = pairs ? kPairKeys : 64 * KT;
  const int64_t kThreads = pairs ? 256 : 128, kQueryRows = kThreads / 2;
  // D = rowsum(dO y) a query: computed once by the recomputing and atomic
  // forms' prologue into the scratch's end (the key blocks would each
  // read dO and y again for every query tile: at 4096 tokens and head
  // size 128, 32 times over on average).
  const bool rowDFromScratch = !accumulate || atomic;
  const int64_t rowDWords =
      atomic ? ::mpc::rt::attentionAtomicDqBytes(g.batch, g.sq, g.d) / 4 : 0;
  const std::string rowDs =
      "((const float *)scratch + " + std::to_string(rowDWords) + "LL)";
  const RowTiles keyTilesOfWarp{KT};
  // Dropout's factor z of probability (b, i, j) in the key role: P^T for
  // dV keeps the kept p (dV scaled once at the end), dS^T = p (z dP^T -
  // D). A lane's pairs run along queries, so each of its scores is a
  // group of its own; where the keys are a multiple of 4 in number, the
  // four lanes g = 4m .. 4m + 3 of a t hold keys 4m .. 4m + 3 of the same
  // queries, four groups' words between them: each draws one
  // (mpc_quad_words) and three shuffles hand out the rest, one draw where
  // there were four (`keyWords`, before a fragment's four scores).
  const bool quadDraws = drop.on && g.skv % 4 == 0;
  std::string keyWords =
      quadDraws
          ? "        unsigned w[4], words[4];\n        " +
                drop.draw.words(
                    "(unsigned long long)(" +
                        AttentionDropout::index(g, "b",
                                                "qw0 + n * 8 + 2 * t + (g & 1)",
                                                "((g & 2) ? rows[mt][1] : rows[mt][0])") +
                        ") >> 2",
                    "w") +
                "\n        mpc_quad_words(w, words);\n"
          : std::string();
  std::string keyZ =
      !drop.on ? std::string()
      : quadDraws
          ? "        const float z = words[f] >= " +
                std::to_string(drop.draw.threshold) + "ull ? " +
                flt(drop.draw.scale) + " : 0.0f;\n"
          : "        const float z = " +
                drop.keep(AttentionDropout::index(g, "b", "i", "j")) + " ? " +
                flt(drop.draw.scale) + " : 0.0f;\n";
  const int64_t PS = TQ + 8;
  const int64_t off = g.skv - g.sq; // key j is visible to query i: j <= i + off
  auto &L = i64Lit;
  auto at = [&](const std::string &operand, const std::string &row) {
    return operandRow(s, operand, row);
  };
  // p = 2^(v mult - lse log2(e)) on the SFU (mpc_exp2): one FFMA and
  // MUFU.EX2 a score, as FlashAttention-2's backward. Without a bias and
  // with a positive scale v is the raw score and mult = scale log2(e);
  // else v = scale s + bias and mult = log2(e). The rows' lse are read
  // into log2 units once (mpc_lse2), an all-masked row's -inf as +inf, so
  // that its p is 0 with no select.
  const double log2e = 1.4426950408889634, scaleValue = s.getFloat("scale", 1.0);
  const bool raw = !hasBias && scaleValue > 0;
  const std::string mult = flt((float)(raw ? scaleValue * log2e : log2e));
  // Score (i, j) into v from the accumulator `acc`, or -inf when masked;
  // `unmasked` where (i, j) is known to be seen.
  std::string scaled = raw ? std::string("v = acc;")
                           : "v = " + scale + " * acc;" +
                                 (hasBias ? " " + biasOffset(g, val(s.inputs[6]).shape) +
                                                " v += ld(in6, off);"
                                          : std::string());
  // Score (i, j) of a masked tile where `seen` (visibleColumns), else -inf.
  auto score = [&](const VisibleColumns &visible) {
    return "float v = -INFINITY; if (" + visible.seen + ") { " + scaled + " }";
  };
  const VisibleColumns keyVisible =
                           visibleColumns(g, causal, false, "qw0", "rows[mt][h]", KT),
                       queryVisible =
                           visibleColumns(g, causal, true, "j0", "rows[h]", 1, "0");
  std::string unmasked = "float " + scaled;
  // p from the score and the row's lse2 (an all-masked row's +inf: 0).
  std::string prob = "const float p = mpc_exp2(fmaf(v, " + mult + ", -lse));";
  // dd += the quarter `part` (0-3) of the dot product of dO's and y's
  // row `i`: runs of 8 elements, 16-byte loads (rows are 16-byte aligned:
  // head sizes are multiples of 16).
  auto rowDot = [&](const std::string &indent, const std::string &part,
                    const std::string &i) {
    return indent + "for (int c = " + part + " * 8; c < " + std::to_string(DV) +
           "; c += 32) {\n" + indent + "  float a[8], y[8];\n" + indent +
           "  ldv<8>(in0 + " + at("in0", i) + " + c, a);\n" + indent +
           "  ldv<8>(in4 + " + at("in4", i) + " + c, y);\n" + indent +
           "  for (int e = 0; e < 8; ++e) dd += a[e] * y[e];\n" + indent + "}\n";
  };
  // The prologue's D: 4 consecutive lanes a query row of all heads.
  const std::string rowDPrologue =
      "  {\n    const i64 r = ((i64)blockIdx.x * 256 + threadIdx.x) / 4;\n"
      "    const int part = threadIdx.x % 4;\n"
      "    const i64 b = r / " + L(g.sq) + ", i = r % " + L(g.sq) + ";\n"
      "    float dd = 0.0f;\n    if (r < " + L(g.batch * g.sq) + ")\n" +
      rowDot("      ", "part", "i") +
      "    dd += __shfl_xor_sync(0xffffffffu, dd, 1);\n"
      "    dd += __shfl_xor_sync(0xffffffffu, dd, 2);\n"
      "    if (part == 0 && r < " + L(g.batch * g.sq) + ") ((float *)scratch + " +
      std::to_string(rowDWords) + "LL)[r] = dd;\n  }\n";
  const int64_t rowDBlocks = (g.batch * g.sq * 4 + 255) / 256;
  // asyncTile over this kernel's threads, rows of operand `src`.
  auto loadTile = [&](const std::string &dst, int64_t pitch,
                      const std::string &src, int64_t width, int64_t rows,
                      const std::string &first, int64_t limit) {
    return asyncTile(dst, pitch, src, at(src, first + " + r"),
                     operandRowStride(s, src), width, rows,
                     first, limit, kThreads);
  };
  // The loop over tiles `var` from `start` below `end`, `rows` rows a
  // tile of `a` (width aw) and `b` (width bw) from their buffers `ta` and
  // `tb`; `body` computes on ta_ and tb_, the current buffers, after
  // `between` (run while the tile's copies are in flight).
  const int64_t bufA = accumulate ? TQ * P : std::max(TQ * P, TK * P),
                bufB = accumulate ? TQ * PV : std::max(TQ * PV, TK * PV);
  auto tileLoop = [&](const std::string &var, const std::string &start,
                      const std::string &end, int64_t limit, int64_t rows,
                      const std::string &a, int64_t aw, const std::string &b,
                      int64_t bw, const std::string &between,
                      const std::string &body) {
    std::string next = var + " + " + L(rows), first = var + "First";
    std::ostringstream os;
    os << "    int buf = 0;\n    const i64 " << first << " = " << start << ";\n"
       << "    if (" << first << " < " << end << ") {\n"
       << loadTile("ta", P, a, aw, rows, first, limit)
       << loadTile("tb", PV, b, bw, rows, first, limit)
       << "    }\n    mpc_cp_async_commit();\n"
       << "    for (i64 " << var << " = " << first << "; " << var << " < " << end
       << "; " << var << " += " << L(rows) << ", buf ^= 1) {\n"
       // Every warp is done with the other buffer (the tile before).
       << "      __syncthreads();\n"
       << "      if (" << next << " < " << end << ") {\n"
       << loadTile("ta + (buf ^ 1) * " + std::to_string(bufA), P, a, aw, rows,
                   "(" + next + ")", limit)
       << loadTile("tb + (buf ^ 1) * " + std::to_string(bufB), PV, b, bw, rows,
                   "(" + next + ")", limit)
       << "      }\n      mpc_cp_async_commit();\n"
       << between
       << "      mpc_cp_async_wait<1>();\n      __syncthreads();\n"
       << "      const " << T << " *ta_ = ta + buf * " << bufA << ", *tb_ = tb + buf * "
       << bufB << ";\n"
       << body << "    }\n";
    return os.str();
  };
  // A fragments of 16 rows of a [rows, width] global operand (`tiles`
  // of them: rows[mt]).
  auto fragments = [&](const std::string &frag, const std::string &src,
                       int64_t width, int64_t limit, RowTiles tiles) {
    return rowFragments("    ", frag, src, at(src, "r"), width, limit, tiles);
  };
  // Stores the accumulators `acc` of rows rows[..] (row tiles `tiles`),
  // `width` columns from `col` (an expression and " + ", or empty) on.
  auto store = [&](const std::string &out, const std::string &acc,
                   int64_t width, int64_t limit, const std::string &factor,
                   RowTiles tiles, const std::string &col) {
    std::string r = "rows" + tiles.at() + "[h]";
    std::ostringstream body;
    body << "    for (int h = 0; h < 2; ++h) {\n"
         << "      if (" << r << " >= " << L(limit) << ") continue;\n"
         << "      for (int n = 0; n < " << width / 8 << "; ++n)\n"
         << "        for (int e = 0; e < 2; ++e)\n"
         << "          st(" << out << ", " << at(out, r) << " + " << col << "n * 8 + 2 * t + e, "
         << factor << acc << tiles.at() << "[n][2 * h + e]);\n    }\n";
    return tiles.each("    ", body.str());
  };
  // The first query tile that sees key tile `kb` (causal: none before).
  auto firstQueries = [&](const std::string &kb) {
    std::string first = kb + " * " + L(kRows) + " - " + L(off);
    return causal ? "(" + first + " > 0 ? (" + first + ") / " + L(TQ) + " * " +
                        L(TQ) + " : 0LL)"
                  : std::string("0LL");
  };

  // The key roles' accumulators, zeroed: acc[KT][width / 8][4].
  auto zeros = [&](const std::string &acc, int64_t width) {
    return "    float " + acc + "[" + std::to_string(KT) + "][" +
           std::to_string(width / 8) + "][4];\n    for (int mt = 0; mt < " +
           std::to_string(KT) + "; ++mt) for (int n = 0; n < " +
           std::to_string(width / 8) + "; ++n) for (int f = 0; f < 4; ++f) " + acc +
           "[mt][n][f] = 0.0f;\n";
  };
  // D and lse of the tile's queries, while the tile's copies land: D from
  // the prologue's (rowDFromScratch), else 4 consecutive lanes a query, 8
  // elements of the row a 16-byte load (every fourth such run each),
  // combined by shuffles.
  auto rowStats = [&](bool wantK) {
    if (rowDFromScratch)
      return "      if (threadIdx.x < " + std::to_string(TQ) + ") {\n" +
             "        const i64 i = q0 + threadIdx.x;\n" + "        rowD[threadIdx.x] = " +
             (wantK ? "i < " + L(g.sq) + " ? " + rowDs + "[b * " + L(g.sq) + " + i] : 0.0f"
                    : std::string("0.0f")) +
             ";\n        rowLse[threadIdx.x] = i < " + L(g.sq) +
             " ? mpc_lse2(ld(in5, b * " + L(g.sq) + " + i)) : 0.0f;\n      }\n";
    return std::string("      {\n        const int r = threadIdx.x / 4, part = threadIdx.x % 4;\n") +
           "        const i64 i = q0 + r;\n        float dd = 0.0f;\n" + "        if (" +
           (wantK ? "" : "false && ") + "r < " + std::to_string(TQ) + " && i < " +
           L(g.sq) + ")\n" + rowDot("          ", "part", "i") +
           "        dd += __shfl_xor_sync(0xffffffffu, dd, 1);\n" +
           "        dd += __shfl_xor_sync(0xffffffffu, dd, 2);\n" +
           "        if (part == 0 && r < " + std::to_string(TQ) +
           ") {\n          rowD[r] = dd;\n" + "          rowLse[r] = i < " + L(g.sq) +
           " ? mpc_lse2(ld(in5, b * " + L(g.sq) + " + i)) : 0.0f;\n" +
           "        }\n      }\n";
  };
  // P^T and dS^T (with `wantK`) in place of the scores st and dpt of a
  // warp's `cols` queries from qw0 on (the tile's from qr on); a tile
  // whose every key all the warp's queries see skips the mask (as the
  // forward's), but for an additive mask (whose loads the key role at
  // head size 64 has no registers left to run twice over: 32 bytes of
  // stack on sm_90).
  auto keyProbabilities = [&](bool wantK, int64_t cols) {
    auto probabilities = [&](const std::string &scoreOf, const std::string &bounds) {
      const std::string q = "qr + n * 8 + 2 * t + (f & 1)";
      return bounds + "#pragma unroll\n      for (int mt = 0; mt < " + std::to_string(KT) +
             "; ++mt)\n#pragma unroll\n      for (int n = 0; n < " +
             std::to_string(cols / 8) + "; ++n) {\n" + keyWords +
             "#pragma unroll\n      for (int f = 0; f < 4; ++f) {\n"
             "        const i64 j = rows[mt][f >> 1], i = qw0 + n * 8 + 2 * t + (f & 1);\n"
             "        const float acc = st[mt][n][f], lse = rowLse[" + q + "];\n"
             "        " + scoreOf + "\n        " + prob + "\n" + keyZ +
             (drop.on ? "        st[mt][n][f] = z != 0.0f ? p : 0.0f;\n"
                      : "        st[mt][n][f] = p;\n") +
             (wantK ? "        dpt[mt][n][f] = p * (dpt[mt][n][f]" +
                          std::string(drop.on ? " * z" : "") + " - rowD[" + q + "]);\n"
                    : "") +
             "      }\n      }\n";
    };
    if (hasBias)
      return probabilities(score(keyVisible), keyVisible.bounds);
    return "    const bool full = " + unmaskedTile(g, causal, "qw0", cols, "w0", 16 * KT) +
           ";\n    if (full) {\n" + probabilities(unmasked, "") + "    } else {\n" +
           probabilities(score(keyVisible), keyVisible.bounds) + "    }\n";
  };

  // A key role: the kRows keys of tile `kb` (rows are keys), accumulating dK
  // and/or dV over the queries that see them, and with `withDq` adding
  // their part of dQ to the partial sums.
  auto keyRole = [&](bool wantK, bool wantV, bool withDq) {
    std::ostringstream os;
    os << "    // " << (wantK && wantV ? "dK and dV" : wantK ? "dK" : "dV")
       << (withDq ? " and dQ's part" : "") << " for " << kRows
       << " keys: rows are keys.\n"
       << "    const i64 w0 = kb * " << L(kRows) << " + (threadIdx.x / 32) * " << 16 * KT
       << ";\n"
       << "    i64 rows[" << KT << "][2];\n"
       << "    for (int mt = 0; mt < " << KT << "; ++mt)\n"
       << "      rows[mt][0] = w0 + mt * 16 + g, rows[mt][1] = w0 + mt * 16 + g + 8;\n";
    // K's tile for dS K (and V's where their fragments come from shared
    // memory), in the first query tile's copies.
    if (withDq || kvShared)
      os << asyncTile("ks", P, "in2", at("in2", "kb * " + L(kRows) + " + r"),
                      operandRowStride(s, "in2"), D,
                      kRows, "kb * " + L(kRows), g.skv, kThreads);
    if (kvShared)
      os << asyncTile("vs", PV, "in3", at("in3", "kb * " + L(kRows) + " + r"),
                      operandRowStride(s, "in3"), DV,
                      kRows, "kb * " + L(kRows), g.skv, kThreads);
    else
      os << fragments("kf", "in2", D, g.skv, keyTilesOfWarp)
         << (wantK ? fragments("vf", "in3", DV, g.skv, keyTilesOfWarp) : std::string());
    if (wantK)
      os << zeros("dk", D);
    if (wantV)
      os << zeros("dv", DV);
    std::ostringstream body;
    const RowTiles &kt = keyTilesOfWarp;
    body << "      const i64 qw0 = q0;\n      const int qr = 0;\n";
    if (kvShared)
      body << sharedAPairsAlongCols(T, "st", "ks + (threadIdx.x / 32) * " +
                                                 std::to_string(16 * KT * P),
                                    P, "ta_", P, D, TQ, kt)
           << sharedAPairsAlongCols(T, "dpt", "vs + (threadIdx.x / 32) * " +
                                                  std::to_string(16 * KT * PV),
                                    PV, "tb_", PV, DV, TQ, kt);
    else
      body << pairsAlongCols(T, "st", "kf", "ta_", P, D, TQ, kt)
           << (wantK ? pairsAlongCols(T, "dpt", "vf", "tb_", PV, DV, TQ, kt)
                     : std::string());
    body << keyProbabilities(wantK, TQ);
    if (wantV)
      body << packA(T, "pt", "st", TQ, kt)
           << pairsAlongRows(T, "dv", "pt", "tb_", PV, TQ / 16, DV, kt);
    if (wantK)
      body << packA(T, "dst", "dpt", TQ, kt)
           << pairsAlongRows(T, "dk", "dst", "ta_", P, TQ / 16, D, kt);
    if (withDq)
      body << keyBlockDq(g, T, KT, TQ, kRows, atomic);
    os << tileLoop("q0", firstQueries("kb"), L(g.sq), g.sq, TQ, "in1", D, "in0",
                   DV, rowStats(wantK), body.str());
    if (wantK)
      os << store("out1", "dk", D, g.skv, scale + " * ", kt, "");
    if (wantV)
      os << store("out2", "dv", DV, g.skv,
                  drop.on ? flt(drop.draw.scale) + " * " : std::string(), kt, "");
    return os.str();
  };

  // The pairs layout's key role (FlashAttention-2's): 128 keys, warp w
  // computes S^T and dP^T for keys kw = w / 2 (32) and queries half = w %
  // 2 (32) of the tile's 64, writes P^T and dS^T (the operand type) to
  // shared memory, and after a barrier accumulates dV and dK for its 32
  // keys and half of the head from all 64 queries; with `withDq` (atomic)
  // the warps add dS K for the tile's queries to dQ's FP32 sums. With one
  // buffer for P^T and dS^T, dS^T replaces P^T once dV is done.
  auto pairsKeyRole = [&](bool withDq) {
    const int64_t HD = D / 2, HV = DV / 2;
    const RowTiles &kt = keyTilesOfWarp;
    const std::string dsAt = probBuffers == 2 ? "dss" : "pts";
    // The warp's 32 x 32 fragments `frag` (packA's) into `buf` (rows keys).
    auto toShared = [&](const std::string &buf, const std::string &frag) {
      return kt.each("      ",
                     "      for (int kt = 0; kt < 2; ++kt)\n"
                     "        for (int f = 0; f < 4; ++f)\n"
                     "          *(unsigned *)(" + buf + " + (kw * 32 + mt * 16 + g + (f & 1) * 8) * " +
                         std::to_string(PS) + " + qr + kt * 16 + 2 * t + (f >> 1) * 8) = " + frag +
                         "[mt][kt][f];\n");
    };
    // A fragments of the warp's 32 keys x the tile's 64 queries from
    // `buf`, and acc (half of the head: `cols` from tile + half cols)
    // += them x the tile.
    auto product = [&](const std::string &acc, const std::string &buf,
                       const std::string &tile, int64_t pitch, int64_t cols) {
      return "    {\n      unsigned pa[2][" + std::to_string(TQ / 16) + "][4];\n" +
             kt.each("      ", "      for (int kt = 0; kt < " + std::to_string(TQ / 16) +
                                   "; ++kt)\n        mpc_ldsm<4, false>(pa[mt][kt], " + buf +
                                   " + (kw * 32 + mt * 16 + lane % 16) * " +
                                   std::to_string(PS) + " + kt * 16 + lane / 16 * 8);\n") +
             pairsAlongRows(T, acc, "pa", tile + " + half * " + std::to_string(cols), pitch,
                            TQ / 16, cols, kt) +
             "    }\n";
    };
    std::ostringstream os;
    os << "    // dK and dV" << (withDq ? " and dQ's part" : "")
       << " for 128 keys, FlashAttention-2's layout: rows are keys.\n"
       << "    const int kw = threadIdx.x / 64, half = threadIdx.x / 32 % 2;\n"
       << "    const i64 w0 = kb * " << L(kRows) << " + kw * 32;\n"
       << "    i64 rows[2][2];\n    for (int mt = 0; mt < 2; ++mt)\n"
       << "      rows[mt][0] = w0 + mt * 16 + g, rows[mt][1] = w0 + mt * 16 + g + 8;\n"
       << asyncTile("ks", P, "in2", at("in2", "kb * " + L(kRows) + " + r"),
                    operandRowStride(s, "in2"), D, kRows, "kb * " + L(kRows), g.skv,
                    kThreads)
       << asyncTile("vs", PV, "in3", at("in3", "kb * " + L(kRows) + " + r"),
                    operandRowStride(s, "in3"), DV, kRows, "kb * " + L(kRows), g.skv,
                    kThreads)
       << zeros("dk", HD) << zeros("dv", HV);
    std::ostringstream body;
    body << "      const i64 qw0 = q0 + half * 32;\n      const int qr = half * 32;\n"
         << sharedAPairsAlongCols(T, "st", "ks + kw * " + std::to_string(32 * P), P,
                                  "ta_ + half * " + std::to_string(32 * P), P, D, 32, kt)
         << sharedAPairsAlongCols(T, "dpt", "vs + kw * " + std::to_string(32 * PV), PV,
                                  "tb_ + half * " + std::to_string(32 * PV), PV, DV, 32, kt)
         << keyProbabilities(true, 32) << packA(T, "pp", "st", 32, kt)
         << packA(T, "dsp", "dpt", 32, kt) << toShared("pts", "pp")
         << (probBuffers == 2 ? toShared("dss", "dsp") : std::string())
         << "    __syncthreads();\n"
         << product("dv", "pts", "tb_", PV, HV);
    if (probBuffers == 1)
      body << "    __syncthreads(); // every warp is done with P^T\n"
           << toShared("pts", "dsp") << "    __syncthreads();\n";
    body << product("dk", dsAt, "ta_", P, HD);
    if (withDq)
      body << pairsDq(g, T, dsAt, TQ, kRows);
    os << tileLoop("q0", firstQueries("kb"), L(g.sq), g.sq, TQ, "in1", D, "in0", DV,
                   rowStats(true), body.str())
       << store("out1", "dk", HD, g.skv, scale + " * ", kt, "half * " + L(HD) + " + ")
       << store("out2", "dv", HV, g.skv,
                drop.on ? flt(drop.draw.scale) + " * " : std::string(), kt,
                "half * " + L(HV) + " + ");
    return os.str();
  };

  // The shared memory and lane coordinates every role starts from.
  auto kernelHead = [&](const std::string &kernel, bool withDq) {
    std::ostringstream os;
    os << header(s, kernel, kThreads) << " {\n";
    // Dynamic shared memory (past 48 KiB where K and V have tiles), its
    // bytes the launch's.
    sharedBytes = pairs ? pairShared(probBuffers) : sharedFor(TQ, kvShared, kRows, accumulate);
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
    os << "  float *const rowLse = (float *)(" << at << "), *const rowD = rowLse + "
       << TQ << ";\n"
       << "  const int lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;\n"
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
  };
  const int64_t keyTiles = (g.skv + kRows - 1) / kRows;
  // S^T, dP^T, dV, dK and dQ (S^T once more for the dV blocks past head
  // size 64); recompute: S and dP once more in the query blocks.
  double gemms = accumulate ? 3.0 * g.d + 2.0 * g.dv : 4.0 * g.d + 3.0 * g.dv;
  if (split)
    gemms += g.d;
  if (atomic) {
    // A block a key tile (blockIdx.y), after a prologue that zeroes dQ's
    // FP32 sums and the chunks' counts and computes D.
    s.cuda.scratch = rowDWords * 4 + ::mpc::rt::attentionRowDBytes(g.batch, g.sq);
    std::ostringstream os;
    os << kernelHead(name, true) << "  const i64 kb = job;\n"
       << "  if (blockIdx.z == 0) {\n"
       << (pairs ? pairsKeyRole(true) : keyRole(true, !split, true))
       << atomicDqChunks(g, causal, kRows, TQ, firstQueries("kb"), scale,
                         at("out0", "i"), kThreads)
       << "  }\n";
    if (split)
      os << "  if (blockIdx.z == 1) {\n" << keyRole(false, true, false) << "  }\n";
    os << "}\n\n"
       << atomicDqZero(header(s, name + "_zero", 256), rowDWords * 4, rowDPrologue);
    cu << os.str();
    const int64_t keyShared = sharedBytes; // kernelHead's, for the key blocks
    sharedBytes = 0;
    barrier = true; // D's lanes meet in shuffles
    launch(s, name + "_zero",
           {std::max((rowDWords / 4 + 255) / 256, rowDBlocks), 1, 1}, {256, 1, 1},
           /*prologue=*/true);
    sharedBytes = keyShared;
    barrier = true;
    launch(s, name, {g.batch, keyTiles, split ? 2 : 1}, {kThreads, 1, 1});
    countFlops(2.0 * g.batch * g.sq * g.skv * gemms * (causal ? 0.5 : 1.0), true);
    return;
  }
  if (accumulate) {
    s.cuda.scratch = splits * g.batch * g.sq * D * 4; // the headers take it
    // Blocks (split, b, role) walk key tiles split, split + splits, ...
    std::ostringstream os;
    os << kernelHead(name + "_keys", true);
    auto walk = [&](const std::string &role) {
      return "    for (i64 kb = job; kb < " + L(keyTiles) + "; kb += " +
             L(splits) + ") {\n" +
             "    __syncthreads(); // every warp is done with the key tile before\n" +
             role + "    }\n";
    };
    os << "  if (blockIdx.z == 0) {\n" << walk(keyRole(true, !split, true)) << "  }\n";
    if (split)
      os << "  if (blockIdx.z == 1) {\n" << walk(keyRole(false, true, false)) << "  }\n";
    os << "}\n\n";
    // dQ = scale x the splits' partial sums, in split order; split s has
    // written the rows from its first key tile's first query on.
    os << header(s, name, 256) << " {\n"
       << "  const i64 e = ((i64)blockIdx.x * 256 + threadIdx.x) * 2;\n"
       << "  if (e >= " << L(g.batch * g.sq * D) << ") return;\n"
       << "  const i64 b = e / " << L(g.sq * D) << ", i = e / " << L(D) << " % "
       << L(g.sq) << ";\n"
       << "  const int c = (int)(e % " << L(D) << ");\n"
       << "  const float *part = (const float *)scratch;\n"
       << "  float x = 0.0f, y = 0.0f;\n"
       << "  for (i64 sp = 0; sp < " << L(splits) << "; ++sp) {\n"
       << "    if (i < " << firstQueries("sp") << ") continue;\n"
       << "    float v[2];\n    ldv<2>(part + ((sp * " << L(g.batch)
       << " + b) * " << L(g.sq) << " + i) * " << L(D) << " + c, v);\n"
       << "    x += v[0];\n    y += v[1];\n  }\n"
       << "  st(out0, " << at("out0", "i") << " + c, " << scale << " * x);\n"
       << "  st(out0, " << at("out0", "i") << " + c + 1, " << scale << " * y);\n"
       << "}\n\n";
    cu << os.str();
    barrier = true;
    launch(s, name + "_keys", {g.batch, splits, split ? 2 : 1}, {kThreads, 1, 1},
           /*prologue=*/true);
    launch(s, name, {(g.batch * g.sq * D / 2 + 255) / 256, 1, 1}, {256, 1, 1});
    countFlops(2.0 * g.batch * g.sq * g.skv * gemms * (causal ? 0.5 : 1.0), true);
    return;
  }

  // The query role's factors z[n][f]: a lane's pairs run along keys, a
  // draw a pair when the keys are even in number.
  std::string queryZ;
  if (drop.on)
    queryZ = "    float z[" + std::to_string(TK / 8) + "][4];\n" +
             forKeepPairs(drop, g, TK,
                          "        z[n][2 * h] = keep[0] ? " + flt(drop.draw.scale) +
                              " : 0.0f;\n        z[n][2 * h + 1] = keep[1] ? " +
                              flt(drop.draw.scale) + " : 0.0f;\n");
  s.cuda.scratch = ::mpc::rt::attentionRowDBytes(g.batch, g.sq);
  std::ostringstream os;
  os << header(s, name + "_rowd", 256) << " {\n" << rowDPrologue << "}\n\n";
  cu << os.str();
  os.str("");
  barrier = true; // D's lanes meet in shuffles
  launch(s, name + "_rowd", {rowDBlocks, 1, 1}, {256, 1, 1}, /*prologue=*/true);
  os << kernelHead(name, false)
     << "  if (blockIdx.z == 0) {\n    const i64 kb = job;\n"
     << "    if (kb * " << L(kRows) << " >= " << L(g.skv) << ") return;\n"
     << (pairs ? pairsKeyRole(false) : keyRole(true, !split, false))
     << "    return;\n  }\n"
     << (split ? "  if (blockIdx.z == 2) {\n    const i64 kb = job;\n    if (kb * " +
                     L(kRows) + " >= " + L(g.skv) + ") return;\n" +
                     keyRole(false, true, false) + "    return;\n  }\n"
               : std::string())
     << "  // dQ for 64 queries: rows are queries, the last block first.\n"
     << "  const i64 qb = (i64)gridDim.y - 1 - job;\n"
     << "  if (qb * " << L(kQueryRows) << " >= " << L(g.sq) << ") return;\n"
     << "  const i64 w0 = qb * " << L(kQueryRows) << " + (threadIdx.x / 32) * 16;\n"
     << "  const i64 rows[2] = {w0 + g, w0 + g + 8};\n"
     << fragments("qf", "in1", D, g.sq, {}) << fragments("of", "in0", DV, g.sq, {})
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
  std::string jEnd = causal ? "(qb * " + L(QR) + " + " + L(QR + off) +
                                  " < " + L(g.skv) + " ? qb * " + L(QR) +
                                  " + " + L(QR + off) + " : " + L(g.skv) + ")"
                            : L(g.skv);
  std::ostringstream body;
  body << pairsAlongCols(T, "sc", "qf", "ta_", P, D, TK)
     << pairsAlongCols(T, "dp", "of", "tb_", PV, DV, TK)
     << queryZ;
  auto derivatives = [&](const std::string &scoreOf,
                         const std::string &bounds = "") {
    return bounds + "#pragma unroll\n      for (int n = 0; n < " + std::to_string(TK / 8) +
           "; ++n)\n#pragma unroll\n      for (int f = 0; f < 4; ++f) {\n"
           "        const i64 i = rows[f >> 1], j = j0 + n * 8 + 2 * t + (f & 1);\n"
           "        const float acc = sc[n][f], lse = rl[f >> 1];\n"
           "        " + scoreOf + "\n        " + prob + "\n" +
           (drop.on ? "        dp[n][f] = p * (dp[n][f] * z[n][f] - rd[f >> 1]);\n      }\n"
                    : "        dp[n][f] = p * (dp[n][f] - rd[f >> 1]);\n      }\n");
  };
  // A tile whose every key all the warp's queries see skips the mask,
  // but for an additive mask, as in the key role (two copies of its loads
  // took 8 bytes of stack at head size 64).
  if (hasBias)
    body << derivatives(score(queryVisible), queryVisible.bounds);
  else
    body << "    const bool full = " << unmaskedTile(g, causal, "w0", 16, "j0", TK)
         << ";\n    if (full) {\n" << derivatives(unmasked) << "    } else {\n"
         << derivatives(score(queryVisible), queryVisible.bounds) << "    }\n";
  body << packA(T, "ds", "dp", TK)
     << pairsAlongRows(T, "dq", "ds", "ta_", P, TK / 16, D);
  os << "  const i64 jEnd = " << jEnd << ";\n"
     << tileLoop("j0", "0LL", "jEnd", g.skv, TK, "in2", D, "in3", DV, "", body.str())
     << store("out0", "dq", D, g.sq, scale + " * ", {}, "")
     << "}\n\n";
  cu << os.str();
  barrier = true;
  int64_t blocks = std::max((g.sq + QR - 1) / QR, keyTiles);
  launch(s, name, {g.batch, blocks, split ? 3 : 2}, {kThreads, 1, 1});
  countFlops(2.0 * g.batch * g.sq * g.skv * gemms * (causal ? 0.5 : 1.0), true);
}

} // namespace mlir::mpc::cuda
