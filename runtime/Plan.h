//===- Plan.h - the execution plan the runtime runs ---------------*- C++ -*-===//
//
// A straight-line program over numbered values: each step names an op
// (OpId, generated from the ODS), its input and output value ids, the op's
// attributes, and what codegen decided for it (typed fields, not keys).
// codegen/ builds it from the mpc IR; the runtime needs nothing of MLIR to
// run it. runtime/PlanIO.cpp reads and writes it (plan.txt, versioned).
//
//===----------------------------------------------------------------------===//

#ifndef MPC_RUNTIME_PLAN_H
#define MPC_RUNTIME_PLAN_H

#include "runtime/StoredLayouts.h"
#include "runtime/LrSchedule.h"
#include "runtime/OpId.h"
#include "runtime/SeededWeights.h"
#include "runtime/Tensor.h"

#include <array>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace mpc::rt {

/// An attribute value: integer (also bools), float, string, integer list,
/// string list, or tensor (constants, ConstantOfShape's value...).
using AttrValue = std::variant<int64_t, double, std::string,
                               std::vector<int64_t>, std::vector<std::string>,
                               Tensor>;

/// A GEMM step the runtime may hand to cuBLASLt instead of its kernel
/// (which stays as the fallback): row-major Y[z] = alpha * op(A[z]) x
/// op(B[z]) (+ beta * C | + bias[n]) (ReLU), z < batch. Operands are value
/// ids; C is a full [M, N] matrix, bias a vector of N, -1 when absent.
struct LibraryGemm {
  int64_t m = 0, n = 0, k = 0, batch = 1;
  bool transA = false, transB = false, relu = false;
  int64_t strideA = 0, strideB = 0; // elements between batches; 0: shared
  double alpha = 1.0, beta = 0.0;
  int a = -1, b = -1, c = -1, bias = -1;
  /// >= 0: the bias gradient the library computes alongside, as the
  /// reduce_sum step naming this one in `libraryFusedInto` would; its
  /// type is Y's. Only with one batch, alpha 1, no C, no bias, no Relu.
  /// biasGrad[i] = sum over k of op(A)[i][k] (with transA; cuBLASLt's
  /// BGRADB, its B being our A), or with `biasGradOfB` biasGrad[j] = sum
  /// over k of B[k][j] (without transB; BGRADA).
  int biasGrad = -1;
  bool biasGradOfB = false;
  /// >= 0: the result of the tanh GELU step naming this one in
  /// `libraryFusedInto`; the library writes gelu(Y) there and, when
  /// `geluAux` (then Y itself) is set, Y as the auxiliary output
  /// (GELU_AUX[_BIAS]), as the two steps would; without it (nothing else
  /// reads Y: inference) Y is never written (GELU[_BIAS]). Only with one
  /// batch, alpha 1, no C, no Relu, N a multiple of 8.
  int geluOut = -1;
  /// >= 0: the result of the tanh gelu_grad(Y, geluAux) step naming this
  /// one in `libraryFusedInto`; the library writes gelu'(aux) * op(A)op(B)
  /// there (DGELU) and Y, read by that step alone, is never written. Same
  /// conditions, and no bias.
  int dgeluOut = -1;
  /// The auxiliary matrix: Y, written by a GELU_AUX, or the pre-activation
  /// a DGELU reads; -1 when neither.
  int geluAux = -1;
  /// >= 0: a ReLU bit mask, a buffer of codegen's own (i1 [m, ld / 8],
  /// ld = n rounded up to 128: one bit per element of Y, as cuBLASLt lays
  /// out the column-major D). Written by a GEMM with its Relu fused
  /// (`relu`; RELU_AUX[_BIAS]) when a later `dreluOut` GEMM reads it. One
  /// batch only.
  int reluMask = -1;
  /// >= 0: the result of the relu_grad(Y, y) step naming this one in
  /// `libraryFusedInto`, y the result of the GEMM that writes `reluMask`;
  /// the library writes op(A)op(B) where the mask is set, else 0 (DRELU),
  /// and Y, read by that step alone, is never written. Same conditions as
  /// `dgeluOut`.
  int dreluOut = -1;

  bool valid() const { return m > 0; }
};

/// The ReLU mask's leading dimension in bits for a GEMM of `n` columns
/// (cuBLASLt: a multiple of 128, at least D's rows).
inline int64_t reluMaskLd(int64_t n) { return (n + 127) / 128 * 128; }

/// A convolution step the runtime may hand to cuDNN instead of its kernel
/// (which stays as the fallback): NCHW, 2-D, symmetric padding. Operands
/// by position: data gradient (dy, w) -> dx, filter gradient (dy, x) ->
/// dw, forward (x, w[, bias]) -> y (the bias added by cudnnAddTensor).
struct LibraryConv {
  enum Kind { None, BackwardData, BackwardFilter, Forward } kind = None;
  int64_t n = 0, c = 0, h = 0, w = 0;  // the forward input
  int64_t k = 0, r = 0, s = 0;         // filters and their size
  int64_t padH = 0, padW = 0, strideH = 1, strideW = 1, dilH = 1, dilW = 1;
  int64_t groups = 1;
  bool nhwc = false; // x, y and dy NHWC, the filter KRSC (channels_last)

  bool valid() const { return kind != None; }
};

/// How the CUDA backend runs a step, decided by codegen (CudaFusion.cpp,
/// CudaEmitter.cpp) and read by the memory plan, the CUDA session and the
/// host emulation. Default (no kernel, no alias) for CPU-only plans.
/// A multi-tensor step (apex's multi_tensor_apply): one kernel launch per
/// `perLaunch` of its `tensors` tensors, so the code does not grow with the
/// model. Its inputs are `shared[0]` shared operands, then groups of
/// `tensors` per-tensor operands (group-major), then `shared[1]` shared
/// operands; its outputs likewise with `shared[2]` and `shared[3]`. A
/// launch's arguments are one struct (runtime/cuda/KernelCalls): the
/// shared inputs, the shared outputs, then per slot its operand of each
/// input group and each output group and its element count.
struct TensorLists {
  int tensors = 0, perLaunch = 0;
  std::array<int, 4> shared{};
  std::vector<std::string> kernels;      // per launch
  std::vector<std::vector<int>> slots;   // per launch: tensor indexes, -1 empty

  bool valid() const { return perLaunch > 0; }
};

/// Steps whose launches of one thread-per-element kernel run as
/// multi-tensor launches of a batched kernel: `perLaunch` steps a launch,
/// its argument one struct of slots, each a step's own arguments (count
/// last); empty slots get null pointers and count 0. Kept on the batch's last step; the others
/// have `CudaLaunch::batchedInto`.
struct StepBatch {
  std::string kernel;
  int perLaunch = 0;
  std::vector<int> steps; // in plan order, the last one the owner
  int perThread = 1; // elements a thread moves at a time (vector lanes)

  bool valid() const { return perLaunch > 0; }
};

struct CudaLaunch {
  std::string kernel;   // the step's kernel; empty when it has none
  std::string prologue; // a kernel with the same arguments, run first
  std::array<int64_t, 3> prologueGrid{1, 1, 1}, prologueBlock{1, 1, 1};
  std::array<int64_t, 3> grid{1, 1, 1}, block{1, 1, 1};
  /// Bytes of dynamic shared memory the kernel's launches give it (0:
  /// static only; above 48 KiB the session opts the kernel in).
  int64_t smem = 0;
  /// The same for the prologue's launches.
  int64_t prologueSmem = 0;
  int alias = -1;     // the output shares this value's buffer (no kernel)
  /// A split whose outputs live in its input's buffer, or a concat whose
  /// inputs live in its output's buffer, each part where the copy would
  /// have put it (no kernel): strided views that only attention kernels
  /// read or write (codegen/CudaAttentionLayouts.cpp, checkAttentionViews),
  /// or a split's (concat's) parts that are aligned runs of its input
  /// (output), which any kernel may read (contiguousParts;
  /// codegen/CudaSplitsInPlace.cpp).
  bool inPlace = false;
  int fusedInto = -1; // computed inside the chain kernel of this step,
                      // or (a cast) by the producer storing as its result
  /// >= 0: output 0 is never stored; the kernel stores it rounded to this
  /// value's type instead: the result of a cast, output 0's only reader,
  /// whose step names this one in `fusedInto` (same bits: the kernel's
  /// FP32 value rounded once either way).
  int storedAs = -1;
  /// >= 0: the kernel writes only the step's first `written` outputs;
  /// nothing reads the others, which get no buffer (a dropout's mask
  /// where the backward draws it again).
  int written = -1;
  std::vector<int> chain;  // a chain's last step: its member steps, in order
  std::vector<int> inputs; // a chain's last step: what its kernel reads
  std::vector<int> stores; // a chain's last step: member results it writes
                           // besides its own (kernel arguments after it)
  bool fusedRelu = false;  // a GEMM/conv/batch norm applying its reader's Relu
  /// >= 0 (a batch norm): the kernel also reads this value (last) and adds
  /// it to its result, as the Add reading output 0 would (each rounded to
  /// the output's type), before a fused Relu; that Add aliases output 0
  /// (a residual block's batch norm -> add -> Relu in one kernel).
  int epilogueAdd = -1;
  /// {a, b} (a row kernel: layer/RMS norm, norm gradient): input 0 is the
  /// result of an Add of a and b, which launches nothing (`fusedInto` this
  /// step). The kernel reads a in input 0's place and b last, and takes
  /// their sum rounded to input 0's type as it loads, as the Add would have
  /// stored it; when other steps read the sum later, the kernel stores it
  /// too (`stores`). A residual Add and the layer norm after it in one
  /// kernel.
  std::array<int, 2> prologueAdd{-1, -1};
  bool hasPrologueAdd() const { return prologueAdd[0] >= 0; }
  /// {D, k, x, c} (with prologueAdd): operand k (0 or 1) of the Add is the
  /// result of dropout step D, whose mask nothing reads; the kernel reads
  /// D's input x in that operand's place and draws the keep bits as it
  /// loads, D's [step, rank] counter c (-1: none) its last input. D is
  /// `fusedInto` this step. A residual branch's dropout, the Add and the
  /// layer norm after it in one kernel.
  std::array<int, 4> prologueDropout{-1, -1, -1, -1};
  bool hasPrologueDropout() const { return prologueDropout[0] >= 0; }
  /// Pairs (result, input), flattened: this thread-per-element kernel
  /// writes the result into the input's buffer (each element read by the
  /// thread that then writes it), and no step reads the input afterwards.
  /// A train step's state - a weight, its moments - updated in place, so
  /// feeding the result back into the input for the next step copies
  /// nothing (checkUpdatesInPlace).
  std::vector<int> updatesInPlace;
  bool underflowCounter = false; // the kernel takes the counter, last
  /// > 0: the step's kernels (and prologue) take the session's kernel
  /// scratch, a `double *` of at least this many bytes, after the counter
  /// (partial sums passed from a prologue to its kernel: a batch norm
  /// channel split over blocks). One range serves every step: steps run in
  /// order on one stream.
  int64_t scratch = 0;
  /// >= 0: the kernel takes this element count as its last argument (its
  /// code names no outer size, so steps that differ only in size share it).
  int64_t count = -1;
  TensorLists lists;              // valid(): a multi-tensor step
  StepBatch batch;                // valid(): launches these steps' kernels
  int batchedInto = -1;           // launched in this step's batch
  /// >= 0: when the library runs that GEMM step with its epilogue, it
  /// computes this step's result (LibraryGemm::biasGrad, geluOut or
  /// dgeluOut) and this step launches nothing; else this step's kernel
  /// runs as usual.
  int libraryFusedInto = -1;
  LibraryGemm gemm;               // valid(): cuBLASLt can run the step
  LibraryConv conv;               // valid(): cuDNN can run the step

  /// No kernel of its own: aliased, or computed in another step's kernel.
  bool inOtherKernel() const {
    return alias >= 0 || fusedInto >= 0 || inPlace;
  }
  bool isChain() const { return !chain.empty(); }
};

struct Step {
  OpId op;
  std::string name; // location (ONNX node name) for messages
  std::vector<int> inputs;
  std::vector<int> outputs;
  /// The op's attributes (ODS names); integers also hold bools.
  std::map<std::string, AttrValue> attrs;
  /// Mixed precision: why the op runs in its precision (mpc.amp).
  std::string amp;
  /// A gradient cast to fp16/bf16: count the elements it flushes to zero.
  bool countUnderflow = false;
  /// Under gradient accumulation: run only on a group's last micro-batch
  /// (`mpc.accum.apply` set); on the others the outputs it computes keep
  /// their old values (runtime/AppliedOnly.h).
  bool appliedOnly = false;
  CudaLaunch cuda;

  bool has(const std::string &key) const { return attrs.count(key) != 0; }
  int64_t getInt(const std::string &key, int64_t dflt) const;
  double getFloat(const std::string &key, double dflt) const;
  std::string getString(const std::string &key, const std::string &dflt) const;
  std::optional<std::vector<int64_t>> getInts(const std::string &key) const;
  const Tensor *getTensor(const std::string &key) const;
};

struct ValueInfo {
  DType dtype;
  Shape shape;
  size_t bytes() const { return (size_t)numElements(shape) * dtypeSize(dtype); }
};

/// A named input or output of the plan.
struct Binding {
  std::string name;
  int value;
};

/// A parameter (FP32 master weight or state) with its initial value.
struct Parameter {
  std::string name;
  int value;
  bool trainable;
  Tensor init;
  /// Set: `init` is drawn from these (runtime/SeededWeights.h), and the
  /// artifact records them instead of the bytes.
  std::optional<SeededInit> seeded;
};

/// What a train step (mpc-autodiff, mpc-loss-scaling, mpc-optimizer) tells
/// the loop that drives it (runtime/Trainer.h).
struct TrainInfo {
  int loss = -1;              // output index of the loss
  double lossScaleInit = 1.0; // where a dynamic loss scale starts
  /// Adam's betas (FP32 values) for the per-step bias corrections.
  float adamBeta1 = 0.9f, adamBeta2 = 0.999f;
  /// The optimizer's learning rate (absent: no optimizer in the step).
  std::optional<float> lr;
  /// Its schedule (absent: constant): the step then reads the rate of each
  /// step as the input mpc.opt.lr.
  std::optional<LrSchedule> lrSchedule;
  /// Micro-batches an update sums (mpc-grad-accumulation; 1: every step
  /// updates): the step reads mpc.accum.apply, true on a group's last.
  int64_t accumulate = 1;
  /// (output index, parameter): d(loss)/d(parameter), read back to count
  /// the inf/NaN elements of a skipped step.
  std::vector<std::pair<int, std::string>> gradients;
  /// The moving average's warmup (mpc-ema's warmup-power, or
  /// warmup-num-updates): the step then reads each update's rate as the
  /// input mpc.ema_rate.
  struct EmaWarmup {
    double decay = 0, power = 0, gamma = 1;
    bool numUpdates = false; // (1 + t) / (10 + t), not the power's form
  };
  std::optional<EmaWarmup> emaWarmup;
};

/// Whether `mode` is a cudaAttentionDq: auto, recompute, accumulate,
/// accumulate:N (N >= 1, at most N splits; `maxSplits` N, else 0) or
/// atomic.
inline bool parseAttentionDq(const std::string &mode, int64_t &maxSplits) {
  maxSplits = 0;
  if (mode == "auto" || mode == "recompute" || mode == "accumulate" ||
      mode == "atomic")
    return true;
  const std::string prefix = "accumulate:";
  if (mode.compare(0, prefix.size(), prefix) != 0 ||
      mode.size() == prefix.size() || mode.size() > prefix.size() + 4)
    return false;
  for (size_t k = prefix.size(); k < mode.size(); ++k)
    if (mode[k] < '0' || mode[k] > '9')
      return false;
  maxSplits = std::stoll(mode.substr(prefix.size()));
  return maxSplits >= 1;
}

struct Plan {
  std::vector<ValueInfo> values;
  std::vector<Binding> inputs;
  std::vector<Parameter> params;
  std::map<int, Tensor> constants;
  std::vector<Step> steps;
  std::vector<Binding> outputs;
  std::optional<TrainInfo> train; // train-step plans only
  /// The GPU architectures the artifact's device code is for (sm_80, ...;
  /// PTX for the newest); empty for CPU-only plans.
  std::vector<std::string> cudaArch;
  /// Who runs the GEMMs that have a LibraryGemm: "auto" (cuBLASLt where
  /// its library loads, else the kernels), "cublaslt" or "mpc".
  std::string cudaGemm = "auto";
  /// The same for convolutions and cuDNN: "auto", "cudnn", "mpc".
  std::string cudaConv = "auto";
  /// FP32 GEMMs through cuBLASLt may round their operands to TF32 on tensor
  /// cores (CUBLAS_COMPUTE_32F_FAST_TF32; `--allow-tf32`). Off: FP32 is
  /// FP32, as PyTorch's default for matmuls.
  bool cudaTf32 = false;
  /// How the attention backward's tensor-core kernel gets dQ (a compile
  /// choice, `--attention-dq`; recorded for the reader of plan.txt):
  /// "accumulate" (key blocks add dS K into FP32 partial sums, a split of
  /// the key tiles each, summed in order by a second kernel: five products
  /// a tile, as FlashAttention-2's deterministic mode), "atomic" (key
  /// blocks add dS K into one FP32 dQ by atomic adds, as FlashAttention-2's
  /// default: five products, the order of the adds, and so dQ's last bits,
  /// may change run to run), "recompute" (query blocks of their own
  /// recompute S and dP: seven) or "auto" (recompute, measured fastest;
  /// codegen/CudaFlashAttentionGrad.cpp).
  /// "accumulate:N" caps the splits of the key tiles at N.
  std::string cudaAttentionDq = "auto";
  /// Rows a block of the tensor-core attention kernels (`--attention-rows`):
  /// 128 (the forward's queries and, up to head size 64, the backward's
  /// keys, 32 a warp: each fragment read from shared memory feeds two
  /// mma.sync) or 64 (16 a warp: twice the blocks, each half the work,
  /// where a short grid leaves the GPU waiting on its longest block).
  int64_t cudaAttentionRows = 128;
  /// Parameters and inputs held in another layout than ONNX's, by name
  /// (mpc-channels-last's KRSC filters and their optimizer state): their
  /// values and initial values are transpose(ONNX value, perm).
  StoredLayouts layouts;
};

} // namespace mpc::rt

#endif // MPC_RUNTIME_PLAN_H
