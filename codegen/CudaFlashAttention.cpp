//===- CudaFlashAttention.cpp - attention on mma.sync, FlashAttention-2 ---===//
//
// The tensor-core attention kernels for fp16/bf16 with head sizes that are
// multiples of 8 up to 256 (computed on them rounded up to 16, zero past
// the operands' rows: mmaDims): the forward and the backward keep their
// accumulators in registers in mma.sync's m16n8k16 layout (mma_16816 in
// the prelude), as FlashAttention-2 does (the backward:
// CudaFlashAttentionGrad.cpp). CudaAttentionKernels.cpp picks them.
//
//===----------------------------------------------------------------------===//

#include "codegen/CudaMmaTiles.h"

#include <algorithm>
#include <sstream>

namespace mlir::mpc::cuda {

/// Bytes of the forward's K and V tiles of `keys` keys: two of each (the
/// next one loading while the warps work on this one), rows padded by 8
/// elements (no bank conflicts in the fragment loads).
static int64_t mmaTileBytes(const Dims &g, int64_t keys) {
  return 2 * keys * (g.d + 8 + g.dv + 8) * 2;
}

/// Bytes of Q's tile where the warps read their Q fragments from shared
/// memory: the block's `rows` rows, padded as K's.
static int64_t queryTileBytes(const Dims &g, int64_t rows) {
  return rows * (g.d + 8) * 2;
}

/// The forward's tiles (head sizes multiples of 16, as mmaDims rounds
/// them, at most 256: the accumulators live in registers). Two row tiles
/// of 16 a warp (32 rows, as FlashAttention-2's forward: each K and V
/// fragment read from shared memory feeds two mma.sync, and each tile
/// copied feeds 128 query rows):
/// up to head size 64 with Q's fragments in registers (236-248 registers
/// a thread at 64, no local memory); beyond, the registers hold two
/// tiles' O accumulators only with Q's fragments read from a shared tile
/// (FlashAttention-2 keeps Q there too), on 32-key tiles (at 64 two row
/// tiles' scores need more than 255 registers: 40 bytes of stack at head
/// size 128), where Q's tile fits beside K's and V's (68 KiB at head size
/// 128); else one row tile, Q in registers. Keys a tile otherwise: 64
/// (FlashAttention-2's at head sizes 64-128: the row statistics, the O
/// rescale and the barriers once per 64 keys) where they fit, fewer where
/// not. Blocks of 64 rows (`rows`) keep one row tile a warp, Q in
/// registers. Past head size 128 (wideHeads: O alone takes up to 128
/// registers), one row tile a warp with Q's fragments from a 64-row
/// shared tile, on 64 keys where the tiles fit (FlashAttention-2's at
/// 256 on sm_80: 4 warps, 64 x 64), else 32 or 16.
MmaForwardTiles mmaForwardTiles(const Dims &g, int64_t sharedBytes,
                                int64_t rows) {
  if (g.d % 16 || g.dv % 16 || g.d > 256 || g.dv > 256)
    return {};
  if (wideHeads(g)) {
    for (int64_t keys : {64, 32, 16})
      if (mmaTileBytes(g, keys) + queryTileBytes(g, 64) <= sharedBytes)
        return {keys, 1, true};
    return {};
  }
  const bool wide = g.d > 64 || g.dv > 64, narrow = rows == 64;
  if (wide && !narrow &&
      mmaTileBytes(g, 32) + queryTileBytes(g, 128) <= sharedBytes)
    return {32, 2, true};
  for (int64_t keys : {64, 32, 16})
    if (mmaTileBytes(g, keys) <= sharedBytes)
      return {keys, wide || narrow ? 1 : 2, false};
  return {};
}


// Dropout on the forward's probabilities `sc` (of `mtiles` row tiles):
// dropped ones become 0, after the row sums counted them.
static std::string dropP(const AttentionDropout &drop, const Dims &g,
                         int64_t cols, int64_t mtiles) {
  if (!drop.on)
    return "";
  return "#pragma unroll\n    for (int mt = 0; mt < " +
         std::to_string(mtiles) + "; ++mt) {\n" +
         forKeepPairs(drop, g, cols,
                      "        if (!keep[0]) sc[mt][n][2 * h] = 0.0f;\n"
                      "        if (!keep[1]) sc[mt][n][2 * h + 1] = 0.0f;\n",
                      "rows[mt]") +
         "    }\n";
}

/// y and lse as FlashAttention-2 computes them: a block of 4 warps, 16 or
/// 32 query rows each (`layout`: tiles mt of 16 rows); the warp's
/// Q fragments (or Q's tile in shared memory), scores, probabilities and O
/// accumulators stay in registers in mma.sync's m16n8k16 layout (lane = 4g
/// + t holds rows g and g+8), so the row max and sum need only shuffles
/// among the 4 lanes of a quad, the rescale by exp(m_old - m_new) is a
/// multiply of the lane's own accumulators, and P feeds the second product
/// straight from the first one's accumulators (rounded to the operand
/// type, as FlashAttention does). K and V stream through shared memory
/// `keys` at a time, copied by cp.async 16 bytes at a time into one of two
/// buffers while the warps compute on the other (rows past the end
/// zero-filled); causal blocks stop at the last key any of their rows
/// sees, sliding windows' start at the tile of the first.
void Emitter::attentionMma(Step &s, const std::string &name,
                           const MmaForwardTiles &layout) {
  Dims g = mmaDims(stepDims(s, val(s.inputs[0]).shape, val(s.inputs[1]).shape,
                            val(s.inputs[2]).shape));
  bool hasBias = s.inputs.size() > 3 && s.inputs[3] >= 0;
  // Causal (a band bounding the keys' end alone): the blocks with the
  // most keys come last in the sequence and start first.
  const ::mpc::rt::AttentionBand &band = g.band;
  const bool longestLast = band.boundsEnd() && !band.boundsStart();
  bool zeroMasked = s.getInt("zero_masked_rows", 0) != 0;
  AttentionDropout drop(*this, s, g, 4);
  std::string T = ctype(val(s.inputs[0]).dtype);
  const int64_t TK = layout.keys, D = g.d, DV = g.dv, KS = D + 8, VS = DV + 8;
  const int64_t MT = layout.rowTiles;
  const RowTiles tiles{MT};
  constexpr int64_t kWarps = 4;
  const int64_t kRows = kWarps * 16 * MT;
  auto &L = i64Lit;
  auto at = [&](const std::string &operand, const std::string &row) {
    return operandRow(s, operand, row);
  };
  std::ostringstream os;
  // K and V tiles (and Q's) in dynamic shared memory.
  sharedBytes =
      mmaTileBytes(g, TK) + (layout.sharedQ ? queryTileBytes(g, kRows) : 0);
  // Two blocks an SM asked for (no register limit below 255): ptxas
  // otherwise held this kernel to 32 registers on sm_80 and spilled.
  // Blocks of 64 rows up to head size 64 ask for three (168 registers:
  // asked for two, ptxas took 169, one over three blocks' share).
  const bool threeBlocks = MT == 1 && g.d <= 64 && g.dv <= 64;
  os << header(s, name, kWarps * 32, threeBlocks ? 3 : 2) << " {\n"
     << "  " << T << " *const ks = (" << T << " *)mpc_dynamic_smem(), *const vs = ks + "
     << 2 * TK * KS << (layout.sharedQ ? ", *const qs = vs + " + std::to_string(2 * TK * VS)
                                  : std::string())
     << ";\n"
     << "  const int lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;\n"
     // Heads along x, query blocks along y: the GPU starts blocks in
     // linear order (x fastest), so causal blocks with the most keys
     // (the last queries) start first over all heads and the last wave
     // holds the shortest: longest-processing-time order, as
     // FlashAttention-3 schedules causal tiles. Head by head, each head's
     // longest blocks would wait for the last wave (causal 2 x 12 x 4096:
     // 1.26x the time by a model of the block scheduler).
     << "  const i64 b = blockIdx.x, i0 = (i64)"
     << (longestLast ? "(gridDim.y - 1 - blockIdx.y)" : "blockIdx.y") << " * " << L(kRows)
     << ", w0 = i0 + (threadIdx.x / 32) * " << 16 * MT << ";\n"
     << "  i64 rows[" << MT << "][2];\n"
     << "  for (int mt = 0; mt < " << MT << "; ++mt)\n"
     << "    rows[mt][0] = w0 + mt * 16 + g, rows[mt][1] = w0 + mt * 16 + g + 8;\n"
     // Q fragments: row r's pair at column c (zero past the last row),
     // or Q's tile, copied with the first K and V tiles.
     << (layout.sharedQ ? asyncTile("qs", KS, "in0", at("in0", "i0 + r"),
                                    operandRowStride(s, "in0"), D, g.dData, kRows,
                                    "i0", g.sq, kWarps * 32)
                   : rowFragments("  ", "qf", "in0", at("in0", "r"), D, g.dData,
                                  g.sq, tiles))
     << "  float o[" << MT << "][" << DV / 8 << "][4], m[" << MT << "][2], l["
     << MT << "][2];\n"
     << "  for (int mt = 0; mt < " << MT << "; ++mt) {\n"
     << "    for (int n = 0; n < " << DV / 8
     << "; ++n) for (int f = 0; f < 4; ++f) o[mt][n][f] = 0.0f;\n"
     << "    for (int h = 0; h < 2; ++h) m[mt][h] = -INFINITY, l[mt][h] = 0.0f;\n"
     << "  }\n";
  // The block's keys: up to the last row's last (the band's end), from
  // the tile holding the first row's first (a left window's start).
  const int64_t endAt = kRows + g.band.off - band.lo, startAt = g.band.off - band.hi;
  std::string jEnd = band.boundsEnd()
                         ? "(i0 + " + L(endAt) + " < " + L(g.skv) + " ? i0 + " +
                               L(endAt) + " : " + L(g.skv) + ")"
                         : L(g.skv);
  std::string jStart =
      band.boundsStart() ? "(i0 + " + L(startAt) + " > 0 ? (i0 + " + L(startAt) +
                               ") / " + L(TK) + " * " + L(TK) + " : 0LL)"
                         : "0LL";
  os << "  const i64 jEnd = " << jEnd << ", jStart = " << jStart << ";\n"
     // The tile of keys from j0 into buffer `buf`: 8 elements of a row a
     // copy, zero past the end.
     << "  auto tile = [&](int buf, i64 j0) {\n"
     << asyncTile("ks + buf * " + std::to_string(TK * KS), KS, "in1",
                  at("in1", "j0 + r"), operandRowStride(s, "in1"), D, g.dData, TK,
                  "j0", g.skv, kWarps * 32)
     << asyncTile("vs + buf * " + std::to_string(TK * VS), VS, "in2",
                  at("in2", "j0 + r"), operandRowStride(s, "in2"), DV, g.dvData,
                  TK, "j0", g.skv, kWarps * 32)
     << "  };\n"
     << "  tile(0, jStart);\n  mpc_cp_async_commit();\n  int buf = 0;\n"
     << "  for (i64 j0 = jStart; j0 < jEnd; j0 += " << L(TK) << ", buf ^= 1) {\n"
     // The next tile into the other buffer, then wait for this one only.
     << "    if (j0 + " << L(TK) << " < jEnd) tile(buf ^ 1, j0 + " << L(TK) << ");\n"
     << "    mpc_cp_async_commit();\n    mpc_cp_async_wait<1>();\n"
     << "    __syncthreads();\n"
     << "    const " << T << " *kt_ = ks + buf * " << TK * KS << ", *vt_ = vs + buf * "
     << TK * VS << ";\n"
     // S = Q K^T: B(k, n) = K[key n][dim k], a pair along dims.
     << (layout.sharedQ ? sharedAPairsAlongCols(T, "sc", "qs + (threadIdx.x / 32) * " +
                                                      std::to_string(16 * MT * KS),
                                           KS, "kt_", KS, D, TK, tiles)
                   : pairsAlongCols(T, "sc", "qf", "kt_", KS, D, TK, tiles));
  // The exponentials are 2^x on the SFU (mpc_exp2), as FlashAttention-2's.
  // Without a bias and with a positive scale the scores stay raw, as
  // there: the running max m over raw scores, and p = 2^(s mult - m mult)
  // with mult = scale log2(e), one FFMA (the -fmad=false build contracts
  // nothing itself) and the SFU a score. Else the scores are in log2 units
  // from the start (scale log2(e) and the bias times log2(e) folded in,
  // mult 1). lse = m mult ln 2 + log(l) at the end.
  // A softcap c: c tanh(scale s / c) (tanh on the SFU, mpc_tanh_approx, as
  // FlashAttention-2's), in log2 units.
  const double log2e = 1.4426950408889634, scaleValue = s.getFloat("scale", 1.0),
               softcap = s.getFloat("softcap", 0.0);
  const bool raw = !hasBias && scaleValue > 0 && softcap <= 0.0;
  const std::string mult = flt((float)(raw ? scaleValue * log2e : 1.0));
  std::string scaled =
      raw ? "sc[mt][n][f]"
      : softcap > 0.0 ? flt((float)(softcap * log2e)) + " * mpc_tanh_approx(" +
                            flt((float)(scaleValue / softcap)) + " * sc[mt][n][f])"
                      : flt((float)(scaleValue * log2e)) + " * sc[mt][n][f]";
  // 2^(x mult - ms): ms, a row's max times mult, or 0 for a row with no
  // score seen yet, so that a masked score's -inf gives 0 with no select.
  auto exp2Of = [&](const std::string &x, const std::string &ms) {
    return raw ? "mpc_exp2(fmaf(" + x + ", " + mult + ", -" + ms + "))"
               : "mpc_exp2(" + x + " - " + ms + ")";
  };
  const VisibleColumns visible =
      visibleColumns(g, true, "j0", "rows[mt][h]", MT);
  auto scores = [&](bool masked) {
    std::ostringstream b;
    if (masked)
      b << visible.bounds;
    // Unrolled whole, as every loop over the fragments: an index the
    // compiler cannot resolve puts the array in local memory.
    b << "#pragma unroll\n      for (int mt = 0; mt < " << MT << "; ++mt)\n"
      << "#pragma unroll\n      for (int n = 0; n < " << TK / 8 << "; ++n)\n"
      << "#pragma unroll\n        for (int f = 0; f < 4; ++f) {\n";
    if (hasBias)
      b << "          const i64 i = rows[mt][f >> 1], j = j0 + n * 8 + 2 * t + (f & 1);\n";
    if (masked)
      b << "          float v = -INFINITY;\n"
        << "          if (" << visible.seen << ") {\n"
        << "            v = " << scaled << ";\n";
    else
      b << "          {\n            float v = " << scaled << ";\n";
    if (hasBias)
      b << "            " << biasOffset(g, val(s.inputs[3]).shape)
        << "\n            v += " << flt((float)log2e) << " * ld(in3, off);\n";
    if (masked)
      b << "          }\n          sc[mt][n][f] = v;\n"
        << "          mx[mt][f >> 1] = fmaxf(mx[mt][f >> 1], v);\n        }\n";
    else
      b << "            sc[mt][n][f] = v;\n"
        << "            mx[mt][f >> 1] = fmaxf(mx[mt][f >> 1], v);\n          }\n        }\n";
    return b.str();
  };
  // A tile whose every key all the warp's rows see needs no mask
  // (FlashAttention masks only the tiles at the ends and the diagonal).
  os << "    float mx[" << MT << "][2];\n"
     << "    for (int mt = 0; mt < " << MT << "; ++mt) mx[mt][0] = m[mt][0], mx[mt][1] = m[mt][1];\n"
     << "    const bool full = " << unmaskedTile(g, "w0", 16 * MT, "j0", TK)
     << ";\n"
     << "    if (full) {\n" << scores(false) << "    } else {\n" << scores(true)
     << "    }\n"
     // Each row's maximum over the quad.
     << "#pragma unroll\n    for (int mt = 0; mt < " << MT << "; ++mt) {\n"
     << "      float c[2], ms[2];\n"
     << "      for (int h = 0; h < 2; ++h) {\n"
     << "        float &x = mx[mt][h];\n"
     << "        x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 1));\n"
     << "        x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 2));\n"
     << "        c[h] = x == -INFINITY ? 1.0f : mpc_exp2((m[mt][h] - x) * " << mult
     << ");\n"
     << "        ms[h] = x == -INFINITY ? 0.0f : x * " << mult << ";\n"
     << "        m[mt][h] = x;\n        l[mt][h] *= c[h];\n      }\n"
     << "      for (int n = 0; n < " << DV / 8 << "; ++n)\n"
     << "        for (int f = 0; f < 4; ++f) o[mt][n][f] *= c[f >> 1];\n"
     // P, summed in FP32 (each lane its part of the row), then packed
     // into A fragments: keys 16kt.. are score tiles 2kt and 2kt+1.
     << "      for (int n = 0; n < " << TK / 8 << "; ++n)\n"
     << "        for (int f = 0; f < 4; ++f) {\n"
     << "          float &p = sc[mt][n][f];\n"
     << "          p = " << exp2Of("p", "ms[f >> 1]") << ";\n"
     << "          l[mt][f >> 1] += p;\n        }\n"
     << "    }\n"
     << dropP(drop, g, TK, MT)
     // O += P V: B(k, n) = V[key k][dim n], a pair along keys.
     << packA(T, "pa", "sc", TK, tiles)
     << pairsAlongRows(T, "o", "pa", "vt_", VS, TK / 16, DV, tiles)
     // Every warp is done with this buffer before the next tile's copy.
     << "    __syncthreads();\n  }\n"
     // The rows' sums over the quad; lanes write their columns.
     << "#pragma unroll\n  for (int mt = 0; mt < " << MT << "; ++mt)\n"
     << "#pragma unroll\n  for (int h = 0; h < 2; ++h) {\n"
     << "    float &sum = l[mt][h];\n"
     << "    sum += __shfl_xor_sync(0xffffffffu, sum, 1);\n"
     << "    sum += __shfl_xor_sync(0xffffffffu, sum, 2);\n"
     << "    const i64 i = rows[mt][h];\n"
     << "    if (i >= " << L(g.sq) << ") continue;\n"
     << "    const bool none = sum == 0.0f;\n"
     << "    const i64 row = b * " << L(g.sq) << " + i;\n"
     // y's columns (its rounded-up ones are zero).
     << "    for (int n = 0; n < " << g.dvData / 8 << "; ++n)\n"
     << "      for (int e = 0; e < 2; ++e)\n"
     << "        st(out0, " << at("out0", "i") << " + n * 8 + 2 * t + e, "
     << attentionY(zeroMasked, "o[mt][n][2 * h + e]", "sum", drop) << ");\n"
     << "    if (t == 0) st(out1, row, "
     << attentionLse(zeroMasked,
                     "m[mt][h] * " +
                         flt((float)((raw ? scaleValue * log2e : 1.0) / log2e)),
                     "sum")
     << ");\n"
     << "  }\n}\n\n";
  cu << os.str();
  barrier = true;
  launch(s, name, {g.batch, (g.sq + kRows - 1) / kRows, 1}, {kWarps * 32, 1, 1});
  countFlops(2.0 * g.batch * g.sq * g.skv * (g.dData + g.dvData) *
                 band.seenFraction(),
             true);
}

} // namespace mlir::mpc::cuda
