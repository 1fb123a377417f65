//===- FuseAttention.cpp - attention subgraphs to mpc.attention -----------===//
//
// Recognizes softmax(scale * Q K^T + mask) V as torch 1.13/2.x exports of
// BERT, GPT-2, ViT and nn.TransformerEncoder write it, and as mpc imports
// ONNX Attention, and rewrites it to one mpc.attention:
//
//   matmul(Q', K')      Q' = Q, or Q * c, Q / c (scalar constants)
//                       K' = transpose(K) swapping the last two dimensions
//                            (composed with the export's own transpose),
//                            optionally * c or / c, before or after it
//   * c, / c            on the scores (folded into `scale`)
//   * t                 on the product itself, t a tensor broadcasting
//                       with its last two dimensions 1 (SwinV2's learned
//                       per-head scale): moved onto Q as Q * t
//   + bias              any float tensor broadcasting to the scores
//   where(m, s, fill)   or where(m, fill, s), fill a scalar constant: the
//                       mask becomes the bias where(m, 0, fill)...
//   softmax(axis = -1)
//   dropout(P, ratio, training)   optional: constant ratio and flag, the
//                                 mask unread (the backward redraws it)
//   matmul(P, V)
//
// In a half-precision model the softmax may run in FP32 between casts,
// cast(softmax(cast(s, f32)), T), masks on either side of the widening
// cast: the op computes in FP32 anyway, so both casts are taken into it.
//
// Scores over merged leading dimensions ([b * h, sq, skv] of bmm exports,
// [b * nw, h, sq, skv] of Swin's windows) viewed split for a mask and
// back become one attention over the split dimensions, its output merged.
//
// A constant bias that is exactly a causal mask (0 on and below the offset
// diagonal, -inf or below -1e30 above), or the causal and sliding-window
// one ONNX Attention's import computes from rows and columns (with its own
// `causal_offset` where not the diagonal through the last query and key),
// becomes `causal`, `window_left` and `window_right` and is dropped (a
// term of a sum of biases too: an attn_mask beside it stays the bias), so
// no Sq x Skv tensor is left. Every intermediate must have its
// one use on the path (an extra consumer of the scores or probabilities, a
// softmax on another axis, a dropout whose mask is read or whose ratio or
// training flag is only known at run time leave the subgraph as it is: fusing
// would change what the other consumer sees). A fused dropout draws the mask
// the unfused one would (same key, same counter: the probability's index).
//
//===----------------------------------------------------------------------===//

#include "ir/MpcOps.h"
#include "passes/AttentionPatterns.h"
#include "passes/DeadOps.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Matchers.h"

#include <cmath>

namespace mlir::mpc {
#define GEN_PASS_DEF_FUSEATTENTION
#include "passes/Passes.h.inc"
} // namespace mlir::mpc

using namespace mlir;
using namespace mlir::mpc;

namespace {

using namespace mlir::mpc::attention_patterns;

/// A mask on the scores: an additive bias, or a where() that replaces
/// scores by a fill (`scoreWhere`), with the scale applied outside it.
struct Mask {
  Value value;
  double outerScale;
  bool scoreWhere;
  bool merged = false; // added to [b * h, sq, skv] scores
};

struct Match {
  Value q, k, v, bias;
  SmallVector<int64_t> split; // [b, h] of scores computed as [b * h, sq, skv]
  SmallVector<int64_t> pvSplit; // [b, h] of probabilities P V reads merged
  // (sq, h) of multi-query scores [b, sq * h, skv] viewed [b, sq, h, skv]
  // for the mask and softmax, and of the probabilities P V reads so.
  SmallVector<int64_t> rows, pvRows;
  double scale = 1.0;
  Value qScale; // a per-head (or per-batch) scale tensor on the product
  bool zeroMaskedRows = false;
  double dropout = 0.0; // the fused dropout's ratio, 0 for none
  double softcap = 0.0; // c of c tanh(s / c) on the scaled scores, 0: none
  IntegerAttr seed, stream;
  Operation *pv = nullptr;
  SmallVector<Operation *> dead; // the matched ops, users first
};

class Fuser {
public:
  explicit Fuser(MLIRContext *ctx) : b(ctx) {}

  /// Matches the subgraph ending in `sm`'s consumer; builds nothing.
  std::optional<Match> match(SoftmaxOp sm) {
    auto x = typeOf(sm.getX());
    int64_t r = x.getRank();
    if (r < 3 || !llvm::isa<FloatType>(x.getElementType()) ||
        ((int64_t)sm.getAxis() != -1 && (int64_t)sm.getAxis() != r - 1))
      return std::nullopt;
    Match m;
    Value probs = sm.getResult();
    // torch 2's scaled_dot_product_attention decomposed ("safe softmax"):
    // where(isnan(P), 0, P) zeroes the rows with no attendable key, whose
    // softmax is 0/0; over finite scores no other row is NaN.
    bool nanGuard = false;
    if (WhereOp w = nanGuardOf(probs)) {
      nanGuard = true;
      m.dead = {w, w.getCondition().getDefiningOp(), sm};
      probs = w.getResult();
    } else if (!singleUse(probs)) {
      return std::nullopt;
    }
    // ONNX Attention's guard, as imported: where(rows whose bias is all
    // -inf, 0, P) zeroes the rows with no attendable key.
    Value guardBias;
    if (auto w = nanGuard ? WhereOp() : dyn_cast<WhereOp>(*probs.getUsers().begin())) {
      auto dead = w.getCondition().getDefiningOp<IsInfOp>();
      auto rowMax = dead ? dead.getX().getDefiningOp<ReduceMaxOp>()
                         : ReduceMaxOp();
      std::optional<double> zero = scalarConstant(w.getX());
      if (!rowMax || w.getY() != probs || !zero || *zero != 0.0 ||
          dead.getDetectPositive() || !dead.getDetectNegative() ||
          !rowMax.getKeepdims() || !rowMax.getAxes() ||
          rowMax.getAxes()->size() != 1 ||
          ((*rowMax.getAxes())[0] != -1 &&
           (*rowMax.getAxes())[0] != typeOf(rowMax.getX()).getRank() - 1) ||
          !singleUse(w.getResult()))
        return std::nullopt;
      guardBias = rowMax.getX();
      m.dead = {w, sm, dead, rowMax};
      probs = w.getResult();
    }
    // From the softmax to P V, in any order, each once: a dropout; the cast
    // back of an FP32 softmax in a half-precision model, cast(softmax(
    // cast(s, f32)), T) (torch's softmax(dtype=float32).to(q.dtype) in
    // LLaMA-style model code, `mpc convert`'s output, ONNX Attention's
    // softmax_precision; the op computes scores and softmax in FP32
    // whatever Q's type, so both casts go, the scores no longer rounded to
    // T between them); a view of the probabilities as [b * h, sq, skv] for
    // a merged product with V (Bloom's bmm: build() unmerges V and views
    // the output back) or as [b, sq * h, skv] (GPT-BigCode's multi-query
    // bmm).
    DropoutOp drop;
    CastOp narrow;
    ReshapeOp merge;
    SmallVector<Operation *> toPv; // (softmax side first)
    for (;;) {
      if (!singleUse(probs))
        return std::nullopt;
      Operation *user = *probs.getUsers().begin();
      if (auto d = dyn_cast<DropoutOp>(user); d && !drop) {
        if (d.getX() != probs || !d.getMask().use_empty() || d.getStep())
          return std::nullopt;
        std::optional<double> ratio = constantDropoutRatio(d);
        if (!ratio || *ratio < 0.0 || *ratio >= 1.0)
          return std::nullopt;
        m.dropout = *ratio;
        m.seed = d.getSeedAttr();
        m.stream = d.getStreamAttr();
        drop = d;
        probs = d.getY();
      } else if (auto c = dyn_cast<CastOp>(user); c && !narrow) {
        Type to = typeOf(c.getY()).getElementType();
        if (!typeOf(probs).getElementType().isF32() ||
            !(to.isF16() || to.isBF16()))
          return std::nullopt;
        narrow = c;
        probs = c.getY();
      } else if (auto rs = dyn_cast<ReshapeOp>(user); rs && !merge) {
        auto heads = headsOf(typeOf(rs.getReshaped()), typeOf(probs));
        auto rowSplit = heads ? std::nullopt
                              : rowsOf(typeOf(rs.getReshaped()), typeOf(probs));
        if (!heads && !rowSplit)
          return std::nullopt;
        if (heads)
          m.pvSplit = {heads->first, heads->second};
        else
          m.pvRows = {rowSplit->first, rowSplit->second};
        merge = rs;
        probs = rs.getReshaped();
      } else {
        break;
      }
      toPv.push_back(user);
    }
    auto pv = dyn_cast<MatMulOp>(*probs.getUsers().begin());
    if (!pv || pv->getOperand(0) != probs ||
        typeOf(pv->getOperand(1)).getRank() != (merge ? r - 1 : r))
      return std::nullopt;
    m.pv = pv;
    m.v = pv->getOperand(1);
    if (m.dead.empty())
      m.dead.push_back(sm);
    for (Operation *op : toPv) // (users first)
      m.dead.insert(m.dead.begin(), op);
    m.dead.insert(m.dead.begin(), pv);
    // Masks and scales, from the softmax back to the QK^T product.
    Value s = sm.getX();
    // Additive biases, or where()s over the scores to convert, each with
    // the scale applied outside it (softmax((QK + m) / c) adds m / c).
    SmallVector<Mask> masks;
    // Whether `s` is [b * h, sq, skv] scores of known heads (below a split
    // into heads), and whether the softmax itself reads merged scores that
    // a view brought to heads for the mask (BART's bmm attention).
    bool inMerged = false, headsView = false;
    bool widened = false; // (past the FP32 softmax's widening cast)
    // Only a fill that exp() maps to 0 as -inf does.
    auto bigNegative = [](std::optional<double> f) {
      return f && *f <= -1e30 ? f : std::nullopt;
    };
    for (int guard = 0; guard < 10; ++guard) {
      if (!s.getDefiningOp() || !singleUse(s))
        return std::nullopt;
      Operation *op = s.getDefiningOp();
      if (isa<MatMulOp>(op))
        break;
      // The widening half of the FP32 softmax's casts (above), from the
      // type the softmax's result is cast back to.
      if (auto widen = dyn_cast<CastOp>(op)) {
        if (!narrow || widened || !typeOf(s).getElementType().isF32() ||
            typeOf(widen.getX()).getElementType() !=
                typeOf(narrow.getY()).getElementType())
          return std::nullopt;
        widened = true;
        m.dead.push_back(op);
        s = widen.getX();
        continue;
      }
      // A softcap, with no scale outside it (the op caps the scaled
      // scores) and one at most.
      if (auto cap = softcapOf(s, m.dead)) {
        if (m.scale != 1.0 || m.softcap > 0.0)
          return std::nullopt;
        m.softcap = cap->first;
        s = cap->second;
        continue;
      }
      if (isa<MulOp, DivOp>(op)) {
        Value peeled = peelScale(s, m.scale, m.dead);
        if (peeled == s) {
          // SwinV2's cosine attention: the product times a learned
          // [h, 1, 1] scale, the same for every query and key of a head:
          // moved onto Q.
          Value scale = tensorScaleOfProduct(op);
          if (!scale || m.qScale)
            return std::nullopt;
          m.qScale = scale;
          m.dead.push_back(op);
          s = op->getOperand(op->getOperand(0) == scale ? 1 : 0);
          continue;
        }
        s = peeled;
        continue;
      }
      if (auto add = dyn_cast<AddOp>(op)) {
        // The scores side is the one with the scores' type (the bias may
        // broadcast); a product on both sides is not a mask.
        bool aScores = typeOf(add.getA()) == typeOf(s) && leadsToProduct(add.getA());
        bool bScores = typeOf(add.getB()) == typeOf(s) && leadsToProduct(add.getB());
        if (aScores == bScores)
          return std::nullopt;
        // A constant zero addend (baddbmm's beta * zeros as GPT-NeoX
        // exports it) changes no score's exponent: dropped.
        if (Value zeros = aScores ? add.getB() : add.getA();
            scalarConstant(zeros) == 0.0) {
          m.dead.push_back(op);
          if (zeros.getDefiningOp() && singleUse(zeros))
            m.dead.push_back(zeros.getDefiningOp());
          s = aScores ? add.getA() : add.getB();
          continue;
        }
        Value bias = aScores ? add.getB() : add.getA();
        if ((inMerged && !unmergeable(typeOf(bias), typeOf(s).getRank(), m.split)) ||
            !m.rows.empty())
          return std::nullopt;
        masks.push_back({bias, m.scale, false, inMerged});
        m.dead.push_back(op);
        s = aScores ? add.getA() : add.getB();
        continue;
      }
      // max(s, c), c <= -1e30: OPT clamps its masked scores to the finite
      // minimum. It changes only scores below c, which exp() maps to 0
      // either way (a row with every score so low aside, as for -inf).
      if (auto clamp = dyn_cast<MaxOp>(op); clamp && op->getNumOperands() == 2) {
        Value x = op->getOperand(0), c = op->getOperand(1);
        if (!bigNegative(scalarConstant(c)))
          std::swap(x, c);
        if (!bigNegative(scalarConstant(c)) || typeOf(x) != typeOf(s) ||
            m.scale <= 0.0) // (a negative scale outside would make it a cap)
          return std::nullopt;
        m.dead.push_back(op);
        s = x;
        continue;
      }
      if (auto rs = dyn_cast<ReshapeOp>(op)) {
        // A softmax over [b * h, sq, skv] scores viewed as heads for the
        // mask (BART, Whisper: `w.view(b, h, q, k) + mask`, then back), or
        // over [b * w, h, sq, skv] viewed as batch and windows (Swin's
        // shifted windows: `w.view(b, nw, h, n, n) + mask`): the attention
        // is built over the split and its output merged.
        if (auto heads = headsOf(typeOf(s), typeOf(rs.getData()));
            heads && m.split.empty()) {
          m.split = {heads->first, heads->second};
          headsView = true;
          m.dead.push_back(op);
          s = rs.getData();
          continue;
        }
        // Scores of [b * h, sq, skv] products split into heads (GPT-NeoX's
        // baddbmm, BART's bmm on merged views): build() unmerges Q and K^T.
        auto heads = headsOf(typeOf(rs.getData()), typeOf(rs.getReshaped()));
        // Multi-query scores of [b, sq * h, skv] viewed [b, sq, h, skv]:
        // build() takes Q as heads and one K and V head.
        if (auto rowSplit = rowsOf(typeOf(rs.getData()), typeOf(rs.getReshaped()));
            !heads && rowSplit && r == 4 && m.split.empty() && m.rows.empty()) {
          m.rows = {rowSplit->first, rowSplit->second};
          m.dead.push_back(op);
          s = rs.getData();
          continue;
        }
        if (!heads || inMerged || !m.rows.empty() ||
            (!m.split.empty() &&
             (!headsView || m.split != SmallVector<int64_t>{heads->first, heads->second})))
          return std::nullopt;
        m.split = {heads->first, heads->second};
        inMerged = true;
        m.dead.push_back(op);
        s = rs.getData();
        continue;
      }
      if (auto where = dyn_cast<WhereOp>(op)) {
        if (inMerged || !m.rows.empty())
          return std::nullopt;
        // where() replaces the score, the bias adds to it: equal only for
        // a fill exp() maps to 0.
        std::optional<double> fillB = bigNegative(scalarConstant(where.getY())),
                              fillA = bigNegative(scalarConstant(where.getX()));
        bool scoresA = fillB && typeOf(where.getX()) == typeOf(s);
        bool scoresB = fillA && typeOf(where.getY()) == typeOf(s);
        if (scoresA == scoresB)
          return std::nullopt;
        if (m.scale <= 0.0 || // a negative scale would turn -inf into +inf
            masksQueriesFromInput(where.getCondition()))
          return std::nullopt;
        masks.push_back({where, m.scale, true});
        m.dead.push_back(op);
        s = scoresA ? where.getX() : where.getY();
        continue;
      }
      return std::nullopt;
    }
    auto qk = dyn_cast_or_null<MatMulOp>(s.getDefiningOp());
    if (!qk || !singleUse(s) || (bool)narrow != widened)
      return std::nullopt;
    m.dead.push_back(qk);
    m.q = peelScale(qk->getOperand(0), m.scale, m.dead);
    Value kt = peelScale(qk->getOperand(1), m.scale, m.dead);
    if (headsView) { // (P V over merged heads too)
      if (!m.pvSplit.empty())
        return std::nullopt;
      m.pvSplit = m.split;
      r += 1;
    }
    if (m.rows != m.pvRows || (!m.rows.empty() && !m.pvSplit.empty()))
      return std::nullopt;
    auto q = unmergedType(typeOf(m.q), m.split),
         ktT = unmergedType(typeOf(kt), m.split),
         v = unmergedType(typeOf(m.v), m.pvSplit);
    if (!m.rows.empty()) {
      if (!rowsOfQuery(q, m.rows))
        return std::nullopt;
      q = *rowsOfQuery(q, m.rows);
      // (one K and V head: [b, m, n] as [b, 1, m, n])
      ktT = unmergedType(ktT, {ktT.getDimSize(0), 1});
      v = unmergedType(v, {v.getDimSize(0), 1});
    }
    if (q.getRank() != r || ktT.getRank() != r || v.getRank() != r ||
        q.getElementType() != v.getElementType() ||
        q.getElementType() != ktT.getElementType())
      return std::nullopt;
    // Equal leading dimensions, but for one K and V head against Q's
    // (multi-query: Falcon's matmul broadcasts it).
    for (int64_t i = 0; i < r - 2; ++i)
      if (ktT.getDimSize(i) != v.getDimSize(i) ||
          (q.getDimSize(i) != ktT.getDimSize(i) &&
           !(i == r - 3 && ktT.getDimSize(i) == 1)))
        return std::nullopt; // a broadcasting batched product
    if (ktT.getDimSize(r - 1) != v.getDimSize(r - 2))
      return std::nullopt;
    m.k = kt; // K^T for now: build() transposes it
    // The guard must test the one bias the scores get, unscaled.
    if (guardBias && (masks.size() != 1 || masks[0].value != guardBias ||
                      masks[0].outerScale != 1.0 || masks[0].scoreWhere))
      return std::nullopt;
    m.zeroMaskedRows = guardBias || nanGuard;
    m.bias = Value();
    pendingMasks = masks;
    return m;
  }

  /// Rewrites a match to mpc.attention.
  void build(Match &m) {
    Location loc = m.pv->getLoc();
    b.setInsertionPoint(m.pv);
    if (m.qScale) // (Q as the product read it: the scale broadcasts alike)
      m.q = make<MulOp>(loc, {m.q, m.qScale});
    if (!m.split.empty()) {
      m.q = unmerge(loc, m.q, m.split, m.dead);
      m.k = unmerge(loc, m.k, m.split, m.dead);
    }
    if (!m.pvSplit.empty())
      m.v = unmerge(loc, m.v, m.pvSplit, m.dead);
    if (!m.rows.empty()) { // Q [b, sq * h, d] as [b, h, sq, d]; one K, V head
      auto q = typeOf(m.q);
      m.q = transpose(loc,
                      reshapeTo(b, loc, m.q,
                                {q.getDimSize(0), m.rows[0], m.rows[1], q.getDimSize(2)}),
                      {0, 2, 1, 3});
      m.k = unmerge(loc, m.k, {typeOf(m.k).getDimSize(0), 1}, m.dead);
      m.v = unmerge(loc, m.v, {typeOf(m.v).getDimSize(0), 1}, m.dead);
    }
    int64_t r = typeOf(m.q).getRank();
    // K from K^T: compose with the export's own transpose when it is one.
    SmallVector<int64_t> swap;
    for (int64_t i = 0; i < r; ++i)
      swap.push_back(i < r - 2 ? i : 2 * r - 3 - i);
    // K^T cast to Q's type after its transpose (`mpc convert` keeps the
    // rotary products FP32): the cast moves onto K below, so that the
    // transposes compose and grouped-query heads are seen.
    Type kCast;
    if (auto c = m.k.getDefiningOp<CastOp>();
        c && singleUse(m.k) && c.getX().getDefiningOp<TransposeOp>() &&
        singleUse(c.getX())) {
      kCast = typeOf(m.k).getElementType();
      m.dead.push_back(c);
      m.k = c.getX();
    }
    Value k;
    auto t = m.k.getDefiningOp<TransposeOp>();
    auto viewed = t ? std::nullopt : viewedTranspose(m.k, m.dead);
    if ((t && (singleUse(m.k) || m.k.use_empty()) && t.getPerm()) || // (unmerge's)
        viewed) {
      ArrayRef<int64_t> kPerm = viewed ? ArrayRef<int64_t>(viewed->second) : *t.getPerm();
      SmallVector<int64_t> perm;
      for (int64_t i = 0; i < r; ++i)
        perm.push_back(kPerm[swap[i]]);
      bool identity = true;
      for (int64_t i = 0; i < r; ++i)
        identity &= perm[i] == i;
      // A scale on K before its transpose (ONNX Attention's sqrt(scale)
      // on Q and on K) folds like one on K^T.
      Value x = peelScale(viewed ? viewed->first : t.getX(), m.scale, m.dead);
      k = identity ? x : transpose(loc, x, perm);
      if (t)
        m.dead.push_back(t);
    } else {
      k = transpose(loc, m.k, swap);
    }
    int64_t sq = typeOf(m.q).getDimSize(r - 2), skv = typeOf(k).getDimSize(r - 2);
    Value bias;
    for (const Mask &mask : pendingMasks) {
      Value term = mask.value;
      double outer = mask.outerScale;
      if (mask.merged && typeOf(term).getRank() == r - 1)
        term = typeOf(term).getDimSize(0) == 1
                   ? reshapeTo(b, loc, term, unmergedType(typeOf(term), {1, 1}).getShape())
                   : unmerge(loc, term, m.split, m.dead);
      if (mask.scoreWhere) {
        auto where = mask.value.getDefiningOp<WhereOp>();
        bool fillIsB = (bool)scalarConstant(where.getY()) &&
                       typeOf(where.getX()).getRank() == r;
        double fill = *scalarConstant(fillIsB ? where.getY() : where.getX());
        // where(m, s, fill): the bias is fill where m is false.
        // (in the where's type: FP32 in an FP32 softmax, where a finite
        // fill must stay finite; a row masked whole is then uniform)
        auto biasOf = [&](Value cond) {
          return maskBias(b, loc, rowsToHeads(b, loc, cond, m.rows),
                          typeOf(where.getResult()).getElementType(),
                          fill * outer, !fillIsB);
        };
        term = Value();
        // A causal constant and padding joined (seen where both are: And;
        // masked where either is: Or) are two biases, the first a band:
        // where both mask a key the sum is 2 fill, masked as well.
        if (auto parts = splitConstantOperand(b, where.getCondition(), fillIsB);
            parts && sq != ShapedType::kDynamic && skv != ShapedType::kDynamic)
          if (Value causal = biasOf(parts->first); constantBand(causal, sq, skv))
            term = make<AddOp>(loc, {causal, biasOf(parts->second)});
        if (!term)
          term = biasOf(where.getCondition());
      } else {
        term = rowsToHeads(b, loc, term, m.rows);
        // where(C and P, 0, fill) added (torch 2's SDPA over Hugging Face
        // 5's boolean mask): the same two biases as the where() above.
        if (Value split = splitWhereBias(b, loc, term, sq, skv))
          term = split;
        if (outer != 1.0)
          term = make<MulOp>(loc, {term, scalarValue(b, loc, typeOf(term).getElementType(), outer)});
      }
      // Terms of Q's type (before an FP32 softmax's widening cast) and FP32
      // ones (after it) are summed in FP32, exactly.
      auto f32 = [&](Value x) -> Value {
        if (typeOf(x).getElementType().isF32())
          return x;
        return b.create<CastOp>(loc, typeOf(x).clone(b.getF32Type()), x);
      };
      if (bias &&
          typeOf(bias).getElementType() != typeOf(term).getElementType()) {
        bias = f32(bias);
        term = f32(term);
      }
      bias = bias ? make<AddOp>(loc, {bias, term}) : term;
    }
    // The terms of the bias that are positional masks (a causal constant,
    // the import's causal and window bias, torch code's Trilus) become
    // the band, merged where several; the others (attn_mask, padding)
    // stay the bias.
    std::optional<Band> band;
    if (bias && sq != ShapedType::kDynamic && skv != ShapedType::kDynamic) {
      band = bandOfBias(b, loc, bias, sq, skv);
      b.setInsertionPoint(m.pv);
    }
    // A padding bias the same for every query: one row.
    if (bias && !matchPattern(bias, m_Constant()))
      if (Value narrow = queryInvariantBias(b, bias, narrowed))
        bias = narrow;
    // Grouped-query K and V, their heads repeated for the products: read
    // in place instead (the kernels index head h / rep; no copies of K
    // and V, nor their gradients' sums over the copies).
    Value v = m.v;
    auto kHeads = repeatedHeads(k), vHeads = repeatedHeads(v);
    if (kHeads && vHeads && kHeads->second == vHeads->second) {
      k = kHeads->first;
      v = vHeads->first;
    }
    if (kCast) {
      b.setInsertionPoint(m.pv);
      k = b.create<CastOp>(loc, typeOf(k).clone(kCast), k);
    }
    SmallVector<Value> operands{m.q, k, v};
    if (bias)
      operands.push_back(bias);
    SmallVector<NamedAttribute> attrs{
        b.getNamedAttr("scale", b.getF32FloatAttr((float)m.scale)),
        b.getNamedAttr("causal", b.getBoolAttr(band && band->causal)),
        b.getNamedAttr("zero_masked_rows", b.getBoolAttr(m.zeroMaskedRows)),
        b.getNamedAttr("operandSegmentSizes",
                       b.getDenseI32ArrayAttr({1, 1, 1, bias ? 1 : 0, 0}))};
    if (band && band->offset != skv - sq)
      attrs.push_back(
          b.getNamedAttr("causal_offset", b.getI64IntegerAttr(band->offset)));
    if (band && band->left >= 0)
      attrs.push_back(
          b.getNamedAttr("window_left", b.getI64IntegerAttr(band->left)));
    if (band && band->right >= 0)
      attrs.push_back(
          b.getNamedAttr("window_right", b.getI64IntegerAttr(band->right)));
    if (m.softcap > 0.0)
      attrs.push_back(
          b.getNamedAttr("softcap", b.getF32FloatAttr((float)m.softcap)));
    if (m.dropout > 0.0) {
      attrs.push_back(
          b.getNamedAttr("dropout", b.getF32FloatAttr((float)m.dropout)));
      if (m.seed)
        attrs.push_back(b.getNamedAttr("seed", m.seed));
      if (m.stream)
        attrs.push_back(b.getNamedAttr("stream", m.stream));
    }
    std::string diag;
    auto at = createInferred(b, loc, AttentionOp::getOperationName(), operands,
                             attrs, &diag);
    Value y = (*at)->getResult(0);
    if (!m.rows.empty()) // ([b, h, sq, dv] to the rows' [b, sq * h, dv])
      y = transpose(loc, y, {0, 2, 1, 3});
    if (!m.pvSplit.empty() || !m.rows.empty()) // (the merged product's [b * h, sq, dv])
      y = reshapeTo(b, loc, y, typeOf(m.pv->getResult(0)).getShape());
    m.pv->getResult(0).replaceAllUsesWith(y);
    for (Operation *op : m.dead)
      if (op->use_empty())
        op->erase();
  }

private:
  /// `x` [b * h, ..., m, n] as [b, h, ..., m, n]: the tensor a reshape
  /// merged, or a new reshape (through a transpose of the last two
  /// dimensions).
  Value unmerge(Location loc, Value x, ArrayRef<int64_t> split,
                SmallVectorImpl<Operation *> &dead) {
    RankedTensorType want = unmergedType(typeOf(x), split);
    if (auto rs = x.getDefiningOp<ReshapeOp>();
        rs && typeOf(rs.getData()) == want) {
      dead.push_back(rs);
      return rs.getData();
    }
    auto t = x.getDefiningOp<TransposeOp>();
    int64_t r = typeOf(x).getRank();
    if (t && singleUse(x) && t.getPerm() &&
        llvm::ArrayRef<int64_t>(*t.getPerm()) == ArrayRef<int64_t>(lastTwoSwapped(r))) {
      dead.push_back(t); // (K^T: the transpose composes with build()'s)
      return transpose(loc, unmerge(loc, t.getX(), split, dead), lastTwoSwapped(r + 1));
    }
    return reshapeTo(b, loc, x, want.getShape());
  }

  static SmallVector<int64_t> lastTwoSwapped(int64_t rank) {
    SmallVector<int64_t> perm = llvm::to_vector(llvm::seq<int64_t>(0, rank));
    std::swap(perm[rank - 2], perm[rank - 1]);
    return perm;
  }

  Value transpose(Location loc, Value x, ArrayRef<int64_t> perm) {
    return make<TransposeOp>(
        loc, {x}, {b.getNamedAttr("perm", b.getDenseI64ArrayAttr(perm))});
  }

  template <typename OpTy>
  Value make(Location loc, ValueRange operands,
             ArrayRef<NamedAttribute> attrs = {}) {
    std::string diag;
    return (*createInferred(b, loc, OpTy::getOperationName(), operands, attrs,
                            &diag))
        ->getResult(0);
  }

  OpBuilder b;
  SmallVector<Mask> pendingMasks;
  llvm::DenseMap<Value, Value> narrowed; // queryInvariantBias's, all layers
};

struct FuseAttention : public mpc::impl::FuseAttentionBase<FuseAttention> {
  void runOnOperation() override {
    for (auto f : getOperation().getOps<func::FuncOp>()) {
      SmallVector<SoftmaxOp> softmaxes(f.getOps<SoftmaxOp>());
      Fuser fuser(&getContext());
      bool fused = false;
      for (SoftmaxOp sm : softmaxes)
        if (auto m = fuser.match(sm)) {
          fuser.build(*m);
          fused = true;
        }
      if (!fused)
        continue;
      // The masks' and scales' constants nothing reads any more.
      eraseDeadOps(f.getBody().front());
    }
  }
};

} // namespace
