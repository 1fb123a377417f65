//===- StridedView.h - how a value's elements lie in a buffer ---*- C++ -*-===//
//
// Private to codegen/: the layout of a value read or written in place of
// the copy an export spells out (CudaAttentionLayouts.cpp), carried through
// reshapes and transposes as torch's strided views are.
//
//===----------------------------------------------------------------------===//

#ifndef MPC_CODEGEN_STRIDEDVIEW_H
#define MPC_CODEGEN_STRIDEDVIEW_H

#include "runtime/Plan.h"

#include <cstdint>
#include <utility>
#include <vector>

namespace mlir::mpc::cuda {

/// `fine` dims (size, stride), outer to inner, and per dim of the value the
/// fine dims it spans: a dim merged from dims the buffer strides apart
/// (sequence-first attention's batch x heads) spans several.
struct View {
  using Fine = std::pair<int64_t, int64_t>;
  std::vector<Fine> fine;
  std::vector<size_t> span;

  /// One fine dim per dim of `shape`, with `strides`.
  static View of(const ::mpc::rt::Shape &shape,
                 const ::mpc::rt::Shape &strides);
  /// The fine dims of value dim `d`.
  std::vector<Fine> dim(size_t d) const;
  /// A transpose's result: its dim d is this view's dim perm[d].
  View permuted(const std::vector<int64_t> &perm) const;
  /// A transpose's input, this view being its result.
  View unpermuted(const std::vector<int64_t> &perm) const;
  /// The same elements in the same row-major order as a value of shape
  /// `to` (a reshape, either way): each dim of `to` spans the fine dims it
  /// covers, a fine dim split where a dim of `to` ends inside it; false
  /// when the sizes do not divide so.
  bool reshape(const ::mpc::rt::Shape &to, View &out) const;
  /// Value dim `d` as one stride (its fine dims laid out one inside the
  /// other), or -1.
  int64_t stride(size_t d) const;
};

} // namespace mlir::mpc::cuda

#endif // MPC_CODEGEN_STRIDEDVIEW_H
