//===- DecomposedRotary.h - rotary embeddings spelled out --------*- C++ -*-===//
//
// Private to passes/: mpc-fuse-decomposed's matcher for the rotary
// position embedding as Hugging Face's Llama, Mistral, Qwen and GPT-NeoX
// code writes it (DecomposedRotary.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef MPC_PASSES_DECOMPOSEDROTARY_H
#define MPC_PASSES_DECOMPOSEDROTARY_H

#include "ir/MpcOps.h"

namespace mlir::mpc {

/// Rewrites `add` = x * C + rotate_half(x) * S, rotate_half(x) =
/// concat(-x[..., h:], x[..., :h]) over the whole head, with C and S the
/// duplicated halves of the cos and sin tables (cat(freqs, freqs)), to
/// mpc.rotary; false (nothing changed) where it is not that. `halves`
/// keeps the tables' first halves built so far (each built once, after
/// its table, for every layer that reads it).
bool fuseDecomposedRotary(OpBuilder &b, AddOp add,
                          llvm::DenseMap<Value, Value> &halves);

/// Rewrites `cat` = cat(rotary(x[..., :r]), x[..., r:]) (GPT-NeoX's, Phi's
/// and StableLM's partial rotary, once fuseDecomposedRotary has made its
/// rotation one op) to rotary(x) {rotary_dim = r}; false where it is not.
bool fusePartialRotary(OpBuilder &b, ConcatOp cat);

} // namespace mlir::mpc

#endif // MPC_PASSES_DECOMPOSEDROTARY_H
