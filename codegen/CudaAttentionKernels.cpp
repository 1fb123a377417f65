//===- CudaAttentionKernels.cpp - mpc.attention and its gradient ----------===//
//
// A thread per query row (forward, dq) or key row (dk, dv), the scores
// recomputed on the fly and never stored: memory grows with the sequence,
// not its square. The sums run in FP32 in the CPU backend's order
// (runtime/kernels/Attention.cpp), so host emulation matches it bit for
// bit. These are the correct, memory-linear first kernels; the tensor-core
// FlashAttention-2 kernels (issue 14) replace them.
//
//===----------------------------------------------------------------------===//

#include "codegen/CudaKernels.h"

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

/// Device function `fn(q, k, bias, b, i, j)`: s_ij, the bias offset
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
  os << "__device__ __forceinline__ float " << fn << "(const " << qType
     << " *__restrict__ q, const " << qType << " *__restrict__ k, const "
     << biasType << " *__restrict__ bias, i64 b, i64 i, i64 j) {\n";
  if (causal)
    os << "  if (j > i + " << g.skv - g.sq
       << "LL) return -INFINITY;\n";
  os << "  float dot = 0.0f;\n  for (i64 t = 0; t < " << g.d
     << "LL; ++t) dot += ld(q, (b * " << g.sq << "LL + i) * " << g.d
     << "LL + t) * ld(k, (b * " << g.skv << "LL + j) * " << g.d
     << "LL + t);\n  float s = " << flt(scale) << " * dot;\n";
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

/// y and lse, a thread per query row: the row maximum, the sum of
/// exponentials, then y = sum_j p_j v_j, recomputing the scores each pass.
bool Emitter::attention(Step &s, const std::string &name) {
  Dims g = dimsOf(val(s.inputs[0]).shape, val(s.inputs[1]).shape,
                  val(s.inputs[2]).shape);
  bool hasBias = s.inputs.size() > 3 && s.inputs[3] >= 0;
  const Shape *bias = hasBias ? &val(s.inputs[3]).shape : nullptr;
  std::string qType = ctype(val(s.inputs[0]).dtype);
  std::string biasType = hasBias ? ctype(val(s.inputs[3]).dtype) : "float";
  std::string biasArg = hasBias ? "in3" : "(const float *)nullptr";
  cu << scoreFunction(name + "_score", g, bias, (float)s.getFloat("scale", 1.0),
                      s.getInt("causal", 0) != 0, qType, biasType)
     << header(s, name, 256) << " {\n  i64 row = global_index();\n  if (row >= "
     << g.batch * g.sq << "LL) return;\n  const i64 b = row / " << g.sq
     << "LL, i = row % " << g.sq << "LL;\n"
     << "  float mx = -INFINITY, sum = 0.0f;\n"
     << "  for (i64 j = 0; j < " << g.skv
     << "LL; ++j) mx = fmaxf(mx, " << name << "_score(in0, in1, " << biasArg << ", b, i, j));\n"
     << "  for (i64 j = 0; j < " << g.skv
     << "LL; ++j) sum += expf(" << name << "_score(in0, in1, " << biasArg << ", b, i, j) - mx);\n"
     << "  float acc[" << g.dv << "];\n  for (i64 t = 0; t < " << g.dv
     << "LL; ++t) acc[t] = 0.0f;\n"
     << "  for (i64 j = 0; j < " << g.skv << "LL; ++j) {\n"
     << "    float p = expf(" << name << "_score(in0, in1, " << biasArg << ", b, i, j) - mx) / sum;\n"
     << "    for (i64 t = 0; t < " << g.dv << "LL; ++t) acc[t] += p * ld(in2, (b * "
     << g.skv << "LL + j) * " << g.dv << "LL + t);\n  }\n"
     << "  for (i64 t = 0; t < " << g.dv << "LL; ++t) st(out0, row * " << g.dv
     << "LL + t, acc[t]);\n  st(out1, row, mx + logf(sum));\n";
  if (s.getInt("zero_masked_rows", 0)) // no attendable key: y = 0, lse = -inf
    cu << "  if (mx == -INFINITY) { for (i64 t = 0; t < " << g.dv
       << "LL; ++t) st(out0, row * " << g.dv
       << "LL + t, 0.0f); st(out1, row, mx); }\n";
  cu << "}\n\n";
  launch1d(s, name, g.batch * g.sq);
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
         << name << "_score(in1, in2, " << biasArg << ", b, i, j) - lse);"
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
