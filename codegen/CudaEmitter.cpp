//===- CudaEmitter.cpp - CUDA C++ for an execution plan -------------------===//

#include "codegen/CudaEmitter.h"
#include "codegen/CudaPrelude.h"
#include "runtime/kernels/Common.h"
#include "runtime/kernels/Window.h"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <map>
#include <numeric>
#include <set>
#include <sstream>

using namespace ::mpc::rt;

namespace mlir::mpc {
namespace {

const char *ctype(DType t) {
  switch (t) {
  case DType::F32:
    return "float";
  case DType::F16:
    return "__half";
  case DType::BF16:
    return "__nv_bfloat16";
  case DType::I64:
    return "i64";
  case DType::I32:
    return "int";
  case DType::I1:
    return "unsigned char";
  }
  return "void";
}

Shape stridesOf(const Shape &s) {
  Shape st(s.size(), 1);
  for (int64_t i = (int64_t)s.size() - 2; i >= 0; --i)
    st[i] = st[i + 1] * s[i + 1];
  return st;
}

/// Strides of `in` read at the indices of `out` (numpy broadcasting: 0
/// along broadcast dims, right-aligned).
Shape broadcastStrides(const Shape &in, const Shape &out) {
  Shape st = stridesOf(in), r(out.size(), 0);
  size_t lead = out.size() - in.size();
  for (size_t i = 0; i < in.size(); ++i)
    r[lead + i] = in[i] == 1 && out[lead + i] != 1 ? 0 : st[i];
  return r;
}

/// Literals that keep every bit: a float (`f` suffix) or a double.
std::string flt(double v) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.9gf", v);
  std::string s = buf;
  if (s.find_first_of(".eEn") == std::string::npos) // 2f is not a literal
    s.insert(s.size() - 1, ".0");
  return s;
}
std::string dbl(double v) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  std::string s = buf;
  if (s.find_first_of(".eEn") == std::string::npos)
    s += ".0";
  return s;
}

std::string list(const Shape &v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i)
    s += (i ? ", " : "") + std::to_string(v[i]) + "LL";
  return s.empty() ? "0" : s;
}

/// Code computing offsets `o<k>` of each input for flat output index `i`
/// given per-input strides over the output's dims.
std::string offsetsCode(const Shape &out, const std::vector<Shape> &strides) {
  std::ostringstream os;
  for (size_t k = 0; k < strides.size(); ++k)
    os << "  i64 o" << k << " = 0;\n";
  os << "  i64 r = i;\n";
  for (int64_t d = (int64_t)out.size() - 1; d >= 0; --d) {
    os << "  { i64 c = r % " << out[d] << "LL; r /= " << out[d] << "LL;";
    for (size_t k = 0; k < strides.size(); ++k)
      if (strides[k][d])
        os << " o" << k << " += c * " << strides[k][d] << "LL;";
    os << " }\n";
  }
  return os.str();
}

struct Emitter {
  Plan &plan;
  CudaModule &mod;
  std::string &error;
  std::ostringstream cu;
  std::ostringstream emu; // host-emulation launchers (MPC_HOST_EMULATION)
  bool barrier = false;   // the next launched kernel uses __syncthreads
  std::set<size_t> fusedRelu; // GEMM steps whose epilogue applies the Relu
                              // that alone reads their result

  const ValueInfo &val(int id) { return plan.values[id]; }
  const Tensor *constant(int id) {
    auto it = plan.constants.find(id);
    return it == plan.constants.end() ? nullptr : &it->second;
  }

  /// Kernel header: extern "C" with typed pointer params for inputs then
  /// outputs (absent optional inputs are null pointers).
  std::string header(const Step &s, const std::string &name, int threads) {
    std::ostringstream os;
    os << "extern \"C\" __global__ void __launch_bounds__(" << threads << ") "
       << name << "(";
    int n = 0;
    for (size_t k = 0; k < s.inputs.size(); ++k) {
      DType t = s.inputs[k] >= 0 ? val(s.inputs[k]).dtype : DType::F32;
      os << (n++ ? ", " : "") << "const " << ctype(t) << " *__restrict__ in"
         << k;
    }
    for (size_t k = 0; k < s.outputs.size(); ++k)
      os << (n++ ? ", " : "") << ctype(val(s.outputs[k]).dtype)
         << " *__restrict__ out" << k;
    os << ")";
    return os.str();
  }

  void launch(Step &s, const std::string &name, Shape grid, Shape block) {
    s.attrs["cuda.kernel"] = name;
    s.attrs["cuda.grid"] = grid;
    s.attrs["cuda.block"] = block;
    mod.kernels.push_back(name);
    // The host launcher the emulation test runs (same arguments).
    emu << "extern \"C\" void emu_" << name << "(void **p) {\n  mpc_emulate({"
        << grid[0] << ", " << grid[1] << ", " << grid[2] << "}, {" << block[0]
        << ", " << block[1] << ", " << block[2] << "}, "
        << (barrier ? "true" : "false") << ", [&] { " << name << "(";
    int n = 0;
    for (int v : s.inputs)
      emu << (n++ ? ", " : "") << "(const "
          << ctype(v >= 0 ? val(v).dtype : DType::F32) << " *)p[" << n - 1
          << "]";
    for (int v : s.outputs)
      emu << (n++ ? ", " : "") << "(" << ctype(val(v).dtype) << " *)p["
          << n - 1 << "]";
    emu << "); });\n}\n";
    barrier = false;
  }

  void launch1d(Step &s, const std::string &name, int64_t n) {
    launch(s, name, {std::max<int64_t>((n + 255) / 256, 1), 1, 1}, {256, 1, 1});
  }

  bool fail(const Step &s, const std::string &why) {
    error = "node '" + s.name + "' (" + s.op + "): " + why;
    return false;
  }

  //===--------------------------------------------------------------------===//
  // Elementwise
  //===--------------------------------------------------------------------===//

  std::optional<std::string> expr(const std::string &op, size_t arity) {
    static const std::map<std::string, std::string> unary = {
        {"relu", "fmaxf(a, 0.0f) + 0.0f * a"}, // NaN propagates like max(x, 0)
        {"neg", "-a"}, {"exp", "expf(a)"}, {"log", "logf(a)"},
        {"tanh", "tanhf(a)"}, {"sigmoid", "1.0f / (1.0f + expf(-a))"},
        {"sqrt", "sqrtf(a)"}, {"erf", "erff(a)"}, {"abs", "fabsf(a)"},
        {"reciprocal", "1.0f / a"}, {"sin", "sinf(a)"}, {"cos", "cosf(a)"},
        {"floor", "floorf(a)"}, {"ceil", "ceilf(a)"},
        {"gelu", "0.5f * a * (1.0f + erff(a * 0.70710678118654752f))"},
        {"softplus", "log1pf(expf(a))"}, {"identity", "a"}, {"cast", "a"},
        {"expand", "a"}};
    static const std::map<std::string, std::string> binary = {
        {"add", "a + b"}, {"sub", "a - b"}, {"mul", "a * b"}, {"div", "a / b"},
        {"pow", "powf(a, b)"}, {"max", "fmaxf(a, b)"}, {"min", "fminf(a, b)"},
        {"greater", "(float)(a > b)"}, {"less", "(float)(a < b)"},
        {"equal", "(float)(a == b)"}, {"greater_or_equal", "(float)(a >= b)"},
        {"less_or_equal", "(float)(a <= b)"}};
    auto &table = arity == 1 ? unary : binary;
    auto it = table.find(op);
    if (it != table.end())
      return it->second;
    if (op == "where" && arity == 3)
      return std::string("a != 0.0f ? b : c");
    return std::nullopt;
  }

  bool elementwise(Step &s, const std::string &name, const std::string &e) {
    const ValueInfo &y = val(s.outputs[0]);
    if (!isFloat(y.dtype) && y.dtype != DType::I1 &&
        !(s.op == "cast" || s.op == "expand" || s.op == "identity"))
      return fail(s, "integer arithmetic has no CUDA kernel yet");
    std::vector<Shape> strides;
    for (int in : s.inputs)
      strides.push_back(broadcastStrides(val(in).shape, y.shape));
    int64_t n = numElements(y.shape);
    cu << header(s, name, 256) << " {\n  i64 i = global_index();\n  if (i >= "
       << n << "LL) return;\n"
       << offsetsCode(y.shape, strides);
    const char *vars = "abc";
    for (size_t k = 0; k < s.inputs.size(); ++k)
      cu << "  float " << vars[k] << " = ld(in" << k << ", o" << k << ");\n";
    cu << "  st(out0, i, " << e << ");\n}\n\n";
    launch1d(s, name, n);
    return true;
  }

  //===--------------------------------------------------------------------===//
  // GEMMs: gemm, matmul, conv (implicit GEMM)
  //===--------------------------------------------------------------------===//

  /// Loader and epilogue structs named after the kernel, then the kernel
  /// calling tc_gemm (low precision) or simt_gemm (fp32).
  void gemmKernel(Step &s, const std::string &name, DType t, int64_t M,
                  int64_t N, int64_t K, int64_t batch,
                  const std::string &prologue, const std::string &loadA,
                  const std::string &loadB, const std::string &epilogue,
                  const std::string &members) {
    bool tc = t == DType::F16 || t == DType::BF16;
    std::string T = ctype(t), R = tc ? T : "float";
    cu << "struct " << name << "_ctx {\n" << members << "  i64 z;\n"
       << "  __device__ " << R << " a(int m, int k) const { " << loadA
       << " }\n  __device__ " << R << " b(int k, int n) const { " << loadB
       << " }\n  __device__ void store(int m, int n, float acc) const { "
       << epilogue << " }\n};\n"
       << "struct " << name << "_la { const " << name
       << "_ctx *c; __device__ " << R
       << " operator()(int m, int k) const { return c->a(m, k); } };\n"
       << "struct " << name << "_lb { const " << name
       << "_ctx *c; __device__ " << R
       << " operator()(int k, int n) const { return c->b(k, n); } };\n"
       << "struct " << name << "_ep { const " << name
       << "_ctx *c; __device__ void operator()(int m, int n, float acc) const "
          "{ c->store(m, n, acc); } };\n";
    int threads = tc ? 128 : 256;
    cu << header(s, name, threads) << " {\n  " << name << "_ctx c;\n"
       << prologue << "  c.z = blockIdx.z;\n  "
       << (tc ? "tc_gemm<" + T + ">(" : std::string("simt_gemm(")) << M
       << ", " << N << ", " << K << ", " << name << "_la{&c}, " << name
       << "_lb{&c}, " << name << "_ep{&c});\n}\n\n";
    int64_t tile = tc ? 64 : 16;
    launch(s, name, {(N + tile - 1) / tile, (M + tile - 1) / tile, batch},
           {threads, 1, 1});
    double flops = 2.0 * M * N * K * batch;
    mod.flops += flops;
    if (tc) {
      mod.tensorCoreFlops += flops;
      mod.gemmKernels.push_back(name);
    } else {
      mod.fp32GemmKernels.push_back(name);
    }
  }

  bool gemm(Step &s, const std::string &name) {
    const ValueInfo &a = val(s.inputs[0]), &b = val(s.inputs[1]);
    const ValueInfo &y = val(s.outputs[0]);
    bool ta = s.getInt("transA", 0), tb = s.getInt("transB", 0);
    int64_t M = y.shape[0], N = y.shape[1], K = ta ? a.shape[0] : a.shape[1];
    double alpha = s.getFloat("alpha", 1.0), beta = s.getFloat("beta", 1.0);
    bool withC = s.inputs.size() > 2 && s.inputs[2] >= 0 && beta != 0.0;
    std::string T = ctype(a.dtype);
    std::string members = "  const " + T + " *A; const " + T + " *B; const " +
                          std::string(ctype(withC ? val(s.inputs[2]).dtype
                                                  : a.dtype)) +
                          " *C; " + ctype(y.dtype) + " *Y;\n";
    std::string loadA = "return A[" + (ta ? "(i64)k * " + std::to_string(M) + " + m"
                                          : "(i64)m * " + std::to_string(K) + " + k") + "];";
    std::string loadB = "return B[" + (tb ? "(i64)n * " + std::to_string(K) + " + k"
                                          : "(i64)k * " + std::to_string(N) + " + n") + "];";
    if (a.dtype == DType::F32) { // simt_gemm reads floats
      loadA = "return ld(A, " + loadA.substr(9, loadA.size() - 11) + ");";
      loadB = "return ld(B, " + loadB.substr(9, loadB.size() - 11) + ");";
    }
    std::string epi = "float v = " + flt(alpha) + " * acc;";
    if (withC) {
      Shape cs = broadcastStrides(val(s.inputs[2]).shape, y.shape);
      epi += " v += " + flt(beta) + " * ld(C, (i64)m * " +
             std::to_string(cs[0]) + " + (i64)n * " + std::to_string(cs[1]) +
             ");";
    }
    if (s.has("cuda.fused_relu"))
      epi += " v = fmaxf(v, 0.0f);";
    epi += " st(Y, (i64)m * " + std::to_string(N) + " + n, v);";
    gemmKernel(s, name, a.dtype, M, N, K, 1,
               "  c.A = in0; c.B = in1; c.C = " +
                   std::string(withC ? "in2" : "nullptr") + "; c.Y = out0;\n",
               loadA, loadB, epi, members);
    return true;
  }

  bool matmul(Step &s, const std::string &name) {
    const ValueInfo &a = val(s.inputs[0]), &b = val(s.inputs[1]);
    const ValueInfo &y = val(s.outputs[0]);
    if (a.shape.size() < 2 || b.shape.size() < 2)
      return fail(s, "1-D matmul operands have no CUDA kernel yet");
    int64_t M = a.shape[a.shape.size() - 2], K = a.shape.back(),
            N = b.shape.back();
    Shape outBatch(y.shape.begin(), y.shape.end() - 2);
    Shape aBatch(a.shape.begin(), a.shape.end() - 2),
        bBatch(b.shape.begin(), b.shape.end() - 2);
    Shape as = broadcastStrides(aBatch, outBatch),
          bs = broadcastStrides(bBatch, outBatch);
    int64_t batch = numElements(outBatch);
    // Batch offsets (in matrices) of A and B for output batch z.
    std::string offs = "i64 r = z, oa = 0, ob = 0;";
    for (int64_t d = (int64_t)outBatch.size() - 1; d >= 0; --d)
      offs += " { i64 q = r % " + std::to_string(outBatch[d]) + "; r /= " +
              std::to_string(outBatch[d]) + "; oa += q * " +
              std::to_string(as[d]) + "; ob += q * " + std::to_string(bs[d]) +
              "; }";
    std::string T = ctype(a.dtype);
    bool f32 = a.dtype == DType::F32;
    std::string members = "  const " + T + " *A; const " + T + " *B; " +
                          ctype(y.dtype) + " *Y; i64 oa, ob;\n";
    auto rd = [&](const std::string &p, const std::string &idx) {
      return f32 ? "return ld(" + p + ", " + idx + ");" : "return " + p + "[" + idx + "];";
    };
    std::string prologue = "  c.A = in0; c.B = in1; c.Y = out0;\n  { i64 z = blockIdx.z; " +
                           offs + " c.oa = oa; c.ob = ob; }\n";
    gemmKernel(s, name, a.dtype, M, N, K, batch, prologue,
               rd("A", "oa * " + std::to_string(M * K) + " + (i64)m * " +
                           std::to_string(K) + " + k"),
               rd("B", "ob * " + std::to_string(K * N) + " + (i64)k * " +
                           std::to_string(N) + " + n"),
               "st(Y, z * " + std::to_string(M * N) + " + (i64)m * " +
                   std::to_string(N) + " + n, " +
                   (s.has("cuda.fused_relu") ? "fmaxf(acc, 0.0f)" : "acc") +
                   ");",
               members);
    return true;
  }

  bool conv(Step &s, const std::string &name) {
    const ValueInfo &x = val(s.inputs[0]), &w = val(s.inputs[1]);
    const ValueInfo &y = val(s.outputs[0]);
    if (x.shape.size() != 4)
      return fail(s, "only 2-D convolution has a CUDA kernel yet");
    Window win(s, x.shape, y.shape, Shape(w.shape.begin() + 2, w.shape.end()));
    int64_t groups = s.getInt("group", 1);
    int64_t C = x.shape[1], H = x.shape[2], W = x.shape[3], Co = y.shape[1],
            OH = y.shape[2], OW = y.shape[3], KH = win.kernel[0],
            KW = win.kernel[1];
    int64_t Cg = C / groups, Mg = Co / groups, N = x.shape[0] * OH * OW,
            K = Cg * KH * KW;
    bool bias = s.inputs.size() > 2 && s.inputs[2] >= 0;
    std::string T = ctype(x.dtype), Z = x.dtype == DType::F32 ? "0.0f" : T + "(0.0f)";
    bool f32 = x.dtype == DType::F32;
    std::string members = "  const " + T + " *X; const " + T + " *Wt; const " +
                          std::string(ctype(bias ? val(s.inputs[2]).dtype
                                                 : x.dtype)) +
                          " *Bias; " + ctype(y.dtype) + " *Y;\n";
    auto S = [](int64_t v) { return std::to_string(v); };
    std::string widx = "(z * " + S(Mg) + " + m) * " + S(K) + " + k";
    std::string loadA = f32 ? "return ld(Wt, " + widx + ");" : "return Wt[" + widx + "];";
    // Implicit im2col: column n = (image, oh, ow), row k = (ci, kh, kw).
    std::string xidx = "((i64)(b * " + S(C) + " + z * " + S(Cg) + " + ci) * " +
                       S(H) + " + ih) * " + S(W) + " + iw";
    std::string loadB =
        "int ci = k / " + S(KH * KW) + ", kr = k % " + S(KH * KW) +
        ", kh = kr / " + S(KW) + ", kw = kr % " + S(KW) + "; int b = n / " +
        S(OH * OW) + ", sp = n % " + S(OH * OW) + ", oh = sp / " + S(OW) +
        ", ow = sp % " + S(OW) + "; int ih = oh * " + S(win.strides[0]) +
        " - " + S(win.padBegin[0]) + " + kh * " + S(win.dilations[0]) +
        ", iw = ow * " + S(win.strides[1]) + " - " + S(win.padBegin[1]) +
        " + kw * " + S(win.dilations[1]) + "; if (ih < 0 || ih >= " + S(H) +
        " || iw < 0 || iw >= " + S(W) + ") return " + Z + "; return " +
        (f32 ? "ld(X, " + xidx + ")" : "X[" + xidx + "]") + ";";
    std::string epi = "i64 co = z * " + S(Mg) + " + m; int b = n / " +
                      S(OH * OW) + ", sp = n % " + S(OH * OW) + "; float v = acc" +
                      (bias ? " + ld(Bias, co)" : "") + ";" +
                      (s.has("cuda.fused_relu") ? " v = fmaxf(v, 0.0f);" : "") +
                      " st(Y, (b * " + S(Co) +
                      " + co) * " + S(OH * OW) + " + sp, v);";
    gemmKernel(s, name, x.dtype, Mg, N, K, groups,
               "  c.X = in0; c.Wt = in1; c.Bias = " +
                   std::string(bias ? "in2" : "nullptr") + "; c.Y = out0;\n",
               loadA, loadB, epi, members);
    return true;
  }

  /// Gradients of a 2-D convolution as implicit GEMMs on tensor cores.
  /// Weight: dW[co, (ci,kh,kw)] = sum over (b,oh,ow) of dY * im2col(x).
  /// Input: dX[ci, (b,ih,iw)] = sum over (co,kh,kw) of W * dY taken where
  /// (ih + pad - kh*d) / stride lands on an output position (a gather, so
  /// no atomics).
  bool convGrad(Step &s, const std::string &name, bool weight) {
    const ValueInfo &dy = val(s.inputs[0]), &other = val(s.inputs[1]);
    const ValueInfo &out = val(s.outputs[0]);
    const ValueInfo &x = weight ? other : out, &w = weight ? out : other;
    if (x.shape.size() != 4)
      return fail(s, "only 2-D convolution gradients have a CUDA kernel yet");
    Window win(s, x.shape, dy.shape, Shape(w.shape.begin() + 2, w.shape.end()));
    int64_t groups = s.getInt("group", 1);
    int64_t C = x.shape[1], H = x.shape[2], W = x.shape[3], Co = dy.shape[1],
            OH = dy.shape[2], OW = dy.shape[3], KH = win.kernel[0],
            KW = win.kernel[1], Nb = x.shape[0];
    int64_t Cg = C / groups, Mg = Co / groups;
    auto S = [](int64_t v) { return std::to_string(v); };
    std::string T = ctype(dy.dtype);
    bool f32 = dy.dtype == DType::F32;
    std::string Z = f32 ? "0.0f" : T + "(0.0f)";
    auto rd = [&](const std::string &p, const std::string &idx) {
      return f32 ? "ld(" + p + ", " + idx + ")" : p + "[" + idx + "]";
    };
    std::string members = "  const " + T + " *G; const " + T + " *O; " +
                          ctype(out.dtype) + " *Y;\n";
    std::string prologue = "  c.G = in0; c.O = in1; c.Y = out0;\n";
    if (weight) {
      int64_t K = Cg * KH * KW, N = Nb * OH * OW;
      std::string loadA = // dY[b, z*Mg + m, sp] for column kk = (b, sp)
          "int b = k / " + S(OH * OW) + ", sp = k % " + S(OH * OW) +
          "; return " + rd("G", "((i64)b * " + S(Co) + " + z * " + S(Mg) +
                                    " + m) * " + S(OH * OW) + " + sp") + ";";
      std::string loadB = // im2col(x)[n = (ci,kh,kw), k = (b, oh, ow)]
          "int ci = n / " + S(KH * KW) + ", kr = n % " + S(KH * KW) +
          ", kh = kr / " + S(KW) + ", kw = kr % " + S(KW) + "; int b = k / " +
          S(OH * OW) + ", sp = k % " + S(OH * OW) + ", oh = sp / " + S(OW) +
          ", ow = sp % " + S(OW) + "; int ih = oh * " + S(win.strides[0]) +
          " - " + S(win.padBegin[0]) + " + kh * " + S(win.dilations[0]) +
          ", iw = ow * " + S(win.strides[1]) + " - " + S(win.padBegin[1]) +
          " + kw * " + S(win.dilations[1]) + "; if (ih < 0 || ih >= " + S(H) +
          " || iw < 0 || iw >= " + S(W) + ") return " + Z + "; return " +
          rd("O", "((i64)(b * " + S(C) + " + z * " + S(Cg) + " + ci) * " +
                      S(H) + " + ih) * " + S(W) + " + iw") + ";";
      std::string epi = "st(Y, (z * " + S(Mg) + " + m) * " + S(K) + " + n, acc);";
      gemmKernel(s, name, dy.dtype, Mg, K, N, groups, prologue, loadA, loadB,
                 epi, members);
    } else {
      int64_t K = Mg * KH * KW, N = Nb * H * W;
      std::string loadA = // W[z*Mg + co, m, kh, kw] for k = (co, kh, kw)
          "int co = k / " + S(KH * KW) + ", kr = k % " + S(KH * KW) +
          "; return " + rd("O", "((i64)(z * " + S(Mg) + " + co) * " + S(Cg) +
                                    " + m) * " + S(KH * KW) + " + kr") + ";";
      std::string loadB =
          "int co = k / " + S(KH * KW) + ", kr = k % " + S(KH * KW) +
          ", kh = kr / " + S(KW) + ", kw = kr % " + S(KW) + "; int b = n / " +
          S(H * W) + ", sp = n % " + S(H * W) + ", ih = sp / " + S(W) +
          ", iw = sp % " + S(W) + "; int th = ih + " + S(win.padBegin[0]) +
          " - kh * " + S(win.dilations[0]) + ", tw = iw + " +
          S(win.padBegin[1]) + " - kw * " + S(win.dilations[1]) +
          "; if (th < 0 || tw < 0 || th % " + S(win.strides[0]) + " || tw % " +
          S(win.strides[1]) + ") return " + Z + "; int oh = th / " +
          S(win.strides[0]) + ", ow = tw / " + S(win.strides[1]) +
          "; if (oh >= " + S(OH) + " || ow >= " + S(OW) + ") return " + Z +
          "; return " +
          rd("G", "(((i64)b * " + S(Co) + " + z * " + S(Mg) + " + co) * " +
                      S(OH) + " + oh) * " + S(OW) + " + ow") + ";";
      std::string epi = "int b = n / " + S(H * W) + ", sp = n % " + S(H * W) +
                        "; st(Y, ((i64)b * " + S(C) + " + z * " + S(Cg) +
                        " + m) * " + S(H * W) + " + sp, acc);";
      gemmKernel(s, name, dy.dtype, Cg, N, K, groups, prologue, loadA, loadB,
                 epi, members);
    }
    return true;
  }

  //===--------------------------------------------------------------------===//
  // Reductions (FP32), pooling, loss
  //===--------------------------------------------------------------------===//

  bool softmax(Step &s, const std::string &name, bool logForm) {
    const ValueInfo &x = val(s.inputs[0]);
    int64_t rank = x.shape.size(), axis = s.getInt("axis", -1);
    axis = axis < 0 ? axis + rank : axis;
    AxisSplit sp = splitAt(x.shape, axis);
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

  bool layerNorm(Step &s, const std::string &name) {
    const ValueInfo &x = val(s.inputs[0]);
    int64_t rank = x.shape.size(), axis = s.getInt("axis", -1);
    axis = axis < 0 ? axis + rank : axis;
    int64_t rows = 1, cols = 1;
    for (int64_t i = 0; i < rank; ++i)
      (i < axis ? rows : cols) *= x.shape[i];
    int64_t sc = numElements(val(s.inputs[1]).shape);
    bool bias = s.inputs.size() > 2 && s.inputs[2] >= 0;
    double eps = s.getFloat("epsilon", 1e-5);
    cu << header(s, name, 256) << " {\n  i64 i = global_index();\n  if (i >= "
       << rows << "LL) return;\n  const i64 n = " << cols
       << "LL, base = i * n;\n  float mean = 0.0f, var = 0.0f;\n"
       << "  for (i64 j = 0; j < n; ++j) mean += ld(in0, base + j);\n"
       << "  mean /= n;\n  for (i64 j = 0; j < n; ++j) { float d = ld(in0, "
          "base + j) - mean; var += d * d; }\n"
       << "  float inv = rsqrtf(var / n + " << flt(eps) << ");\n"
       << "  for (i64 j = 0; j < n; ++j) st(out0, base + j, (ld(in0, base + j) "
          "- mean) * inv * ld(in1, j % "
       << sc << "LL)" << (bias ? " + ld(in2, j % " + std::to_string(sc) + "LL)" : "")
       << ");\n";
    if (s.outputs.size() > 1)
      cu << "  st(out1, i, mean);\n";
    if (s.outputs.size() > 2)
      cu << "  st(out2, i, inv);\n";
    cu << "}\n\n";
    launch1d(s, name, rows);
    return true;
  }

  /// kind: "sum", "mean" or "lse" (log-sum-exp, max-shifted).
  bool reduce(Step &s, const std::string &name, const std::string &kind) {
    const ValueInfo &x = val(s.inputs[0]);
    int64_t rank = x.shape.size();
    auto axes = s.getInts("axes").value_or(std::vector<int64_t>{});
    std::set<int64_t> red;
    for (int64_t a : axes)
      red.insert(a < 0 ? a + rank : a);
    if (red.empty())
      for (int64_t i = 0; i < rank; ++i)
        red.insert(i);
    Shape st = stridesOf(x.shape), kept, keptStrides, rdims, rstrides;
    for (int64_t i = 0; i < rank; ++i)
      if (red.count(i)) {
        rdims.push_back(x.shape[i]);
        rstrides.push_back(st[i]);
      } else {
        kept.push_back(x.shape[i]);
        keptStrides.push_back(st[i]);
      }
    int64_t outN = numElements(kept), redN = numElements(rdims);
    cu << header(s, name, 256) << " {\n  i64 i = global_index();\n  if (i >= "
       << outN << "LL) return;\n"
       << offsetsCode(kept, {keptStrides})
       << "  float acc = 0.0f, mx = -INFINITY;\n";
    auto loop = [&](const std::string &body) {
      cu << "  for (i64 j = 0; j < " << redN
         << "LL; ++j) {\n    i64 q = j, off = o0;\n";
      for (int64_t d = (int64_t)rdims.size() - 1; d >= 0; --d)
        cu << "    off += (q % " << rdims[d] << "LL) * " << rstrides[d]
           << "LL; q /= " << rdims[d] << "LL;\n";
      cu << "    " << body << "\n  }\n";
    };
    if (kind == "lse") {
      loop("mx = fmaxf(mx, ld(in0, off));");
      loop("acc += expf(ld(in0, off) - mx);");
      cu << "  st(out0, i, mx + logf(acc));\n}\n\n";
    } else {
      loop("acc += ld(in0, off);");
      cu << "  st(out0, i, acc"
         << (kind == "mean" ? " / " + std::to_string(redN) + ".0f" : "")
         << ");\n}\n\n";
    }
    launch1d(s, name, outN);
    return true;
  }

  bool pool(Step &s, const std::string &name, bool max) {
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
    if (max && s.outputs.size() > 1)
      cu << "  out1[i] = p * " << H * W << "LL + arg;\n";
    cu << "}\n\n";
    launch1d(s, name, n);
    return true;
  }

  bool globalAveragePool(Step &s, const std::string &name) {
    const ValueInfo &x = val(s.inputs[0]);
    int64_t planes = x.shape[0] * x.shape[1], sp = numElements(x.shape) / planes;
    cu << header(s, name, 256) << " {\n  i64 i = global_index();\n  if (i >= "
       << planes << "LL) return;\n  float acc = 0.0f;\n  for (i64 j = 0; j < "
       << sp << "LL; ++j) acc += ld(in0, i * " << sp << "LL + j);\n  st(out0, i, acc / "
       << sp << ".0f);\n}\n\n";
    launch1d(s, name, planes);
    return true;
  }

  /// softmax_cross_entropy_loss (scores) or nll_loss (`fromLogProb`).
  bool crossEntropy(Step &s, const std::string &name, bool fromLogProb = false) {
    const ValueInfo &x = val(s.inputs[0]);
    if (x.shape.size() != 2)
      return fail(s, "only [N, C] scores have a CUDA kernel yet");
    int64_t N = x.shape[0], C = x.shape[1];
    std::string red = s.getString("reduction", "mean");
    bool weights = s.inputs.size() > 2 && s.inputs[2] >= 0;
    bool ignore = s.has("ignore_index");
    int64_t ig = s.getInt("ignore_index", 0);
    // One block: each thread takes samples, then a shared-memory sum.
    cu << header(s, name, 256) << " {\n  __shared__ float ls[256], ws[256];\n"
       << "  float lsum = 0.0f, wsum = 0.0f;\n"
       << "  for (i64 n = threadIdx.x; n < " << N << "; n += 256) {\n"
       << "    float mx = -INFINITY, sum = 0.0f, lse = 0.0f;\n";
    if (!fromLogProb)
      cu << "    for (i64 c = 0; c < " << C << "; ++c) mx = fmaxf(mx, ld(in0, n * " << C << " + c));\n"
         << "    for (i64 c = 0; c < " << C << "; ++c) sum += expf(ld(in0, n * " << C << " + c) - mx);\n"
         << "    lse = mx + logf(sum);\n";
    if (!fromLogProb && s.outputs.size() > 1)
      cu << "    for (i64 c = 0; c < " << C << "; ++c) st(out1, n * " << C
         << " + c, ld(in0, n * " << C << " + c) - lse);\n";
    cu << "    i64 label = in1[n];\n"
       << "    if (" << (ignore ? "label == " + std::to_string(ig) + "LL" : "false")
       << ") { " << (red == "none" ? "st(out0, n, 0.0f); " : "") << "continue; }\n"
       << "    float w = " << (weights ? "ld(in2, label)" : "1.0f") << ";\n"
       << "    float l = -w * (ld(in0, n * " << C << " + label) - lse);\n"
       << (red == "none" ? "    st(out0, n, l);\n" : "")
       << "    lsum += l; wsum += w;\n  }\n"
       << "  ls[threadIdx.x] = lsum; ws[threadIdx.x] = wsum; __syncthreads();\n"
       << "  for (int h = 128; h > 0; h >>= 1) { if (threadIdx.x < h) { "
          "ls[threadIdx.x] += ls[threadIdx.x + h]; ws[threadIdx.x] += "
          "ws[threadIdx.x + h]; } __syncthreads(); }\n";
    if (red != "none")
      cu << "  if (threadIdx.x == 0) st(out0, 0, ls[0]"
         << (red == "mean" ? " / ws[0]" : "") << ");\n";
    cu << "}\n\n";
    barrier = true;
    launch(s, name, {1, 1, 1}, {256, 1, 1});
    mod.flops += 4.0 * N * C;
    return true;
  }

  //===--------------------------------------------------------------------===//
  // Data movement
  //===--------------------------------------------------------------------===//

  /// out[i] = in0[offset + sum c_d * stride_d] (raw element copy).
  bool stridedCopy(Step &s, const std::string &name, int64_t offset,
                   const Shape &strides) {
    const ValueInfo &y = val(s.outputs[0]);
    int64_t n = numElements(y.shape);
    cu << header(s, name, 256) << " {\n  i64 i = global_index();\n  if (i >= "
       << n << "LL) return;\n"
       << offsetsCode(y.shape, {strides}) << "  out0[i] = in0[" << offset
       << "LL + o0];\n}\n\n";
    launch1d(s, name, n);
    return true;
  }

  bool transpose(Step &s, const std::string &name) {
    const ValueInfo &x = val(s.inputs[0]);
    int64_t rank = x.shape.size();
    std::vector<int64_t> perm =
        s.getInts("perm").value_or(std::vector<int64_t>{});
    if (perm.empty())
      for (int64_t i = rank - 1; i >= 0; --i)
        perm.push_back(i);
    Shape st = stridesOf(x.shape), out(rank);
    for (int64_t d = 0; d < rank; ++d)
      out[d] = st[perm[d]];
    return stridedCopy(s, name, 0, out);
  }

  bool slice(Step &s, const std::string &name) {
    const ValueInfo &x = val(s.inputs[0]), &y = val(s.outputs[0]);
    auto ints = [&](size_t k) -> std::optional<std::vector<int64_t>> {
      if (k >= s.inputs.size() || s.inputs[k] < 0)
        return std::vector<int64_t>{};
      const Tensor *t = constant(s.inputs[k]);
      if (!t)
        return std::nullopt;
      std::vector<int64_t> v;
      for (int64_t i = 0; i < t->size(); ++i)
        v.push_back(t->getInt(i));
      return v;
    };
    auto starts = ints(1), ends = ints(2), axes = ints(3), steps = ints(4);
    if (!starts || !ends || !axes || !steps)
      return fail(s, "slice bounds must be constants for the CUDA kernel");
    int64_t rank = x.shape.size();
    Shape st = stridesOf(x.shape), strides = st;
    int64_t offset = 0;
    for (size_t i = 0; i < starts->size(); ++i) {
      int64_t a = axes->empty() ? (int64_t)i : (*axes)[i];
      a = a < 0 ? a + rank : a;
      int64_t step = steps->empty() ? 1 : (*steps)[i];
      if (step < 1)
        return fail(s, "negative slice steps have no CUDA kernel yet");
      int64_t dim = x.shape[a], b = (*starts)[i];
      b = std::clamp<int64_t>(b < 0 ? b + dim : b, 0, dim);
      offset += b * st[a];
      strides[a] = st[a] * step;
    }
    (void)y;
    return stridedCopy(s, name, offset, strides);
  }

  bool gather(Step &s, const std::string &name) {
    const ValueInfo &x = val(s.inputs[0]), &idx = val(s.inputs[1]);
    const ValueInfo &y = val(s.outputs[0]);
    int64_t rank = x.shape.size(), axis = s.getInt("axis", 0);
    axis = axis < 0 ? axis + rank : axis;
    AxisSplit sp = splitAt(x.shape, axis);
    int64_t ni = numElements(idx.shape), n = numElements(y.shape);
    cu << header(s, name, 256) << " {\n  i64 i = global_index();\n  if (i >= "
       << n << "LL) return;\n  i64 in = i % " << sp.inner << "LL, t = i / "
       << sp.inner << "LL, j = t % " << ni << "LL, o = t / " << ni
       << "LL;\n  i64 k = in1[j]; if (k < 0) k += " << sp.dim
       << "LL;\n  out0[i] = in0[(o * " << sp.dim << "LL + k) * " << sp.inner
       << "LL + in];\n}\n\n";
    launch1d(s, name, n);
    return true;
  }

  bool concat(Step &s, const std::string &name) {
    const ValueInfo &y = val(s.outputs[0]);
    int64_t rank = y.shape.size(), axis = s.getInt("axis", 0);
    axis = axis < 0 ? axis + rank : axis;
    AxisSplit sp = splitAt(y.shape, axis);
    int64_t n = numElements(y.shape);
    cu << header(s, name, 256) << " {\n  i64 i = global_index();\n  if (i >= "
       << n << "LL) return;\n  i64 in = i % " << sp.inner << "LL, t = i / "
       << sp.inner << "LL, a = t % " << sp.dim << "LL, o = t / " << sp.dim
       << "LL;\n";
    int64_t begin = 0;
    for (size_t k = 0; k < s.inputs.size(); ++k) {
      int64_t d = val(s.inputs[k]).shape[axis];
      cu << "  if (a < " << begin + d << "LL) { out0[i] = in" << k << "[(o * "
         << d << "LL + a - " << begin << "LL) * " << sp.inner
         << "LL + in]; return; }\n";
      begin += d;
    }
    cu << "}\n\n";
    launch1d(s, name, n);
    return true;
  }

  /// Each input element goes to the output that owns its coordinate along
  /// the axis.
  bool split(Step &s, const std::string &name) {
    const ValueInfo &x = val(s.inputs[0]);
    int64_t rank = x.shape.size(), axis = s.getInt("axis", 0);
    axis = axis < 0 ? axis + rank : axis;
    AxisSplit sp = splitAt(x.shape, axis);
    int64_t n = numElements(x.shape);
    cu << header(s, name, 256) << " {\n  i64 i = global_index();\n  if (i >= "
       << n << "LL) return;\n  i64 in = i % " << sp.inner << "LL, t = i / "
       << sp.inner << "LL, a = t % " << sp.dim << "LL, o = t / " << sp.dim
       << "LL;\n";
    int64_t begin = 0;
    for (size_t k = 0; k < s.outputs.size(); ++k) {
      int64_t d = val(s.outputs[k]).shape[axis];
      cu << "  if (a < " << begin + d << "LL) { out" << k << "[(o * " << d
         << "LL + a - " << begin << "LL) * " << sp.inner
         << "LL + in] = in0[i]; return; }\n";
      begin += d;
    }
    cu << "}\n\n";
    launch1d(s, name, n);
    return true;
  }

  bool trilu(Step &s, const std::string &name) {
    const ValueInfo &y = val(s.outputs[0]);
    int64_t rank = y.shape.size(), rows = y.shape[rank - 2],
            cols = y.shape[rank - 1], n = numElements(y.shape);
    int64_t k = s.getInt("k", 0);
    bool upper = s.getInt("upper", 1);
    cu << header(s, name, 256) << " {\n  i64 i = global_index();\n  if (i >= "
       << n << "LL) return;\n  i64 c = i % " << cols << "LL, r = (i / " << cols
       << "LL) % " << rows << "LL;\n  bool keep = c - r " << (upper ? ">=" : "<=")
       << " " << k << "LL;\n  out0[i] = keep ? in0[i] : (" << ctype(y.dtype)
       << ")0;\n}\n\n";
    launch1d(s, name, n);
    return true;
  }

  bool pad(Step &s, const std::string &name) {
    if (s.getString("mode", "constant") != "constant")
      return fail(s, "only constant padding has a CUDA kernel yet");
    const ValueInfo &x = val(s.inputs[0]), &y = val(s.outputs[0]);
    int64_t rank = x.shape.size();
    auto pads = s.getInts("pads").value_or(std::vector<int64_t>{});
    auto axes = s.getInts("axes").value_or(std::vector<int64_t>{});
    if (axes.empty())
      for (int64_t i = 0; i < rank; ++i)
        axes.push_back(i);
    Shape begin(rank, 0);
    for (size_t i = 0; i < axes.size(); ++i)
      begin[axes[i] < 0 ? axes[i] + rank : axes[i]] = pads[i];
    bool value = s.inputs.size() > 1 && s.inputs[1] >= 0;
    Shape st = stridesOf(x.shape);
    int64_t n = numElements(y.shape);
    cu << header(s, name, 256) << " {\n  i64 i = global_index();\n  if (i >= "
       << n << "LL) return;\n  i64 r = i, off = 0; bool inside = true;\n";
    for (int64_t d = rank - 1; d >= 0; --d)
      cu << "  { i64 c = r % " << y.shape[d] << "LL - " << begin[d]
         << "LL; r /= " << y.shape[d] << "LL; inside = inside && c >= 0 && c < "
         << x.shape[d] << "LL; off += c * " << st[d] << "LL; }\n";
    cu << "  st(out0, i, inside ? ld(in0, off) : "
       << (value ? "ld(in1, 0)" : "0.0f") << ");\n}\n\n";
    launch1d(s, name, n);
    return true;
  }

  /// max_pool_grad / average_pool_grad, gathered: each input element sums,
  /// in increasing output order (as the CPU backend scatters), the
  /// gradients of the windows that took it (max: whose argmax it is).
  bool poolGrad(Step &s, const std::string &name, bool max) {
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
    if (max) {
      // The grad op carries only the argmax indices (no window): scan the
      // plane's outputs for the ones that picked this element.
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
         << win.strides[1] << "; if (ow >= " << OW << ") continue;\n"
         << "      int cnt = 0;\n"
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
    cu << "  st(out0, i, acc);\n}\n\n";
    launch1d(s, name, n);
    return true;
  }

  //===--------------------------------------------------------------------===//
  // Training: loss gradient, loss scaling
  //===--------------------------------------------------------------------===//

  /// d(loss)/d(scores) of softmax cross-entropy: one block; the weight sum
  /// ("mean") first, then every row.
  bool crossEntropyGrad(Step &s, const std::string &name) {
    const ValueInfo &lp = val(s.inputs[1]);
    if (lp.shape.size() != 2)
      return fail(s, "only [N, C] scores have a CUDA kernel yet");
    int64_t N = lp.shape[0], C = lp.shape[1];
    std::string red = s.getString("reduction", "mean");
    bool weights = s.inputs.size() > 3 && s.inputs[3] >= 0;
    bool ignore = s.has("ignore_index");
    std::string skip = ignore ? "label == " + std::to_string(s.getInt("ignore_index", 0)) + "LL"
                              : std::string("false");
    std::string w = weights ? "ld(in3, label)" : "1.0f";
    cu << header(s, name, 256) << " {\n  __shared__ float ws[256];\n"
       << "  float wsum = 0.0f;\n  for (i64 n = threadIdx.x; n < " << N
       << "; n += 256) { i64 label = in2[n]; if (!(" << skip << ")) wsum += "
       << w << "; }\n  ws[threadIdx.x] = wsum; __syncthreads();\n"
       << "  for (int h = 128; h > 0; h >>= 1) { if (threadIdx.x < h) "
          "ws[threadIdx.x] += ws[threadIdx.x + h]; __syncthreads(); }\n"
       << "  float denom = " << (red == "mean" ? "ws[0]" : "1.0f") << ";\n"
       << "  for (i64 n = threadIdx.x; n < " << N << "; n += 256) {\n"
       << "    i64 label = in2[n];\n"
       << "    float scale = (" << skip << ") ? 0.0f : " << w << " * ld(in0, "
       << (red == "none" ? "n" : "0") << ") / denom;\n"
       << "    for (i64 c = 0; c < " << C << "; ++c) st(out0, n * " << C
       << " + c, expf(ld(in1, n * " << C
       << " + c)) * scale - (c == label ? scale : 0.0f));\n  }\n}\n\n";
    barrier = true;
    launch(s, name, {1, 1, 1}, {256, 1, 1});
    return true;
  }

  /// Every gradient times 1/scale, and one all-finite flag: one block
  /// striding over all elements (the flag needs no second kernel).
  bool unscaleGrads(Step &s, const std::string &name) {
    size_t n = s.inputs.size() - 1;
    cu << header(s, name, 256) << " {\n  __shared__ int bad;\n"
       << "  if (threadIdx.x == 0) bad = 0;\n  __syncthreads();\n"
       << "  float inv = (float)(1.0 / (double)ld(in" << n << ", 0));\n"
       << "  int mine = 0;\n";
    for (size_t k = 0; k < n; ++k)
      cu << "  for (i64 i = threadIdx.x; i < "
         << numElements(val(s.inputs[k]).shape) << "LL; i += 256) { float v = ld(in"
         << k << ", i); mine |= !isfinite(v); st(out" << k
         << ", i, v * inv); }\n";
    cu << "  if (mine) atomicOr(&bad, 1);\n  __syncthreads();\n"
       << "  if (threadIdx.x == 0) out" << n << "[0] = bad != 0;\n}\n\n";
    barrier = true;
    launch(s, name, {1, 1, 1}, {256, 1, 1});
    return true;
  }

  bool updateLossScale(Step &s, const std::string &name) {
    cu << header(s, name, 1) << " {\n  double scale = ld(in0, 0);\n"
       << "  i64 good = in1[0];\n  if (in2[0]) { scale *= "
       << dbl(s.getFloat("backoff", 0.5)) << "; good = 0; }\n  else if (++good >= "
       << s.getInt("interval", 2000) << "LL) { scale *= "
       << dbl(s.getFloat("growth", 2.0)) << "; good = 0; }\n"
       << "  scale = fmin(fmax(scale, " << dbl(s.getFloat("min_scale", 1.0))
       << "), " << dbl(s.getFloat("max_scale", 16777216.0)) << ");\n"
       << "  st(out0, 0, (float)scale);\n  out1[0] = good;\n}\n\n";
    launch(s, name, {1, 1, 1}, {1, 1, 1});
    return true;
  }

  bool emitStep(Step &s, size_t index) {
    std::string name = "k" + std::to_string(index) + "_" + s.op;
    static const std::set<std::string> aliases = {"reshape", "flatten",
                                                  "squeeze", "unsqueeze",
                                                  "identity"};
    if (s.has("cuda.alias")) // a Relu fused into the GEMM before it
      return true;
    if (aliases.count(s.op) && s.outputs.size() == 1) {
      s.attrs["cuda.alias"] = (int64_t)s.inputs[0];
      return true;
    }
    const std::string &op = s.op;
    if (op == "gemm")
      return gemm(s, name);
    if (op == "matmul")
      return matmul(s, name);
    if (op == "conv")
      return conv(s, name);
    if (op == "softmax" || op == "log_softmax")
      return softmax(s, name, op == "log_softmax");
    if (op == "layer_norm")
      return layerNorm(s, name);
    if (op == "reduce_sum" || op == "reduce_mean" || op == "reduce_log_sum_exp")
      return reduce(s, name, op == "reduce_sum"    ? "sum"
                             : op == "reduce_mean" ? "mean"
                                                   : "lse");
    if (op == "max_pool" || op == "average_pool")
      return pool(s, name, op == "max_pool");
    if (op == "global_average_pool")
      return globalAveragePool(s, name);
    if (op == "softmax_cross_entropy_loss" || op == "nll_loss")
      return crossEntropy(s, name, op == "nll_loss");
    if (op == "transpose")
      return transpose(s, name);
    if (op == "slice")
      return slice(s, name);
    if (op == "gather")
      return gather(s, name);
    if (op == "concat")
      return concat(s, name);
    if (op == "split")
      return split(s, name);
    if (op == "conv_grad_input" || op == "conv_grad_weight")
      return convGrad(s, name, op == "conv_grad_weight");
    if (op == "max_pool_grad" || op == "average_pool_grad")
      return poolGrad(s, name, op == "max_pool_grad");
    if (op == "expand") { // a broadcasting copy
      const ValueInfo &x = val(s.inputs[0]), &y = val(s.outputs[0]);
      return stridedCopy(s, name, 0, broadcastStrides(x.shape, y.shape));
    }
    if (op == "softmax_cross_entropy_loss_grad")
      return crossEntropyGrad(s, name);
    if (op == "unscale_grads")
      return unscaleGrads(s, name);
    if (op == "update_loss_scale")
      return updateLossScale(s, name);
    if (op == "trilu")
      return trilu(s, name);
    if (op == "pad")
      return pad(s, name);
    if (auto e = expr(op, s.inputs.size())) {
      mod.flops += numElements(val(s.outputs[0]).shape);
      return elementwise(s, name, *e);
    }
    return fail(s, "no CUDA kernel for mpc." + op + " yet");
  }
};

} // namespace

bool emitCuda(Plan &plan, CudaModule &out, std::string &error) {
  Emitter e{plan, out, error, {}};
  // Epilogue fusion: a GEMM/conv whose result only a Relu reads applies the
  // Relu itself; the Relu step then aliases the GEMM's buffer.
  std::map<int, std::vector<size_t>> readers;
  std::set<int> outputs;
  for (size_t i = 0; i < plan.steps.size(); ++i)
    for (int v : plan.steps[i].inputs)
      readers[v].push_back(i);
  for (const Binding &b : plan.outputs)
    outputs.insert(b.value);
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    Step &s = plan.steps[i];
    if (s.op != "gemm" && s.op != "matmul" && s.op != "conv")
      continue;
    int v = s.outputs[0];
    auto &r = readers[v];
    if (r.size() == 1 && plan.steps[r[0]].op == "relu" && !outputs.count(v) &&
        plan.values[plan.steps[r[0]].outputs[0]].dtype == plan.values[v].dtype) {
      s.attrs["cuda.fused_relu"] = (int64_t)1;
      plan.steps[r[0]].attrs["cuda.alias"] = (int64_t)v;
    }
  }
  e.cu << "// Emitted by mpc: one kernel per step of the execution plan.\n"
       << kCudaPrelude << "\n";
  for (size_t i = 0; i < plan.steps.size(); ++i)
    if (!e.emitStep(plan.steps[i], i))
      return false;
  e.cu << "#ifdef MPC_HOST_EMULATION\n" << e.emu.str() << "#endif\n";
  out.source = e.cu.str();
  return true;
}

} // namespace mlir::mpc
