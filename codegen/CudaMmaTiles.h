//===- CudaMmaTiles.h - mma.sync tiles of the attention kernels --*- C++ -*-===//
//
// Private to codegen/: the code both tensor-core attention kernels
// (CudaFlashAttention.cpp; the backward: CudaAttentionGrad.h) build their
// products, fragment packing, cp.async tile copies and dropout draws from.
//
//===----------------------------------------------------------------------===//

#ifndef MPC_CODEGEN_CUDAMMATILES_H
#define MPC_CODEGEN_CUDAMMATILES_H

#include "codegen/CudaAttention.h"

#include <algorithm>
#include <sstream>
#include <string>

namespace mlir::mpc::cuda {

// mma.sync operands from shared memory and registers, as both attention
// kernels build them (T: the operand type).

/// How the helpers below address a warp's A fragments and accumulators:
/// one 16-row tile (`count` 0: acc[n]) or `count` of them (acc[mt][n], in
/// loops over mt unrolled whole: an index the compiler cannot resolve
/// would put the array in local memory).
struct RowTiles {
  int64_t count = 0;
  /// The index of the tile, and the extent in a declaration.
  std::string at() const { return count ? "[mt]" : ""; }
  std::string dim() const {
    return count ? "[" + std::to_string(count) + "]" : "";
  }
  /// `body` (lines at `indent`) for every tile: as it is for one, else in
  /// a loop over mt, each line indented two more.
  std::string each(const std::string &indent, const std::string &body) const {
    if (!count)
      return body;
    std::string out = "#pragma unroll\n" + indent + "for (int mt = 0; mt < " +
                      std::to_string(count) + "; ++mt) {\n";
    for (size_t line = 0; line < body.size();) {
      size_t end = std::min(body.find('\n', line), body.size() - 1) + 1;
      out += "  " + body.substr(line, end - line);
      line = end;
    }
    return out + indent + "}\n";
  }
};

// acc[n] (n < cols/8) += A(16 x 16*ktiles) x B where B(k, n) is a pair
// along k from two rows of a shared tile (pitch p): ldmatrix's transposed
// form, tiles of keys kt*16 + 0-7 and 8-15 for columns n and n + 1. Each
// B fragment loaded feeds every row tile of `tiles`.
inline std::string pairsAlongRows(const std::string &T, const std::string &acc,
                                const std::string &a, const std::string &tile,
                                int64_t pitch, int64_t ktiles, int64_t cols,
                                RowTiles tiles = {}) {
  std::ostringstream os;
  std::string c = acc + tiles.at(), f = a + tiles.at();
  os << "    for (int kt = 0; kt < " << ktiles << "; ++kt) {\n"
     << "      const " << T << " *r0 = " << tile
     << " + (kt * 16 + lane / 8 % 2 * 8 + lane % 8) * " << pitch
     << " + lane / 16 * 8;\n"
     << "      for (int n = 0; n < " << cols / 8 << "; n += 2) {\n"
     << "        unsigned bb[4];\n        mpc_ldsm<4, true>(bb, r0 + n * 8);\n"
     << tiles.each("        ",
                   "        mma_16816<" + T + ">(" + c + "[n], " + f + "[kt], bb);\n"
                   "        mma_16816<" + T + ">(" + c + "[n + 1], " + f + "[kt], bb + 2);\n")
     << "      }\n    }\n";
  return os.str();
}

// acc[n] (n < ncols/8) = A(16 x width) x B where B(k, n) = tile[n][k]:
// a pair along k within row n*8+g, by ldmatrix two k-steps at a time
// (an odd last one by two tiles). `tiles` as for pairsAlongRows.
inline std::string pairsAlongCols(const std::string &T, const std::string &acc,
                                const std::string &a, const std::string &tile,
                                int64_t pitch, int64_t width, int64_t ncols,
                                RowTiles tiles = {}) {
  std::ostringstream os;
  std::string c = acc + tiles.at(), f = a + tiles.at();
  os << "    float " << acc << tiles.dim() << "[" << ncols / 8 << "][4];\n"
     << "    for (int n = 0; n < " << ncols / 8 << "; ++n) {\n"
     << tiles.each("      ", "      for (int f = 0; f < 4; ++f) " + c +
                                 "[n][f] = 0.0f;\n")
     << "      const " << T << " *row = " << tile << " + (n * 8 + lane % 8) * "
     << pitch << " + lane / 8 * 8;\n"
     << "      for (int kt = 0; kt + 1 < " << width / 16 << "; kt += 2) {\n"
     << "        unsigned bb[4];\n        mpc_ldsm<4, false>(bb, row + kt * 16);\n"
     << tiles.each("        ",
                   "        mma_16816<" + T + ">(" + c + "[n], " + f + "[kt], bb);\n"
                   "        mma_16816<" + T + ">(" + c + "[n], " + f + "[kt + 1], bb + 2);\n")
     << "      }\n";
  if (width / 16 % 2)
    os << "      unsigned bb[2];\n      mpc_ldsm<2, false>(bb, " << tile
       << " + (n * 8 + lane % 8) * " << pitch << " + " << width - 16
       << " + lane / 8 % 2 * 8);\n"
       << tiles.each("      ", "      mma_16816<" + T + ">(" + c + "[n], " + f +
                                  "[" + std::to_string(width / 16 - 1) +
                                  "], bb);\n");
  os << "    }\n";
  return os.str();
}

// As pairsAlongCols, with A's 16 rows read from a shared tile (`arows`
// its first row, pitch `apitch`; row tile mt 16 rows further each) by
// ldmatrix two k-steps at a time, each pair feeding every column: 8
// registers of A a row tile instead of width / 4 (the forward's Q and the
// backward's K and V past head size 64, where registers hold the
// accumulators). The same products in the same order as pairsAlongCols.
inline std::string sharedAPairsAlongCols(const std::string &T,
                                         const std::string &acc,
                                         const std::string &arows,
                                         int64_t apitch,
                                         const std::string &tile,
                                         int64_t pitch, int64_t width,
                                         int64_t ncols, RowTiles tiles = {}) {
  const int64_t steps = width / 16, cols = ncols / 8;
  std::string c = acc + tiles.at(), a0 = "a0" + tiles.at(),
              a1 = "a1" + tiles.at();
  std::string rowTile =
      tiles.count ? " + mt * " + std::to_string(16 * apitch) : std::string();
  std::ostringstream os;
  os << "    float " << acc << tiles.dim() << "[" << cols << "][4];\n"
     << "    for (int n = 0; n < " << cols << "; ++n)\n"
     << tiles.each("      ", "      for (int f = 0; f < 4; ++f) " + c +
                                 "[n][f] = 0.0f;\n")
     << "    {\n      const " << T << " *arow = " << arows << " + (lane % 16) * "
     << apitch << " + lane / 16 * 8;\n"
     << "      const " << T << " *brow = " << tile << " + (lane % 8) * " << pitch
     << " + lane / 8 * 8;\n"
     << "#pragma unroll\n      for (int kt = 0; kt + 1 < " << steps << "; kt += 2) {\n"
     << "        unsigned a0" << tiles.dim() << "[4], a1" << tiles.dim() << "[4];\n"
     << tiles.each("        ",
                   "        mpc_ldsm<4, false>(" + a0 + ", arow" + rowTile + " + kt * 16);\n"
                   "        mpc_ldsm<4, false>(" + a1 + ", arow" + rowTile + " + kt * 16 + 16);\n")
     << "#pragma unroll\n        for (int n = 0; n < " << cols << "; ++n) {\n"
     << "          unsigned bb[4];\n          mpc_ldsm<4, false>(bb, brow + n * "
     << 8 * pitch << " + kt * 16);\n"
     << tiles.each("          ",
                   "          mma_16816<" + T + ">(" + c + "[n], " + a0 + ", bb);\n"
                   "          mma_16816<" + T + ">(" + c + "[n], " + a1 + ", bb + 2);\n")
     << "        }\n      }\n";
  if (steps % 2)
    os << "      unsigned a0" << tiles.dim() << "[4];\n"
       << tiles.each("      ", "      mpc_ldsm<4, false>(" + a0 + ", arow" + rowTile +
                                  " + " + std::to_string((steps - 1) * 16) + ");\n")
       << "#pragma unroll\n      for (int n = 0; n < " << cols << "; ++n) {\n"
       << "        unsigned bb[2];\n        mpc_ldsm<2, false>(bb, " << tile
       << " + (n * 8 + lane % 8) * " << pitch << " + " << (steps - 1) * 16
       << " + lane / 8 % 2 * 8);\n"
       << tiles.each("        ", "        mma_16816<" + T + ">(" + c + "[n], " + a0 +
                                    ", bb);\n")
       << "      }\n";
  os << "    }\n";
  return os.str();
}

// A fragments `frag` of the 16 rows rows[0..1] (+ 8) of a global tensor
// `src` (`rowAt` the offset of row r, `data` elements a row), `width`
// columns of them (`data` rounded up: zero past it): each lane's pairs as
// 32-bit loads, zero past row `limit`. Indented by `indent`. With several
// `tiles`, frag[mt] holds rows[mt]'s.
inline std::string rowFragments(const std::string &indent,
                                const std::string &frag, const std::string &src,
                                const std::string &rowAt, int64_t width,
                                int64_t data, int64_t limit,
                                RowTiles tiles = {}) {
  std::ostringstream body;
  body << indent << "for (int kt = 0; kt < " << width / 16 << "; ++kt)\n"
       << indent << "  for (int f = 0; f < 4; ++f) {\n"
       << indent << "    const i64 r = rows" << tiles.at() << "[f & 1];\n"
       << indent << "    const int c = kt * 16 + 2 * t + (f >= 2 ? 8 : 0);\n"
       << indent << "    " << frag << tiles.at() << "[kt][f] = r < " << limit
       << "LL" << (data < width ? " && c < " + std::to_string(data) : "")
       << " ? *(const unsigned *)(" << src << " + " << rowAt
       << " + c) : 0u;\n"
       << indent << "  }\n";
  return indent + "unsigned " + frag + tiles.dim() + "[" +
         std::to_string(width / 16) + "][4];\n" +
         tiles.each(indent, body.str());
}

// Packs accumulator tiles (16 x cols, FP32) into A fragments; `tiles` as
// for pairsAlongRows.
inline std::string packA(const std::string &T, const std::string &frag,
                       const std::string &acc, int64_t cols,
                       RowTiles tiles = {}) {
  std::ostringstream body;
  std::string a = acc + tiles.at(), fr = frag + tiles.at();
  body << "    for (int kt = 0; kt < " << cols / 16 << "; ++kt) {\n"
       << "      " << fr << "[kt][0] = mpc_pack2(" << T << "(" << a << "[2 * kt][0]), "
       << T << "(" << a << "[2 * kt][1]));\n"
       << "      " << fr << "[kt][1] = mpc_pack2(" << T << "(" << a << "[2 * kt][2]), "
       << T << "(" << a << "[2 * kt][3]));\n"
       << "      " << fr << "[kt][2] = mpc_pack2(" << T << "(" << a << "[2 * kt + 1][0]), "
       << T << "(" << a << "[2 * kt + 1][1]));\n"
       << "      " << fr << "[kt][3] = mpc_pack2(" << T << "(" << a << "[2 * kt + 1][2]), "
       << T << "(" << a << "[2 * kt + 1][3]));\n    }\n";
  return "    unsigned " + frag + tiles.dim() + "[" + std::to_string(cols / 16) +
         "][4];\n" + tiles.each("    ", body.str());
}

// Rows first + r (r < rows) of a global tensor, `data` elements each at
// `src` + `rowAt` (the row offset of first + r, `rowStride` elements from
// one row to the next) into the shared tile `dst` of pitch `pitch`,
// `width` columns (`data` rounded up: zero past it), by cp.async 16 bytes
// a copy over `threads` threads, zero-filled from row `limit` on. The
// attention kernels stream K and V (forward) and Q, dO, K and V
// (backward) this way into two buffers. A thread's copies are unrolled
// from one source and one destination address at constant steps (a loop
// bounded by threadIdx.x took 30 instructions a copy, most of them 64-bit
// address arithmetic; hoisted addresses a register each). Where a row's
// copies do not divide the threads (rows of 48, 80, 112), the threads of
// whole rows copy (126 of 128 at 48) and the rest wait: a copy or two
// more for some threads, where the loop cost every copy 30 instructions.
inline std::string asyncTile(const std::string &dst, int64_t pitch,
                             const std::string &src, const std::string &rowAt,
                             int64_t rowStride, int64_t width, int64_t data,
                             int64_t rows, const std::string &first,
                             int64_t limit, int64_t threads) {
  const int64_t perRow = width / 8, copies = rows * perRow;
  // Columns past the row: a zero fill (c is a multiple of 8, as `data`).
  const std::string inRow =
      data < width ? " && c < " + std::to_string(data) : std::string();
  std::ostringstream os;
  if (perRow > threads) { // a row wider than the threads: one at a time
    os << "    for (int e = threadIdx.x; e < " << copies << "; e += " << threads
       << ") {\n      const int r = e / " << perRow << ", c = e % " << perRow
       << " * 8;\n      const bool in = " << first << " + r < " << limit
       << "LL" << inRow << ";\n      mpc_cp_async16(" << dst << " + r * " << pitch
       << " + c, in ? " << src << " + " << rowAt << " + c : " << src << ", in);\n    }\n";
    return os.str();
  }
  const int64_t step = threads / perRow; // rows between a thread's copies
  os << (threads % perRow ? "    if (threadIdx.x < " + std::to_string(step * perRow) + ")\n"
                          : std::string())
     << "    {\n      const int r = threadIdx.x / " << perRow << ", c = threadIdx.x % "
     << perRow << " * 8;\n"
     << "      const i64 left = " << limit << "LL - (" << first << ") - r;\n"
     << "      const auto *from = " << src << " + " << rowAt << " + c;\n"
     << "      auto *to = " << dst << " + r * " << pitch << " + c;\n"
     << "#pragma unroll\n      for (int k = 0; k < " << (rows + step - 1) / step
     << "; ++k) {\n"
     << (rows % step ? "        if (r + k * " + std::to_string(step) + " >= " +
                           std::to_string(rows) + ") break;\n"
                     : std::string())
     << "        const bool in = k * " << step << " < left" << inRow << ";\n"
     << "        mpc_cp_async16(to + k * " << step * pitch << ", in ? from + k * "
     << step * rowStride << "LL : " << src << ", in);\n      }\n    }\n";
  return os.str();
}

// Whether every score of queries q0 .. q0 + rows - 1 and keys k0 .. k0 +
// keys - 1 is seen (in range and inside the band: causal, the last key
// visible to the first query; a left window, the first key to the last
// query): the attention kernels' tiles that may skip the mask.
inline std::string unmaskedTile(const Dims &g, const std::string &q0,
                                int64_t rows, const std::string &k0,
                                int64_t keys) {
  auto &L = i64Lit;
  std::string all = q0 + " + " + L(rows) + " <= " + L(g.sq) + " && " + k0 +
                    " + " + L(keys) + " <= " + L(g.skv);
  if (g.band.boundsEnd()) // the least d, i + off - j, at least lo
    all += " && " + q0 + " + " + L(g.band.off - keys + 1 - g.band.lo) + " >= " + k0;
  if (g.band.boundsStart()) // the greatest at most hi
    all += " && " + q0 + " + " + L(rows - 1 + g.band.off - g.band.hi) + " <= " + k0;
  return all;
}

// Which scores of a masked tile a lane sees, as bounds on the column step
// k = n * 8 + (f & 1) of its fragments (column first + 2t + k): for each
// of its rows, hi (and, causal with rows that are keys, lo), so that a
// score costs one or two 32-bit compares with a constant instead of three
// 64-bit ones (the forward's masked tiles took 481 instructions to the
// full tiles' 64). Rows are queries and columns keys (`rowsAreQueries`:
// the forward, the backward's query blocks), or the other way round (the
// backward's key blocks); `row` names row (mt, h) of the lane.
struct VisibleColumns {
  std::string bounds; // declares and sets lo/hi[mt][h]
  std::string seen;   // whether score (mt, n, f) is seen; `mt` as given
};
inline VisibleColumns visibleColumns(const Dims &g, bool rowsAreQueries,
                                     const std::string &first,
                                     const std::string &row, int64_t mtiles,
                                     const std::string &mt = "mt") {
  auto &L = i64Lit;
  const ::mpc::rt::AttentionBand &band = g.band;
  const int64_t off = g.band.off; // d = i + off - j in [band.lo, band.hi]
  // Columns run along j (rows are queries) or i: where d's bound on the
  // columns' start or end is set.
  const bool bandEnd = rowsAreQueries ? band.boundsEnd() : band.boundsStart(),
             lower = rowsAreQueries ? band.boundsStart() : band.boundsEnd();
  const int64_t cols = rowsAreQueries ? g.skv : g.sq,
                rowEnd = rowsAreQueries ? g.sq : g.skv;
  // Row x sees columns below x + endAt (keys: off - lo + 1; queries:
  // hi - off + 1) and from x + startAt (keys: off - hi; queries: lo - off).
  const int64_t endAt = rowsAreQueries ? off - band.lo + 1 : band.hi - off + 1,
                startAt = rowsAreQueries ? off - band.hi : band.lo - off;
  const std::string base = "(" + first + " + 2 * t)";
  std::ostringstream os;
  const std::string tiles = std::to_string(mtiles);
  os << "      int hi[" << tiles << "][2]" << (lower ? ", lo[" + tiles + "][2]" : "")
     << ";\n#pragma unroll\n      for (int mt = 0; mt < " << mtiles
     << "; ++mt)\n#pragma unroll\n      for (int h = 0; h < 2; ++h) {\n"
     << "        const i64 x = " << row << ";\n"
     << "        const i64 end = x < " << L(rowEnd) << " ? "
     << (bandEnd ? "(x + " + L(endAt) + " < " + L(cols) + " ? x + " + L(endAt) +
                       " : " + L(cols) + ")"
                 : L(cols))
     << " : 0LL;\n"
     << "        hi[mt][h] = (int)(end - " << base << ");\n";
  if (lower) // (in int's range: AttentionBand drops bounds past the sizes)
    os << "        lo[mt][h] = (int)(x + " << L(startAt) << " - " << base << ");\n";
  os << "      }\n";
  std::string at = "[" + mt + "][f >> 1]", k = "n * 8 + (f & 1)";
  return {os.str(), (lower ? "lo" + at + " <= " + k + " && " : std::string()) + k +
                        " < hi" + at};
}

// Dropout over a lane's score fragments (rows `rows`[h], column pairs
// j0 + n * 8 + 2t, n < cols / 8): a loop over n and h whose body has
// `keep[2]`, the pair's keep bits, and then runs `use`. Where the keys
// are a multiple of 4 in number (and tiles start at multiples of 8), the
// pairs of lanes t and t ^ 1 in a row are one Philox group: each lane
// draws the group of one of its rows (h = t & 1) and hands the other
// lane its pair by two shuffles, one draw a pair of rows where there
// were two. Else a pair is one draw when the keys are even in number (it
// then shares a group of four), two when odd.
inline std::string forKeepPairs(const AttentionDropout &drop, const Dims &g,
                                int64_t cols, const std::string &use,
                                const std::string &rows = "rows") {
  std::ostringstream os;
  if (g.skv % 4 == 0) {
    std::string group = "(unsigned long long)(" +
                        AttentionDropout::index(g, "b",
                                                "((t & 1) ? " + rows + "[1] : " +
                                                    rows + "[0])",
                                                "j0 + n * 8 + 2 * t") +
                        ") >> 2";
    std::string kept = " >= " + std::to_string(drop.draw.threshold) + "ull";
    os << "#pragma unroll\n    for (int n = 0; n < " << cols / 8 << "; ++n) {\n"
       << "      unsigned w[4];\n      " << drop.draw.words(group, "w") << "\n"
       << "      const bool odd = t & 1;\n"
       << "      const unsigned mine[2] = {odd ? w[2] : w[0], odd ? w[3] : w[1]};\n"
       << "      const unsigned other[2] = {"
          "__shfl_xor_sync(0xffffffffu, odd ? w[0] : w[2], 1), "
          "__shfl_xor_sync(0xffffffffu, odd ? w[1] : w[3], 1)};\n"
       << "#pragma unroll\n      for (int h = 0; h < 2; ++h) {\n"
       << "        const bool own = h == (t & 1);\n"
       << "        const bool keep[2] = {(own ? mine[0] : other[0])" << kept
       << ", (own ? mine[1] : other[1])" << kept << "};\n"
       << use << "      }\n    }\n";
    return os.str();
  }
  std::string index =
      AttentionDropout::index(g, "b", rows + "[h]", "j0 + n * 8 + 2 * t");
  os << "#pragma unroll\n    for (int n = 0; n < " << cols / 8 << "; ++n)\n"
     << "#pragma unroll\n      for (int h = 0; h < 2; ++h) {\n";
  if (g.skv % 2 == 0)
    os << "        bool keep[2];\n        " << drop.keep2(index, "keep") << "\n";
  else
    os << "        const bool keep[2] = {" << drop.keep(index) << ", "
       << drop.keep(index + " + 1") << "};\n";
  os << use << "      }\n";
  return os.str();
}

} // namespace mlir::mpc::cuda

#endif // MPC_CODEGEN_CUDAMMATILES_H
