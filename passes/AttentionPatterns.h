//===- AttentionPatterns.h - what mpc-fuse-attention recognizes -*- C++ -*-===//
//
// Private to passes/: the matchers FuseAttention.cpp builds mpc.attention
// from (AttentionPatterns.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef MPC_PASSES_ATTENTIONPATTERNS_H
#define MPC_PASSES_ATTENTIONPATTERNS_H

#include "ir/MpcOps.h"

#include <optional>
#include <utility>

namespace mlir::mpc::attention_patterns {

inline RankedTensorType typeOf(Value v) {
  return llvm::cast<RankedTensorType>(v.getType());
}
inline bool singleUse(Value v) { return v.hasOneUse(); }

/// The value of a scalar (or splat) float constant, or of a scalar
/// expression over constants the importer leaves unfolded, in FP32.
std::optional<double> scalarConstant(Value v, int depth = 0);
/// The elements of a constant boolean mask, also through Trilu.
std::optional<SmallVector<bool>> boolConstant(Value v);
/// `v * c` or `v / c` with c a scalar constant and `v` used once: the
/// other operand, `scale` multiplied; otherwise `v` itself.
Value peelScale(Value v, double &scale, SmallVectorImpl<Operation *> &dead);

/// Whether `v` is the QK^T product, possibly scaled (and capped), with
/// other masks added or applied on the way.
bool leadsToProduct(Value v, int depth = 0);
/// The tensor `t` of mul(product, t): the Q K^T product itself (used
/// once) times a float tensor that broadcasts to it with its last two
/// dimensions 1, so (Q K^T) t = (Q t) K^T; null otherwise.
Value tensorScaleOfProduct(Operation *mul);

/// The where(isnan(P), 0, P) that is P's only reader besides the test
/// (torch 2's decomposed SDPA, its "safe softmax"), or null.
WhereOp nanGuardOf(Value probs);
/// reshape(transpose(reshape(x))) that is one transpose of x, as x and its
/// permutation: the first view merges x's leading dimensions, the
/// transpose keeps the merged one first, the last view splits it again
/// (torch 2's decomposed SDPA: K^T as [b*h, s, d] -> [b*h, d, s] ->
/// [b, h, d, s]). The three ops go to `dead`.
std::optional<std::pair<Value, SmallVector<int64_t>>>
viewedTranspose(Value v, SmallVectorImpl<Operation *> &dead);

/// A scalar constant of float type `elem`, built at `b` (MaskBias.cpp).
Value scalarValue(OpBuilder &b, Location loc, Type elem, double value);
/// where(cond, fill, 0) (`fillWhereTrue`) or where(cond, 0, fill) of float
/// type `elem`, built at `b`.
Value maskBias(OpBuilder &b, Location loc, Value cond, Type elem, double fill,
               bool fillWhereTrue);
/// A maskBias over a constant condition replaced by a constant, once it is
/// known to stay a bias (a band needs no (Sq, Skv) constant made: 16M
/// elements at 4k tokens); `b` is left at it. Otherwise `bias`.
Value constantMaskBias(OpBuilder &b, Value bias);

/// The positional mask of mpc.attention: `causal`, windows (-1: none)
/// and the offset they count from (runtime/AttentionBand.h).
struct Band {
  int64_t offset = 0;
  bool causal = false;
  int64_t left = -1, right = -1;

  bool operator==(const Band &o) const {
    return offset == o.offset && causal == o.causal && left == o.left && right == o.right;
  }
};

/// FP16's lowest finite value, -65504 (torch.finfo(float16).min: Hugging
/// Face's mask value in FP16 models, and what -FLT_MAX saturates to in
/// FP16). Added to a score it masks as -inf does - exp(s - 65504 - max)
/// is 0 unless the scores span 65400 - in a row that keeps a key; a row
/// masked whole is uniform, not NaN.
constexpr double kHalfLowest = -65504.0;
/// Whether `f` masks a score it replaces or is added to: <= -1e30, which
/// exp() maps to 0 as -inf, or kHalfLowest (then only where every row
/// keeps a key: the caller checks).
inline bool maskingFill(double f) { return f <= -1e30 || f == kHalfLowest; }
/// Whether every query of `band` over sq x skv scores sees a key (where
/// kHalfLowest may stand for -inf).
bool everyRowSeesKey(const Band &band, int64_t sq, int64_t skv);

/// The band a query-by-key visibility `seen(i, j)` describes, where one
/// does (every row's keys one run the band's bounds give).
std::optional<Band> bandOfVisible(int64_t sq, int64_t skv,
                                  llvm::function_ref<bool(int64_t, int64_t)> seen);
/// Whether a boolean condition computed from constants (broadcast to sq x
/// skv scores) keeps a key in every query's row, a key kept where the
/// condition is `keptWhereTrue`.
bool everyRowKeepsKey(Value cond, bool keptWhereTrue, int64_t sq, int64_t skv);
/// The band of a mask computed from constants (MaskBand.cpp: additive 0 /
/// -inf, where() of conditions, Trilu, integer and boolean arithmetic, as
/// Hugging Face's causal and sliding-window masks export), broadcast over
/// batch and heads, where it describes one.
std::optional<Band> constantBand(Value bias, int64_t sq, int64_t skv);
/// A padding mask over a constant band mask, where(P, fill, C) with fill
/// <= -1e30 (Hugging Face's masked_fill of its causal mask, MaskSplit.cpp):
/// C's band and, built at `b`, the bias where(P, fill, 0) with C read as
/// 0 inside P (the mask's values inside the band, [b, 1, 1, S] for
/// Hugging Face's).
std::optional<std::pair<Band, Value>> bandUnderPadding(OpBuilder &b, Value term,
                                                       int64_t sq, int64_t skv);
/// The operands of a mask condition `cond` = and(C, P) (`isAnd`; else
/// or(C, P)), through the Unsqueezes above it, C computed from constants
/// and P not, each built at `b` brought to `cond`'s rank through those
/// Unsqueezes (MaskSplit.cpp: the causal part of a boolean mask becomes
/// the band, P stays the bias).
std::optional<std::pair<Value, Value>> splitConstantOperand(OpBuilder &b, Value cond,
                                                            bool isAnd);
/// `bias` computed with one row for every query where it is the same
/// for each (elementwise ops over a broadcast along the queries, as Hugging
/// Face's _expand_mask writes the padding mask), built at `b` (`memo` by
/// value, for masks several layers share); null where it is not.
Value queryInvariantBias(OpBuilder &b, Value bias, llvm::DenseMap<Value, Value> &memo);
/// Whether a mask condition comes from the inputs one row per query (a
/// padding of the queries as well as the keys, DeBERTa's mask[:, None, :,
/// None] * mask[:, None, None, :]), so that a whole row can be masked: with
/// a finite fill its scores are all the fill, which the log-sum-exp the
/// backward reads cannot hold next to log(keys) (fill + log(n) rounds to the
/// fill): such a mask stays unfused.
bool masksQueriesFromInput(Value cond);
/// An added where(C and P, 0, fill) (fill <= -1e30; torch 2's SDPA over
/// Hugging Face 5's boolean mask) with C a constant band as the sum of
/// where(C, 0, fill) and where(P, 0, fill), built at `b`; or null.
Value splitWhereBias(OpBuilder &b, Location loc, Value term, int64_t sq, int64_t skv);
/// The band of the positional masks among `bias`'s added terms (a causal
/// constant, the import's causal and window biases, Trilus, merged where
/// several); `bias` becomes the sum of the other terms (attn_mask,
/// padding), null if none. Built at `b`, which is moved.
std::optional<Band> bandOfBias(OpBuilder &b, Location loc, Value &bias, int64_t sq,
                               int64_t skv);
/// The band of the causal and sliding-window bias ONNX Attention's import
/// builds (positionBias), where `bias` is one.
std::optional<Band> positionBand(Value bias, int64_t sq, int64_t skv);
/// The band of Trilus over a splat (-inf, or ones under a Log) as torch
/// model code builds causal and sliding-window masks, where `bias` is one.
std::optional<Band> triluBand(Value bias, int64_t sq, int64_t skv);
/// The band both `a` and `b` allow, where mpc.attention can say it.
std::optional<Band> mergeBands(const Band &a, const Band &b);
/// x and `rep` where `v` repeats each head of x `rep` times in place
/// (grouped-query K and V as ONNX Attention's import and repeat_kv write
/// them).
std::optional<std::pair<Value, int64_t>> repeatedHeads(Value v);
/// c and the capped scores where `v` is ONNX Attention's softcap c *
/// tanh(s / c); `dead` gets its three ops.
std::optional<std::pair<double, Value>>
softcapOf(Value v, SmallVectorImpl<Operation *> &dead);

/// Scores computed over merged batch and heads ([b * h, sq, skv], as
/// torch.baddbmm and bmm on views write them; GPT-NeoX, Bloom), or over
/// merged batch and windows ([b * w, h, sq, skv], Swin's window
/// attention): (b, h) or (b, w) where `out` is `in` with its leading
/// dimension split in two;
std::optional<std::pair<int64_t, int64_t>> headsOf(RankedTensorType in,
                                                   RankedTensorType out);
/// whether a bias of such scores (of rank `rank`) is one of the split
/// scores once its leading dimension (b * h or 1) is split, or leaves that
/// dimension to broadcasting (Bloom's ALiBi [b * h, 1, skv], Swin's
/// relative position bias [1, h, sq, skv]);
bool unmergeable(RankedTensorType bias, int64_t rank, ArrayRef<int64_t> split);
/// `t` [b * h, ...] as [b, h, ...] for `split` = {b, h} (else `t`).
RankedTensorType unmergedType(RankedTensorType t, ArrayRef<int64_t> split);

/// Multi-query scores with the heads among the rows (GPT-BigCode: Q [b, sq
/// * h, d] against one K^T [b, d, skv], the scores viewed [b, sq, h,
/// skv]): (sq, h) where `out` is `in` [b, sq * h, n] with its middle
/// dimension split in two.
std::optional<std::pair<int64_t, int64_t>> rowsOf(RankedTensorType in,
                                                  RankedTensorType out);
/// Q [b, sq * h, d] of such scores as [b, h, sq, d] for `rows` = {sq, h}.
std::optional<RankedTensorType> rowsOfQuery(RankedTensorType q, ArrayRef<int64_t> rows);
/// A mask of scores viewed [b, sq, h, skv] (`rows` given; else `x`) as
/// one of [b, h, sq, skv], built at `b`: a view where it has one head, else
/// a transpose (MaskBias.cpp).
Value rowsToHeads(OpBuilder &b, Location loc, Value x, ArrayRef<int64_t> rows);

} // namespace mlir::mpc::attention_patterns

#endif // MPC_PASSES_ATTENTIONPATTERNS_H
