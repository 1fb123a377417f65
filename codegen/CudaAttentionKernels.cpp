//===- CudaAttentionKernels.cpp - mpc.attention and its gradient ----------===//
//
// Which kernel runs an attention step: for fp16/bf16, the mma.sync kernels
// (CudaFlashAttention.cpp) for head sizes that are multiples of 8 up to
// 128 (computed on them rounded up to 16: mmaDims), the WMMA forward here
// for multiples of 16 beyond; otherwise the SIMT kernels here:
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

/// Device function `fn(q, krow, bias, b, i, j)`: s_ij, the bias offset
/// arithmetic with its strides folded in as literals.
std::string scoreFunction(const std::string &fn, const Dims &g,
                          const Shape *bias, float scale, bool causal,
                          const std::string &qType,
                          const std::string &biasType) {
  std::ostringstream os;
  // `krow` is key j's row, in global memory or a shared-memory tile.
  os << "template <typename K>\n__device__ __forceinline__ float " << fn
     << "(const " << qType << " *__restrict__ q, const K *krow, const "
     << biasType << " *__restrict__ bias, i64 b, i64 i, i64 j) {\n";
  if (causal)
    os << "  if (j > i + " << g.off
       << "LL) return -INFINITY;\n";
  os << "  float dot = 0.0f;\n  for (i64 t = 0; t < " << g.d
     << "LL; ++t) dot += ld(q, (b * " << g.sq << "LL + i) * " << g.d
     << "LL + t) * ld(krow, t);\n  float s = " << flt(scale)
     << " * dot;\n";
  if (bias)
    os << "  " << biasOffset(g, *bias) << "\n  s += ld(bias, off);\n";
  os << "  return s;\n}\n\n";
  return os.str();
}

/// Warps per block of the tensor-core forward (16 query rows each) and
/// keys per tile, so that its shared memory stays within the 48 KiB a
/// kernel gets without opting in; 0 when no count fits.
constexpr int64_t kTcKeys = 32;
int64_t tensorCoreWarps(const Dims &g) {
  for (int64_t w : {4, 2, 1}) {
    int64_t bytes = w * 16 * g.d * 2 + kTcKeys * (g.d + g.dv) * 2 +
                    w * 16 * kTcKeys * (4 + 2) + w * 16 * g.dv * 4 + w * 16 * 8;
    if (bytes <= 48 * 1024)
      return w;
  }
  return 0;
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
    // Two blocks an SM on every target GPU (mmaForwardTiles).
    MmaForwardTiles tiles = mmaForwardTiles(
        mmaDims(g), ::mpc::rt::cuda::sharedBytesPerBlock(plan.cudaArch, 2),
        plan.cudaAttentionRows);
    if (tiles.keys) {
      attentionMma(s, name, tiles);
      return true;
    }
  }
  if (readsViews(s)) // fuseAttentionLayouts asked for mma
    return fail(s, "an operand read in place needs the mma.sync kernel");
  if ((t == DType::F16 || t == DType::BF16) &&
      val(s.inputs[1]).dtype == t && val(s.inputs[2]).dtype == t &&
      g.d % 16 == 0 && g.dv % 16 == 0) {
    if (int64_t warps = tensorCoreWarps(g)) {
      attentionTensorCores(s, name, warps);
      return true;
    }
  }
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
  AttentionDropout drop(*this, s, g, 4);
  // A dropped probability adds to the sum only (the CPU backend's order).
  std::string dropped =
      drop.on ? "      if (!" +
                    drop.keep(AttentionDropout::index(g, "b", "i", "j0 + jj")) +
                    ") continue;\n"
              : std::string();
  cu << scoreFunction(name + "_score", g, bias, (float)s.getFloat("scale", 1.0),
                      s.getInt("causal", 0) != 0, qType, biasType)
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
     << "LL) ks[e] = ld(in1, (b * " << g.skv << "LL + j0) * " << g.d
     << "LL + e);\n"
     << "    for (i64 e = threadIdx.x; e < n * " << g.dv << "LL; e += " << kRows
     << "LL) vs[e] = ld(in2, (b * " << g.skv << "LL + j0) * " << g.dv
     << "LL + e);\n"
     << "    __syncthreads();\n"
     << "    for (i64 jj = 0; live && jj < n; ++jj) {\n"
     << "      const float s = " << name << "_score(in0, ks + jj * " << g.d
     << "LL, " << biasArg << ", b, i, j0 + jj);\n"
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

/// y and lse on tensor cores (fp16/bf16, head sizes multiple of 16): a
/// block of `warps` warps, 16 query rows each, its Q tile staged once in
/// shared memory and kept in WMMA fragments; K and V stream through shared
/// memory kTcKeys keys at a time. Per tile each warp computes S = Q K^T
/// (FP32 accumulators), lanes 0-15 take a row each for the online softmax
/// (the running max and sum in FP32; P rounded to the operand type for the
/// second product, as FlashAttention does), and O += P V runs on the
/// tensor cores with O kept in FP32 in shared memory, where each tile's
/// rescale by exp(m_old - m_new) happens. Causal blocks stop at the last
/// key any of their rows sees.
void Emitter::attentionTensorCores(Step &s, const std::string &name,
                                   int64_t warps) {
  Dims g = stepDims(s, val(s.inputs[0]).shape, val(s.inputs[1]).shape,
                    val(s.inputs[2]).shape);
  bool hasBias = s.inputs.size() > 3 && s.inputs[3] >= 0;
  bool causal = s.getInt("causal", 0) != 0;
  bool zeroMasked = s.getInt("zero_masked_rows", 0) != 0;
  AttentionDropout drop(*this, s, g, 4);
  std::string T = ctype(val(s.inputs[0]).dtype);
  const int64_t rows = warps * 16, TK = kTcKeys, D = g.d, DV = g.dv;
  // P as the second product reads it: dropped probabilities 0 (the sum
  // counts them all).
  std::string pv =
      drop.on ? "(" + drop.keep(AttentionDropout::index(g, "b", "i", "j0 + jj")) +
                    " ? p : 0.0f)"
              : std::string("p");
  auto &L = i64Lit;
  std::ostringstream os;
  os << header(s, name, warps * 32) << " {\n"
     << "  __shared__ __align__(32) " << T << " qs[" << rows * D << "], ks["
     << TK * D << "], vs[" << TK * DV << "], ps[" << rows * TK << "];\n"
     << "  __shared__ __align__(32) float ss[" << rows * TK << "], os["
     << rows * DV << "], mrow[" << rows << "], lrow[" << rows << "];\n"
     << "  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;\n"
     << "  const i64 b = blockIdx.x, i0 = (i64)blockIdx.y * " << L(rows)
     << ";\n"
     << "  for (int e = threadIdx.x; e < " << rows * D << "; e += "
     << warps * 32 << ") { const i64 i = i0 + e / " << D << "; qs[e] = i < "
     << L(g.sq) << " ? in0[(b * " << L(g.sq) << " + i) * " << L(D)
     << " + e % " << D << "] : " << T << "(0.0f); }\n"
     << "  for (int e = threadIdx.x; e < " << rows * DV << "; e += "
     << warps * 32 << ") os[e] = 0.0f;\n"
     << "  for (int r = threadIdx.x; r < " << rows << "; r += " << warps * 32
     << ") { mrow[r] = -INFINITY; lrow[r] = 0.0f; }\n"
     << "  __syncthreads();\n"
     << "  wmma::fragment<wmma::matrix_a, 16, 16, 16, " << T
     << ", wmma::row_major> qf[" << D / 16 << "];\n"
     << "  for (int t = 0; t < " << D / 16
     << "; ++t) wmma::load_matrix_sync(qf[t], qs + warp * " << 16 * D
     << " + t * 16, " << D << ");\n";
  // Keys past jEnd are masked for every row of the block.
  std::string jEnd = causal ? "(i0 + " + L(rows + g.off) + " < " +
                                  L(g.skv) + " ? i0 + " +
                                  L(rows + g.off) + " : " + L(g.skv) + ")"
                            : L(g.skv);
  os << "  const i64 jEnd = " << jEnd << ";\n"
     << "  for (i64 j0 = 0; j0 < jEnd; j0 += " << L(TK) << ") {\n"
     << "    __syncthreads();\n"
     << "    for (int e = threadIdx.x; e < " << TK * D << "; e += "
     << warps * 32 << ") ks[e] = j0 + e / " << D << " < " << L(g.skv)
     << " ? in1[(b * " << L(g.skv) << " + j0) * " << L(D) << " + e] : " << T
     << "(0.0f);\n"
     << "    for (int e = threadIdx.x; e < " << TK * DV << "; e += "
     << warps * 32 << ") vs[e] = j0 + e / " << DV << " < " << L(g.skv)
     << " ? in2[(b * " << L(g.skv) << " + j0) * " << L(DV) << " + e] : " << T
     << "(0.0f);\n"
     << "    __syncthreads();\n"
     << "    for (int n = 0; n < " << TK / 16 << "; ++n) {\n"
     << "      wmma::fragment<wmma::accumulator, 16, 16, 16, float> sf;\n"
     << "      wmma::fill_fragment(sf, 0.0f);\n"
     << "      for (int t = 0; t < " << D / 16 << "; ++t) {\n"
     << "        wmma::fragment<wmma::matrix_b, 16, 16, 16, " << T
     << ", wmma::col_major> kf;\n"
     << "        wmma::load_matrix_sync(kf, ks + n * " << 16 * D
     << " + t * 16, " << D << ");\n"
     << "        wmma::mma_sync(sf, qf[t], kf, sf);\n      }\n"
     << "      wmma::store_matrix_sync(ss + warp * " << 16 * TK
     << " + n * 16, sf, " << TK << ", wmma::mem_row_major);\n    }\n"
     << "    __syncwarp();\n"
     << "    if (lane < 16) {\n"
     << "      const int r = warp * 16 + lane;\n"
     << "      const i64 i = i0 + r;\n"
     << "      float *srow = ss + r * " << TK << ";\n"
     << "      const float mOld = mrow[r];\n      float mNew = mOld;\n"
     << "      for (int jj = 0; jj < " << TK << "; ++jj) {\n"
     << "        const i64 j = j0 + jj;\n"
     << "        float sc = -INFINITY;\n"
     << "        if (i < " << L(g.sq) << " && j < " << L(g.skv)
     << (causal ? " && j <= i + " + L(g.off) : std::string()) << ") {\n"
     << "          sc = " << flt((float)s.getFloat("scale", 1.0))
     << " * srow[jj];\n";
  if (hasBias)
    os << "          " << biasOffset(g, val(s.inputs[3]).shape)
       << "\n          sc += ld(in3, off);\n";
  os << "        }\n"
     << "        srow[jj] = sc;\n        mNew = fmaxf(mNew, sc);\n      }\n"
     << "      const float c = mNew == -INFINITY ? 1.0f : expf(mOld - mNew);\n"
     << "      float sum = 0.0f;\n"
     << "      for (int jj = 0; jj < " << TK << "; ++jj) {\n"
     << "        const float p = srow[jj] == -INFINITY ? 0.0f : expf(srow[jj] - mNew);\n"
     << "        ps[r * " << TK << " + jj] = " << T << "(" << pv << ");\n"
     << "        sum += p;\n      }\n"
     << "      lrow[r] = lrow[r] * c + sum;\n      mrow[r] = mNew;\n"
     << "      for (int t = 0; t < " << DV << "; ++t) os[r * " << DV
     << " + t] *= c;\n    }\n"
     << "    __syncwarp();\n"
     << "    for (int n = 0; n < " << DV / 16 << "; ++n) {\n"
     << "      wmma::fragment<wmma::accumulator, 16, 16, 16, float> of;\n"
     << "      wmma::load_matrix_sync(of, os + warp * " << 16 * DV
     << " + n * 16, " << DV << ", wmma::mem_row_major);\n"
     << "      for (int t = 0; t < " << TK / 16 << "; ++t) {\n"
     << "        wmma::fragment<wmma::matrix_a, 16, 16, 16, " << T
     << ", wmma::row_major> pf;\n"
     << "        wmma::fragment<wmma::matrix_b, 16, 16, 16, " << T
     << ", wmma::row_major> vf;\n"
     << "        wmma::load_matrix_sync(pf, ps + warp * " << 16 * TK
     << " + t * 16, " << TK << ");\n"
     << "        wmma::load_matrix_sync(vf, vs + t * " << 16 * DV
     << " + n * 16, " << DV << ");\n"
     << "        wmma::mma_sync(of, pf, vf, of);\n      }\n"
     << "      wmma::store_matrix_sync(os + warp * " << 16 * DV
     << " + n * 16, of, " << DV << ", wmma::mem_row_major);\n    }\n"
     << "    __syncwarp();\n  }\n"
     << "  if (lane < 16) {\n"
     << "    const int r = warp * 16 + lane;\n    const i64 i = i0 + r;\n"
     << "    if (i < " << L(g.sq) << ") {\n"
     << "      const float l = lrow[r];\n      const bool none = l == 0.0f;\n"
     << "      const i64 row = b * " << L(g.sq) << " + i;\n"
     << "      for (int t = 0; t < " << DV << "; ++t) st(out0, row * " << L(DV)
     << " + t, "
     << attentionY(zeroMasked, "os[r * " + std::to_string(DV) + " + t]", "l",
                   drop)
     << ");\n"
     << "      st(out1, row, " << attentionLse(zeroMasked, "mrow[r]", "l")
     << ");\n"
     << "    }\n  }\n}\n\n";
  cu << os.str();
  barrier = true;
  launch(s, name, {g.batch, (g.sq + rows - 1) / rows, 1}, {warps * 32, 1, 1});
  countFlops(2.0 * g.batch * g.sq * g.skv * (g.d + g.dv) * (causal ? 0.5 : 1.0),
             true);
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
  if ((t == DType::F16 || t == DType::BF16) && sameType && mmaHeadSizes(g)) {
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
  dsCode << "float lse = ld(in5, row); float p = lse == -INFINITY ? 0.0f : expf("
         << name << "_score(in1, in2 + key * " << g.d << "LL, " << biasArg
         << ", b, i, j) - lse);"
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
  int64_t n = std::max(g.batch * g.sq, g.batch * g.skv);
  cu << scoreFunction(name + "_score", g, bias, (float)s.getFloat("scale", 1.0),
                      s.getInt("causal", 0) != 0, qType, biasType)
     << header(s, name, 256) << " {\n  const i64 t0 = global_index();\n"
     << "  if (t0 < " << g.batch * g.sq << "LL) {\n"
     << "    const i64 row = t0, b = row / " << g.sq << "LL, i = row % " << g.sq
     << "LL;\n    " << rowTerm("row") << "\n"
     << "    float dq[" << g.d << "];\n    for (i64 t = 0; t < " << g.d
     << "LL; ++t) dq[t] = 0.0f;\n"
     << "    for (i64 j = 0; j < " << g.skv << "LL; ++j) {\n      const i64 key = b * "
     << g.skv << "LL + j;\n      " << dsCode.str() << "\n"
     << "      for (i64 t = 0; t < " << g.d << "LL; ++t) dq[t] += " << scale
     << " * ds * ld(in2, key * " << g.d << "LL + t);\n    }\n"
     << "    for (i64 t = 0; t < " << g.d << "LL; ++t) st(out0, row * " << g.d
     << "LL + t, dq[t]);\n  }\n"
     << "  if (t0 < " << g.batch * g.skv << "LL) {\n"
     << "    const i64 key = t0, b = key / " << g.skv << "LL, j = key % "
     << g.skv << "LL;\n"
     << "    float dk[" << g.d << "], dv[" << g.dv << "];\n"
     << "    for (i64 t = 0; t < " << g.d << "LL; ++t) dk[t] = 0.0f;\n"
     << "    for (i64 t = 0; t < " << g.dv << "LL; ++t) dv[t] = 0.0f;\n"
     << "    for (i64 i = 0; i < " << g.sq << "LL; ++i) {\n      const i64 row = b * "
     << g.sq << "LL + i;\n      " << rowTerm("row") << "\n      " << dsCode.str()
     << "\n      for (i64 t = 0; t < " << g.d << "LL; ++t) dk[t] += " << scale
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
