//===- Attention.cpp - CPU kernels of mpc.attention and its gradient ------===//
//
// The reference for the fused attention kernels: one query row (forward,
// dq) or one key row (dk, dv) at a time, never an Sq x Skv matrix. Every
// sum runs in FP32 in index order, as the CUDA kernels do, so host
// emulation matches bit for bit: scores s = scale * (q . k) + bias, an
// online softmax over the keys in order (rescaled when the maximum grows),
// y = sum_j p_j v_j / sum_j p_j, lse = max + log(sum).
// The backward recomputes p = exp(s - lse) (FlashAttention's scheme).
// Dropout draws each probability's keep bit from Philox (runtime/Philox.h)
// at its index in the scores, as mpc.dropout on the softmax would: a
// dropped p still adds to the row's sum, only not to y; kept ones are
// scaled by 1/(1-ratio) at the end (y = acc / sum * scale).
//
//===----------------------------------------------------------------------===//

#include "runtime/AttentionBand.h"
#include "runtime/Kernel.h"
#include "runtime/Parallel.h"
#include "runtime/kernels/Common.h"

#include "runtime/Philox.h"

#include <cmath>
#include <limits>

namespace mpc::rt {
namespace {

/// Geometry of one attention step: `batch` flattened leading dimensions,
/// and the bias's element strides over (leading dims..., Sq, Skv), 0 where
/// it broadcasts.
struct Geometry {
  int64_t batch = 1, sq = 0, skv = 0, d = 0, dv = 0;
  int64_t group = 1; // q heads a k and v head serves (grouped-query)
  AttentionBand band;      // the keys each query sees (causal, windows)
  Shape lead;              // leading dimensions of the scores
  std::vector<int64_t> bs; // bias strides, one per scores dimension
  float scale = 1.0f, softcap = 0.0f; // softcap: c tanh(s / c), 0 for none
  bool zeroMaskedRows = false;
  // Dropout: off at ratio 0; kept probabilities times dropScale.
  float ratio = 0.0f, dropScale = 1.0f;
  uint64_t seed = 0, threshold = 0;
  DropoutCounter counter;
  uint32_t stream = 0;

  Geometry(const Tensor &q, const Tensor &k, const Tensor &v, const Tensor *bias,
           const Tensor *stepNumber, const Step &step) {
    int64_t r = q.rank();
    lead.assign(q.shape().begin(), q.shape().end() - 2);
    for (int64_t x : lead)
      batch *= x;
    sq = q.dim(r - 2);
    d = q.dim(r - 1);
    skv = k.dim(r - 2);
    dv = v.dim(r - 1);
    group = q.dim(r - 3) / k.dim(r - 3);
    scale = (float)step.getFloat("scale", 1.0);
    softcap = (float)step.getFloat("softcap", 0.0);
    band = AttentionBand::of(step, sq, skv);
    zeroMaskedRows = step.getInt("zero_masked_rows", 0) != 0;
    ratio = (float)step.getFloat("dropout", 0.0);
    if (ratio > 0.0f) {
      dropScale = philox::mpc_dropout_scale(ratio);
      threshold = philox::mpc_dropout_threshold(ratio);
      seed = (uint64_t)step.getInt("seed", 0);
      stream = (uint32_t)step.getInt("stream", 0);
      counter = dropoutCounter(stepNumber, (uint64_t)(batch * sq * skv));
    }
    bs.assign(r, 0);
    if (!bias)
      return;
    Shape scores = lead;
    scores.push_back(sq);
    scores.push_back(skv);
    int64_t br = bias->rank(), stride = 1;
    for (int64_t i = br - 1; i >= 0; --i) {
      int64_t a = r - br + i;
      bs[a] = bias->dim(i) == 1 && scores[a] != 1 ? 0 : stride;
      stride *= bias->dim(i);
    }
  }

  /// Offset of bias row (b, i), the flattened leading index and query.
  int64_t biasRow(int64_t b, int64_t i) const {
    int64_t off = 0;
    for (int64_t a = (int64_t)lead.size() - 1; a >= 0; --a) {
      off += (b % lead[a]) * bs[a];
      b /= lead[a];
    }
    return off + i * bs[lead.size()];
  }
  int64_t biasKey() const { return bs.back(); }
  /// Whether dropout keeps probability (b, i, j).
  bool keep(int64_t b, int64_t i, int64_t j) const {
    return ratio == 0.0f ||
           philox::mpc_dropout_keep(seed, stream, counter.step,
                                    counter.first +
                                        (uint64_t)((b * sq + i) * skv + j),
                                    threshold);
  }
  /// What dropout multiplies the probability (b, i, j) by: 0 or the scale.
  float dropFactor(int64_t b, int64_t i, int64_t j) const {
    return keep(b, i, j) ? dropScale : 0.0f;
  }
};

/// s_ij = scale * (q_i . k_j) (capped to c tanh(s / c) with a softcap c)
/// + bias_ij; `slope` gets ds_ij's factor from the cap, 1 - tanh^2 (1
/// without). The loops visit only the keys (queries) the band lets a
/// query (key) see: the others' p is 0 and adds nothing.
inline float score(const Geometry &g, const float *qi, const float *kj,
                   const float *bias, int64_t bRow, int64_t j,
                   float *slope = nullptr) {
  float dot = 0.0f;
  for (int64_t t = 0; t < g.d; ++t)
    dot += qi[t] * kj[t];
  float s = g.scale * dot;
  if (g.softcap > 0.0f) {
    float t = std::tanh(s / g.softcap);
    s = g.softcap * t;
    if (slope)
      *slope = 1.0f - t * t;
  }
  return bias ? s + bias[bRow + j * g.biasKey()] : s;
}

constexpr float kInf = std::numeric_limits<float>::infinity();

/// One key of the online softmax (FlashAttention's): a new maximum rescales
/// the running sum and accumulator; a masked key (-inf) adds nothing. The
/// CUDA kernel takes the same steps in the same order. A dropped key
/// (`keep` false) adds to the sum only.
inline void onlineStep(float s, const float *vj, int64_t dv, float &mx,
                       float &sum, float *acc, bool keep) {
  if (s == -kInf)
    return;
  if (s > mx) {
    float c = std::exp(mx - s);
    sum *= c;
    for (int64_t t = 0; t < dv; ++t)
      acc[t] *= c;
    mx = s;
  }
  float p = std::exp(s - mx);
  sum += p;
  if (!keep)
    return;
  for (int64_t t = 0; t < dv; ++t)
    acc[t] += p * vj[t];
}

/// y = acc / sum * dropScale (1 without dropout) and lse = max +
/// log(sum); a row with no attendable key gives NaN as softmax would, or 0
/// and lse = -inf (`zeroMaskedRows`).
inline void finishRow(float *acc, int64_t dv, float mx, float sum,
                      float dropScale, bool zeroMaskedRows, float &lse) {
  bool none = sum == 0.0f;
  for (int64_t t = 0; t < dv; ++t)
    acc[t] = none && zeroMaskedRows ? 0.0f : acc[t] / sum * dropScale;
  lse = none ? (zeroMaskedRows ? -kInf : std::nanf("")) : mx + std::log(sum);
}

void attentionK(KernelContext &c) {
  const Tensor &q = c.in(0), &k = c.in(1), &v = c.in(2);
  const Tensor *bias = c.input(3);
  Geometry g(q, k, v, bias, c.input(4), c.step);
  std::vector<float> qB, kB, vB, biasB, yB;
  const float *qp = floatData(q, qB), *kp = floatData(k, kB),
              *vp = floatData(v, vB);
  const float *bp = bias ? floatData(*bias, biasB) : nullptr;
  Tensor &y = c.output(0), &lse = c.output(1);
  float *yp = floatOut(y, yB);
  float *lp = lse.data<float>();
  parallelFor(g.batch * g.sq, 4, [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) {
      int64_t b = row / g.sq, i = row % g.sq;
      const float *qi = qp + row * g.d, *kb = kp + b / g.group * g.skv * g.d,
                  *vb = vp + b / g.group * g.skv * g.dv;
      int64_t bRow = bias ? g.biasRow(b, i) : 0;
      float *yi = yp + row * g.dv;
      std::fill(yi, yi + g.dv, 0.0f); // the running sum of p v
      float mx = -kInf, sum = 0.0f;
      for (int64_t j = g.band.firstKey(i), e = g.band.endKey(i); j < e; ++j)
        onlineStep(score(g, qi, kb + j * g.d, bp, bRow, j),
                   vb + j * g.dv, g.dv, mx, sum, yi, g.keep(b, i, j));
      finishRow(yi, g.dv, mx, sum, g.dropScale, g.zeroMaskedRows, lp[row]);
    }
  });
  finishFloatOut(y, yB);
}

/// D_i = dy_i . y_i, the row term of the softmax gradient.
inline float rowTerm(const Geometry &g, const float *dyi, const float *yi) {
  float acc = 0.0f;
  for (int64_t t = 0; t < g.dv; ++t)
    acc += dyi[t] * yi[t];
  return acc;
}

/// ds_ij = p_ij (z_ij (dy_i . v_j) - D_i), with p_ij = exp(s_ij - lse_i)
/// and z_ij dropout's factor (1 without); also returns pd_ij = p_ij z_ij,
/// the probability as y saw it.
inline float scoreGrad(const Geometry &g, float s, float lse, const float *dyi,
                       const float *vj, float rowD, float z, float &pd) {
  float p = lse == -std::numeric_limits<float>::infinity() ? 0.0f
                                                          : std::exp(s - lse);
  float dp = 0.0f;
  for (int64_t t = 0; t < g.dv; ++t)
    dp += dyi[t] * vj[t];
  pd = p * z;
  return p * (dp * z - rowD);
}

void attentionGradK(KernelContext &c) {
  const Tensor &dy = c.in(0), &q = c.in(1), &k = c.in(2), &v = c.in(3),
               &y = c.in(4), &lse = c.in(5);
  const Tensor *bias = c.input(6);
  Geometry g(q, k, v, bias, c.input(7), c.step);
  std::vector<float> dyB, qB, kB, vB, yB, biasB, dqB, dkB, dvB;
  const float *dyp = floatData(dy, dyB), *qp = floatData(q, qB),
              *kp = floatData(k, kB), *vp = floatData(v, vB),
              *yp = floatData(y, yB), *lp = lse.data<float>();
  const float *bp = bias ? floatData(*bias, biasB) : nullptr;
  Tensor &dq = c.output(0), &dk = c.output(1), &dv = c.output(2);
  float *dqp = floatOut(dq, dqB), *dkp = floatOut(dk, dkB),
        *dvp = floatOut(dv, dvB);
  // with_scores_grad: dS itself (before a softcap's slope), 0 outside the
  // band.
  Tensor *dsT = c.numOutputs() > 3 ? &c.output(3) : nullptr;
  std::vector<float> dsB;
  float *dsp = dsT ? floatOut(*dsT, dsB) : nullptr;
  // dq_i = scale * sum_j ds_ij k_j, a query row at a time.
  parallelFor(g.batch * g.sq, 4, [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) {
      int64_t b = row / g.sq, i = row % g.sq;
      const float *qi = qp + row * g.d, *dyi = dyp + row * g.dv;
      int64_t bRow = bias ? g.biasRow(b, i) : 0;
      float rowD = rowTerm(g, dyi, yp + row * g.dv);
      float *dqi = dqp + row * g.d;
      std::fill(dqi, dqi + g.d, 0.0f);
      float *dsi = dsp ? dsp + row * g.skv : nullptr;
      if (dsi)
        std::fill(dsi, dsi + g.skv, 0.0f);
      for (int64_t j = g.band.firstKey(i), e = g.band.endKey(i); j < e; ++j) {
        int64_t key = b / g.group * g.skv + j;
        float z = g.dropFactor(b, i, j); // 1 without dropout
        float slope = 1.0f;
        float s = score(g, qi, kp + key * g.d, bp, bRow, j, &slope);
        float p, dsBiased = scoreGrad(g, s, lp[row], dyi, vp + key * g.dv,
                                      rowD, z, p);
        if (dsi)
          dsi[j] = dsBiased;
        float ds = slope * dsBiased;
        for (int64_t t = 0; t < g.d; ++t)
          dqi[t] += g.scale * ds * kp[key * g.d + t];
      }
    }
  });
  // dk_j = scale * sum_i ds_ij q_i and dv_j = sum_i p_ij dy_i, a key row at
  // a time, over the queries of every q head the key's head serves.
  parallelFor(g.batch / g.group * g.skv, 4, [&](int64_t begin, int64_t end) {
    for (int64_t key = begin; key < end; ++key) {
      int64_t j = key % g.skv;
      const float *kj = kp + key * g.d, *vj = vp + key * g.dv;
      float *dkj = dkp + key * g.d, *dvj = dvp + key * g.dv;
      std::fill(dkj, dkj + g.d, 0.0f);
      std::fill(dvj, dvj + g.dv, 0.0f);
      for (int64_t b = key / g.skv * g.group, bEnd = b + g.group; b < bEnd; ++b)
      for (int64_t i = g.band.firstQuery(j), e = g.band.endQuery(j); i < e;
           ++i) {
        int64_t row = b * g.sq + i;
        const float *qi = qp + row * g.d, *dyi = dyp + row * g.dv;
        float rowD = rowTerm(g, dyi, yp + row * g.dv);
        int64_t bRow = bias ? g.biasRow(b, i) : 0;
        float z = g.dropFactor(b, i, j); // 1 without dropout
        float slope = 1.0f;
        float s = score(g, qi, kj, bp, bRow, j, &slope);
        float p, ds = slope * scoreGrad(g, s, lp[row], dyi, vj, rowD, z, p);
        for (int64_t t = 0; t < g.d; ++t)
          dkj[t] += g.scale * ds * qi[t];
        for (int64_t t = 0; t < g.dv; ++t)
          dvj[t] += p * dyi[t];
      }
    }
  });
  finishFloatOut(dq, dqB);
  finishFloatOut(dk, dkB);
  finishFloatOut(dv, dvB);
  if (dsT)
    finishFloatOut(*dsT, dsB);
}

/// RotaryEmbedding in one pass (mpc.rotary): element i pairs with its
/// partner (i +- rotary_dim/2, or i +- 1 interleaved); the first of a pair
/// becomes a cos - b sin, the second a sin + b cos, in FP32, rounded once,
/// in the CUDA kernel's arithmetic order.
void rotaryK(KernelContext &c) {
  const Tensor &x = c.in(0), &cosT = c.in(1), &sinT = c.in(2);
  Tensor &y = c.output(0);
  int64_t seqAxis = c.step.getInt("seq_axis", 1), R = c.step.getInt("rotary_dim", 0);
  bool interleaved = c.step.getInt("interleaved", 0) != 0;
  int64_t A1 = x.dim(1), A2 = x.dim(2), D = x.dim(3), half = R / 2;
  int64_t S = x.dim(seqAxis), Bc = cosT.dim(0);
  std::vector<float> xb, cb, sb, yb;
  const float *xp = floatData(x, xb), *cp = floatData(cosT, cb),
              *sp = floatData(sinT, sb);
  float *yp = floatOut(y, yb);
  parallelFor(x.size(), 4096, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      int64_t d = i % D, r = i / D, a2 = r % A2, a1 = (r / A2) % A1,
              b = r / (A2 * A1), s = seqAxis == 1 ? a1 : a2;
      if (d >= R) {
        yp[i] = xp[i];
        continue;
      }
      bool first = interleaved ? d % 2 == 0 : d < half;
      int64_t p = interleaved ? d / 2 : (first ? d : d - half);
      int64_t partner = interleaved ? (first ? i + 1 : i - 1)
                                    : (first ? i + half : i - half);
      int64_t k = ((b % Bc) * S + s) * half + p;
      float co = cp[k], si = sp[k];
      yp[i] = first ? co * xp[i] - si * xp[partner]
                    : si * xp[partner] + co * xp[i];
    }
  });
  finishFloatOut(y, yb);
}

} // namespace

void registerAttentionKernels(KernelTable &t) {
  t.add(OpId::Attention, attentionK);
  t.add(OpId::AttentionGrad, attentionGradK);
  t.add(OpId::Rotary, rotaryK);
}

} // namespace mpc::rt
