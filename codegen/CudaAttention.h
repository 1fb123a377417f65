//===- CudaAttention.h - what the attention kernel files share --*- C++ -*-===//
//
// Private to codegen/: the attention geometry (batch of heads, query and
// key lengths, head sizes) and the bias-offset code of both attention
// kernel files (CudaAttentionKernels.cpp: SIMT and WMMA;
// CudaFlashAttention.cpp and the backward of CudaAttentionGrad.h: mma.sync).
//
//===----------------------------------------------------------------------===//

#ifndef MPC_CODEGEN_CUDAATTENTION_H
#define MPC_CODEGEN_CUDAATTENTION_H

#include "codegen/CudaKernels.h"
#include "runtime/AttentionBand.h"
#include "runtime/Philox.h"
#include "runtime/cuda/KernelConfig.h"

#include <sstream>
#include <string>
#include <tuple>
#include <vector>

namespace mlir::mpc::cuda {

/// `v` as an i64 literal of the emitted code.
inline std::string i64Lit(int64_t v) { return std::to_string(v) + "LL"; }

/// An attention step's geometry: `batch` heads (the product of `lead`),
/// `sq` queries, `skv` keys, head sizes `d` (Q, K) and `dv` (V, y). The
/// kernels compute on `d` and `dv`; the operands' rows hold `dData` and
/// `dvData` elements (the same but where mmaDims rounds up). Key j is
/// visible to query i where `band` says (causal and sliding windows,
/// counted from d = i + band.off - j; band.off is skv - sq unless the
/// step says otherwise: stepDims).
struct Dims {
  int64_t batch = 1, sq = 0, skv = 0, d = 0, dv = 0, dData = 0, dvData = 0;
  int64_t group = 1; // q heads a K and V head serves (grouped-query)
  Shape lead;
  ::mpc::rt::AttentionBand band;
};

/// The q heads each K and V head serves: q's heads over k's (the dim
/// before the rows), 1 but for grouped-query attention.
inline int64_t attentionGroup(const Shape &q, const Shape &k) {
  size_t r = q.size();
  return r >= 3 && k.size() == r && k[r - 3] > 0 ? q[r - 3] / k[r - 3] : 1;
}

inline Dims dimsOf(const Shape &q, const Shape &k, const Shape &v) {
  Dims g;
  size_t r = q.size();
  g.lead.assign(q.begin(), q.end() - 2);
  for (int64_t x : g.lead)
    g.batch *= x;
  g.sq = q[r - 2];
  g.d = q[r - 1];
  g.skv = k[r - 2];
  g.dv = v[r - 1];
  g.dData = g.d;
  g.dvData = g.dv;
  g.group = attentionGroup(q, k);
  g.band.sq = g.sq;
  g.band.skv = g.skv;
  g.band.off = g.skv - g.sq;
  return g;
}

/// The geometry of attention step `s` from its Q, K and V shapes, with
/// its band (`causal`, `causal_offset`, the windows).
inline Dims stepDims(const Step &s, const Shape &q, const Shape &k,
                     const Shape &v) {
  Dims g = dimsOf(q, k, v);
  g.band = ::mpc::rt::AttentionBand::of(s, g.sq, g.skv);
  return g;
}

/// Whether the mma.sync kernels take these head sizes: up to 256, rows
/// 16 bytes apart (multiples of 8 elements: cp.async copies 16 bytes), as
/// FlashAttention-2's (Gemma's 256, Stable Diffusion 1.x's 160).
inline bool mmaHeadSizes(const Dims &g) {
  return g.d > 0 && g.dv > 0 && g.d % 8 == 0 && g.dv % 8 == 0 && g.d <= 256 &&
         g.dv <= 256;
}

/// Head sizes past 128, where one 16-row tile's O (or dK, dV, dQ)
/// accumulators take 64 to 128 registers a thread: the mma.sync kernels
/// read every A operand from shared memory and the backward computes dK
/// and dV in blocks of their own (one block an SM: their tiles take up
/// to 135 KiB).
inline bool wideHeads(const Dims &g) { return g.d > 128 || g.dv > 128; }

/// The geometry the mma.sync kernels compute on: head sizes rounded up to
/// a k-step of m16n8k16 (40 -> 48, as FlashAttention-2 pads 40 to 64).
/// The tiles in shared memory and the fragments are zero past the
/// operands' rows, which adds nothing to any product, and the columns
/// past them are not stored.
inline Dims mmaDims(Dims g) {
  g.d = (g.d + 15) / 16 * 16;
  g.dv = (g.dv + 15) / 16 * 16;
  return g;
}

/// The fused dropout of an attention step (attrs `dropout`, `seed`,
/// `stream`; [step, rank] from input `stepSlot` when given): the code
/// that draws keep bits as mpc.dropout would (runtime/Philox.h), at the
/// probability's index in the scores, after the scores of the ranks
/// before (one process over the global batch numbers them so).
struct AttentionDropout {
  bool on = false;
  Emitter::Draw draw; // over the scores: n = batch x queries x keys

  AttentionDropout(Emitter &e, const Step &s, const Dims &g, size_t stepSlot) {
    float ratio = (float)s.getFloat("dropout", 0.0);
    if (ratio <= 0.0f)
      return;
    on = true;
    draw.seed = (unsigned long long)s.getInt("seed", 0);
    draw.stream = (unsigned)s.getInt("stream", 0);
    draw.threshold = ::mpc::philox::mpc_dropout_threshold(ratio);
    draw.scale = ::mpc::philox::mpc_dropout_scale(ratio);
    std::tie(draw.step, draw.rank) = e.dropoutCounter(s, stepSlot);
    draw.n = g.batch * g.sq * g.skv;
  }
  /// Whether probability `index` (an i64 expression) is kept.
  std::string keep(const std::string &index) const { return draw.keep(index); }
  /// Statement: keep bits of probabilities `index` (even) and index + 1
  /// into bool[2] `out`.
  std::string keep2(const std::string &index, const std::string &out) const {
    return draw.keep2(index, out);
  }
  /// The index of probability (b, i, j) in the scores.
  static std::string index(const Dims &g, const std::string &b,
                           const std::string &i, const std::string &j) {
    return "((" + b + ") * " + std::to_string(g.sq) + "LL + (" + i + ")) * " +
           std::to_string(g.skv) + "LL + (" + j + ")";
  }
  /// `y` times the scale of kept probabilities (itself without dropout).
  std::string scaled(const std::string &y) const {
    return on ? "(" + y + ") * " + flt(draw.scale) : y;
  }
};

/// Whether attention_grad step `s` also writes dS (with_scores_grad: a
/// fourth output, [.., Sq, Skv] row-major).
inline bool wantsScoresGrad(const Step &s) { return s.outputs.size() > 3; }

/// The element of score (b, i, j) (i64 expressions) in dS.
inline std::string scoresGradIndex(const Dims &g, const std::string &b,
                                   const std::string &i, const std::string &j) {
  return "((" + b + ") * " + i64Lit(g.sq) + " + (" + i + ")) * " + i64Lit(g.skv) +
         " + (" + j + ")";
}

/// Statements setting `off`, the bias element of score (b, i, j), with
/// the bias's broadcast strides folded in as literals.
inline std::string biasOffset(const Dims &g, const Shape &bias) {
  std::ostringstream os;
  size_t r = g.lead.size() + 2;
  Shape scores = g.lead;
  scores.push_back(g.sq);
  scores.push_back(g.skv);
  std::vector<int64_t> bs(r, 0);
  int64_t stride = 1;
  for (int64_t i = (int64_t)bias.size() - 1; i >= 0; --i) {
    size_t a = r - bias.size() + i;
    bs[a] = bias[i] == 1 && scores[a] != 1 ? 0 : stride;
    stride *= bias[i];
  }
  os << "i64 off = i * " << bs[r - 2] << "LL + j * " << bs[r - 1]
     << "LL, rest = b;";
  for (int64_t a = (int64_t)g.lead.size() - 1; a >= 0; --a)
    os << " off += (rest % " << g.lead[a] << "LL) * " << bs[a]
       << "LL; rest /= " << g.lead[a] << "LL;";
  return os.str();
}

/// The forward's outputs for a row with running max `m` and sum `l`, where
/// `none` (l == 0) means every key was masked: y = acc / l (times
/// dropout's scale), or 0 under ONNX's zero-masked-rows rule; lse = m +
/// log(l), or -inf there (NaN otherwise, as the CPU backend).
inline std::string attentionY(bool zeroMasked, const std::string &acc,
                              const std::string &l,
                              const AttentionDropout &drop) {
  return (zeroMasked ? "none ? 0.0f : " : "") + drop.scaled(acc + " / " + l);
}
inline std::string attentionLse(bool zeroMasked, const std::string &m,
                                const std::string &l) {
  return std::string("none ? ") + (zeroMasked ? "-INFINITY" : "nanf(\"\")") +
         " : " + m + " + logf(" + l + ")";
}

/// How the mma.sync forward tiles its work (CudaFlashAttention.cpp): keys
/// a K and V tile, row tiles of 16 queries a warp, and whether the warps
/// read Q's fragments from a shared tile instead of holding them.
struct MmaForwardTiles {
  int64_t keys = 0; // 0: the head sizes do not suit the kernel
  int64_t rowTiles = 1;
  bool sharedQ = false;
};
/// The tiles whose shared memory takes at most `sharedBytes` (the
/// default: what any kernel gets), in blocks of `rows` queries (128, or
/// 64: one row tile a warp; Plan::cudaAttentionRows).
MmaForwardTiles
mmaForwardTiles(const Dims &g,
                int64_t sharedBytes = ::mpc::rt::cuda::kDefaultSharedBytes,
                int64_t rows = 128);
/// The forward's tiles for `plan` (mmaDims's geometry): two blocks an SM
/// of each of its architectures, one past head size 128.
inline MmaForwardTiles mmaForwardTiles(const Dims &g, const Plan &plan) {
  return mmaForwardTiles(g,
                         ::mpc::rt::cuda::sharedBytesPerBlock(
                             plan.cudaArch, wideHeads(g) ? 1 : 2),
                         plan.cudaAttentionRows);
}

/// Shared memory of an mma.sync backward kernel (CudaFlashAttentionGrad.cpp):
/// `tq` queries a key role's tile, `tk` keys a query role's, the rows'
/// lse and D in shared memory where `stats`.
int64_t attentionGradSharedBytes(const Dims &g, int64_t tq, bool kv,
                                 int64_t keyRows, bool acc, int64_t tk = 32,
                                 bool stats = true);
/// Past head size 128, the wide layout's tiles of 16 queries and 16 keys
/// with the rows' lse and D in registers, where the 32-row tiles do not
/// fit one block (SMs of 100 KiB, sm_86/89/120, at head sizes 192-256).
bool compactWideGrad(const Dims &g, int64_t blockBytes);
/// Whether the mma.sync backward's tiles fit `plan`'s GPUs at mmaDims's
/// geometry `g` (always up to head size 128; past it, one block: 135
/// KiB at 256 on sm_80, sm_90 and later data-centre GPUs, the compact
/// form's 99 KiB where SMs have 100).
bool mmaGradFits(const Dims &g, const Plan &plan);

/// The splits of the key tiles whose blocks add dQ's parts to partial
/// sums in the mma.sync backward (`mode`: Plan::cudaAttentionDq; atomic:
/// every key tile its own, adding to one dQ), or 0 where query blocks
/// recompute the scores for dQ instead (auto's choice;
/// CudaFlashAttentionGrad.cpp).
int64_t attentionDqSplits(const Dims &g, const std::string &mode,
                          int64_t keyRows);
/// dQ's part from a key block's keys for the tile's `tq` queries, in the
/// accumulating key role after dK (`keyTiles` row tiles of 16 keys a
/// warp, `keyRows` a block; dss, ks, dst[mt][kt] its shared tiles and dS^T
/// fragments): added to the split's partial sum, or with `atomic` to
/// dQ's FP32 sums by vector reductions (CudaAttentionDq.cpp).
std::string keyBlockDq(const Dims &g, const std::string &T, int64_t keyTiles,
                       int64_t tq, int64_t keyRows, bool atomic);
/// The same in FlashAttention-2's layout (8 warps; dS^T in shared tile
/// `ds`): dQ += dS K for the tile's queries, added to dQ's FP32 sums.
std::string pairsDq(const Dims &g, const std::string &T, const std::string &ds,
                    int64_t tq, int64_t keyRows);
/// The atomic form's end of a key block (CudaAttentionDq.cpp): counts it
/// into the chunks of queries it added to; the block completing a chunk
/// writes that chunk's dQ (`scale` x the sums; `outRow`: dQ's row i) with
/// the block's `threads`.
std::string atomicDqChunks(const Dims &g, bool causal, int64_t keyRows,
                           int64_t tq, const std::string &first,
                           const std::string &scale, const std::string &outRow,
                           int64_t threads);
/// The atomic form's prologue (`head`: its signature): zeroes `bytes` of
/// scratch, then runs `rowD`, the code of D.
std::string atomicDqZero(const std::string &head, int64_t bytes,
                         const std::string &rowD);

// CudaAttentionLayouts.cpp: heads read and written in place.
/// Whether operand `slot` (an input, or with `output` a result) of
/// attention step `s` may be a transposed view: the step runs on the mma
/// kernels, and the slot is Q, K, V or y (dy, q, k, v, y; dq, dk, dv).
bool attentionOperandView(const Plan &plan, const Step &s, size_t slot,
                          bool output);
/// The offset of element (b, r, 0) of an attention operand of `shape`, b
/// running over its leading dims: row-major, or through `strides` (a
/// view's, from Emitter::attentionViews; empty for none).
std::string rowOffset(const Shape &shape, const Shape &strides,
                      const std::string &b, const std::string &r);

} // namespace mlir::mpc::cuda

#endif // MPC_CODEGEN_CUDAATTENTION_H
