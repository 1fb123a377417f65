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

/// The tables mpc.rotary reads, built from the model's duplicated ones:
/// by table and whether interleaved (1).
using RotaryTables = llvm::DenseMap<std::pair<Value, unsigned>, Value>;

/// Rewrites `add` = x * C + rotate_half(x) * S, rotate_half(x) =
/// concat(-x[..., h:], x[..., :h]) over the whole head, with C and S the
/// duplicated halves of the cos and sin tables (cat(freqs, freqs)), to
/// mpc.rotary; or, interleaved, x * C + rotate_every_two(x) * S (GPT-J:
/// stack(-x[..., 1::2], x[..., ::2], -1).flatten(-2), the tables'
/// elements repeated in pairs); false (nothing changed) where it is not
/// that. `tables` keeps the halved tables built so far (each built once,
/// after its table, for every layer that reads it).
bool fuseDecomposedRotary(OpBuilder &b, AddOp add, RotaryTables &tables);

/// Rewrites `cat` = cat(rotary(x[..., :r]), x[..., r:]) (GPT-NeoX's, Phi's
/// and StableLM's partial rotary, once fuseDecomposedRotary has made its
/// rotation one op) to rotary(x) {rotary_dim = r}; false where it is not.
bool fusePartialRotary(OpBuilder &b, ConcatOp cat);

} // namespace mlir::mpc

#endif // MPC_PASSES_DECOMPOSEDROTARY_H
