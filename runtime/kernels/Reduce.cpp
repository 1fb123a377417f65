//===- Reduce.cpp - reductions, arg max/min, cumulative sum ---------------===//
//
// Sums accumulate in double and are rounded once to the output type.
//
//===----------------------------------------------------------------------===//

#include "runtime/Kernel.h"
#include "runtime/Parallel.h"
#include "runtime/kernels/Common.h"

#include <cmath>
#include <limits>

namespace mpc::rt {
namespace {

enum class Red { Sum, Mean, Max, Min, Prod, L1, L2, SumSquare, LogSum, LogSumExp };

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
        double a = R == Red::Max   ? -std::numeric_limits<double>::infinity()
                   : R == Red::Min ? std::numeric_limits<double>::infinity()
                   : R == Red::Prod ? 1.0
                                    : 0.0;
        for (int64_t j = 0; j < red; ++j) {
          double v = base[j * inner];
          switch (R) {
          case Red::Max:
            a = std::isnan(v) || v > a ? v : a;
            break;
          case Red::Min:
            a = std::isnan(v) || v < a ? v : a;
            break;
          case Red::Prod:
            a *= v;
            break;
          case Red::L1:
            a += std::fabs(v);
            break;
          case Red::L2:
          case Red::SumSquare:
            a += v * v;
            break;
          case Red::LogSumExp:
            a += std::exp(v - mx);
            break;
          default:
            a += v;
          }
        }
        if (R == Red::LogSumExp)
          a = std::log(a) + mx;
        else if (R == Red::Mean)
          a = red ? a / red : std::nan("");
        else if (R == Red::L2)
          a = std::sqrt(a);
        else if (R == Red::LogSum)
          a = std::log(a);
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
  bool isMax = R == Red::Max, isMin = R == Red::Min;
  double init = isMax   ? -std::numeric_limits<double>::infinity()
                : isMin ? std::numeric_limits<double>::infinity()
                : R == Red::Prod ? 1.0
                                 : 0.0;
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
    double v = val(i), &a = acc[outIdx[i]];
    ++count[outIdx[i]];
    switch (R) {
    case Red::Sum:
    case Red::Mean:
    case Red::LogSum:
      a += v;
      break;
    case Red::Max:
      a = std::isnan(v) || v > a ? v : a;
      break;
    case Red::Min:
      a = std::isnan(v) || v < a ? v : a;
      break;
    case Red::Prod:
      a *= v;
      break;
    case Red::L1:
      a += std::fabs(v);
      break;
    case Red::L2:
    case Red::SumSquare:
      a += v * v;
      break;
    case Red::LogSumExp:
      a += std::exp(v - lseMax[outIdx[i]]);
      break;
    }
  }
  for (int64_t o = 0; o < outN; ++o) {
    double a = acc[o];
    if (R == Red::Mean)
      a = count[o] ? a / count[o] : std::nan("");
    else if (R == Red::L2)
      a = std::sqrt(a);
    else if (R == Red::LogSum)
      a = std::log(a);
    else if (R == Red::LogSumExp)
      a = std::log(a) + lseMax[o];
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

void cumSumK(KernelContext &c) {
  const Tensor &x = c.in(0);
  Tensor &y = c.output(0);
  bool exclusive = c.step.getInt("exclusive", 0);
  bool reverse = c.step.getInt("reverse", 0);
  auto [outer, dim, inner] =
      splitAt(x.shape(), normAxis(c.step.getInt("axis", 0), x.rank()));
  bool fl = isFloat(x.dtype());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t in = 0; in < inner; ++in) {
      double accF = 0;
      int64_t accI = 0;
      for (int64_t jj = 0; jj < dim; ++jj) {
        int64_t j = reverse ? dim - 1 - jj : jj;
        int64_t i = (o * dim + j) * inner + in;
        if (exclusive)
          fl ? y.setFloat(i, (float)accF) : y.setInt(i, accI);
        if (fl)
          accF += x.getFloat(i);
        else
          accI += x.getInt(i);
        if (!exclusive)
          fl ? y.setFloat(i, (float)accF) : y.setInt(i, accI);
      }
    }
}

} // namespace

void registerReduceKernels(void (*add)(const char *, Kernel)) {
  add("reduce_sum", reduceK<Red::Sum>);
  add("reduce_mean", reduceK<Red::Mean>);
  add("reduce_max", reduceK<Red::Max>);
  add("reduce_min", reduceK<Red::Min>);
  add("reduce_prod", reduceK<Red::Prod>);
  add("reduce_l1", reduceK<Red::L1>);
  add("reduce_l2", reduceK<Red::L2>);
  add("reduce_sum_square", reduceK<Red::SumSquare>);
  add("reduce_log_sum", reduceK<Red::LogSum>);
  add("reduce_log_sum_exp", reduceK<Red::LogSumExp>);
  add("arg_max", argK<true>);
  add("arg_min", argK<false>);
  add("cum_sum", cumSumK);
}

} // namespace mpc::rt
