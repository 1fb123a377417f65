//===- AttentionBand.h - which keys an attention query sees -----*- C++ -*-===//
//
// The positional mask of mpc.attention and mpc.attention_grad, read once
// from a step's attributes for the CPU kernels (runtime/kernels/
// Attention.cpp) and the CUDA ones (codegen/CudaAttention.h): key j is
// visible to query i where d = i + off - j (how far j lies before i,
// `off` the step's causal_offset, by default Skv - Sq) lies in [lo, hi].
// `causal` sets lo = 0, `window_right` R lo >= -R, `window_left` L hi = L
// (ONNX Attention's sliding windows, Mistral's and Gemma's local
// attention); unbounded sides hold kNone, far enough from int64's limits
// that the sums below cannot overflow.
//
//===----------------------------------------------------------------------===//

#ifndef MPC_RUNTIME_ATTENTIONBAND_H
#define MPC_RUNTIME_ATTENTIONBAND_H

#include "runtime/Plan.h"

#include <algorithm>
#include <cstdint>

namespace mpc::rt {

struct AttentionBand {
  static constexpr int64_t kNone = int64_t(1) << 60;
  int64_t sq = 0, skv = 0, off = 0;
  int64_t lo = -kNone, hi = kNone; // bounds on d = i + off - j

  static AttentionBand of(const Step &s, int64_t sq, int64_t skv) {
    AttentionBand b;
    b.sq = sq;
    b.skv = skv;
    b.off = s.getInt("causal_offset", skv - sq);
    if (s.getInt("causal", 0) != 0)
      b.lo = 0;
    if (int64_t r = s.getInt("window_right", -1); r >= 0)
      b.lo = std::max(b.lo, -r);
    if (int64_t l = s.getInt("window_left", -1); l >= 0)
      b.hi = l;
    // Bounds every pair meets bound nothing (d runs from off - Skv + 1
    // to Sq - 1 + off), which keeps the kernels' sums in range.
    if (b.lo <= b.off - skv + 1)
      b.lo = -kNone;
    if (b.hi >= sq - 1 + b.off)
      b.hi = kNone;
    return b;
  }

  /// Whether the keys a query sees end before the last (causal or a
  /// right window), start after the first (a left window).
  bool boundsEnd() const { return lo != -kNone; }
  bool boundsStart() const { return hi != kNone; }
  bool any() const { return boundsEnd() || boundsStart(); }
  bool visible(int64_t i, int64_t j) const {
    int64_t d = i + off - j;
    return d >= lo && d <= hi;
  }
  /// The keys query i sees: [firstKey, endKey), clamped to [0, Skv]
  /// (empty where firstKey >= endKey).
  int64_t firstKey(int64_t i) const {
    return boundsStart() ? std::clamp<int64_t>(i + off - hi, 0, skv) : 0;
  }
  int64_t endKey(int64_t i) const {
    return boundsEnd() ? std::clamp<int64_t>(i + off - lo + 1, 0, skv) : skv;
  }
  /// The queries that see key j: [firstQuery, endQuery), clamped to
  /// [0, Sq].
  int64_t firstQuery(int64_t j) const {
    return boundsEnd() ? std::clamp<int64_t>(j - off + lo, 0, sq) : 0;
  }
  int64_t endQuery(int64_t j) const {
    return boundsStart() ? std::clamp<int64_t>(j - off + hi + 1, 0, sq) : sq;
  }
  /// The (query, key) pairs seen, of Sq x Skv (the products' share).
  double seenFraction() const {
    if (!any() || sq == 0 || skv == 0)
      return 1.0;
    double seen = 0;
    for (int64_t i = 0; i < sq; ++i)
      seen += (double)std::max<int64_t>(endKey(i) - firstKey(i), 0);
    return seen / ((double)sq * (double)skv);
  }
};

} // namespace mpc::rt

#endif // MPC_RUNTIME_ATTENTIONBAND_H
