//===- CudaKernels.h - the kernel emitters behind CudaEmitter ----*- C++ -*-===//
//
// Private to codegen/: one Emitter walks the plan and asks the emitter
// table (one entry per op, keyed by OpId) how to emit each step. Each op
// family registers its entries next to its generators: CudaEmitter.cpp
// (the walk, elementwise kernels and fused chains), CudaExpressions.cpp
// (the elementwise ops' FP32 expressions), CudaDataKernels.cpp (data
// movement), CudaGemmKernels.cpp (tensor-core GEMMs, convolutions and
// their gradients), CudaNnKernels.cpp (normalisation, reductions, pooling),
// CudaBatchNormKernels.cpp (batch normalization)
// and CudaTrainKernels.cpp (losses, loss scaling, optimizers).
// CudaLibraryFusion.cpp marks what cuBLASLt's epilogues compute;
// CudaChainKernels.cpp emits fused chains (their splits and concats:
// CudaChainViews.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef MPC_CODEGEN_CUDAKERNELS_H
#define MPC_CODEGEN_CUDAKERNELS_H

#include "codegen/CudaChainViews.h"
#include "codegen/CudaEmitter.h"
#include "runtime/cuda/KernelConfig.h"
#include "runtime/cuda/MemoryPlan.h"

#include <array>
#include <functional>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace mlir::mpc::cuda {

using ::mpc::rt::DType;
using ::mpc::rt::OpId;
using ::mpc::rt::Plan;
using ::mpc::rt::Shape;
using ::mpc::rt::Step;
using ::mpc::rt::Tensor;
using ::mpc::rt::ValueInfo;

/// The C++ type of a dtype in emitted code ("__half", "i64"...).
const char *ctype(::mpc::rt::DType t);
/// Row-major strides of `s`.
::mpc::rt::Shape stridesOf(const ::mpc::rt::Shape &s);
/// Strides of `in` read at the indices of `out` (numpy broadcasting: 0
/// along broadcast dims, right-aligned).
::mpc::rt::Shape broadcastStrides(const ::mpc::rt::Shape &in,
                                  const ::mpc::rt::Shape &out);
/// FP32 expression `e` rounded to `t` and widened back, as a store and a
/// load would (rnd_f16, rnd_bf16, rnd_i1; FP32 and integers unchanged).
std::string roundedAs(::mpc::rt::DType t, const std::string &e);
/// Literals that keep every bit: a float (`f` suffix) or a double.
std::string flt(double v);
/// Loss kernels: the condition under which a row's `label` is ignored
/// (ignore_index), and code summing the weights `w` of the labels in2[r]
/// of `rows` rows that are not (one block of 256, a fixed order) into
/// ws[0], which every thread then reads.
std::string ignoredLabel(const ::mpc::rt::Step &s);
std::string labelWeightSum(const ::mpc::rt::Step &s, int64_t rows,
                           const std::string &w);
std::string dbl(double v);
/// Code computing offsets `o<k>` of each input for flat output index `i`
/// given per-input strides over the output's dims.
std::string offsetsCode(const ::mpc::rt::Shape &out,
                        const std::vector<::mpc::rt::Shape> &strides);

/// Names of an elementwise expression's operands, in order.
inline constexpr const char *kOperandNames = "abcdefgh";
inline constexpr size_t kMaxOperands = 8;
/// Threads of the warp-per-row kernels' blocks (a row per warp).
inline constexpr int64_t kRowThreads = 256;

struct Emitter;

/// How the CUDA backend emits each op, one entry per OpId:
/// - `emit`: a generator writing the step's kernel(s);
/// - `expr`: an elementwise op as an FP32 expression over its operands
///   a, b, c... (CudaExpressions.cpp), run by the generic elementwise
///   kernel and fusable into chains;
/// - `alias`: the output is the input's buffer (reshape-like: no kernel);
/// - `unsupported`: no kernel yet; `mpc compile` says so naming the node,
///   with `why` when there is more to say.
/// Every op that reaches plans has exactly one; checked at first use.
class EmitterTable {
public:
  using Emit = bool (Emitter::*)(Step &s, const std::string &name);
  /// The expression, or none when this step's form has none (e.g. more
  /// operands than a kernel takes).
  using Expr = std::function<std::optional<std::string>(const Step &)>;

  void emit(OpId op, Emit fn);
  void expr(OpId op, Expr fn);
  void expr(OpId op, const char *e) { // an expression without attributes
    expr(op, [e](const Step &) { return std::optional<std::string>(e); });
  }
  void alias(OpId op);
  void unsupported(OpId op, const char *why = "");

  struct Entry {
    Emit emit = nullptr;
    Expr expr;
    bool alias = false;
    const char *unsupported = nullptr;
    bool any() const { return emit || expr || alias || unsupported; }
  };
  const Entry &operator[](OpId op) const { return entries_[(size_t)op]; }

private:
  Entry &fresh(OpId op); // the entry of an op registered once only
  std::array<Entry, ::mpc::rt::kNumOps> entries_;
};

/// The table, complete for every op in plans (an op without an entry stops
/// the process naming it).
const EmitterTable &emitters();

// Registration, one function per family file.
void registerElementwiseEmitters(EmitterTable &t); // CudaEmitter.cpp
void registerExpressions(EmitterTable &t);         // CudaExpressions.cpp
void registerDataEmitters(EmitterTable &t);        // CudaDataKernels.cpp
void registerGemmEmitters(EmitterTable &t);        // CudaGemmKernels.cpp
void registerNnEmitters(EmitterTable &t);          // CudaNnKernels.cpp
void registerBatchNormEmitters(EmitterTable &t);   // CudaBatchNormKernels.cpp
void registerReduceEmitters(EmitterTable &t);      // CudaReduceKernels.cpp
void registerTrainEmitters(EmitterTable &t);       // CudaTrainKernels.cpp
void registerAttentionEmitters(EmitterTable &t);   // CudaAttentionKernels.cpp

/// The host launcher of a kernel taking one struct `args` of `words`
/// 8-byte words (KernelCall::packed): the launcher's words copied into the
/// struct, the grid from the largest of the counts at `countWords` (one
/// block without; a thread per `perThread` elements), `threads` a block.
std::string packedLauncher(const std::string &fn, const std::string &args,
                           size_t words, const std::vector<size_t> &countWords,
                           int64_t threads, int64_t perThread = 1,
                           bool barrier = false);

struct Emitter;
struct MmaForwardTiles; // CudaAttention.h
/// Runs of launches of one thread-per-element kernel over independent
/// steps (an optimizer's update of each parameter) become multi-tensor
/// launches of a batched kernel (CudaBatching.cpp).
void batchLaunches(Emitter &e);
/// Marks the updates that write a train step's state over its old value
/// (CudaStateInPlace.cpp); after batchLaunches.
void updateStateInPlace(Emitter &e);
/// The elements of `v`, an operand of the Add a row kernel `s` takes as it
/// loads (CudaLaunch::prologueAdd), where it repeats along input 0 (shape
/// `x`): its dims but leading ones are x's last and cover whole rows, so
/// element base + j of x reads base % n + j of it. -1 otherwise.
int64_t prologueAddRepeat(const Step &s, const ::mpc::rt::Shape &x,
                          const ::mpc::rt::Shape &v);
/// Row kernels adding their input's Add as they load (CudaRowFusion.cpp;
/// `producer`: each value's writing step).
void addIntoRowKernels(::mpc::rt::Plan &plan,
                       const std::map<int, size_t> &producer,
                       const std::set<int> &outputs);
/// Marks the casts a producer's kernel computes by storing as their result
/// (CudaRowFusion.cpp; `readers`: each value's reading steps).
void fuseOutputCasts(::mpc::rt::Plan &plan,
                     const std::map<int, std::vector<size_t>> &readers,
                     const std::set<int> &outputs);
/// Marks the bias-gradient reductions cuBLASLt's BGRADA/BGRADB epilogues
/// can compute with the weight-gradient GEMM (CudaLibraryFusion.cpp).
void fuseBiasGradients(Plan &plan);
/// Marks tanh GELU steps (and their gradients) that a GEMM's cuBLASLt
/// epilogue can compute: GELU_AUX[_BIAS] forward, DGELU backward.
void fuseGeluEpilogues(Plan &plan);
/// Marks Relu gradients that the GEMM computing their incoming gradient
/// can compute from the forward GEMM's ReLU mask: RELU_AUX[_BIAS]
/// forward, DRELU backward.
void fuseReluEpilogues(Plan &plan);
/// A reduction that can compute the elementwise chain producing its input
/// as it loads it (CudaReduceKernels.cpp: the fold kernels; not a
/// reduction over no axes that only copies).
bool reducesChain(const Step &s);
/// Transposes, splits and concats around mma attention that only move its
/// operands launch nothing; the kernels address the operands in place
/// (CudaAttentionLayouts.cpp).
void fuseAttentionLayouts(Emitter &e,
                          const std::map<int, std::vector<size_t>> &readers,
                          const std::map<int, size_t> &producer,
                          const std::set<int> &outputs);
/// Splits into aligned runs of a row-major input launch nothing: their
/// parts stay in its buffer (CudaSplitsInPlace.cpp).
void splitsInPlace(Plan &plan, const std::map<int, size_t> &producer);
/// Concats of the step's inputs into aligned runs launch nothing: the
/// inputs live in the concat's buffer (CudaSplitsInPlace.cpp).
void concatsOfInputsInPlace(Plan &plan,
                            const std::map<int, std::vector<size_t>> &readers,
                            const std::map<int, size_t> &producer,
                            const std::set<int> &outputs);
/// Concats of computed values into aligned runs launch nothing either:
/// each part's kernel writes it where the concat would put it
/// (CudaSplitsInPlace.cpp). After every other fusion.
void concatsOfResultsInPlace(Plan &plan, const std::set<int> &outputs);
/// The kernels the plan's steps launch, in order (CudaBatching.cpp); with
/// `libraries`, as when cuBLASLt and cuDNN are present: without the steps
/// their epilogues compute (`libraryFusedInto`); with `skipAppliedOnly`,
/// as on a micro-batch that does not end its accumulation group.
std::vector<std::string> launchedKernels(const ::mpc::rt::Plan &plan,
                                         bool libraries = false,
                                         bool skipAppliedOnly = false);

struct Emitter {
  Plan &plan;
  CudaModule &mod;
  std::string &error;
  std::ostringstream cu;
  std::ostringstream emu; // host-emulation launchers (MPC_HOST_EMULATION)
  bool barrier = false;   // the next launched kernel uses __syncthreads
  /// Instead of `barrier`, a host-emulation constant that says it (for
  /// kernels whose emulation replaces their barriers by a plain loop).
  std::string barrierFlag;
  /// Bytes of dynamic shared memory the next launched kernel uses
  /// (mpc_dynamic_smem); its launches give it that much.
  int64_t sharedBytes = 0;

  const ValueInfo &val(int id) { return plan.values[id]; }
  const Tensor *constant(int id) {
    auto it = plan.constants.find(id);
    return it == plan.constants.end() ? nullptr : &it->second;
  }
  bool fail(const Step &s, const std::string &why) {
    error = "node '" + s.name + "' (" + opName(s.op) + "): " + why;
    return false;
  }

  /// A step's kernel parameters (declaration, name): typed pointers for
  /// inputs then outputs (absent optional inputs are null pointers), then
  /// a chain's other results, the underflow counter, the element count.
  std::vector<std::pair<std::string, std::string>> params(const Step &s);
  /// Whether the step's kernel counts underflowing gradients: it is, or its
  /// chain holds, a cast marked mpc.count_underflow, or (a row kernel) it
  /// stores such a cast's result instead of or beside its own
  /// (fuseOutputCasts).
  bool countsUnderflow(const Step &s) const {
    if (s.countUnderflow)
      return true;
    for (int m : s.cuda.chain)
      if (plan.steps[m].countUnderflow)
        return true;
    if (s.cuda.isChain())
      return false;
    std::vector<int> casts = s.cuda.stores;
    casts.push_back(s.cuda.storedAs);
    for (int v : casts)
      if (const Step *c = v >= 0 ? storedCast(v) : nullptr; c && c->countUnderflow)
        return true;
    return false;
  }
  /// The cast whose result `v` is (a row kernel's store), or null.
  const Step *storedCast(int v) const {
    for (const Step &c : plan.steps)
      if (c.op == OpId::Cast && c.outputs.size() == 1 && c.outputs[0] == v)
        return &c;
    return nullptr;
  }
  /// Kernel header: extern "C" with the step's parameters; `minBlocks`
  /// (> 0) goes to __launch_bounds__.
  std::string header(const Step &s, const std::string &name, int threads,
                     int minBlocks = 0);
  /// Records the kernel and launch shape on the step, and its host
  /// launcher for the emulation test. A `prologue` kernel (the same
  /// arguments; one thread unless `grid` and `block` are given) runs
  /// before the step's kernel. Generators name their
  /// kernels kKernelName (and derived names): emitStep renames them after
  /// what they compute and keeps one copy of each.
  /// A kernel that takes its element count (`s.cuda.count`) handles
  /// `perBlock` items a block (default: a thread each): the emulated
  /// launch derives its grid from the count.
  void launch(Step &s, const std::string &name, std::array<int64_t, 3> grid,
              std::array<int64_t, 3> block, bool prologue = false,
              int64_t perBlock = 0);
  /// A thread-per-element kernel's header and first lines: `n` becomes
  /// its `count` argument, `i` the element, threads past the count leave.
  std::string countedHead(Step &s, const std::string &name, int64_t n);
  /// A counted kernel's launch: a thread per element, or with a vector
  /// path (elementFunctions) `vectorWidth` elements a thread, grid-strided
  /// over at most kListMaxBlocks blocks (one wave of 2048-thread SMs on a
  /// 128-SM GPU).
  void launch1d(Step &s, const std::string &name, int64_t n);
  /// The statement storing `value` as a counted kernel's `k`-th result
  /// (its outputs, then a chain's other stores).
  using Store = std::function<std::string(size_t k, const std::string &value)>;
  /// Where a thread-per-element kernel stores result k: output `out` at
  /// the element's coordinates times `strides`, plus `offset` (a concat's
  /// part in its output).
  struct ResultView {
    size_t out;
    Shape strides;
    int64_t offset;
  };
  /// A dropout computed in an element function: its key, threshold and
  /// factor (compile-time constants) and its counter's expressions over
  /// the kernel's [step, rank] input; `n`, the mask's elements (rank r
  /// numbers its own from r n). Element i's keep bit reaches the body as
  /// the bool `k<j>` of the j-th draw.
  struct Draw {
    uint64_t seed = 0;
    uint32_t stream = 0;
    unsigned long long threshold = 0;
    float scale = 1.0f;
    std::string step = "0ull", rank = "0ull";
    int64_t n = 0;
    std::string key() const {
      return std::to_string(seed) + "ull, " + std::to_string(stream) + "u, " +
             step + ", ";
    }
    /// Whether element `e` (an i64 expression) of this rank is kept.
    std::string keep(const std::string &e) const {
      return "mpc_dropout_keep(" + key() + rank + " * " + std::to_string(n) +
             "ull + (unsigned long long)(" + e + "), " +
             std::to_string(threshold) + "ull)";
    }
    /// Statement: keep bits of elements `e` (even) and e + 1 into bool[2]
    /// `out` (this rank's first element is even with them).
    std::string keep2(const std::string &e, const std::string &out) const {
      return "mpc_dropout_keep2(" + key() + rank + " * " + std::to_string(n) +
             "ull + (unsigned long long)(" + e + "), " +
             std::to_string(threshold) + "ull, " + out + ");";
    }
    /// Statement: the 4 words of this rank's Philox group `g` (n a
    /// multiple of 4) into unsigned int[4] `into`.
    std::string words(const std::string &g, const std::string &into) const {
      return "mpc_philox_words(" + key() + rank + " * " +
             std::to_string(n / 4) + "ull + " + g + ", " + into + ");";
    }
  };
  /// A Dropout's draw when its ratio and training flag are constants (what
  /// the CUDA kernels need); its counter read from kernel input `in<slot>`
  /// (-1: none, step 0).
  std::optional<Draw> dropoutDraw(const Step &s, int slot);
  /// A counted kernel's element functions: countedHead's `<name>_at`
  /// (loading input k into the register `names[k]`, then `body`), and
  /// where every input is read contiguously or as one value per group,
  /// `<name>_vec` (the same body for `vectorWidth` elements whose operands
  /// move as one access each: 16 bytes of the narrowest type) and
  /// `<name>_run` (a thread's share of the elements, grid-strided: whole
  /// groups as vectors when the pointers are aligned, the rest one at a
  /// time). Input k is read `offsets[k]` elements past its pointer (a
  /// split's part); with `views`, result k goes where views[k] says. An
  /// input with an empty name is only a pointer (a draw's
  /// counter); each of `draws` gives the body its keep bits, drawn a
  /// Philox group per 4 elements on the vector path.
  void elementFunctions(Step &s, const std::string &name, int64_t n,
                        const Shape &out, const std::vector<Shape> &strides,
                        const std::vector<std::string> &names,
                        const std::function<std::string(const Store &)> &body,
                        const std::vector<Draw> &draws = {},
                        const std::vector<int64_t> &offsets = {},
                        const std::vector<ResultView> &views = {});
  int vectorWidth = 1; // of the counted kernel being emitted
  bool emitStep(Step &s);
  /// A thread-per-element kernel's body as a device function of its element
  /// (countedHead's `<name>_at`), so a batched launch (CudaBatching.cpp)
  /// can run it for the slots of several steps.
  struct ElementFn {
    std::string code; // named with the placeholder
    std::vector<std::pair<std::string, std::string>> params;
    int vector = 1; // > 1: `<name>_run` moves groups of this many elements
  };
  bool counted = false; // countedHead began an element function
  ElementFn element;    // the current step's, until finish()
  std::map<std::string, ElementFn> elements; // by kernel name
  /// The placeholder generators name their kernel with.
  static constexpr const char *kKernelName = "MPC_KERNEL_";
  /// A row kernel's prologue dropout of operand X, written
  /// `MPC_DROP_(X)` by addedInput: rowEach draws the keep bits and
  /// writes the dropped value in its place.
  static constexpr const char *kDropToken = "MPC_DROP_";
  std::set<std::string> named;       // distinct kernels so far
  std::optional<bool> gemmOnTensorCores; // set by gemmKernel for the step

private:
  /// Names the kernel `code` (with the placeholder) `stem_<hash>`, records
  /// the step's launches and keeps the code unless an identical kernel
  /// was emitted before.
  void finish(Step &s, const std::string &stem, std::string code,
              std::string launcher);

public:

  // CudaEmitter.cpp
  /// The FP32 expression of an elementwise step over operands a, b, c...
  /// as the CPU backend computes it; none for an op without one.
  std::optional<std::string> expr(const Step &s);
  bool elementwise(Step &s, const std::string &name);
  bool integerCast(Step &s, const std::string &name);
  bool chain(Step &s, const std::string &name);
  /// A chain member's FP32 value into register `t<k>` from its operands'
  /// registers in `regs` (rounded to its type, as a store would); records
  /// the register in `regs`. A dropout member keeps where the bool `keep`
  /// is true (its draw, elementFunctions).
  std::string chainMember(const Step &member, std::map<int, std::string> &regs,
                          size_t k, const std::string &keep = "");

  // CudaDataKernels.cpp
  bool stridedCopy(Step &s, const std::string &name, int64_t offset,
                   const Shape &strides);
  bool expand(Step &s, const std::string &name);
  bool clip(Step &s, const std::string &name);
  bool transpose(Step &s, const std::string &name);
  bool slice(Step &s, const std::string &name);
  bool gather(Step &s, const std::string &name);
  bool gatherGrad(Step &s, const std::string &name);
  bool gatherElements(Step &s, const std::string &name);
  bool axisParts(Step &s, const std::string &name); // concat, split
  bool trilu(Step &s, const std::string &name);
  bool integerElementwise(Step &s, const std::string &name);
  bool integerReduce(Step &s, const std::string &name, const std::set<int64_t> &red);
  bool scatterNd(Step &s, const std::string &name);
  bool scatterElements(Step &s, const std::string &name);
  bool random(Step &s, const std::string &name);
  bool tile(Step &s, const std::string &name);
  bool gatherNd(Step &s, const std::string &name);
  bool oneHot(Step &s, const std::string &name);
  bool pad(Step &s, const std::string &name);
  bool resizeAxis(Step &s, const std::string &name);
  bool gatherElementsGrad(Step &s, const std::string &name);

  // CudaGemmKernels.cpp
  /// A GEMM whose operands are strided matrices (tc_gemm_mma): each as
  /// its address in the kernel (after the prologue; the batch's matrix),
  /// leading dimension, and whether it is stored transposed.
  struct StridedOperands {
    std::string a, b;
    int64_t lda, ldb;
    bool ta, tb;
  };
  void gemmKernel(Step &s, const std::string &name, DType t, int64_t M,
                  int64_t N, int64_t K, int64_t batch,
                  const std::string &prologue, const std::string &loadA,
                  const std::string &loadB, const std::string &epilogue,
                  const std::string &members,
                  const StridedOperands *strided = nullptr);
  bool gemm(Step &s, const std::string &name);
  bool matmul(Step &s, const std::string &name);
  bool conv(Step &s, const std::string &name);
  bool convGrad(Step &s, const std::string &name); // input or weight

  // CudaNnKernels.cpp
  bool softmax(Step &s, const std::string &name); // and log_softmax
  bool layerNorm(Step &s, const std::string &name);
  bool rmsNorm(Step &s, const std::string &name);
  bool normGrad(Step &s, const std::string &name);
  bool rotary(Step &s, const std::string &name);
  bool cumulative(Step &s, const std::string &name);
  bool cumProdGrad(Step &s, const std::string &name);
  bool pool(Step &s, const std::string &name);       // max, average
  bool dropout(Step &s, const std::string &name);
  /// The draw counter's expressions from a [step, rank] input at `slot`
  /// (mpc-dropout-steps): the step ("0ull" without one) and the rank
  /// ("0ull" also for a scalar step, as hand-written IR has).
  std::pair<std::string, std::string> dropoutCounter(const Step &s,
                                                     size_t slot);
  /// The same of [step, rank] value `value`, kernel input `in<slot>`.
  std::pair<std::string, std::string> counterIn(int value, size_t slot);
  /// A Dropout's ratio where its ratio and training flag are constants (0
  /// in inference mode), else nothing.
  std::optional<float> dropoutRatio(const Step &s);
  bool poolGrad(Step &s, const std::string &name);

  // CudaBatchNormKernels.cpp
  bool batchNorm(Step &s, const std::string &name); // inference, training
  bool batchNormGrad(Step &s, const std::string &name);

  // CudaReduceKernels.cpp
  bool reduce(Step &s, const std::string &name);
  bool argExtreme(Step &s, const std::string &name); // arg_max, arg_min
  bool topK(Step &s, const std::string &name); // top_k: CudaDataKernels.cpp
  bool globalPool(Step &s, const std::string &name); // average, max
  /// `kind` (sum, mean, max, ...) over the axes `red` of input 0.
  bool foldAxes(Step &s, const std::string &name, const std::string &kind,
                const std::set<int64_t> &red);

  // CudaAttentionKernels.cpp
  /// Adds a step's FLOPs to the module's count (and to its tensor-core
  /// share), and marks its kernel as one that must show HMMA or must not.
  void countFlops(double flops, bool tensorCores);
  /// How a row kernel walks its rows (CudaNnKernels.cpp: rowLoop).
  struct RowLoop {
    std::string prologue;
    std::string stride; // threads sharing a row: "1", "32" or a block's
    std::string sum, max; // combining the threads' partials ("" for one)
    bool warp;            // more than one thread a row (shuffles)
    bool block = false;   // a block a row (rowLaunch)
    /// Rows held in registers: each thread's `iters` vectors of `width`
    /// elements of a row operand, loaded by the first loop reading it and
    /// read from `cached` by the later ones (0: loaded by every loop).
    /// The first vector loop decides (`hold`: whether it may), with its
    /// own width, so the row sums keep their order and bits.
    bool hold = false;
    int64_t width = 0, iters = 0;
    std::set<std::pair<size_t, std::string>> cached; // (input, "base"/"bbase")
  };
  RowLoop rowLoop(Step &s, int64_t rows, int64_t n);
  /// Whether a warp can hold a row of `n` of `s` in registers (rows a
  /// warp cannot hold get a block each).
  bool warpHoldsRow(const Step &s, int64_t n);
  /// The loop of a row kernel running `body` for each j of the thread's
  /// share of the row. A warp's or block's threads take V consecutive
  /// elements at a time where the row allows (V: 16 bytes of the narrowest
  /// row operand, at most 8, halved until it divides n), the body's
  /// `ld(inK, base + j)` and `st(outK, base + j, v)` becoming one vector
  /// load or store each (the arena's buffers are 256-byte aligned); else
  /// one element a thread. `len` is the code naming the row's length
  /// (RowLoop's prologue: n).
  std::string rowEach(const Step &s, RowLoop &r, int64_t n,
                      const std::string &body, const std::string &len = "n");
  /// rowEach's body storing output 0 also as the cast stored beside it
  /// (`cuda.stores` of a row kernel, fuseOutputCasts), counting underflow
  /// for a gradient cast.
  std::string storeBeside(const Step &s, const std::string &body);
  /// rowEach's body storing output 0 as a gradient cast's result
  /// (`cuda.storedAs`) counting what the rounding flushes to zero.
  std::string countStored(const Step &s, const std::string &body);
  /// Code counting y_ when gradient cast `v` flushes it to zero, or "".
  std::string flushCount(int v);
  /// rowEach's body taking input 0 as the sum the kernel adds as it loads
  /// (`cuda.prologueAdd`), and storing the sum in the first loop over the
  /// row where others read it later.
  std::string addedInput(const Step &s, const std::string &body);
  bool sumStored = false; // this row kernel's loops have stored its sum
  void rowLaunch(Step &s, const std::string &name, const RowLoop &r,
                 int64_t rows);
  bool attention(Step &s, const std::string &name);
  void attentionMma(Step &s, const std::string &name,
                    const MmaForwardTiles &tiles);
  void attentionGradMma(Step &s, const std::string &name);
  /// GatherGrad into an FP32 [rows, inner] table from n tokens
  /// (CudaDataKernels.cpp).
  bool sortedGatherGrad(Step &s, const std::string &name, int64_t rows,
                        int64_t inner, int64_t n);
  /// The offset of row `row` of batch b of an attention kernel's operand
  /// ("inK" or "outK"), through its view strides if it has them.
  std::string operandRow(const Step &s, const std::string &operand,
                         const std::string &row);
  /// Elements from one row of that operand to the next (operandRow is
  /// linear in the row).
  int64_t operandRowStride(const Step &s, const std::string &operand);
  /// The elements of a row of that operand (its head size, which the
  /// mma.sync kernels round up to 16: mmaDims).
  int64_t operandRowWidth(const Step &s, const std::string &operand);
  /// Whether an operand of `s` is a view (the fallback kernels take none).
  bool readsViews(const Step &s) const;
  /// An operand fuseAttentionLayouts lets attention read or write in
  /// place: element (b, r, c) lies at b over `shape`'s leading dims (the
  /// value's, split where the buffer strides them apart), r and c over its
  /// last two (rows and the head dim), through `strides`.
  struct OperandView {
    Shape shape, strides;
  };
  std::map<int, OperandView> attentionViews;
  bool attentionGrad(Step &s, const std::string &name);

  // CudaTrainKernels.cpp
  /// The code of a multi-tensor kernel (Emitter::tensorLists).
  struct TensorListCode {
    std::array<int, 4> shared; // TensorLists::shared
    int outGroups;             // per-tensor output groups
    std::string setup, body, end, prologue;
    std::string slotEnd; // after each slot's elements (may synchronize)
    /// Whether the kernels take the kernel scratch (`double *scratch` after
    /// the shared operands) and synchronize their blocks (barriers).
    bool scratch = false, barrier = false;
  };
  bool tensorLists(Step &s, const std::string &name, const TensorListCode &c);
  bool globalNorm(Step &s, const std::string &name);   // CudaGlobalNorm.cpp
  bool crossEntropy(Step &s, const std::string &name); // and nll_loss
  bool crossEntropyRows(Step &s, const std::string &name);
  /// A row's log-sum-exp `lse` of in0 at `base` (C classes), and with
  /// `store` x - lse into out1: the one code both cross-entropy forms run,
  /// so a row's loss has the same bits in either.
  std::string rowLogSoftmax(const Step &s, RowLoop &r, int64_t C,
                            bool store);
  void lossSum(Step &s, const std::string &name, int half, int64_t elements);
  bool crossEntropyGrad(Step &s, const std::string &name);
  // Over [N, C, d1, ...] scores (CudaSpatialLossKernels.cpp).
  bool spatialCrossEntropy(Step &s, const std::string &name);
  bool spatialCrossEntropyGrad(Step &s, const std::string &name);
  bool allReduce(Step &s, const std::string &name);
  bool unscaleGrads(Step &s, const std::string &name);
  bool checkGrads(Step &s, const std::string &name);
  bool updateLossScale(Step &s, const std::string &name);
  bool onnxOptimizer(Step &s, const std::string &name);
};

/// The inputs a chain member computes from (an Expand's data, not its
/// target shape).
std::vector<int> chainOperands(const Step &s);
/// Marks the steps that share a kernel (CudaFusion.cpp): Relus into GEMM
/// epilogues, elementwise chains into their last step.
void fuseSteps(Emitter &e);

} // namespace mlir::mpc::cuda

#endif // MPC_CODEGEN_CUDAKERNELS_H
