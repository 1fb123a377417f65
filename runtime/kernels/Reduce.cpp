//===- Reduce.cpp - reductions, arg max/min, top k, cumulative sum --------===//
//
// Sums accumulate in double and are rounded once to the output type.
//
//===----------------------------------------------------------------------===//

#include "runtime/Kernel.h"
#include "runtime/Parallel.h"
#include "runtime/kernels/Common.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace mpc::rt {
namespace {

enum class Red { Sum, Mean, Max, Min, Prod, L1, L2, SumSquare, LogSum, LogSumExp };

double initialValue(Red r) {
  return r == Red::Max   ? -std::numeric_limits<double>::infinity()
         : r == Red::Min ? std::numeric_limits<double>::infinity()
         : r == Red::Prod ? 1.0
                          : 0.0;
}

/// Folds v into the accumulator (mx: the max subtracted by log-sum-exp).
inline double accumulate(Red r, double a, double v, double mx) {
  switch (r) {
  case Red::Max:
    return std::isnan(v) || v > a ? v : a;
  case Red::Min:
    return std::isnan(v) || v < a ? v : a;
  case Red::Prod:
    return a * v;
  case Red::L1:
    return a + std::fabs(v);
  case Red::L2:
  case Red::SumSquare:
    return a + v * v;
  case Red::LogSumExp:
    return a + std::exp(v - mx);
  default: // Sum, Mean, LogSum
    return a + v;
  }
}

/// The reduced value from the accumulator over `count` elements.
inline double finish(Red r, double a, int64_t count, double mx) {
  switch (r) {
  case Red::Mean:
    return count ? a / count : std::nan("");
  case Red::L2:
    return std::sqrt(a);
  case Red::LogSum:
    return std::log(a);
  case Red::LogSumExp:
    return std::log(a) + mx;
  default:
    return a;
  }
}

/// For each output element, the input elements reduced into it are those
/// sharing its coordinates on the kept axes.
template <Red R> void reduceK(KernelContext &c) {
  const Tensor &x = c.in(0);
  Tensor &y = c.output(0);
  int64_t rank = x.rank();
  std::vector<bool> reduced(rank, false);
  auto axes = c.step.getInts("axes");
  if (!axes || axes->empty()) {
    if (c.step.getInt("noop_with_empty_axes", 0)) {
      for (int64_t i = 0; i < x.size(); ++i)
        y.setFloat(i, x.getFloat(i));
      if (!isFloat(y.dtype()))
        for (int64_t i = 0; i < x.size(); ++i)
          y.setInt(i, x.getInt(i));
      return;
    }
    reduced.assign(rank, true);
  } else {
    for (int64_t a : *axes)
      reduced[normAxis(a, rank)] = true;
  }
  // Contiguous reduced axes (the usual case): [outer, reduced, inner].
  int64_t first = -1, lastAxis = -1;
  for (int64_t d = 0; d < rank; ++d)
    if (reduced[d]) {
      if (first < 0)
        first = d;
      lastAxis = d;
    }
  bool contiguous = first >= 0;
  for (int64_t d = first; contiguous && d <= lastAxis; ++d)
    contiguous = reduced[d];
  if (contiguous && isFloat(x.dtype())) {
    int64_t outer = 1, red = 1, inner = 1;
    for (int64_t d = 0; d < rank; ++d)
      (d < first ? outer : d <= lastAxis ? red : inner) *= x.dim(d);
    std::vector<float> xBuf;
    const float *xp = floatData(x, xBuf);
    parallelFor(outer * inner, 16, [&](int64_t b, int64_t e) {
      for (int64_t o = b; o < e; ++o) {
        const float *base = xp + (o / inner) * red * inner + o % inner;
        double mx = -std::numeric_limits<double>::infinity();
        if (R == Red::LogSumExp) // subtract the max for stability
          for (int64_t j = 0; j < red; ++j)
            mx = std::max<double>(mx, base[j * inner]);
        double a = initialValue(R);
        for (int64_t j = 0; j < red; ++j)
          a = accumulate(R, a, base[j * inner], mx);
        a = finish(R, a, red, mx);
        y.setFloat(o, (float)a);
      }
    });
    return;
  }
  // Output index of every input element (keepdims does not change it).
  std::vector<int64_t> outStrides(rank, 0);
  for (int64_t d = rank - 1, s = 1; d >= 0; --d)
    if (!reduced[d]) {
      outStrides[d] = s;
      s *= x.dim(d);
    }
  int64_t outN = y.size();
  double init = initialValue(R);
  std::vector<double> acc(outN, init), lseMax;
  std::vector<int64_t> count(outN, 0);
  std::vector<int64_t> outIdx(x.size());
  for (int64_t i = 0; i < x.size(); ++i) {
    int64_t o = 0;
    for (int64_t d = rank - 1, r = i; d >= 0; --d) {
      o += (r % x.dim(d)) * outStrides[d];
      r /= x.dim(d);
    }
    outIdx[i] = o;
  }
  bool fl = isFloat(x.dtype());
  auto val = [&](int64_t i) {
    return fl ? (double)x.getFloat(i) : (double)x.getInt(i);
  };
  if (R == Red::LogSumExp) { // subtract the max for stability
    lseMax.assign(outN, -std::numeric_limits<double>::infinity());
    for (int64_t i = 0; i < x.size(); ++i)
      lseMax[outIdx[i]] = std::max(lseMax[outIdx[i]], val(i));
  }
  for (int64_t i = 0; i < x.size(); ++i) {
    int64_t o = outIdx[i];
    acc[o] = accumulate(R, acc[o], val(i), lseMax.empty() ? 0.0 : lseMax[o]);
    ++count[o];
  }
  for (int64_t o = 0; o < outN; ++o) {
    double a = finish(R, acc[o], count[o], lseMax.empty() ? 0.0 : lseMax[o]);
    if (isFloat(y.dtype()))
      y.setFloat(o, (float)a);
    else
      y.setInt(o, (int64_t)a);
  }
}

template <bool IsMax> void argK(KernelContext &c) {
  const Tensor &x = c.in(0);
  Tensor &y = c.output(0);
  bool last = c.step.getInt("select_last_index", 0);
  auto [outer, dim, inner] =
      splitAt(x.shape(), normAxis(c.step.getInt("axis", 0), x.rank()));
  bool fl = isFloat(x.dtype());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t in = 0; in < inner; ++in) {
      int64_t best = 0;
      double bv = 0;
      for (int64_t j = 0; j < dim; ++j) {
        int64_t i = (o * dim + j) * inner + in;
        double v = fl ? x.getFloat(i) : (double)x.getInt(i);
        bool better = j == 0 || (IsMax ? v > bv : v < bv) ||
                      (last && v == bv);
        if (better) {
          best = j;
          bv = v;
        }
      }
      y.data<int64_t>()[o * inner + in] = best;
    }
}

/// TopK's indices: the k first along the axis in the order "larger
/// (smaller) value first, then the lower index", NaN above every number
/// (last when the smallest come first), as CUDA's kernel orders them.
void topKK(KernelContext &c) {
  const Tensor &x = c.in(0);
  Tensor &y = c.output(0);
  const bool largest = c.step.getInt("largest", 1);
  const int64_t k = c.step.getInt("k", 0);
  auto [outer, dim, inner] =
      splitAt(x.shape(), normAxis(c.step.getInt("axis", -1), x.rank()));
  const bool fl = isFloat(x.dtype());
  std::vector<int64_t> order(dim);
  std::vector<double> vf(fl ? dim : 0);
  std::vector<int64_t> vi(fl ? 0 : dim);
  auto before = [&](int64_t a, int64_t b) {
    if (!fl)
      return vi[a] != vi[b] ? (largest ? vi[a] > vi[b] : vi[a] < vi[b]) : a < b;
    double u = vf[a], v = vf[b];
    if (std::isnan(u) || std::isnan(v))
      return std::isnan(u) && std::isnan(v) ? a < b : std::isnan(u) == largest;
    return u != v ? (largest ? u > v : u < v) : a < b;
  };
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t in = 0; in < inner; ++in) {
      for (int64_t j = 0; j < dim; ++j) {
        int64_t i = (o * dim + j) * inner + in;
        fl ? (void)(vf[j] = x.getFloat(i)) : (void)(vi[j] = x.getInt(i));
        order[j] = j;
      }
      std::partial_sort(order.begin(), order.begin() + k, order.end(), before);
      for (int64_t q = 0; q < k; ++q)
        y.data<int64_t>()[(o * k + q) * inner + in] = order[q];
    }
}

/// CumSum and CumProd: floats accumulated in FP64 along each line, each
/// result rounded once; integers exactly (wrapping, as two's complement).
template <bool Prod> void cumulativeK(KernelContext &c) {
  const Tensor &x = c.in(0);
  Tensor &y = c.output(0);
  bool exclusive = c.step.getInt("exclusive", 0);
  bool reverse = c.step.getInt("reverse", 0);
  auto [outer, dim, inner] =
      splitAt(x.shape(), normAxis(c.step.getInt("axis", 0), x.rank()));
  bool fl = isFloat(x.dtype());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t in = 0; in < inner; ++in) {
      double accF = Prod ? 1 : 0;
      uint64_t accI = Prod ? 1 : 0;
      for (int64_t jj = 0; jj < dim; ++jj) {
        int64_t j = reverse ? dim - 1 - jj : jj;
        int64_t i = (o * dim + j) * inner + in;
        if (exclusive)
          fl ? y.setFloat(i, (float)accF) : y.setInt(i, (int64_t)accI);
        if (fl)
          accF = Prod ? accF * x.getFloat(i) : accF + x.getFloat(i);
        else
          accI = Prod ? accI * (uint64_t)x.getInt(i)
                      : accI + (uint64_t)x.getInt(i);
        if (!exclusive)
          fl ? y.setFloat(i, (float)accF) : y.setInt(i, (int64_t)accI);
      }
    }
}

/// mpc.cum_prod_grad (GradOps.td): dx_j = e_j * r_j, r walked from the
/// line's end and e (the exclusive product) from its start, in FP64; each
/// r kept rounded in dx between the walks (as the CUDA kernel keeps it).
void cumProdGradK(KernelContext &c) {
  const Tensor &x = c.in(0), &g = c.in(1);
  Tensor &dx = c.output(0);
  bool exclusive = c.step.getInt("exclusive", 0);
  bool reverse = c.step.getInt("reverse", 0);
  auto [outer, dim, inner] =
      splitAt(x.shape(), normAxis(c.step.getInt("axis", 0), x.rank()));
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t in = 0; in < inner; ++in) {
      // Element k of the line in cum_prod's direction.
      auto at = [&](int64_t k) {
        return (o * dim + (reverse ? dim - 1 - k : k)) * inner + in;
      };
      double r = 0;
      for (int64_t k = dim - 1; k >= 0; --k) {
        double next = k + 1 < dim ? (double)x.getFloat(at(k + 1)) * r : 0;
        double own = exclusive ? (k + 1 < dim ? g.getFloat(at(k + 1)) : 0)
                               : g.getFloat(at(k));
        r = own + next;
        dx.setFloat(at(k), (float)r);
      }
      double e = 1;
      for (int64_t k = 0; k < dim; ++k) {
        double xk = x.getFloat(at(k));
        dx.setFloat(at(k), (float)(e * (double)dx.getFloat(at(k))));
        e *= xk;
      }
    }
}

} // namespace

void registerReduceKernels(KernelTable &t) {
  t.add(OpId::ReduceSum, reduceK<Red::Sum>);
  t.add(OpId::ReduceMean, reduceK<Red::Mean>);
  t.add(OpId::ReduceMax, reduceK<Red::Max>);
  t.add(OpId::ReduceMin, reduceK<Red::Min>);
  t.add(OpId::ReduceProd, reduceK<Red::Prod>);
  t.add(OpId::ReduceL1, reduceK<Red::L1>);
  t.add(OpId::ReduceL2, reduceK<Red::L2>);
  t.add(OpId::ReduceSumSquare, reduceK<Red::SumSquare>);
  t.add(OpId::ReduceLogSum, reduceK<Red::LogSum>);
  t.add(OpId::ReduceLogSumExp, reduceK<Red::LogSumExp>);
  t.add(OpId::ArgMax, argK<true>);
  t.add(OpId::ArgMin, argK<false>);
  t.add(OpId::CumSum, cumulativeK<false>);
  t.add(OpId::CumProd, cumulativeK<true>);
  t.add(OpId::CumProdGrad, cumProdGradK);
  t.add(OpId::TopK, topKK);
}

} // namespace mpc::rt
