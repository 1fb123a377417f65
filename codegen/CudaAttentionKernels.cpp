//===- CudaAttentionKernels.cpp - mpc.attention and its gradient ----------===//
//
// The forward: blocks of query rows streaming K/V tiles through shared
// memory with an online softmax; the backward: a thread per query row (dq)
// or key row (dk, dv). Scores are recomputed, never stored: memory grows
// with the sequence, not its square. The sums run in FP32 in the CPU
// backend's order (runtime/kernels/Attention.cpp), so host emulation
// matches it bit for bit. SIMT kernels: the tensor-core FlashAttention-2
// kernels (issue 14) are to replace them.
//
//===----------------------------------------------------------------------===//

#include "codegen/CudaKernels.h"

#include <algorithm>
#include <sstream>

namespace mlir::mpc::cuda {
namespace {

struct Dims {
  int64_t batch = 1, sq = 0, skv = 0, d = 0, dv = 0;
  Shape lead;
};

Dims dimsOf(const Shape &q, const Shape &k, const Shape &v) {
  Dims g;
  size_t r = q.size();
  g.lead.assign(q.begin(), q.end() - 2);
  for (int64_t x : g.lead)
    g.batch *= x;
  g.sq = q[r - 2];
  g.d = q[r - 1];
  g.skv = k[r - 2];
  g.dv = v[r - 1];
  return g;
}

/// Device function `fn(q, krow, bias, b, i, j)`: s_ij, the bias offset
/// arithmetic with its strides folded in as literals.
std::string scoreFunction(const std::string &fn, const Dims &g,
                          const Shape *bias, float scale, bool causal,
                          const std::string &qType,
                          const std::string &biasType) {
  std::ostringstream os;
  size_t r = g.lead.size() + 2;
  Shape scores = g.lead;
  scores.push_back(g.sq);
  scores.push_back(g.skv);
  std::vector<int64_t> bs(r, 0);
  if (bias) {
    int64_t stride = 1;
    for (int64_t i = (int64_t)bias->size() - 1; i >= 0; --i) {
      size_t a = r - bias->size() + i;
      bs[a] = (*bias)[i] == 1 && scores[a] != 1 ? 0 : stride;
      stride *= (*bias)[i];
    }
  }
  // `krow` is key j's row, in global memory or a shared-memory tile.
  os << "template <typename K>\n__device__ __forceinline__ float " << fn
     << "(const " << qType << " *__restrict__ q, const K *krow, const "
     << biasType << " *__restrict__ bias, i64 b, i64 i, i64 j) {\n";
  if (causal)
    os << "  if (j > i + " << g.skv - g.sq
       << "LL) return -INFINITY;\n";
  os << "  float dot = 0.0f;\n  for (i64 t = 0; t < " << g.d
     << "LL; ++t) dot += ld(q, (b * " << g.sq << "LL + i) * " << g.d
     << "LL + t) * ld(krow, t);\n  float s = " << flt(scale)
     << " * dot;\n";
  if (bias) {
    os << "  i64 off = i * " << bs[r - 2] << "LL + j * " << bs[r - 1]
       << "LL, rest = b;\n";
    for (int64_t a = (int64_t)g.lead.size() - 1; a >= 0; --a)
      os << "  off += (rest % " << g.lead[a] << "LL) * " << bs[a]
         << "LL; rest /= " << g.lead[a] << "LL;\n";
    os << "  s += ld(bias, off);\n";
  }
  os << "  return s;\n}\n\n";
  return os.str();
}

} // namespace

/// y and lse: a block of kRows query rows (a thread each, its q row in
/// registers) streams K and V through shared memory a tile of keys at a
/// time, with the online softmax of the CPU backend (same steps, same
/// order). Rows past the end still load tiles and meet the barriers.
bool Emitter::attention(Step &s, const std::string &name) {
  Dims g = dimsOf(val(s.inputs[0]).shape, val(s.inputs[1]).shape,
                  val(s.inputs[2]).shape);
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
  cu << scoreFunction(name + "_score", g, bias, (float)s.getFloat("scale", 1.0),
                      s.getInt("causal", 0) != 0, qType, biasType)
     << header(s, name, kRows) << " {\n"
     << "  __shared__ float ks[" << tile * g.d << "], vs[" << tile * g.dv
     << "];\n  const i64 b = blockIdx.y, i = (i64)blockIdx.x * " << kRows
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
     << "      for (i64 t = 0; t < " << g.dv << "LL; ++t) acc[t] += p * vs[jj * "
     << g.dv << "LL + t];\n    }\n    __syncthreads();\n  }\n"
     << "  if (!live) return;\n"
     << "  const bool none = sum == 0.0f;\n"
     << "  for (i64 t = 0; t < " << g.dv << "LL; ++t) st(out0, row * " << g.dv
     << "LL + t, " << (zeroMasked ? "none ? 0.0f : " : "") << "acc[t] / sum);\n"
     << "  st(out1, row, none ? " << (zeroMasked ? "-INFINITY" : "nanf(\"\")")
     << " : mx + logf(sum));\n}\n\n";
  barrier = true;
  launch(s, name, {(g.sq + kRows - 1) / kRows, g.batch, 1}, {kRows, 1, 1});
  return true;
}

/// dq, dk and dv. Thread t computes query row t's dq and key row t's dk
/// and dv (each where it exists), recomputing p = exp(s - lse).
bool Emitter::attentionGrad(Step &s, const std::string &name) {
  // Operands: dy, q, k, v, y, lse[, bias].
  Dims g = dimsOf(val(s.inputs[1]).shape, val(s.inputs[2]).shape,
                  val(s.inputs[3]).shape);
  bool hasBias = s.inputs.size() > 6 && s.inputs[6] >= 0;
  const Shape *bias = hasBias ? &val(s.inputs[6]).shape : nullptr;
  std::string qType = ctype(val(s.inputs[1]).dtype);
  std::string biasType = hasBias ? ctype(val(s.inputs[6]).dtype) : "float";
  std::string biasArg = hasBias ? "in6" : "(const float *)nullptr";
  std::string scale = flt((float)s.getFloat("scale", 1.0));
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
         << g.dv << "LL + t); float ds = p * (dp - rowD);";
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
     << "LL; ++t) dv[t] += p * ld(in0, row * " << g.dv << "LL + t);\n    }\n"
     << "    for (i64 t = 0; t < " << g.d << "LL; ++t) st(out1, key * " << g.d
     << "LL + t, dk[t]);\n"
     << "    for (i64 t = 0; t < " << g.dv << "LL; ++t) st(out2, key * " << g.dv
     << "LL + t, dv[t]);\n  }\n}\n\n";
  launch1d(s, name, n);
  return true;
}

void registerAttentionEmitters(EmitterTable &t) {
  t.emit(OpId::Attention, &Emitter::attention);
  t.emit(OpId::AttentionGrad, &Emitter::attentionGrad);
}

} // namespace mlir::mpc::cuda
