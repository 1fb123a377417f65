//===- CudaAttentionGrad.h - the mma.sync attention backward ---*- C++ -*-===//
//
// Private to codegen/: one attention step's tensor-core backward, its
// layout chosen once (CudaFlashAttentionGrad.cpp: the layout, the forms
// of dQ and their kernels, the query blocks) and the code its key blocks
// are built from (CudaAttentionKeyBlocks.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef MPC_CODEGEN_CUDAATTENTIONGRAD_H
#define MPC_CODEGEN_CUDAATTENTIONGRAD_H

#include "codegen/CudaMmaTiles.h"

#include <string>

namespace mlir::mpc::cuda {

class AttentionGrad {
public:
  /// Chooses the layout of step `s`'s backward (Emitter::attentionGradMma).
  AttentionGrad(Emitter &e, Step &s);
  /// Emits and launches its kernels, named from `name`.
  void emit(const std::string &name);

private:
  // CudaFlashAttentionGrad.cpp: the kernels of each form of dQ.
  void emitAtomic(const std::string &name);
  void emitPartialSums(const std::string &name);
  void emitRecompute(const std::string &name);
  std::string queryRole();
  /// A kernel's signature, shared memory and lane coordinates (sets the
  /// launch's dynamic shared memory).
  std::string kernelHead(const std::string &kernel, bool withDq);
  /// The prologue's D = rowsum(dO y): 4 consecutive lanes a query row,
  /// on rowDBlocks() blocks of 256 threads.
  std::string rowDPrologue();
  int64_t rowDBlocks() const { return (g.batch * g.sq * 4 + 255) / 256; }
  /// with_scores_grad: dS is the step's fourth output.
  bool wantsScoresGrad() const { return cuda::wantsScoresGrad(s); }
  /// Whether dS is stored from the packed dS^T (no softcap: its slope is
  /// in the packed values, not in the bias's gradient).
  bool packedScoresGrad() const { return slope.empty(); }
  std::string scoresGradFromPacked(const std::string &frag, int64_t cols);
  int64_t keyTiles() const { return (g.skv + kRows - 1) / kRows; }

  // CudaAttentionKeyBlocks.cpp: the key roles and the tiles they stream.
  std::string keyRole(bool wantK, bool wantV, bool withDq);
  std::string pairsKeyRole(bool withDq);
  std::string keyProbabilities(bool wantK, int64_t cols);
  std::string rowStats(bool wantK);
  std::string zeros(const std::string &acc, int64_t width);
  std::string rowDot(const std::string &indent, const std::string &part,
                     const std::string &i);
  std::string loadTile(const std::string &dst, int64_t pitch,
                       const std::string &src, int64_t width, int64_t rows,
                       const std::string &first, int64_t limit);
  std::string tileLoop(const std::string &var, const std::string &start,
                       const std::string &end, int64_t limit, int64_t rows,
                       const std::string &a, int64_t aw, const std::string &b,
                       int64_t bw, const std::string &between,
                       const std::string &body);
  std::string keyTile(const std::string &dst, int64_t pitch,
                      const std::string &src, int64_t width);
  std::string fragments(const std::string &frag, const std::string &src,
                        int64_t width, int64_t limit, RowTiles tiles);
  std::string store(const std::string &out, const std::string &acc,
                    int64_t width, int64_t limit, const std::string &factor,
                    RowTiles tiles, const std::string &col);
  std::string firstQueries(const std::string &kb);
  std::string endQueries(const std::string &kb);
  std::string firstHead();
  std::string headTileLoop(const std::string &start, const std::string &end,
                           int64_t limit, int64_t rows, const std::string &a,
                           int64_t aw, const std::string &b, int64_t bw,
                           const std::string &between, const std::string &body);
  std::string score(const VisibleColumns &visible);
  std::string at(const std::string &operand, const std::string &row);

  Emitter &e;
  Step &s;
  Dims g;
  // causal: the band bounds the keys a query sees at their end (causal
  // or a right window); plainBand: causal or none, the band the atomic
  // and partial-sum forms count their blocks by.
  bool hasBias, causal, plainBand;
  AttentionDropout drop;
  std::string T, scale;
  int64_t TK = 32; // keys a query block's tile
  int64_t D, DV, P, PV;
  // The layout (the constructor's comments say which and why).
  bool pairs = false, kvShared = false, accumulate = false,
       atomic = false, split = false, rowDFromScratch = false,
       compact = false, zeroScoresGrad = false;
  int64_t probBuffers = 1, KT = 1, splits = 0, TQ = 32, kRows = 64,
          kThreads = 128, kQueryRows = 64, PS = 40, off = 0, rowDWords = 0,
          bufA = 0, bufB = 0, sharedKeyBytes = 0;
  RowTiles keyTilesOfWarp;
  // Code the roles share: D's scratch, dropout's draws, the probability.
  std::string rowDs, keyWords, keyZ, scaled, unmasked, prob;
  // A softcap's: th's declaration before a masked score, dS's factor.
  std::string capDecl, slope;
  VisibleColumns keyVisible, queryVisible;
};

} // namespace mlir::mpc::cuda

#endif // MPC_CODEGEN_CUDAATTENTIONGRAD_H
