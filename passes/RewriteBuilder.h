//===- RewriteBuilder.h - a rewrite before an op, or its undo ---*- C++ -*-===//
//
// The rewrites that recast an op as others (mpc-conv3d-as-2d,
// mpc-pool3d-as-2d) build their ops just before it, each result's type
// inferred. The first failure makes every later value null; `giveUp`
// erases what was built (readers first) and leaves the op as written,
// `replace` swaps the op's first result for the new value when the types
// agree.
//
//===----------------------------------------------------------------------===//

#ifndef MPC_PASSES_REWRITEBUILDER_H
#define MPC_PASSES_REWRITEBUILDER_H

#include "mlir/IR/Builders.h"

namespace mlir::mpc {

struct RewriteBuilder {
  OpBuilder b;
  Location loc;
  Operation *op, *before;
  bool ok = true;

  explicit RewriteBuilder(Operation *op)
      : b(op), loc(op->getLoc()), op(op), before(op->getPrevNode()) {}

  /// Erases what was built; false.
  bool giveUp();
  /// `op`'s first result replaced by `y` and `op` erased, when everything
  /// was built and `y` has its type; else giveUp().
  bool replace(Value y);

  /// Op `name` (its first result), or null once anything failed.
  Value make(StringRef name, ValueRange operands,
             ArrayRef<NamedAttribute> attrs = {});
  Value fail();

  Value reshape(Value v, ArrayRef<int64_t> shape);
  Value transpose(Value v, ArrayRef<int64_t> perm);
  Value unsqueeze(Value v, int64_t axis);
  /// x + y, or y when x is null (a sum's first term).
  Value add(Value x, Value y);
  static int64_t dim(Value v, int64_t axis);
  /// v[start : end : step] along `axis` (v itself when that is all of it).
  Value slice(Value v, int64_t axis, int64_t start, int64_t end,
              int64_t step = 1);
  /// `v` with `before` and `after` zeros along `axis`; a negative count
  /// crops instead.
  Value pad(Value v, int64_t axis, int64_t before, int64_t after);
};

} // namespace mlir::mpc

#endif // MPC_PASSES_REWRITEBUILDER_H
