//===- CudaNnKernels.cpp - normalisation, softmax, pooling -----------------===//
//
// Kernels that accumulate: all in FP32, rounding once to the output type.
//
//===----------------------------------------------------------------------===//

#include "codegen/CudaKernels.h"
#include "runtime/kernels/Common.h"
#include "runtime/kernels/Window.h"

#include <algorithm>
#include <map>
#include <set>

using namespace ::mpc::rt;

namespace mlir::mpc::cuda {

/// Rows at least this long get a warp each (a thread each below: the
/// shuffles would cost more than they save).
constexpr int64_t kWarpRowMin = 64;

/// A kernel over `rows` contiguous rows of `n`: a warp per row when they
/// are long (lanes stride along it, `sum`/`max` combine the lanes with
/// butterfly shuffles), else a thread per row (lane 0, stride 1, the
/// combines the identity). The prologue defines i, lane, n and base; the
/// rows past the last leave (a warp together). The row count is the
/// kernel's `count` argument, so steps that differ only in it share the
/// kernel.
Emitter::RowLoop Emitter::rowLoop(Step &s, int64_t rows, int64_t n) {
  s.cuda.count = rows;
  std::string tail = "  if (i >= count) return;\n  const i64 n = " +
                     std::to_string(n) + "LL, base = i * n;\n";
  if (n >= kWarpRowMin)
    return {"  const i64 i = (i64)blockIdx.x * " +
                std::to_string(kRowThreads / 32) +
                "LL + threadIdx.x / 32;\n  const int lane = threadIdx.x % 32;\n" +
                tail,
            "32", "mpc_warp_sum", "mpc_warp_max", true};
  return {"  const i64 i = global_index();\n  const int lane = 0;\n" + tail, "1",
          "", "", false};
}

std::string Emitter::rowEach(const Step &s, const RowLoop &r, int64_t n,
                             const std::string &body, const std::string &len) {
  std::string scalar = "  for (i64 j = lane; j < " + len + "; j += " +
                       r.stride + ") " + body + "\n";
  if (!r.warp)
    return scalar;
  // The row operands the body reads or writes at base + j.
  std::vector<size_t> loads, stores;
  int64_t narrowest = 16;
  for (size_t k = 0; k < s.inputs.size(); ++k)
    if (s.inputs[k] >= 0 &&
        body.find("ld(in" + std::to_string(k) + ", base + j)") != std::string::npos) {
      loads.push_back(k);
      narrowest = std::min<int64_t>(narrowest, dtypeSize(val(s.inputs[k]).dtype));
    }
  for (size_t k = 0; k < s.outputs.size(); ++k)
    if (body.find("st(out" + std::to_string(k) + ", base + j, ") != std::string::npos) {
      stores.push_back(k);
      narrowest = std::min<int64_t>(
          narrowest, dtypeSize(val(::mpc::rt::kernelOutputs(s)[k]).dtype));
    }
  int64_t width = std::min<int64_t>(8, 16 / narrowest);
  if (width < 2 || n % width != 0 || (loads.empty() && stores.empty()))
    return scalar;
  std::string W = std::to_string(width), lanes = body;
  auto replaceAll = [&](const std::string &from, const std::string &to) {
    for (size_t at = 0; (at = lanes.find(from, at)) != std::string::npos;
         at += to.size())
      lanes.replace(at, from.size(), to);
  };
  for (size_t k : loads)
    replaceAll("ld(in" + std::to_string(k) + ", base + j)",
               "vx" + std::to_string(k) + "[e]");
  for (size_t k : stores) { // st(outK, base + j, EXPR); -> vyK[e] = EXPR;
    std::string from = "st(out" + std::to_string(k) + ", base + j, ";
    for (size_t at; (at = lanes.find(from)) != std::string::npos;) {
      size_t end = at + from.size();
      for (int depth = 0; end < lanes.size(); ++end) {
        if (lanes[end] == '(')
          ++depth;
        else if (lanes[end] == ')' && depth-- == 0)
          break;
      }
      lanes.replace(at, end + 1 - at,
                    "vy" + std::to_string(k) + "[e] = " +
                        lanes.substr(at + from.size(), end - at - from.size()));
    }
  }
  std::ostringstream os;
  os << "  for (i64 j0 = lane * " << W << "; j0 < " << len << "; j0 += 32 * "
     << W << ") {\n";
  for (size_t k : loads)
    os << "    float vx" << k << "[" << W << "]; ldv<" << W << ">(in" << k
       << " + base + j0, vx" << k << ");\n";
  for (size_t k : stores)
    os << "    float vy" << k << "[" << W << "];\n";
  os << "#pragma unroll\n    for (int e = 0; e < " << W
     << "; ++e) { const i64 j = j0 + e; " << lanes << " }\n";
  for (size_t k : stores)
    os << "    stv<" << W << ">(out" << k << " + base + j0, vy" << k << ");\n";
  os << "  }\n";
  return os.str();
}

void Emitter::rowLaunch(Step &s, const std::string &name, const RowLoop &r,
                        int64_t rows) {
  if (!r.warp)
    return launch1d(s, name, rows);
  barrier = true; // the warp's lanes meet in the shuffles (host emulation)
  launch(s, name, {(rows + kRowThreads / 32 - 1) / (kRowThreads / 32), 1, 1},
         {kRowThreads, 1, 1}, false, kRowThreads / 32);
}

bool Emitter::softmax(Step &s, const std::string &name) {
  bool logForm = s.op == OpId::LogSoftmax;
  const ValueInfo &x = val(s.inputs[0]);
  int64_t rank = x.shape.size(), axis = s.getInt("axis", -1);
  axis = axis < 0 ? axis + rank : axis;
  AxisSplit sp = splitAt(x.shape, axis);
  if (sp.inner == 1) { // contiguous rows
    RowLoop r = rowLoop(s, sp.outer, sp.dim);
    int64_t n = sp.dim;
    std::string out = logForm ? "v - logf(sum)" : "expf(v) / sum";
    cu << header(s, name, r.warp ? kRowThreads : 256) << " {\n" << r.prologue
       << "  float mx = -INFINITY, sum = 0.0f;\n"
       << rowEach(s, r, n, "mx = fmaxf(mx, ld(in0, base + j));")
       << "  mx = " << r.max << "(mx);\n"
       << rowEach(s, r, n, "sum += expf(ld(in0, base + j) - mx);")
       << "  sum = " << r.sum << "(sum);\n"
       << rowEach(s, r, n, "{ float v = ld(in0, base + j) - mx; st(out0, base + j, " +
                            out + "); }")
       << "}\n\n";
    rowLaunch(s, name, r, sp.outer);
    return true;
  }
  cu << header(s, name, 256) << " {\n  i64 i = global_index();\n  if (i >= "
     << sp.outer * sp.inner << "LL) return;\n  i64 base = (i / " << sp.inner
     << "LL) * " << sp.dim * sp.inner << "LL + i % " << sp.inner
     << "LL;\n  float mx = -INFINITY, sum = 0.0f;\n  for (i64 d = 0; d < "
     << sp.dim << "; ++d) mx = fmaxf(mx, ld(in0, base + d * " << sp.inner
     << "LL));\n  for (i64 d = 0; d < " << sp.dim
     << "; ++d) sum += expf(ld(in0, base + d * " << sp.inner
     << "LL) - mx);\n  for (i64 d = 0; d < " << sp.dim
     << "; ++d) { float v = ld(in0, base + d * " << sp.inner << "LL) - mx; "
     << (logForm ? "st(out0, base + d * " + std::to_string(sp.inner) +
                       "LL, v - logf(sum));"
                 : "st(out0, base + d * " + std::to_string(sp.inner) +
                       "LL, expf(v) / sum);")
     << " }\n}\n\n";
  launch1d(s, name, sp.outer * sp.inner);
  return true;
}

bool Emitter::layerNorm(Step &s, const std::string &name) {
  const ValueInfo &x = val(s.inputs[0]);
  int64_t rank = x.shape.size(), axis = s.getInt("axis", -1);
  AxisSplit sp = splitAt(x.shape, axis < 0 ? axis + rank : axis);
  int64_t rows = sp.outer, cols = sp.dim * sp.inner; // rows of the axes from `axis` on
  int64_t sc = numElements(val(s.inputs[1]).shape);
  bool bias = s.inputs.size() > 2 && s.inputs[2] >= 0;
  double eps = s.getFloat("epsilon", 1e-5);
  std::string affine = " * ld(in1, j % " + std::to_string(sc) + "LL)" +
                       (bias ? " + ld(in2, j % " + std::to_string(sc) + "LL)" : "");
  RowLoop r = rowLoop(s, rows, cols);
  cu << header(s, name, r.warp ? kRowThreads : 256) << " {\n" << r.prologue
     << "  float mean = 0.0f, var = 0.0f;\n"
     << rowEach(s, r, cols, "mean += ld(in0, base + j);")
     << "  mean = " << r.sum << "(mean) / n;\n"
     << rowEach(s, r, cols, "{ float d = ld(in0, base + j) - mean; var += d * d; }")
     << "  const float inv = rsqrtf(" << r.sum << "(var) / n + " << flt(eps) << ");\n"
     << rowEach(s, r, cols, "st(out0, base + j, (ld(in0, base + j) - mean) * inv" +
                             affine + ");");
  if (s.outputs.size() > 1)
    cu << "  if (lane == 0) st(out1, i, mean);\n";
  if (s.outputs.size() > 2)
    cu << "  if (lane == 0) st(out2, i, inv);\n";
  cu << "}\n\n";
  rowLaunch(s, name, r, rows);
  return true;
}

/// RMSNormalization, a warp or a thread per row (rowLoop).
bool Emitter::rmsNorm(Step &s, const std::string &name) {
  const ValueInfo &x = val(s.inputs[0]);
  int64_t rank = x.shape.size(), axis = s.getInt("axis", -1);
  AxisSplit sp = splitAt(x.shape, axis < 0 ? axis + rank : axis);
  int64_t rows = sp.outer, cols = sp.dim * sp.inner; // rows of the axes from `axis` on
  int64_t sc = std::max<int64_t>(numElements(val(s.inputs[1]).shape), 1);
  RowLoop r = rowLoop(s, rows, cols);
  cu << header(s, name, r.warp ? kRowThreads : 256) << " {\n" << r.prologue
     << "  float sq = 0.0f;\n"
     << rowEach(s, r, cols, "{ float v = ld(in0, base + j); sq += v * v; }")
     << "  const float inv = 1.0f / sqrtf(" << r.sum << "(sq) / (float)n + "
     << flt((float)s.getFloat("epsilon", 1e-5)) << ");\n"
     << rowEach(s, r, cols, "st(out0, base + j, ld(in0, base + j) * inv * ld(in1, j % " +
                             std::to_string(sc) + "LL));");
  if (s.outputs.size() > 1)
    cu << "  if (lane == 0) st(out1, i, inv);\n";
  cu << "}\n\n";
  rowLaunch(s, name, r, rows);
  return true;
}

/// norm_grad: both row sums in one pass, then dx (a warp or a thread per
/// row, rowLoop); xhat and dxhat recomputed rather than stored.
bool Emitter::normGrad(Step &s, const std::string &name) {
  const ValueInfo &x = val(s.inputs[1]);
  int64_t rank = x.shape.size(), axis = s.getInt("axis", -1);
  AxisSplit sp = splitAt(x.shape, axis < 0 ? axis + rank : axis);
  int64_t rows = sp.outer, cols = sp.dim * sp.inner;
  int64_t sc = std::max<int64_t>(numElements(val(s.inputs[2]).shape), 1);
  bool layer = s.inputs.size() > 4 && s.inputs[4] >= 0;
  RowLoop r = rowLoop(s, rows, cols);
  std::string terms = "{ const float xh = (ld(in1, base + j) - m) * k, dh = "
                      "ld(in0, base + j) * ld(in2, j % " +
                      std::to_string(sc) + "LL); ";
  cu << header(s, name, r.warp ? kRowThreads : 256) << " {\n" << r.prologue
     << "  const float m = " << (layer ? "ld(in4, i)" : "0.0f")
     << ", k = ld(in3, i);\n  float a = 0.0f, p = 0.0f;\n"
     << rowEach(s, r, cols, terms + "a += dh; p += dh * xh; }")
     << "  a = " << (layer ? r.sum + "(a) / (float)n" : std::string("0.0f"))
     << ";\n  p = " << r.sum << "(p) / (float)n;\n"
     << rowEach(s, r, cols, terms + "st(out0, base + j, k * (dh - a - xh * p)); }")
     << "}\n\n";
  rowLaunch(s, name, r, rows);
  return true;
}

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
  ChannelCode(const Shape &x, DType t)
      : C(x[1]), sp(numElements(x) / std::max<int64_t>(x[0] * x[1], 1)),
        count(x[0] * sp) {
    int64_t lanes = 16 / (int64_t)dtypeSize(t);
    V = sp % lanes == 0 ? lanes : 1;
    groups = count / V;
    S = std::max<int64_t>(1, std::min((kTargetBlocks + C - 1) / C,
                                      count / kMinPerBlock));
    chunk = (groups + S - 1) / S;
  }
  std::array<int64_t, 3> grid() const { return {C, S, 1}; }
  /// Scratch bytes for `sums` doubles a block (0 when not split).
  int64_t scratch(int sums) const { return S > 1 ? C * S * sums * 8 : 0; }
  std::string prologue() const {
    std::string n = std::to_string(groups) + "LL", k = std::to_string(chunk) + "LL";
    return "  __shared__ double part[4][" + std::to_string(kWarps) +
           "];\n  const i64 c = blockIdx.x;\n  const double rcount = " +
           dbl(1.0 / (double)std::max<int64_t>(count, 1)) +
           ";\n  const i64 first = (i64)blockIdx.y * " + k +
           ", last = first + " + k + " < " + n + " ? first + " + k + " : " + n +
           ";\n";
  }
  std::string loop(const std::vector<std::string> &ins, const std::string &body,
                   const std::string &out = "") const {
    std::string v = std::to_string(V), per = std::to_string(sp / V);
    std::string code = "  for (i64 g = first + threadIdx.x; g < last; g += " +
                       std::to_string(kThreads) + ") {\n    const i64 e = (g / " +
                       per + "LL * " + std::to_string(C) + "LL + c) * " +
                       std::to_string(sp) + "LL + g % " + per + "LL * " + v +
                       ";\n";
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
  /// The block's sums of `names` in every thread: warp butterflies, then
  /// the warps' sums in warp order (the same bits in every thread).
  std::string blockSums(const std::vector<std::string> &names) const {
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
        "  if (threadIdx.x == 0) {\n";
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
  ChannelCode ch(x.shape, x.dtype);
  if (!train) {
    int64_t n = numElements(x.shape);
    cu << header(s, name, 256) << " {\n  i64 e = global_index();\n  if (e >= "
       << n << "LL) return;\n  i64 c = e / " << ch.sp << "LL % " << ch.C
       << "LL;\n  float mean = ld(in3, c), inv = 1.0f / sqrtf(ld(in4, c) + "
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
  s.cuda.scratch = ch.scratch(2);
  if (ch.S > 1) { // the channels' partial sums, a block each
    cu << header(s, name + "_sums", ChannelCode::kThreads) << " {\n"
       << ch.prologue() << ch.partialSums(sums, accumulate) << "}\n\n";
    barrier = true;
    launch(s, name + "_sums", ch.grid(), {ChannelCode::kThreads, 1, 1},
           /*prologue=*/true);
  }
  cu << header(s, name, ChannelCode::kThreads) << " {\n" << ch.prologue()
     << ch.channelSums(sums, accumulate) << ch.stats(eps)
     << "  const float sc = ld(in1, c), bi = ld(in2, c);\n"
     << ch.loop(ins, "y[l] = " + normalized(s, t, "in0_v[l]", z + "_v[l]") + ";",
                "out0")
     << "  if (blockIdx.y == 0 && threadIdx.x == 0) {\n    st(out1, c, ld(in3, c) * "
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
  ChannelCode ch(x.shape, x.dtype);
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
  s.cuda.scratch = ch.scratch(4);
  if (ch.S > 1) {
    cu << header(s, name + "_sums", ChannelCode::kThreads) << " {\n"
       << ch.prologue() << ch.partialSums(sums, accumulate) << "}\n\n";
    barrier = true;
    launch(s, name + "_sums", ch.grid(), {ChannelCode::kThreads, 1, 1},
           /*prologue=*/true);
  }
  cu << header(s, name, ChannelCode::kThreads) << " {\n" << ch.prologue()
     << ch.channelSums(sums, accumulate) << ch.stats(eps)
     << "  const double sumDy = gs, sumDyXhat = (double)inv * (gx - "
        "(double)mean * gs);\n  const double k = (double)ld(in2, c) * inv, "
        "meanDy = sumDy * rcount, meanDyXhat = sumDyXhat * "
        "rcount;\n"
     << ch.loop(ins, "const float xhat = (in1_v[l] - mean) * inv; y[l] = k * (" +
                         dy + " - meanDy - xhat * meanDyXhat);",
                "out0")
     << "  if (blockIdx.y == 0 && threadIdx.x == 0) { st(out1, c, sumDyXhat); "
        "st(out2, c, sumDy); }\n}\n\n";
  barrier = true;
  launch(s, name, ch.grid(), {ChannelCode::kThreads, 1, 1});
  return true;
}

bool Emitter::pool(Step &s, const std::string &name) {
  bool max = s.op == OpId::MaxPool;
  const ValueInfo &x = val(s.inputs[0]), &y = val(s.outputs[0]);
  if (x.shape.size() != 4)
    return fail(s, "only 2-D pooling has a CUDA kernel yet");
  Window win(s, x.shape, y.shape, {});
  int64_t H = x.shape[2], W = x.shape[3], OH = y.shape[2], OW = y.shape[3];
  int64_t n = numElements(y.shape);
  bool includePad = s.getInt("count_include_pad", 0);
  cu << header(s, name, 256) << " {\n  i64 i = global_index();\n  if (i >= "
     << n << "LL) return;\n  i64 p = i / " << OH * OW << "LL; int o = i % "
     << OH * OW << "LL, oh = o / " << OW << ", ow = o % " << OW << ";\n"
     << "  float best = -INFINITY, sum = 0.0f; i64 arg = -1; int cnt = 0;\n"
     << "  for (int kh = 0; kh < " << win.kernel[0] << "; ++kh)\n"
     << "    for (int kw = 0; kw < " << win.kernel[1] << "; ++kw) {\n"
     << "      int ih = oh * " << win.strides[0] << " - " << win.padBegin[0]
     << " + kh * " << win.dilations[0] << ", iw = ow * " << win.strides[1]
     << " - " << win.padBegin[1] << " + kw * " << win.dilations[1] << ";\n"
     << (includePad ? "      bool inPad = ih >= -" + std::to_string(win.padBegin[0]) +
                          " && ih < " + std::to_string(H + win.padEnd[0]) +
                          " && iw >= -" + std::to_string(win.padBegin[1]) +
                          " && iw < " + std::to_string(W + win.padEnd[1]) + ";\n"
                    : std::string())
     << "      if (ih < 0 || ih >= " << H << " || iw < 0 || iw >= " << W
     << ") { cnt += " << (includePad ? "inPad" : "0") << "; continue; }\n"
     << "      float v = ld(in0, p * " << H * W << "LL + ih * " << W
     << " + iw); ++cnt; sum += v;\n"
     << "      if (arg < 0 || v > best || v != v) { best = v; arg = ih * " << W
     << " + iw; }\n    }\n"
     << (max ? "  st(out0, i, best);\n" : "  st(out0, i, sum / cnt);\n");
  if (max && s.outputs.size() > 1) // storage_order 1: column-major h, w
    cu << "  out1[i] = p * " << H * W << "LL + "
       << (s.getInt("storage_order", 0) == 1
               ? "(arg % " + std::to_string(W) + ") * " + std::to_string(H) +
                     " + arg / " + std::to_string(W)
               : std::string("arg"))
       << ";\n";
  cu << "}\n\n";
  launch1d(s, name, n);
  return true;
}

/// max_pool_grad / average_pool_grad, gathered: each input element sums,
/// in increasing output order (as the CPU backend scatters), the
/// gradients of the windows that took it (max: whose argmax it is).
bool Emitter::poolGrad(Step &s, const std::string &name) {
  bool max = s.op == OpId::MaxPoolGrad;
  const ValueInfo &dy = val(s.inputs[0]), &dx = val(s.outputs[0]);
  if (dx.shape.size() != 4)
    return fail(s, "only 2-D pooling gradients have a CUDA kernel yet");
  Window win(s, dx.shape, dy.shape, {1, 1});
  int64_t H = dx.shape[2], W = dx.shape[3], OH = dy.shape[2], OW = dy.shape[3];
  int64_t n = numElements(dx.shape);
  bool includePad = s.getInt("count_include_pad", 0);
  cu << header(s, name, 256) << " {\n  i64 i = global_index();\n  if (i >= "
     << n << "LL) return;\n  i64 p = i / " << H * W << "LL; int sp = i % "
     << H * W << "LL, ih = sp / " << W << ", iw = sp % " << W
     << ";\n  float acc = 0.0f;\n";
  // The windows that cover this element, in increasing output order:
  // max_pool_grad adds the gradients of those whose argmax it is,
  // average_pool_grad shares each window's among its counted elements.
  // A max_pool_grad without its forward window scans the whole plane.
  if (max && !s.getInts("kernel_shape")) {
    cu << "  for (int o = 0; o < " << OH * OW << "; ++o)\n    if (in1[p * "
       << OH * OW << "LL + o] == i) acc += ld(in0, p * " << OH * OW
       << "LL + o);\n";
  } else {
    cu << "  for (int kh = " << win.kernel[0] - 1 << "; kh >= 0; --kh) {\n"
       << "    int th = ih + " << win.padBegin[0] << " - kh * " << win.dilations[0]
       << "; if (th < 0 || th % " << win.strides[0] << ") continue; int oh = th / "
       << win.strides[0] << "; if (oh >= " << OH << ") continue;\n"
       << "    for (int kw = " << win.kernel[1] - 1 << "; kw >= 0; --kw) {\n"
       << "      int tw = iw + " << win.padBegin[1] << " - kw * " << win.dilations[1]
       << "; if (tw < 0 || tw % " << win.strides[1] << ") continue; int ow = tw / "
       << win.strides[1] << "; if (ow >= " << OW << ") continue;\n";
    if (max) {
      cu << "      i64 o = p * " << OH * OW << "LL + oh * " << OW
         << " + ow; if (in1[o] == i) acc += ld(in0, o);\n    }\n  }\n";
    } else {
      cu << "      int cnt = 0;\n"
       << "      for (int a = 0; a < " << win.kernel[0] << "; ++a) for (int b = 0; b < "
       << win.kernel[1] << "; ++b) { int y = oh * " << win.strides[0] << " - "
       << win.padBegin[0] << " + a * " << win.dilations[0] << ", x = ow * "
       << win.strides[1] << " - " << win.padBegin[1] << " + b * "
       << win.dilations[1] << "; bool in = y >= 0 && y < " << H
       << " && x >= 0 && x < " << W << "; cnt += "
       << (includePad ? "(y >= -" + std::to_string(win.padBegin[0]) + " && y < " +
                            std::to_string(H + win.padEnd[0]) + " && x >= -" +
                            std::to_string(win.padBegin[1]) + " && x < " +
                            std::to_string(W + win.padEnd[1]) + ")"
                      : std::string("in"))
       << "; }\n"
       << "      if (cnt) acc += ld(in0, p * " << OH * OW << "LL + oh * " << OW
       << " + ow) / (float)cnt;\n    }\n  }\n";
    }
  }
  cu << "  st(out0, i, acc);\n}\n\n";
  launch1d(s, name, n);
  return true;
}

void registerNnEmitters(EmitterTable &t) {
  t.emit(OpId::Softmax, &Emitter::softmax);
  t.emit(OpId::LogSoftmax, &Emitter::softmax);
  t.emit(OpId::LayerNorm, &Emitter::layerNorm);
  t.emit(OpId::RmsNorm, &Emitter::rmsNorm);
  t.emit(OpId::NormGrad, &Emitter::normGrad);
  t.emit(OpId::BatchNorm, &Emitter::batchNorm);
  t.emit(OpId::BatchNormTrain, &Emitter::batchNorm);
  t.emit(OpId::BatchNormGrad, &Emitter::batchNormGrad);
  t.emit(OpId::MaxPool, &Emitter::pool);
  t.emit(OpId::AveragePool, &Emitter::pool);
  t.emit(OpId::MaxPoolGrad, &Emitter::poolGrad);
  t.emit(OpId::AveragePoolGrad, &Emitter::poolGrad);
  for (OpId op : {OpId::CumSum, OpId::Dropout})
    t.unsupported(op);
}

} // namespace mlir::mpc::cuda
