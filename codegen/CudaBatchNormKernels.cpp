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
#include <cmath>
#include <set>

using namespace ::mpc::rt;

namespace mlir::mpc::cuda {

namespace {

/// What the batch norm kernels share for x [N, C, sp...] (rank 2 or
/// more). A channel is N runs of sp contiguous elements, walked in groups:
/// where sp is a multiple of the 16-byte lane count of the data type, a
/// thread moves V = 16 / size elements per access (the arena aligns every
/// buffer to 256 bytes) and the compiler unrolls the loop, so a block
/// keeps many loads in flight. A channel gets S blocks of 512 threads (grid
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
  static constexpr int64_t kMinPerBlock = 8192, kTargetBlocks = 264;
  /// Threads a block: 512; 256 where a thread holds V channels' sums and
  /// statistics (twice the registers, so the gradient does not spill).
  int threads = 512, warps = 16;
  int64_t C, sp, count, V, S, groups, chunk;
  /// Channels last (x [N, sp..., C], rows of C channels): a thread holds V
  /// neighbouring channels (16 bytes of them where C allows, else one), a
  /// block L such threads side by side (L a power of two up to 32) and R =
  /// threads / L rows at a time, so a warp reads 32 / L rows of L x V
  /// neighbouring channels, 16 bytes a thread (coalesced, as cuDNN's and
  /// apex's NHWC batch norms read). A channel's sums go over its thread's
  /// rows, then the warp's rows (shuffles across lanes L apart), then the
  /// warps'. Per-channel values are then arrays over the thread's V
  /// channels: code written with `$` after such a name and `%c` for the
  /// channel reads `name[l]` and `(c + l)` there (`lanes`), `name` and `c`
  /// otherwise.
  bool last;
  int64_t L = 1, R = 512, blocksX;
  ChannelCode(const Shape &x, DType t, bool last, int sums)
      : C(last ? x.back() : x[1]),
        sp(numElements(x) / std::max<int64_t>(x[0] * C, 1)),
        count(x[0] * sp), last(last) {
    int64_t bytes = (int64_t)dtypeSize(t), lanes = 16 / bytes;
    V = last ? ::mpc::rt::cuda::batchNormVector(C, bytes)
             : (sp % lanes == 0 ? lanes : 1);
    groups = last ? count : count / V; // channels last: rows
    if (last)
      threads = V > 1 ? 256 : 512, warps = threads / 32;
    // Channels last, each of a channel group's S blocks reads all S
    // partials of its L x V channels (S x `sums` doubles a channel) beside
    // its share of the data (count / S rows): a block's time goes as
    // count x bytes / S + 8 sums S, least at S = sqrt(count bytes / (8
    // sums)). At S = 264 a ResNet-50 block read 1 MB of partials for 195
    // KB of data at 56 x 56 x 256, 50x at 14 x 14 (the H200 measured these
    // kernels at 9x the channels-first ones).
    const int64_t balanced =
        last ? std::max<int64_t>(
                   1, (int64_t)std::sqrt(count * (double)bytes / (8.0 * sums)))
             : kTargetBlocks;
    auto splitFor = [&](int64_t channelBlocks, int64_t perBlock) {
      // kMinPerBlock elements a block: a channel's count, or rows of L x V.
      return std::max<int64_t>(
          1, std::min({(kTargetBlocks + channelBlocks - 1) / channelBlocks,
                       count * perBlock / kMinPerBlock, balanced}));
    };
    if (!last) {
      blocksX = C; // a block a channel
      S = splitFor(C, 1);
    } else {
      // The widest channel group (up to 32 threads' 16 bytes side by side)
      // whose grid fills the GPU: S, bounded by the balance above, does
      // not grow with the group, so narrower groups (down to 32 bytes of a
      // row, a sector, and kMinPerBlock elements a block) give more
      // blocks. The H200 ran ResNet-50's channels-last batch norms (64 x
      // 64 images, batch 64) on 8 to 64 blocks, 6x the channels-first
      // kernels' time (2026-12-04).
      const int64_t widest =
          ::mpc::rt::cuda::batchNormChannelsPerBlock(C, bytes) / V;
      const int64_t narrowest =
          std::min<int64_t>(widest, std::max<int64_t>(1, 32 / (V * bytes)));
      int64_t bestBlocks = 0;
      for (int64_t l = widest;
           l >= narrowest && (l == widest || count * l * V >= kMinPerBlock);
           l /= 2) {
        int64_t x = (C + l * V - 1) / (l * V), split = splitFor(x, l * V);
        if (x * split > bestBlocks)
          bestBlocks = x * split, L = l, blocksX = x, S = split;
        if (bestBlocks >= kTargetBlocks)
          break;
      }
      R = threads / L;
    }
    chunk = (groups + S - 1) / S;
  }
  /// Whether per-channel values are arrays over a thread's V channels.
  bool vectorChannels() const { return last && V > 1; }
  /// `code` with `$` and `%c` resolved (see above) for lane `l`.
  std::string lanes(std::string code) const {
    bool vec = vectorChannels();
    std::string out;
    for (size_t i = 0; i < code.size(); ++i) {
      if (code[i] == '$')
        out += vec ? "[l]" : "";
      else if (code[i] == '%' && i + 1 < code.size() && code[i + 1] == 'c')
        out += vec ? "(c + l)" : "c", ++i;
      else
        out += code[i];
    }
    return out;
  }
  /// `stmt` (with `$`, `%c`) for each of the thread's channels.
  std::string forChannels(const std::string &stmt) const {
    if (!vectorChannels())
      return "  " + lanes(stmt) + "\n";
    return "  for (int l = 0; l < " + std::to_string(V) + "; ++l) { " +
           lanes(stmt) + " }\n";
  }
  /// Per-channel values, `type name = expr` each in order (`expr` with
  /// `$`, `%c`), from the channel totals `sums`. One channel a thread:
  /// computed in place. V channels a thread: thread t of the block
  /// computes channel t's from the totals passed through shared memory,
  /// and every thread reads its V channels' back, so each value is
  /// computed once a block, and no thread runs division's or sqrt's slow
  /// path V times over (a stack frame).
  using Value = std::array<std::string, 3>;
  /// `inShared`: the thread's values stay in shared memory (`name` a
  /// pointer to its V), for values the row loop reads but registers
  /// cannot hold beside its vectors.
  std::string perChannel(const std::vector<std::string> &sums,
                         const std::vector<Value> &values,
                         const std::vector<Value> &prior = {},
                         bool inShared = false) const {
    std::string code;
    if (!vectorChannels()) {
      for (const auto &[type, name, expr] : values)
        code += "  const " + type + " " + name + " = " + lanes(expr) + ";\n";
      return code;
    }
    std::string ct = std::to_string(L * V), v = std::to_string(V);
    std::string share, compute, publish, spread;
    for (const std::string &n : sums) {
      code += "  __shared__ double s_" + n + "[" + ct + "];\n";
      share += "s_" + n + "[lane * " + v + " + l] = " + n + "[l]; ";
    }
    // A total is read just before the first value using it, so none is
    // live across the statistics' sqrt and division (their slow paths are
    // calls, around which live registers would be saved to the stack).
    // Sources: the totals, and values an earlier call published.
    std::vector<std::pair<std::string, std::string>> sources;
    for (const std::string &n : sums)
      sources.push_back({"double", n});
    for (const auto &[type, name, expr] : prior)
      sources.push_back({type, name});
    std::set<std::string> loaded;
    for (const auto &[type, name, expr] : values) {
      code += "  __shared__ " + type + " s_" + name + "[" + ct + "];\n";
      for (const auto &[stype, n] : sources)
        if (!loaded.count(n) && expr.find(n + "$") != std::string::npos) {
          compute += "    const " + stype + " " + n + " = s_" + n + "[t];\n";
          loaded.insert(n);
        }
      compute += "    const " + type + " " + name + " = " +
                 replaceAll(replaceAll(expr, "$", ""), "%c", "cc") + ";\n";
      publish += "    s_" + name + "[t] = " + name + ";\n";
      spread += name + "[l] = s_" + name + "[lane * " + v + " + l]; ";
    }
    if (!share.empty())
      code += "  if (row0 == 0) for (int l = 0; l < " + v + "; ++l) { " +
              share + "}\n";
    code += "  __syncthreads();\n  if (threadIdx.x < " + ct +
            ") {\n    const int t = threadIdx.x;\n    const i64 cc = "
            "(i64)blockIdx.x * " + ct + " + t < " + std::to_string(C) +
            "LL ? (i64)blockIdx.x * " + ct + " + t : " + std::to_string(C - 1) +
            "LL;\n" + compute + publish + "  }\n  __syncthreads();\n";
    if (inShared) {
      for (const auto &[type, name, expr] : values)
        code += "  const " + type + " *" + name + " = s_" + name + " + lane * " +
                v + ";\n";
      return code;
    }
    for (const auto &[type, name, expr] : values)
      code += "  " + type + " " + name + "[" + v + "];\n";
    return code + "  for (int l = 0; l < " + v + "; ++l) { " + spread + "}\n";
  }
  std::array<int64_t, 3> grid() const { return {blocksX, S, 1}; }
  /// Scratch bytes for `sums` doubles a block (0 when not split).
  int64_t scratch(int sums) const { return S > 1 ? C * S * sums * 8 : 0; }
  /// The thread that writes its channels' results once.
  std::string leader() const {
    return last ? "row0 == 0 && live" : "threadIdx.x == 0";
  }
  std::string prologue() const {
    std::string n = std::to_string(groups) + "LL", k = std::to_string(chunk) + "LL";
    std::string shared =
        last ? "  __shared__ double part[" + std::to_string(warps) + "][" +
                   std::to_string(L * V) + "];\n"
             : "  __shared__ double part[4][" + std::to_string(warps) + "];\n";
    std::string channel =
        last ? "  const int lane = threadIdx.x % " + std::to_string(L) +
                   ", row0 = threadIdx.x / " + std::to_string(L) +
                   ";\n  const i64 cl = ((i64)blockIdx.x * " + std::to_string(L) +
                   " + lane) * " + std::to_string(V) +
                   ";\n  const bool live = cl < " + std::to_string(C) +
                   "LL;\n  const i64 c = live ? cl : " + std::to_string(C - V) +
                   "LL; // idle lanes read real channels, write nothing\n"
             : "  const i64 c = blockIdx.x;\n";
    return shared + channel + "  const double rcount = " +
           dbl(1.0 / (double)std::max<int64_t>(count, 1)) +
           ";\n  const i64 first = (i64)blockIdx.y * " + k +
           ", last = first + " + k + " < " + n + " ? first + " + k + " : " + n +
           ";\n";
  }
  /// Walks the block's share: each input `inK` loaded into `inK_v[V]`,
  /// `body` (with `$`, `%c`) run per lane `l`, and with `out` the lanes'
  /// `y[l]` stored.
  std::string loop(const std::vector<std::string> &ins, const std::string &body,
                   const std::string &out = "") const {
    std::string v = std::to_string(V), per = std::to_string(sp / V);
    std::string code =
        this->last
            ? "  if (live)\n  for (i64 g = first + row0; g < last; g += " +
                  std::to_string(R) + ") {\n    const i64 e = g * " +
                  std::to_string(C) + "LL + c;\n"
            : "  for (i64 g = first + threadIdx.x; g < last; g += " +
                  std::to_string(threads) + ") {\n    const i64 e = (g / " +
                  per + "LL * " + std::to_string(C) + "LL + c) * " +
                  std::to_string(sp) + "LL + g % " + per + "LL * " + v + ";\n";
    for (const std::string &in : ins)
      code += "    float " + in + "_v[" + v + "]; ldv<" + v + ">(" + in +
              " + e, " + in + "_v);\n";
    if (!out.empty())
      code += "    float y[" + v + "];\n";
    code += "#pragma unroll\n    for (int l = 0; l < " + v + "; ++l) { " +
            lanes(body) + " }\n";
    if (!out.empty())
      code += "    stv<" + v + ">(" + out + " + e, y);\n";
    return code + "  }\n";
  }
  /// The block's sums of `names` in every thread of the channel: warp
  /// butterflies, then the warps' sums in warp order (the same bits in
  /// every thread). Channels last, the butterflies stop at the lanes of
  /// one row, and each lane keeps its channels' sums, one name at a time
  /// through the shared words.
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
           std::to_string(warps) + "; ++k) {" + load +
           " }\n  __syncthreads();\n";
  }
  std::string channelsLastSums(const std::vector<std::string> &names) const {
    std::string code;
    for (const std::string &n : names) {
      if (L < 32)
        code += forChannels("for (int o = 16; o >= " + std::to_string(L) +
                            "; o >>= 1) " + n + "$ += __shfl_xor_sync(0xffffffffu, " +
                            n + "$, o);");
      code += "  if (threadIdx.x % 32 < " + std::to_string(L) + ") {\n" +
              forChannels("part[threadIdx.x / 32][lane * " + std::to_string(V) +
                          " + l] = " + n + "$;") +
              "  }\n  __syncthreads();\n" + forChannels(n + "$ = 0.0;") +
              "  for (int k = 0; k < " + std::to_string(warps) + "; ++k) {\n" +
              forChannels(n + "$ += part[k][lane * " + std::to_string(V) +
                          " + l];") +
              "  }\n  __syncthreads();\n";
    }
    // One channel a thread: `l` is 0 (forChannels leaves no loop).
    return vectorChannels() ? code : replaceAll(code, " + l]", "]");
  }
  static std::string replaceAll(std::string s, const std::string &from,
                                const std::string &to) {
    for (size_t at = 0; (at = s.find(from, at)) != std::string::npos;
         at += to.size())
      s.replace(at, from.size(), to);
    return s;
  }
  std::string declare(const std::vector<std::string> &names) const {
    std::string d = "  double ";
    for (size_t j = 0; j < names.size(); ++j)
      d += (j ? ", " : "") + names[j] +
           (vectorChannels() ? "[" + std::to_string(V) + "] = {}" : " = 0.0");
    return d + ";\n";
  }
  /// Where block b's partial sum j of channel c lies in the scratch.
  /// Channels last, a block's channels side by side (b * C + c), so a
  /// warp's lanes read neighbouring words; else a channel's blocks are.
  std::string partial(const std::string &b, size_t j, size_t k) const {
    std::string at = last ? "(" + b + " * " + std::to_string(C) + "LL + %c)"
                          : "(%c * " + std::to_string(S) + " + " + b + ")";
    return "scratch[" + at + " * " + std::to_string(k) + " + " +
           std::to_string(j) + "]";
  }
  std::string channelSums(const std::vector<std::string> &names,
                          const std::string &accumulate) const {
    if (S == 1)
      return declare(names) + accumulate + blockSums(names);
    std::string code = declare(names);
    if (last) {
      // The block's rows share the S partials (a row every R), then add
      // theirs up as the row loop's sums: each partial is read once a
      // block, not once a row (with S = 264 blocks a channel, every
      // thread reading all of them cost an H200 0.5 ms a kernel).
      code += "  for (i64 b = row0; b < " + std::to_string(S) + "; b += " +
              std::to_string(R) + ") {\n";
      for (size_t j = 0; j < names.size(); ++j)
        code += "  " + forChannels(names[j] + "$ += " +
                                   partial("b", j, names.size()) + ";");
      return code + "  }\n" + blockSums(names);
    }
    code += "  for (int b = 0; b < " + std::to_string(S) + "; ++b) {\n";
    for (size_t j = 0; j < names.size(); ++j)
      code += "  " + forChannels(names[j] + "$ += " +
                                 partial("b", j, names.size()) + ";");
    return code + "  }\n";
  }
  std::string partialSums(const std::vector<std::string> &names,
                          const std::string &accumulate) const {
    std::string code = declare(names) + accumulate + blockSums(names) +
        "  if (" + leader() + ") {\n";
    for (size_t j = 0; j < names.size(); ++j)
      code += "  " + forChannels(partial("blockIdx.y", j, names.size()) +
                                 " = " + names[j] + "$;");
    return code + "  }\n";
  }
  /// The batch statistics m (double), mean, var and inv per channel from
  /// the totals u (of x) and w (of x^2).
  static std::vector<Value> stats(const std::string &eps) {
    return {{"double", "m", "u$ * rcount"},
            {"float", "mean", "(float)m$"},
            {"float", "var", "(float)fmax(w$ * rcount - m$ * m$, 0.0)"},
            {"float", "inv", "1.0f / sqrtf(var$ + " + eps + ")"}};
  }
};

std::vector<ChannelCode::Value> concat(std::vector<ChannelCode::Value> a,
                                       const std::vector<ChannelCode::Value> &b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

/// The step's scratch for its channels' partial sums and, where a channel
/// is split (S > 1), the prologue kernel leaving each block's `sums` (as
/// `accumulate` sums them) there.
void splitSums(Emitter &e, Step &s, const std::string &name,
               const ChannelCode &ch, const std::vector<std::string> &sums,
               const std::string &accumulate) {
  s.cuda.scratch = ch.scratch((int)sums.size());
  if (ch.S == 1)
    return;
  e.cu << e.header(s, name + "_sums", ch.threads) << " {\n"
       << ch.prologue() << ch.partialSums(sums, accumulate) << "}\n\n";
  e.barrier = true;
  e.launch(s, name + "_sums", ch.grid(), {ch.threads, 1, 1},
           /*prologue=*/true);
}

/// The batch norm's output expression from x's value `xv` (mean, inv, and
/// the channel's scale `sc` and bias `bi` in scope): its reader Add's sum
/// with `z` rounded as the Add rounds (cuda.epilogueAdd), then its
/// reader's Relu (cuda.fusedRelu), before the one rounding on store.
std::string normalized(const Step &s, DType t, const std::string &xv,
                       const std::string &z) {
  std::string v = "(" + xv + " - mean$) * inv$ * sc$ + bi$";
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
  ChannelCode ch(x.shape, x.dtype, s.getInt("channels_last", 0), 2);
  if (!train) {
    int64_t n = numElements(x.shape);
    cu << header(s, name, 256) << " {\n  i64 e = global_index();\n  if (e >= "
       << n << "LL) return;\n  i64 c = e / " << (ch.last ? 1 : ch.sp) << "LL % "
       << ch.C << "LL;\n  float mean = ld(in3, c), inv = 1.0f / sqrtf(ld(in4, c) + "
       << eps << "), sc = ld(in1, c), bi = ld(in2, c);\n  st(out0, e, "
       << ChannelCode::replaceAll(
              normalized(s, t, "ld(in0, e)", "ld(" + z + ", e)"), "$", "")
       << ");\n}\n\n";
    launch1d(s, name, n);
    return true;
  }
  std::vector<std::string> ins{"in0"};
  if (s.cuda.epilogueAdd >= 0)
    ins.push_back(z);
  std::string momentum = flt((float)s.getFloat("momentum", 0.9));
  // torch's running variance, the unbiased one (as the CPU kernel).
  std::string bessel = s.getInt("unbiased_running_var", 0) && ch.count > 1
                           ? flt((float)((double)ch.count / (double)(ch.count - 1))) + " * "
                           : "";
  std::vector<std::string> sums{"u", "w"};
  std::string accumulate =
      ch.loop({"in0"}, "const double v = in0_v[l]; u$ += v; w$ += v * v;");
  splitSums(*this, s, name, ch, sums, accumulate);
  cu << header(s, name, ch.threads) << " {\n" << ch.prologue()
     << ch.channelSums(sums, accumulate)
     << ch.perChannel(sums, concat(ChannelCode::stats(eps),
                                   {{"float", "sc", "ld(in1, %c)"},
                                    {"float", "bi", "ld(in2, %c)"}}))
     << ch.loop(ins, "y[l] = " + normalized(s, t, "in0_v[l]", z + "_v[l]") + ";",
                "out0")
     << "  if (blockIdx.y == 0 && " << ch.leader() << ") {\n"
     << ch.forChannels("st(out1, %c, ld(in3, %c) * " + momentum + " + mean$ * (1 - " +
                       momentum + ")); st(out2, %c, ld(in4, %c) * " + momentum +
                       " + var$ * " + bessel + "(1 - " + momentum + "));")
     << "  }\n}\n\n";
  barrier = true;
  launch(s, name, ch.grid(), {ch.threads, 1, 1});
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
  ChannelCode ch(x.shape, x.dtype, s.getInt("channels_last", 0), 4);
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
                       "; u$ += v; w$ += v * v; gs$ += d; gx$ += d * v;");
  splitSums(*this, s, name, ch, sums, accumulate);
  cu << header(s, name, ch.threads) << " {\n" << ch.prologue()
     << ch.channelSums(sums, accumulate)
     // The statistics first (sqrt and division: calls to slow paths),
     // then what needs no call, so no total is live across one.
     << ch.perChannel({"u", "w"}, ChannelCode::stats(eps))
     << ch.perChannel({"gs", "gx"},
                      {{"double", "sumDy", "gs$"},
                       {"double", "sumDyXhat",
                        "(double)inv$ * (gx$ - (double)mean$ * gs$)"},
                       {"double", "k", "(double)ld(in2, %c) * inv$"},
                       {"double", "meanDy", "sumDy$ * rcount"},
                       {"double", "meanDyXhat", "sumDyXhat$ * rcount"}},
                      ChannelCode::stats(eps), /*inShared=*/true)
     << ch.loop(ins, "const float xhat = (in1_v[l] - mean$) * inv$; y[l] = k$ * (" +
                         dy + " - meanDy$ - xhat * meanDyXhat$);",
                "out0")
     << "  if (blockIdx.y == 0 && " << ch.leader() << ") {\n"
     << ch.forChannels("st(out1, %c, sumDyXhat$); st(out2, %c, sumDy$);")
     << "  }\n}\n\n";
  barrier = true;
  launch(s, name, ch.grid(), {ch.threads, 1, 1});
  return true;
}

void registerBatchNormEmitters(EmitterTable &t) {
  t.emit(OpId::BatchNorm, &Emitter::batchNorm);
  t.emit(OpId::BatchNormTrain, &Emitter::batchNorm);
  t.emit(OpId::BatchNormGrad, &Emitter::batchNormGrad);
}

} // namespace mlir::mpc::cuda
