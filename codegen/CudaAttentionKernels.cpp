//===- CudaAttentionKernels.cpp - mpc.attention and its gradient ----------===//
//
// Which kernel runs an attention step: for fp16/bf16, the mma.sync kernels
// (CudaFlashAttention.cpp) for head sizes that are multiples of 8 up to
// 256 (computed on them rounded up to 16: mmaDims); otherwise the SIMT
// kernels here:
// blocks of query rows streaming K/V tiles through shared memory with an
// online softmax, and a thread per query row (dq) or key row (dk, dv) in
// the CPU backend's order (runtime/kernels/Attention.cpp), so host
// emulation matches it bit for bit. Scores are recomputed, never stored:
// memory grows with the sequence, not its square.
//
//===----------------------------------------------------------------------===//

#include "codegen/CudaAttention.h"

#include <algorithm>
#include <sstream>

namespace mlir::mpc::cuda {
namespace {

/// Device function `fn(q, krow, bias, b, i, j, slope)`: s_ij, the bias
/// offset arithmetic with its strides folded in as literals; with a
/// `softcap` c the scaled score capped to c tanh(s / c), and *slope (when
/// given) ds's factor 1 - tanh^2, as the CPU backend computes them.
std::string scoreFunction(const std::string &fn, const Dims &g,
                          const Shape *bias, float scale, float softcap,
                          const std::string &qType,
                          const std::string &biasType) {
  std::ostringstream os;
  // `krow` is key j's row, in global memory or a shared-memory tile.
  os << "template <typename K>\n__device__ __forceinline__ float " << fn
     << "(const " << qType << " *__restrict__ q, const K *krow, const "
     << biasType << " *__restrict__ bias, i64 b, i64 i, i64 j, float *slope) {\n";
  // Outside the band (causal, windows): masked.
  if (g.band.boundsEnd())
    os << "  if (i + " << g.band.off << "LL - j < " << g.band.lo
       << "LL) return -INFINITY;\n";
  if (g.band.boundsStart())
    os << "  if (i + " << g.band.off << "LL - j > " << g.band.hi
       << "LL) return -INFINITY;\n";
  os << "  float dot = 0.0f;\n  for (i64 t = 0; t < " << g.d
     << "LL; ++t) dot += ld(q, (b * " << g.sq << "LL + i) * " << g.d
     << "LL + t) * ld(krow, t);\n  float s = " << flt(scale)
     << " * dot;\n";
  if (softcap > 0.0f)
    os << "  const float t = tanhf(s / " << flt(softcap) << ");\n  s = "
       << flt(softcap) << " * t;\n  if (slope) *slope = 1.0f - t * t;\n";
  if (bias)
    os << "  " << biasOffset(g, *bias) << "\n  s += ld(bias, off);\n";
  os << "  return s;\n}\n\n";
  return os.str();
}

} // namespace

/// y and lse: a block of kRows query rows (a thread each, its q row in
/// registers) streams K and V through shared memory a tile of keys at a
/// time, with the online softmax of the CPU backend (same steps, same
/// order). Rows past the end still load tiles and meet the barriers.
bool Emitter::attention(Step &s, const std::string &name) {
  Dims g = stepDims(s, val(s.inputs[0]).shape, val(s.inputs[1]).shape,
                    val(s.inputs[2]).shape);
  DType t = val(s.inputs[0]).dtype;
  if ((t == DType::F16 || t == DType::BF16) &&
      val(s.inputs[1]).dtype == t && val(s.inputs[2]).dtype == t &&
      mmaHeadSizes(g)) {
    MmaForwardTiles tiles = mmaForwardTiles(mmaDims(g), plan);
    if (tiles.keys) {
      attentionMma(s, name, tiles);
      return true;
    }
  }
  if (readsViews(s)) // fuseAttentionLayouts asked for mma
    return fail(s, "an operand read in place needs the mma.sync kernel");
  bool hasBias = s.inputs.size() > 3 && s.inputs[3] >= 0;
  const Shape *bias = hasBias ? &val(s.inputs[3]).shape : nullptr;
  std::string qType = ctype(val(s.inputs[0]).dtype);
  std::string biasType = hasBias ? ctype(val(s.inputs[3]).dtype) : "float";
  std::string biasArg = hasBias ? "in3" : "(const float *)nullptr";
  constexpr int64_t kRows = 64;
  // Keys per tile: K and V tiles in at most 48 KiB of static shared memory.
  int64_t tile = std::clamp<int64_t>(12288 / std::max<int64_t>(g.d + g.dv, 1),
                                     1, 32);
  bool zeroMasked = s.getInt("zero_masked_rows", 0) != 0;
  const float softcap = (float)s.getFloat("softcap", 0.0);
  AttentionDropout drop(*this, s, g, 4);
  // A dropped probability adds to the sum only (the CPU backend's order).
  std::string dropped =
      drop.on ? "      if (!" +
                    drop.keep(AttentionDropout::index(g, "b", "i", "j0 + jj")) +
                    ") continue;\n"
              : std::string();
  cu << scoreFunction(name + "_score", g, bias, (float)s.getFloat("scale", 1.0),
                      softcap, qType, biasType)
     << header(s, name, kRows) << " {\n"
     << "  __shared__ float ks[" << tile * g.d << "], vs[" << tile * g.dv
     << "];\n  const i64 b = blockIdx.x, i = (i64)blockIdx.y * " << kRows
     << "LL + threadIdx.x, row = b * " << g.sq << "LL + i;\n"
     << "  const bool live = i < " << g.sq << "LL;\n"
     << "  float acc[" << g.dv << "];\n  for (i64 t = 0; t < " << g.dv
     << "LL; ++t) acc[t] = 0.0f;\n"
     << "  float mx = -INFINITY, sum = 0.0f;\n"
     << "  for (i64 j0 = 0; j0 < " << g.skv << "LL; j0 += " << tile << "LL) {\n"
     << "    const i64 n = " << g.skv << "LL - j0 < " << tile << "LL ? " << g.skv
     << "LL - j0 : " << tile << "LL;\n"
     << "    for (i64 e = threadIdx.x; e < n * " << g.d << "LL; e += " << kRows
     << "LL) ks[e] = ld(in1, (b / " << g.group << "LL * " << g.skv << "LL + j0) * " << g.d
     << "LL + e);\n"
     << "    for (i64 e = threadIdx.x; e < n * " << g.dv << "LL; e += " << kRows
     << "LL) vs[e] = ld(in2, (b / " << g.group << "LL * " << g.skv << "LL + j0) * " << g.dv
     << "LL + e);\n"
     << "    __syncthreads();\n"
     << "    for (i64 jj = 0; live && jj < n; ++jj) {\n"
     << "      const float s = " << name << "_score(in0, ks + jj * " << g.d
     << "LL, " << biasArg << ", b, i, j0 + jj, nullptr);\n"
     << "      if (s == -INFINITY) continue;\n"
     << "      if (s > mx) { const float c = expf(mx - s); sum *= c; for (i64 t = 0; t < "
     << g.dv << "LL; ++t) acc[t] *= c; mx = s; }\n"
     << "      const float p = expf(s - mx); sum += p;\n"
     << dropped
     << "      for (i64 t = 0; t < " << g.dv << "LL; ++t) acc[t] += p * vs[jj * "
     << g.dv << "LL + t];\n    }\n    __syncthreads();\n  }\n"
     << "  if (!live) return;\n"
     << "  const bool none = sum == 0.0f;\n"
     << "  for (i64 t = 0; t < " << g.dv << "LL; ++t) st(out0, row * " << g.dv
     << "LL + t, " << attentionY(zeroMasked, "acc[t]", "sum", drop) << ");\n"
     << "  st(out1, row, " << attentionLse(zeroMasked, "mx", "sum") << ");\n}\n\n";
  barrier = true;
  // Heads along x (up to 2^31 - 1 of them; y takes 65535), as the
  // mma.sync kernels'.
  launch(s, name, {g.batch, (g.sq + kRows - 1) / kRows, 1}, {kRows, 1, 1});
  return true;
}

/// dq, dk and dv. Thread t computes query row t's dq and key row t's dk
/// and dv (each where it exists), recomputing p = exp(s - lse).
bool Emitter::attentionGrad(Step &s, const std::string &name) {
  // Operands: dy, q, k, v, y, lse[, bias].
  Dims g = stepDims(s, val(s.inputs[1]).shape, val(s.inputs[2]).shape,
                    val(s.inputs[3]).shape);
  DType t = val(s.inputs[1]).dtype;
  bool sameType = true;
  for (int k : {0, 2, 3, 4})
    sameType &= val(s.inputs[k]).dtype == t;
  if ((t == DType::F16 || t == DType::BF16) && sameType && mmaHeadSizes(g) &&
      mmaGradFits(mmaDims(g), plan)) {
    attentionGradMma(s, name);
    return true;
  }
  if (readsViews(s)) // fuseAttentionLayouts asked for mma
    return fail(s, "an operand read in place needs the mma.sync kernel");
  bool hasBias = s.inputs.size() > 6 && s.inputs[6] >= 0;
  const Shape *bias = hasBias ? &val(s.inputs[6]).shape : nullptr;
  std::string qType = ctype(val(s.inputs[1]).dtype);
  std::string biasType = hasBias ? ctype(val(s.inputs[6]).dtype) : "float";
  std::string biasArg = hasBias ? "in6" : "(const float *)nullptr";
  std::string scale = flt((float)s.getFloat("scale", 1.0));
  const float softcap = (float)s.getFloat("softcap", 0.0);
  AttentionDropout drop(*this, s, g, 7);
  auto rowTerm = [&](const std::string &row) {
    std::ostringstream os;
    os << "float rowD = 0.0f; for (i64 t = 0; t < " << g.dv
       << "LL; ++t) rowD += ld(in0, " << row << " * " << g.dv
       << "LL + t) * ld(in4, " << row << " * " << g.dv << "LL + t);";
    return os.str();
  };
  // ds_ij into `ds` and p_ij into `p`, for query row `row` = (b, i) and
  // key row `key` = (b, j).
  std::ostringstream dsCode;
  dsCode << "float slope = 1.0f, lse = ld(in5, row); float p = lse == -INFINITY ? 0.0f : expf("
         << name << "_score(in1, in2 + key * " << g.d << "LL, " << biasArg
         << ", b, i, j, &slope) - lse);"
         << " float dp = 0.0f; for (i64 t = 0; t < " << g.dv
         << "LL; ++t) dp += ld(in0, row * " << g.dv << "LL + t) * ld(in3, key * "
         << g.dv << "LL + t);";
  // Dropout's factor z of probability (b, i, j): ds = p (z dp - D), and dv
  // sums pd = p z (the CPU backend's order).
  if (drop.on)
    dsCode << " const float z = "
           << drop.keep(AttentionDropout::index(g, "b", "i", "j")) << " ? "
           << flt(drop.draw.scale)
           << " : 0.0f; float ds = p * (dp * z - rowD); float pd = p * z;";
  else
    dsCode << " float ds = p * (dp - rowD); float pd = p;";
  // dS itself (with_scores_grad: before the cap's slope), from the query
  // rows' loop, which visits every key.
  std::string rowDs = wantsScoresGrad(s) ? " st(out3, " +
                                               scoresGradIndex(g, "b", "i", "j") +
                                               ", ds);"
                                         : "";
  // The cap's slope (the CPU backend's order).
  const std::string slopeCode = softcap > 0.0f ? " ds = slope * ds;" : "";
  int64_t n = std::max(g.batch * g.sq, g.batch * g.skv);
  cu << scoreFunction(name + "_score", g, bias, (float)s.getFloat("scale", 1.0),
                      softcap, qType, biasType)
     << header(s, name, 256) << " {\n  const i64 t0 = global_index();\n"
     << "  if (t0 < " << g.batch * g.sq << "LL) {\n"
     << "    const i64 row = t0, b = row / " << g.sq << "LL, i = row % " << g.sq
     << "LL;\n    " << rowTerm("row") << "\n"
     << "    float dq[" << g.d << "];\n    for (i64 t = 0; t < " << g.d
     << "LL; ++t) dq[t] = 0.0f;\n"
     << "    for (i64 j = 0; j < " << g.skv << "LL; ++j) {\n      const i64 key = b / "
     << g.group << "LL * " << g.skv << "LL + j;\n      " << dsCode.str() << "\n"
     << "      " << rowDs << slopeCode << "\n"
     << "      for (i64 t = 0; t < " << g.d << "LL; ++t) dq[t] += " << scale
     << " * ds * ld(in2, key * " << g.d << "LL + t);\n    }\n"
     << "    for (i64 t = 0; t < " << g.d << "LL; ++t) st(out0, row * " << g.d
     << "LL + t, dq[t]);\n  }\n"
     // A K and V row's gradients over the q heads it serves.
     << "  if (t0 < " << g.batch / g.group * g.skv << "LL) {\n"
     << "    const i64 key = t0, j = key % " << g.skv << "LL;\n"
     << "    float dk[" << g.d << "], dv[" << g.dv << "];\n"
     << "    for (i64 t = 0; t < " << g.d << "LL; ++t) dk[t] = 0.0f;\n"
     << "    for (i64 t = 0; t < " << g.dv << "LL; ++t) dv[t] = 0.0f;\n"
     << "    for (i64 b = key / " << g.skv << "LL * " << g.group << "LL; b < (key / "
     << g.skv << "LL + 1) * " << g.group << "LL; ++b)\n"
     << "    for (i64 i = 0; i < " << g.sq << "LL; ++i) {\n      const i64 row = b * "
     << g.sq << "LL + i;\n      " << rowTerm("row") << "\n      " << dsCode.str()
     << slopeCode << "\n      for (i64 t = 0; t < " << g.d << "LL; ++t) dk[t] += " << scale
     << " * ds * ld(in1, row * " << g.d << "LL + t);\n"
     << "      for (i64 t = 0; t < " << g.dv
     << "LL; ++t) dv[t] += pd * ld(in0, row * " << g.dv << "LL + t);\n    }\n"
     << "    for (i64 t = 0; t < " << g.d << "LL; ++t) st(out1, key * " << g.d
     << "LL + t, dk[t]);\n"
     << "    for (i64 t = 0; t < " << g.dv << "LL; ++t) st(out2, key * " << g.dv
     << "LL + t, dv[t]);\n  }\n}\n\n";
  launch1d(s, name, n);
  return true;
}

/// RotaryEmbedding (mpc.rotary): a thread per element, as the CPU kernel.
bool Emitter::rotary(Step &s, const std::string &name) {
  const ValueInfo &x = val(s.inputs[0]), &c = val(s.inputs[1]);
  int64_t seqAxis = s.getInt("seq_axis", 1), R = s.getInt("rotary_dim", 0);
  bool interleaved = s.getInt("interleaved", 0) != 0;
  int64_t A1 = x.shape[1], A2 = x.shape[2], D = x.shape[3], half = R / 2;
  int64_t S = x.shape[seqAxis], Bc = c.shape[0];
  int64_t n = ::mpc::rt::numElements(x.shape);
  auto &L = i64Lit;
  cu << header(s, name, 256) << " {\n  i64 i = global_index();\n  if (i >= "
     << L(n) << ") return;\n  const i64 d = i % " << L(D) << ", r = i / "
     << L(D) << ", a2 = r % " << L(A2) << ", a1 = (r / " << L(A2) << ") % "
     << L(A1) << ", b = r / " << L(A1 * A2) << ", s = "
     << (seqAxis == 1 ? "a1" : "a2") << ";\n  if (d >= " << L(R)
     << ") { st(out0, i, ld(in0, i)); return; }\n";
  if (interleaved)
    cu << "  const bool first = d % 2 == 0;\n  const i64 p = d / 2, partner = "
          "first ? i + 1 : i - 1;\n";
  else
    cu << "  const bool first = d < " << L(half) << ";\n  const i64 p = first "
       << "? d : d - " << L(half) << ", partner = first ? i + " << L(half)
       << " : i - " << L(half) << ";\n";
  cu << "  const i64 k = ((b % " << L(Bc) << ") * " << L(S) << " + s) * "
     << L(half) << " + p;\n  const float co = ld(in1, k), si = ld(in2, k);\n"
     << "  st(out0, i, first ? co * ld(in0, i) - si * ld(in0, partner)\n"
     << "                    : si * ld(in0, partner) + co * ld(in0, i));\n}\n\n";
  launch1d(s, name, n);
  return true;
}

void registerAttentionEmitters(EmitterTable &t) {
  t.emit(OpId::Attention, &Emitter::attention);
  t.emit(OpId::AttentionGrad, &Emitter::attentionGrad);
  t.emit(OpId::Rotary, &Emitter::rotary);
}

} // namespace mlir::mpc::cuda
