//===- CudaAttentionKeyBlocks.cpp - the attention backward's key blocks ---===//
//
// The code of the mma.sync backward's key blocks (CudaAttentionGrad.h):
// the two layouts' key roles, which accumulate dK and dV over the
// queries that see their keys, the probabilities they recompute, and the
// tiles of Q and dO they stream (whose loop the query blocks share).
//
//===----------------------------------------------------------------------===//

#include "codegen/CudaAttentionGrad.h"

#include <sstream>

namespace mlir::mpc::cuda {

namespace {
constexpr auto &L = i64Lit;
} // namespace

// dd += the quarter `part` (0-3) of the dot product of dO's and y's
// row `i`: runs of 8 elements, 16-byte loads (rows are 16-byte aligned:
// head sizes are multiples of 8).
std::string AttentionGrad::rowDot(const std::string &indent,
                                  const std::string &part,
                                  const std::string &i) {
  return indent + "for (int c = " + part + " * 8; c < " + std::to_string(g.dvData) +
         "; c += 32) {\n" + indent + "  float a[8], y[8];\n" + indent +
         "  ldv<8>(in0 + " + at("in0", i) + " + c, a);\n" + indent +
         "  ldv<8>(in4 + " + at("in4", i) + " + c, y);\n" + indent +
         "  for (int e = 0; e < 8; ++e) dd += a[e] * y[e];\n" + indent + "}\n";
}

// asyncTile over this kernel's threads, rows of operand `src`.
std::string AttentionGrad::loadTile(const std::string &dst, int64_t pitch,
                                    const std::string &src, int64_t width,
                                    int64_t rows, const std::string &first,
                                    int64_t limit) {
  return asyncTile(dst, pitch, src, at(src, first + " + r"),
                   e.operandRowStride(s, src), width,
                   e.operandRowWidth(s, src), rows, first, limit, kThreads);
}

// The loop over tiles `var` from `start` below `end`, `rows` rows a tile
// of `a` (width aw) and `b` (width bw) from their buffers `ta` and `tb`
// (bufA and bufB elements each, two of them); `body` computes on ta_ and
// tb_, the current buffers, after `between` (run while the tile's copies
// are in flight).
std::string AttentionGrad::tileLoop(const std::string &var,
                                    const std::string &start,
                                    const std::string &end, int64_t limit,
                                    int64_t rows, const std::string &a,
                                    int64_t aw, const std::string &b,
                                    int64_t bw, const std::string &between,
                                    const std::string &body) {
  std::string next = var + " + " + L(rows), first = var + "First";
  std::ostringstream os;
  if (g.group > 1 && var == "q0")
    return headTileLoop(start, end, limit, rows, a, aw, b, bw, between, body);
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
}

// Key tile kb of K or V (`src`) into the shared tile `dst`, in the first
// query tile's copies.
std::string AttentionGrad::keyTile(const std::string &dst, int64_t pitch,
                                   const std::string &src, int64_t width) {
  return asyncTile(dst, pitch, src, at(src, "kb * " + L(kRows) + " + r"),
                   e.operandRowStride(s, src), width,
                   e.operandRowWidth(s, src), kRows, "kb * " + L(kRows), g.skv,
                   kThreads);
}

// A fragments of 16 rows of a [rows, width] global operand (`tiles`
// of them: rows[mt]).
std::string AttentionGrad::fragments(const std::string &frag,
                                     const std::string &src, int64_t width,
                                     int64_t limit, RowTiles tiles) {
  return rowFragments("    ", frag, src, at(src, "r"), width,
                      e.operandRowWidth(s, src), limit, tiles);
}

// Stores the accumulators `acc` of rows rows[..] (row tiles `tiles`),
// `width` columns from `col` (an expression and " + ", or empty) on, those
// in the operand's rows (the rest: its head size rounded up).
std::string AttentionGrad::store(const std::string &out, const std::string &acc,
                                 int64_t width, int64_t limit,
                                 const std::string &factor, RowTiles tiles,
                                 const std::string &col) {
  std::string r = "rows" + tiles.at() + "[h]";
  const int64_t data = e.operandRowWidth(s, out);
  std::ostringstream body;
  body << "    for (int h = 0; h < 2; ++h) {\n"
       << "      if (" << r << " >= " << L(limit) << ") continue;\n"
       << "      for (int n = 0; n < " << width / 8 << "; ++n)\n";
  if (data % 16) // rounded up (mmaDims): no columns past the row
    body << "        for (int e = 0; e < 2 && " << col << "n * 8 < " << data
         << "; ++e)\n";
  else
    body << "        for (int e = 0; e < 2; ++e)\n";
  body
       << "          st(" << out << ", " << at(out, r) << " + " << col << "n * 8 + 2 * t + e, "
       << factor << acc << tiles.at() << "[n][2 * h + e]);\n    }\n";
  return tiles.each("    ", body.str());
}

// The first query tile that sees key tile `kb` (causal: none before;
// the band's end: query i sees key j from i = j - off + lo).
std::string AttentionGrad::firstQueries(const std::string &kb) {
  std::string first = kb + " * " + L(kRows) + " - " + L(off - g.band.lo);
  return causal ? "(" + first + " > 0 ? (" + first + ") / " + L(TQ) + " * " +
                      L(TQ) + " : 0LL)"
                : std::string("0LL");
}

// The end of the queries that see key tile `kb`: Sq, or under a left
// window the one past the last that sees its last key (i = j - off + hi).
std::string AttentionGrad::endQueries(const std::string &kb) {
  if (!g.band.boundsStart())
    return L(g.sq);
  std::string end = "(" + kb + " + 1) * " + L(kRows) + " + " + L(g.band.hi - off);
  return "(" + end + " < " + L(g.sq) + " ? " + end + " : " + L(g.sq) + ")";
}

// Grouped-query attention: a key role's K and V head (blockIdx.x) serves
// `group` q heads, b its first (K, V, dK and dV rows are at b / group).
std::string AttentionGrad::firstHead() {
  return g.group > 1 ? "    const i64 b = (i64)blockIdx.x * " + L(g.group) + ";\n"
                     : std::string();
}

// tileLoop over the query tiles of each q head a key role's K and V head
// serves (grouped-query attention), as one loop: after a head's last tile
// the next head's first (b, shadowing the role's, counts the heads), so
// the next head's first tile is copied while the warps work on this
// head's last. Counters, not divisions: the 8-warp key blocks' registers
// are full.
std::string AttentionGrad::headTileLoop(const std::string &start,
                                        const std::string &end, int64_t limit,
                                        int64_t rows, const std::string &a,
                                        int64_t aw, const std::string &b,
                                        int64_t bw, const std::string &between,
                                        const std::string &body) {
  auto load = [&](bool other) {
    const std::string buffer = other ? " + (buf ^ 1) * " : "";
    return loadTile("ta" + (other ? buffer + std::to_string(bufA) : ""), P, a, aw,
                    rows, "q0", limit) +
           loadTile("tb" + (other ? buffer + std::to_string(bufB) : ""), PV, b, bw,
                    rows, "q0", limit);
  };
  std::ostringstream os;
  // (32-bit counters: every product with them has a 64-bit literal.)
  const std::string G = std::to_string(g.group);
  os << "    {\n    int buf = 0;\n    const int q0First = (int)" << start
     << ", q0End = (int)" << end << ", bEnd = (int)blockIdx.x * " << G << " + " << G
     << ";\n    int b = (int)blockIdx.x * " << G << ", q0 = q0First;\n"
     << "    if (q0First < q0End) {\n" << load(false) << "    }\n"
     << "    mpc_cp_async_commit();\n"
     << "    for (; q0First < q0End && b < bEnd; buf ^= 1) {\n"
     << "      int nextB = b, nextQ = q0 + " << rows << ";\n"
     << "      if (nextQ >= q0End) nextQ = q0First, ++nextB;\n"
     // Every warp is done with the other buffer (the tile before).
     << "      __syncthreads();\n"
     << "      if (nextB < bEnd) {\n        const int b = nextB, q0 = nextQ;\n"
     << load(true) << "      }\n"
     << "      mpc_cp_async_commit();\n"
     << between
     << "      mpc_cp_async_wait<1>();\n      __syncthreads();\n"
     << "      const " << T << " *ta_ = ta + buf * " << bufA << ", *tb_ = tb + buf * "
     << bufB << ";\n"
     << body << "      b = nextB, q0 = nextQ;\n    }\n    }\n";
  return os.str();
}

// The key roles' accumulators, zeroed: acc[KT][width / 8][4].
std::string AttentionGrad::zeros(const std::string &acc, int64_t width) {
  return "    float " + acc + "[" + std::to_string(KT) + "][" +
         std::to_string(width / 8) + "][4];\n    for (int mt = 0; mt < " +
         std::to_string(KT) + "; ++mt) for (int n = 0; n < " +
         std::to_string(width / 8) + "; ++n) for (int f = 0; f < 4; ++f) " + acc +
         "[mt][n][f] = 0.0f;\n";
}

// D and lse of the tile's queries, while the tile's copies land: D from
// the prologue's (rowDFromScratch), else 4 consecutive lanes a query, 8
// elements of the row a 16-byte load (every fourth such run each),
// combined by shuffles.
std::string AttentionGrad::rowStats(bool wantK) {
  if (compact) // each lane its own queries' (qlse, qd: [n][column's parity])
    return "      float qlse[" + std::to_string(TQ / 8) + "][2], qd[" +
           std::to_string(TQ / 8) + "][2];\n#pragma unroll\n      for (int n = 0; n < " +
           std::to_string(TQ / 8) + "; ++n)\n#pragma unroll\n" +
           "      for (int e = 0; e < 2; ++e) {\n" +
           "        const i64 i = q0 + n * 8 + 2 * t + e;\n" +
           "        qlse[n][e] = i < " + L(g.sq) + " ? mpc_lse2(ld(in5, b * " + L(g.sq) +
           " + i)) : 0.0f;\n        qd[n][e] = " +
           (wantK ? "i < " + L(g.sq) + " ? " + rowDs + "[b * " + L(g.sq) + " + i] : 0.0f"
                  : std::string("0.0f")) +
           ";\n      }\n";
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
}

// P^T and dS^T (with `wantK`) in place of the scores st and dpt of a
// warp's `cols` queries from qw0 on (the tile's from qr on); a tile
// whose every key all the warp's queries see skips the mask (as the
// forward's), but for an additive mask (whose loads the key role at
// head size 64 has no registers left to run twice over: 32 bytes of
// stack on sm_90).
std::string AttentionGrad::keyProbabilities(bool wantK, int64_t cols) {
  // with_scores_grad under a softcap: dS before the cap's slope, stored
  // here (::st: the role names its scores st); else from the packed dS^T
  // (scoresGradFromPacked).
  const std::string scoresGrad =
      wantsScoresGrad() && !packedScoresGrad()
          ? "        if (i < " + L(g.sq) + " && j < " + L(g.skv) + ") ::st(out3, " +
                scoresGradIndex(g, "b", "i", "j") + ", ds);\n"
          : std::string();
  auto probabilities = [&](const std::string &scoreOf, const std::string &bounds) {
    const std::string q = "qr + n * 8 + 2 * t + (f & 1)",
                      lse = compact ? "qlse[n][f & 1]" : "rowLse[" + q + "]",
                      rowD = compact ? "qd[n][f & 1]" : "rowD[" + q + "]";
    return bounds + "#pragma unroll\n      for (int mt = 0; mt < " + std::to_string(KT) +
           "; ++mt)\n#pragma unroll\n      for (int n = 0; n < " +
           std::to_string(cols / 8) + "; ++n) {\n" + keyWords +
           "#pragma unroll\n      for (int f = 0; f < 4; ++f) {\n"
           "        const i64 j = rows[mt][f >> 1], i = qw0 + n * 8 + 2 * t + (f & 1);\n"
           "        const float acc = st[mt][n][f], lse = " + lse + ";\n"
           "        " + scoreOf + "\n        " + prob + "\n" + keyZ +
           (drop.on ? "        st[mt][n][f] = z != 0.0f ? p : 0.0f;\n"
                    : "        st[mt][n][f] = p;\n") +
           (wantK ? "        const float ds = p * (dpt[mt][n][f]" +
                        std::string(drop.on ? " * z" : "") + " - " + rowD + ");\n" +
                        scoresGrad + "        dpt[mt][n][f] = ds" + slope + ";\n"
                  : "") +
           "      }\n      }\n";
  };
  if (hasBias)
    return probabilities(score(keyVisible), keyVisible.bounds);
  return "    const bool full = " + unmaskedTile(g, "qw0", cols, "w0", 16 * KT) +
         ";\n    if (full) {\n" + probabilities(unmasked, "") + "    } else {\n" +
         probabilities(score(keyVisible), keyVisible.bounds) + "    }\n";
}

// with_scores_grad (no softcap): the warp's dS^T, packed for dK's
// product (`frag`: rows[mt] keys x `cols` queries from qw0, packA's
// layout, dS rounded to q's type as dS [.., Sq, Skv] holds it), to dS:
// after the pack the FP32 scores are dead, so the stores cost the loop
// no registers (in the loop they spilled at head size 64).
std::string AttentionGrad::scoresGradFromPacked(const std::string &frag,
                                                int64_t cols) {
  if (!wantsScoresGrad() || !packedScoresGrad())
    return "";
  return keyTilesOfWarp.each(
      "    ", "    for (int kt = 0; kt < " + std::to_string(cols / 16) +
                 "; ++kt)\n      for (int f = 0; f < 4; ++f) {\n" +
                 "        const i64 j = rows[mt][f & 1], i = qw0 + kt * 16 + 2 * t + (f >> 1) * 8;\n" +
                 "        if (j < " + L(g.skv) + ")\n          mpc_st_pair(out3 + " +
                 scoresGradIndex(g, "b", "i", "j") + ", " + L(g.skv) + ", " + frag +
                 "[mt][kt][f], i < " + L(g.sq) + ", i + 1 < " + L(g.sq) + ");\n      }\n");
}

// A key role: the kRows keys of tile `kb` (rows are keys), accumulating dK
// and/or dV over the queries that see them, and with `withDq` adding
// their part of dQ to the partial sums.
std::string AttentionGrad::keyRole(bool wantK, bool wantV, bool withDq) {
  std::ostringstream os;
  os << "    // " << (wantK && wantV ? "dK and dV" : wantK ? "dK" : "dV")
     << (withDq ? " and dQ's part" : "") << " for " << kRows
     << " keys: rows are keys.\n" << firstHead()
     << "    const i64 w0 = kb * " << L(kRows) << " + (threadIdx.x / 32) * " << 16 * KT
     << ";\n"
     << "    i64 rows[" << KT << "][2];\n"
     << "    for (int mt = 0; mt < " << KT << "; ++mt)\n"
     << "      rows[mt][0] = w0 + mt * 16 + g, rows[mt][1] = w0 + mt * 16 + g + 8;\n";
  // K's tile for dS K (and V's where their fragments come from shared
  // memory), in the first query tile's copies.
  if (withDq || kvShared)
    os << keyTile("ks", P, "in2", D);
  if (kvShared) {
    if (wantK) // (dV's role needs no dP^T)
      os << keyTile("vs", PV, "in3", DV);
  } else {
    os << fragments("kf", "in2", D, g.skv, keyTilesOfWarp)
       << (wantK ? fragments("vf", "in3", DV, g.skv, keyTilesOfWarp) : std::string());
  }
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
         << (wantK ? sharedAPairsAlongCols(T, "dpt",
                                           "vs + (threadIdx.x / 32) * " +
                                               std::to_string(16 * KT * PV),
                                           PV, "tb_", PV, DV, TQ, kt)
                   : std::string());
  else
    body << pairsAlongCols(T, "st", "kf", "ta_", P, D, TQ, kt)
         << (wantK ? pairsAlongCols(T, "dpt", "vf", "tb_", PV, DV, TQ, kt)
                   : std::string());
  body << keyProbabilities(wantK, TQ);
  if (wantV)
    body << packA(T, "pt", "st", TQ, kt)
         << pairsAlongRows(T, "dv", "pt", "tb_", PV, TQ / 16, DV, kt);
  if (wantK)
    body << packA(T, "dst", "dpt", TQ, kt) << scoresGradFromPacked("dst", TQ)
         << pairsAlongRows(T, "dk", "dst", "ta_", P, TQ / 16, D, kt);
  if (withDq)
    body << keyBlockDq(g, T, KT, TQ, kRows, atomic);
  os << tileLoop("q0", firstQueries("kb"), endQueries("kb"), g.sq, TQ, "in1", D,
                 "in0", DV, rowStats(wantK), body.str());
  if (wantK)
    os << store("out1", "dk", D, g.skv, scale + " * ", kt, "");
  if (wantV)
    os << store("out2", "dv", DV, g.skv,
                drop.on ? flt(drop.draw.scale) + " * " : std::string(), kt, "");
  return os.str();
}

// The pairs layout's key role (FlashAttention-2's): 128 keys, warp w
// computes S^T and dP^T for keys kw = w / 2 (32) and queries half = w %
// 2 (32) of the tile's 64, writes P^T and dS^T (the operand type) to
// shared memory, and after a barrier accumulates dV and dK for its 32
// keys and half of the head from all 64 queries; with `withDq` (atomic)
// the warps add dS K for the tile's queries to dQ's FP32 sums. With one
// buffer for P^T and dS^T, dS^T replaces P^T once dV is done.
std::string AttentionGrad::pairsKeyRole(bool withDq) {
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
     << " for 128 keys, FlashAttention-2's layout: rows are keys.\n" << firstHead()
     << "    const int kw = threadIdx.x / 64, half = threadIdx.x / 32 % 2;\n"
     << "    const i64 w0 = kb * " << L(kRows) << " + kw * 32;\n"
     << "    i64 rows[2][2];\n    for (int mt = 0; mt < 2; ++mt)\n"
     << "      rows[mt][0] = w0 + mt * 16 + g, rows[mt][1] = w0 + mt * 16 + g + 8;\n"
     << keyTile("ks", P, "in2", D) << keyTile("vs", PV, "in3", DV)
     << zeros("dk", HD) << zeros("dv", HV);
  std::ostringstream body;
  body << "      const i64 qw0 = q0 + half * 32;\n      const int qr = half * 32;\n"
       << sharedAPairsAlongCols(T, "st", "ks + kw * " + std::to_string(32 * P), P,
                                "ta_ + half * " + std::to_string(32 * P), P, D, 32, kt)
       << sharedAPairsAlongCols(T, "dpt", "vs + kw * " + std::to_string(32 * PV), PV,
                                "tb_ + half * " + std::to_string(32 * PV), PV, DV, 32, kt)
       << keyProbabilities(true, 32) << packA(T, "pp", "st", 32, kt)
       << packA(T, "dsp", "dpt", 32, kt) << scoresGradFromPacked("dsp", 32)
       << toShared("pts", "pp")
       << (probBuffers == 2 ? toShared("dss", "dsp") : std::string())
       << "    __syncthreads();\n"
       << product("dv", "pts", "tb_", PV, HV);
  if (probBuffers == 1)
    body << "    __syncthreads(); // every warp is done with P^T\n"
         << toShared("pts", "dsp") << "    __syncthreads();\n";
  body << product("dk", dsAt, "ta_", P, HD);
  if (withDq)
    body << pairsDq(g, T, dsAt, TQ, kRows);
  os << tileLoop("q0", firstQueries("kb"), endQueries("kb"), g.sq, TQ, "in1", D,
                 "in0", DV, rowStats(true), body.str())
     << store("out1", "dk", HD, g.skv, scale + " * ", kt, "half * " + L(HD) + " + ")
     << store("out2", "dv", HV, g.skv,
              drop.on ? flt(drop.draw.scale) + " * " : std::string(), kt,
              "half * " + L(HV) + " + ");
  return os.str();
}

} // namespace mlir::mpc::cuda
