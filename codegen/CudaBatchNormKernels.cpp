//===- CudaBatchNormKernels.cpp - batch normalization and its gradient ----===//
//
// Training batch norm sums a channel's batch statistics in double (as the
// CPU backend) over blocks of 512 threads, split over several blocks a
// channel where C alone would not fill the GPU; inference is a thread per
// element with the running statistics.
//
//===----------------------------------------------------------------------===//

#include "codegen/CudaKernels.h"
#include "runtime/kernels/Common.h"

#include <algorithm>

using namespace ::mpc::rt;

namespace mlir::mpc::cuda {

namespace {

/// What the batch norm kernels share for x [N, C, sp...] (rank 2 or
/// more). A channel is N runs of sp contiguous elements, walked in groups:
/// where sp is a multiple of the 16-byte lane count of the data type, a
/// thread moves V = 16 / size elements per access (the arena aligns every
/// buffer to 256 bytes) and the compiler unrolls the loop, so a block
/// keeps many loads in flight. A channel gets S blocks of kThreads (grid
/// C x S): enough for two blocks an SM of a 132-SM H100/H200 where the
/// channel has kMinPerBlock elements for each (C = 64 layers would fill
/// half the GPU with a block each). Block (c, s) walks groups [first,
/// last) of channel c.
/// - `prologue` declares c, first, last, rcount (1 / the channel's
///   element count: the means multiply by it, as the CPU backend's do, so
///   no kernel carries double division's slow path) and the shared words
///   of `sums`;
/// - `loop(ins, body, out)` walks the block's groups: each input `inK`
///   loaded into `inK_v[V]`, `body` run per lane `l`, and with `out` the
///   lanes' `y[l]` stored;
/// - `channelSums(names, body)`: the doubles `names`, summed by `body` in
///   a loop over x, as channel totals in every thread: S = 1, the block's
///   sums; S > 1, the per-block partials that `partialSums` (the
///   prologue kernel, same loop) left in the scratch, added in block
///   order;
/// - `stats(eps)`: the batch statistics mean, var and inv from the sums u
///   (of x) and w (of x^2) as the CPU backend's channelStats (in double;
///   the order of the sums differs, the rounded results agree but for
///   ties).
struct ChannelCode {
  static constexpr int kThreads = 512, kWarps = kThreads / 32;
  static constexpr int64_t kMinPerBlock = 8192, kTargetBlocks = 264;
  int64_t C, sp, count, V, S, groups, chunk;
  /// Channels last (x [N, sp..., C], rows of C channels): a block holds L
  /// channels (L a power of two up to 32, one a thread lane) and R =
  /// kThreads / L rows at a time, so a warp reads 32 / L rows of L
  /// neighbouring channels (coalesced, as cuDNN's and apex's NHWC batch
  /// norms read). A channel's sums go over its thread's rows, then the
  /// warp's rows (shuffles across lanes L apart), then the warps'.
  bool last;
  int64_t L = 1, R = kThreads, blocksX;
  ChannelCode(const Shape &x, DType t, bool last)
      : C(last ? x.back() : x[1]),
        sp(numElements(x) / std::max<int64_t>(x[0] * C, 1)),
        count(x[0] * sp), last(last) {
    int64_t lanes = 16 / (int64_t)dtypeSize(t);
    V = !last && sp % lanes == 0 ? lanes : 1;
    groups = count / V; // channels last: rows
    if (last) {
      L = ::mpc::rt::cuda::batchNormLanes(C);
      R = kThreads / L;
    }
    blocksX = (C + L - 1) / L;
    S = std::max<int64_t>(1, std::min((kTargetBlocks + blocksX - 1) / blocksX,
                                      count * L / kMinPerBlock));
    chunk = (groups + S - 1) / S;
  }
  std::array<int64_t, 3> grid() const { return {blocksX, S, 1}; }
  /// Scratch bytes for `sums` doubles a block (0 when not split).
  int64_t scratch(int sums) const { return S > 1 ? C * S * sums * 8 : 0; }
  /// The thread that writes its channel's results once.
  std::string leader() const {
    return last ? "row0 == 0 && live" : "threadIdx.x == 0";
  }
  std::string prologue() const {
    std::string n = std::to_string(groups) + "LL", k = std::to_string(chunk) + "LL";
    std::string channel =
        last ? "  const int lane = threadIdx.x % " + std::to_string(L) +
                   ", row0 = threadIdx.x / " + std::to_string(L) +
                   ";\n  const i64 cl = (i64)blockIdx.x * " + std::to_string(L) +
                   " + lane;\n  const bool live = cl < " + std::to_string(C) +
                   "LL;\n  const i64 c = live ? cl : " + std::to_string(C - 1) +
                   "LL; // idle lanes read a real channel, write nothing\n"
             : "  const i64 c = blockIdx.x;\n";
    return "  __shared__ double part[4][" + std::to_string(kWarps) + "]" +
           (last ? "[" + std::to_string(L) + "]" : "") + ";\n" + channel +
           "  const double rcount = " +
           dbl(1.0 / (double)std::max<int64_t>(count, 1)) +
           ";\n  const i64 first = (i64)blockIdx.y * " + k +
           ", last = first + " + k + " < " + n + " ? first + " + k + " : " + n +
           ";\n";
  }
  std::string loop(const std::vector<std::string> &ins, const std::string &body,
                   const std::string &out = "") const {
    std::string v = std::to_string(V), per = std::to_string(sp / V);
    std::string code =
        this->last
            ? "  if (live)\n  for (i64 g = first + row0; g < last; g += " +
                  std::to_string(R) + ") {\n    const i64 e = g * " +
                  std::to_string(C) + "LL + c;\n"
            : "  for (i64 g = first + threadIdx.x; g < last; g += " +
                  std::to_string(kThreads) + ") {\n    const i64 e = (g / " +
                  per + "LL * " + std::to_string(C) + "LL + c) * " +
                  std::to_string(sp) + "LL + g % " + per + "LL * " + v + ";\n";
    for (const std::string &in : ins)
      code += "    float " + in + "_v[" + v + "]; ldv<" + v + ">(" + in +
              " + e, " + in + "_v);\n";
    if (!out.empty())
      code += "    float y[" + v + "];\n";
    code += "#pragma unroll\n    for (int l = 0; l < " + v + "; ++l) { " + body +
            " }\n";
    if (!out.empty())
      code += "    stv<" + v + ">(" + out + " + e, y);\n";
    return code + "  }\n";
  }
  /// The block's sums of `names` in every thread of the channel: warp
  /// butterflies, then the warps' sums in warp order (the same bits in
  /// every thread). Channels last, the butterflies stop at the lanes of
  /// one row, and each lane keeps its channel's sums.
  std::string blockSums(const std::vector<std::string> &names) const {
    if (last)
      return channelsLastSums(names);
    std::string code, store, load;
    for (size_t j = 0; j < names.size(); ++j) {
      std::string p = "part[" + std::to_string(j) + "]";
      code += "  " + names[j] + " = mpc_warp_sum(" + names[j] + ");\n";
      store += " " + p + "[threadIdx.x / 32] = " + names[j] + ";";
      load += " " + names[j] + " += " + p + "[k];";
    }
    std::string zero;
    for (const std::string &n : names)
      zero += n + " = ";
    return code + "  if (threadIdx.x % 32 == 0) {" + store +
           " }\n  __syncthreads();\n  " + zero + "0.0;\n  for (int k = 0; k < " +
           std::to_string(kWarps) + "; ++k) {" + load +
           " }\n  __syncthreads();\n";
  }
  std::string channelsLastSums(const std::vector<std::string> &names) const {
    std::string code, store, load, zero;
    if (L < 32) {
      code = "  for (int o = 16; o >= " + std::to_string(L) + "; o >>= 1) {";
      for (const std::string &n : names)
        code += " " + n + " += __shfl_xor_sync(0xffffffffu, " + n + ", o);";
      code += " }\n";
    }
    for (size_t j = 0; j < names.size(); ++j) {
      std::string p = "part[" + std::to_string(j) + "]";
      store += " " + p + "[threadIdx.x / 32][lane] = " + names[j] + ";";
      load += " " + names[j] + " += " + p + "[k][lane];";
      zero += names[j] + " = ";
    }
    return code + "  if (threadIdx.x % 32 < " + std::to_string(L) + ") {" +
           store + " }\n  __syncthreads();\n  " + zero +
           "0.0;\n  for (int k = 0; k < " + std::to_string(kWarps) + "; ++k) {" +
           load + " }\n  __syncthreads();\n";
  }
  static std::string declare(const std::vector<std::string> &names) {
    std::string d = "  double ";
    for (size_t j = 0; j < names.size(); ++j)
      d += (j ? ", " : "") + names[j] + " = 0.0";
    return d + ";\n";
  }
  std::string channelSums(const std::vector<std::string> &names,
                          const std::string &accumulate) const {
    if (S == 1)
      return declare(names) + accumulate + blockSums(names);
    std::string k = std::to_string(names.size()), code = declare(names) +
        "  for (int b = 0; b < " + std::to_string(S) + "; ++b) {\n";
    for (size_t j = 0; j < names.size(); ++j)
      code += "    " + names[j] + " += scratch[(c * " + std::to_string(S) +
              " + b) * " + k + " + " + std::to_string(j) + "];\n";
    return code + "  }\n";
  }
  std::string partialSums(const std::vector<std::string> &names,
                          const std::string &accumulate) const {
    std::string k = std::to_string(names.size()), code =
        declare(names) + accumulate + blockSums(names) +
        "  if (" + leader() + ") {\n";
    for (size_t j = 0; j < names.size(); ++j)
      code += "    scratch[(c * " + std::to_string(S) + " + blockIdx.y) * " + k +
              " + " + std::to_string(j) + "] = " + names[j] + ";\n";
    return code + "  }\n";
  }
  std::string stats(const std::string &eps) const {
    return "  double m = u * rcount;\n"
           "  float mean = (float)m, var = (float)fmax(w * rcount - m * m, "
           "0.0);\n"
           "  float inv = 1.0f / sqrtf(var + " + eps + ");\n";
  }
};

/// The step's scratch for its channels' partial sums and, where a channel
/// is split (S > 1), the prologue kernel leaving each block's `sums` (as
/// `accumulate` sums them) there.
void splitSums(Emitter &e, Step &s, const std::string &name,
               const ChannelCode &ch, const std::vector<std::string> &sums,
               const std::string &accumulate) {
  s.cuda.scratch = ch.scratch((int)sums.size());
  if (ch.S == 1)
    return;
  e.cu << e.header(s, name + "_sums", ChannelCode::kThreads) << " {\n"
       << ch.prologue() << ch.partialSums(sums, accumulate) << "}\n\n";
  e.barrier = true;
  e.launch(s, name + "_sums", ch.grid(), {ChannelCode::kThreads, 1, 1},
           /*prologue=*/true);
}

/// The batch norm's output expression from x's value `xv` (mean, inv, and
/// the channel's scale `sc` and bias `bi` in scope): its reader Add's sum
/// with `z` rounded as the Add rounds (cuda.epilogueAdd), then its
/// reader's Relu (cuda.fusedRelu), before the one rounding on store.
std::string normalized(const Step &s, DType t, const std::string &xv,
                       const std::string &z) {
  std::string v = "(" + xv + " - mean) * inv * sc + bi";
  if (s.cuda.epilogueAdd >= 0)
    v = roundedAs(t, roundedAs(t, v) + " + " + z);
  return s.cuda.fusedRelu ? "mpc_relu(" + v + ")" : v;
}

} // namespace

/// BatchNormalization. Inference (`train` false): a thread per element
/// with the running statistics. Training: a channel's blocks sum the batch
/// in double (as the CPU backend: population variance from the sum of
/// squares; split channels in a prologue), normalize their share and
/// update the running statistics.
bool Emitter::batchNorm(Step &s, const std::string &name) {
  bool train = s.op == OpId::BatchNormTrain;
  const ValueInfo &x = val(s.inputs[0]);
  if (x.shape.size() < 2)
    return fail(s, "batch normalization needs an [N, C, ...] input");
  DType t = val(s.outputs[0]).dtype;
  std::string eps = flt((float)s.getFloat("epsilon", 1e-5));
  std::string z = "in" + std::to_string(s.inputs.size()); // the addend, last
  ChannelCode ch(x.shape, x.dtype, s.getInt("channels_last", 0));
  if (!train) {
    int64_t n = numElements(x.shape);
    cu << header(s, name, 256) << " {\n  i64 e = global_index();\n  if (e >= "
       << n << "LL) return;\n  i64 c = e / " << (ch.last ? 1 : ch.sp) << "LL % "
       << ch.C << "LL;\n  float mean = ld(in3, c), inv = 1.0f / sqrtf(ld(in4, c) + "
       << eps << "), sc = ld(in1, c), bi = ld(in2, c);\n  st(out0, e, "
       << normalized(s, t, "ld(in0, e)", "ld(" + z + ", e)") << ");\n}\n\n";
    launch1d(s, name, n);
    return true;
  }
  std::vector<std::string> ins{"in0"};
  if (s.cuda.epilogueAdd >= 0)
    ins.push_back(z);
  std::string momentum = flt((float)s.getFloat("momentum", 0.9));
  std::vector<std::string> sums{"u", "w"};
  std::string accumulate =
      ch.loop({"in0"}, "const double v = in0_v[l]; u += v; w += v * v;");
  splitSums(*this, s, name, ch, sums, accumulate);
  cu << header(s, name, ChannelCode::kThreads) << " {\n" << ch.prologue()
     << ch.channelSums(sums, accumulate) << ch.stats(eps)
     << "  const float sc = ld(in1, c), bi = ld(in2, c);\n"
     << ch.loop(ins, "y[l] = " + normalized(s, t, "in0_v[l]", z + "_v[l]") + ";",
                "out0")
     << "  if (blockIdx.y == 0 && " << ch.leader()
     << ") {\n    st(out1, c, ld(in3, c) * "
     << momentum << " + mean * (1 - " << momentum << "));\n    st(out2, c, ld(in4, c) * "
     << momentum << " + var * (1 - " << momentum << "));\n  }\n}\n\n";
  barrier = true;
  launch(s, name, ch.grid(), {ChannelCode::kThreads, 1, 1});
  return true;
}

/// batch_norm_grad: one pass over the channel sums x, x^2 (the batch
/// statistics, as the forward), dy and dy * x in double; then
/// sum(dy * xhat) = inv * (sum(dy * x) - mean * sum(dy)), as the CPU
/// backend's kernel, and a second pass writes dx. Each result is rounded
/// once. Split channels (ChannelCode::S > 1) take the sums in a prologue.
bool Emitter::batchNormGrad(Step &s, const std::string &name) {
  const ValueInfo &x = val(s.inputs[1]);
  if (x.shape.size() < 2)
    return fail(s, "batch normalization needs an [N, C, ...] input");
  ChannelCode ch(x.shape, x.dtype, s.getInt("channels_last", 0));
  std::string eps = flt((float)s.getFloat("epsilon", 1e-5));
  // A folded Relu gradient (foldReluGradsIntoBatchNorm): dy where the
  // Relu's result (input 3) is positive.
  bool relu = s.inputs.size() > 3;
  std::vector<std::string> ins{"in0", "in1"};
  if (relu)
    ins.push_back("in3");
  std::string dy = relu ? "mpc_relu_grad(in0_v[l], in3_v[l])" : "in0_v[l]";
  std::vector<std::string> sums{"u", "w", "gs", "gx"};
  std::string accumulate =
      ch.loop(ins, "const double v = in1_v[l], d = " + dy +
                       "; u += v; w += v * v; gs += d; gx += d * v;");
  splitSums(*this, s, name, ch, sums, accumulate);
  cu << header(s, name, ChannelCode::kThreads) << " {\n" << ch.prologue()
     << ch.channelSums(sums, accumulate) << ch.stats(eps)
     << "  const double sumDy = gs, sumDyXhat = (double)inv * (gx - "
        "(double)mean * gs);\n  const double k = (double)ld(in2, c) * inv, "
        "meanDy = sumDy * rcount, meanDyXhat = sumDyXhat * "
        "rcount;\n"
     << ch.loop(ins, "const float xhat = (in1_v[l] - mean) * inv; y[l] = k * (" +
                         dy + " - meanDy - xhat * meanDyXhat);",
                "out0")
     << "  if (blockIdx.y == 0 && " << ch.leader()
     << ") { st(out1, c, sumDyXhat); "
        "st(out2, c, sumDy); }\n}\n\n";
  barrier = true;
  launch(s, name, ch.grid(), {ChannelCode::kThreads, 1, 1});
  return true;
}

void registerBatchNormEmitters(EmitterTable &t) {
  t.emit(OpId::BatchNorm, &Emitter::batchNorm);
  t.emit(OpId::BatchNormTrain, &Emitter::batchNorm);
  t.emit(OpId::BatchNormGrad, &Emitter::batchNormGrad);
}

} // namespace mlir::mpc::cuda
