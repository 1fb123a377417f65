//===- CudaGemmKernels.cpp - tensor-core GEMMs and convolutions -------------===//
//
// MatMul, Gemm and Conv (and the convolution gradients) as per-step
// loaders and epilogues around the prelude's tc_gemm (fp16/bf16: WMMA,
// FP32 accumulation) or simt_gemm (fp32).
//
//===----------------------------------------------------------------------===//

#include "codegen/CudaKernels.h"
#include "runtime/cuda/KernelConfig.h"
#include "runtime/kernels/Window.h"

#include <functional>
#include <map>
#include <optional>

#include <algorithm>
#include <array>
#include <set>
#include <sstream>

using namespace ::mpc::rt;

namespace mlir::mpc::cuda {

namespace {

/// Whether cuBLASLt computes a GEMM of these types as ours does: fp16/bf16
/// operands (FP32 accumulation) into their own type or FP32; FP32 as FP32.
bool libraryTypes(DType ab, DType y) {
  if (ab == DType::F16 || ab == DType::BF16)
    return y == ab || y == DType::F32;
  return ab == DType::F32 && y == DType::F32;
}

/// The batch stride (in matrices) when `offsets` (per output batch) is
/// z * stride for every z; -1 otherwise.
int64_t uniformStride(const Shape &outBatch, const Shape &strides) {
  int64_t batch = numElements(outBatch), stride = -1;
  for (int64_t z = 0; z < batch; ++z) {
    int64_t r = z, off = 0;
    for (int64_t d = (int64_t)outBatch.size() - 1; d >= 0; --d) {
      off += (r % outBatch[d]) * strides[d];
      r /= outBatch[d];
    }
    if (z == 1)
      stride = off;
    if (off != z * std::max<int64_t>(stride, 0))
      return -1;
  }
  return std::max<int64_t>(stride, 0);
}

/// tc_gemm_mma's square tile: 128 (a 64 x 64 tile a warp, each fragment
/// ldmatrix reads feeding 4 or 8 products) while that still makes a wave
/// of blocks on a large GPU (about 128 SMs: A100, H100, H200), else 64.
int64_t mmaGemmTile(int64_t M, int64_t N, int64_t batch) {
  auto blocks = [&](int64_t t) {
    return (M + t - 1) / t * ((N + t - 1) / t) * batch;
  };
  return blocks(128) >= ::mpc::rt::cuda::kMmaGemmWave ? 128 : 64;
}

} // namespace

/// Whether a GEMM of `rowTiles` x `batch` blocks loops (gemmTiles).
static bool loopsTiles(int64_t rowTiles, int64_t batch) {
  const int64_t cap = ::mpc::rt::cuda::kMaxGridYZ;
  return rowTiles > cap || batch > cap;
}

/// A GEMM kernel's body: the context `c` its `prologue` fills for batch
/// zb, then `call` for row tile mb (as `c.z`, zb). Row tiles and batches
/// past a grid's 65535 along y and z (rows of a linear over a million
/// tokens, a batched product over 65536 heads) loop, each block taking
/// every 65535th, with a barrier between tiles where they pass through
/// shared memory (`shared`).
static std::string gemmTiles(const std::string &name,
                             const std::string &prologue,
                             const std::string &call, int64_t rowTiles,
                             int64_t batch, bool shared) {
  const int64_t cap = ::mpc::rt::cuda::kMaxGridYZ;
  std::string code =
      batch > cap ? "  for (i64 zb = blockIdx.z; zb < " + std::to_string(batch) +
                        "LL; zb += gridDim.z)\n"
                  : "  const i64 zb = blockIdx.z;\n";
  code += rowTiles > cap ? "  for (int mb = blockIdx.y; mb < " +
                               std::to_string(rowTiles) + "; mb += gridDim.y) {\n"
                         : "  {\n  const int mb = blockIdx.y;\n";
  code += "  " + name + "_ctx c;\n" + prologue + "  c.z = zb;\n  " + call + "\n";
  if (shared && loopsTiles(rowTiles, batch)) // reused by the next tile
    code += "  __syncthreads();\n";
  return code + "  }\n";
}

/// The grid of `colTiles` x `rowTiles` x `batch` blocks, y and z capped
/// at the GPU's 65535 (gemmTiles loops past them).
static std::array<int64_t, 3> gemmGrid(int64_t colTiles, int64_t rowTiles,
                                       int64_t batch) {
  const int64_t cap = ::mpc::rt::cuda::kMaxGridYZ;
  return {colTiles, std::min(rowTiles, cap), std::min(batch, cap)};
}

/// Loader and epilogue structs named after the kernel, then the kernel
/// calling tc_gemm_mma (low precision, strided operands: no loaders),
/// tc_gemm (low precision) or simt_gemm (fp32).
void Emitter::gemmKernel(Step &s, const std::string &name, DType t, int64_t M,
                int64_t N, int64_t K, int64_t batch,
                const std::string &prologue, const std::string &loadA,
                const std::string &loadB, const std::string &epilogue,
                const std::string &members, const StridedOperands *strided) {
  bool tc = t == DType::F16 || t == DType::BF16;
  if (!tc)
    strided = nullptr;
  std::string T = ctype(t), R = tc ? T : "float";
  cu << "struct " << name << "_ctx {\n" << members << "  i64 z;\n";
  if (!strided)
    cu << "  __device__ " << R << " a(int m, int k) const { " << loadA
       << " }\n  __device__ " << R << " b(int k, int n) const { " << loadB
       << " }\n";
  cu << "  __device__ void store(int m, int n, float acc) const { "
     << epilogue << " }\n};\n";
  if (!strided)
    cu << "struct " << name << "_la { const " << name
       << "_ctx *c; __device__ " << R
       << " operator()(int m, int k) const { return c->a(m, k); } };\n"
       << "struct " << name << "_lb { const " << name
       << "_ctx *c; __device__ " << R
       << " operator()(int k, int n) const { return c->b(k, n); } };\n";
  cu << "struct " << name << "_ep { const " << name
     << "_ctx *c; __device__ void operator()(int m, int n, float acc) const "
        "{ c->store(m, n, acc); } };\n";
  if (strided) {
    int64_t tile = mmaGemmTile(M, N, batch);
    // Its stages in dynamic shared memory, as many as let two blocks share
    // an SM of every target (their registers allow two).
    namespace k = ::mpc::rt::cuda;
    int64_t stage = k::mmaGemmStageBytes(tile, tile, strided->ta, strided->tb,
                                         dtypeSize(t));
    int64_t stages =
        k::mmaGemmStages(stage, k::sharedBytesPerBlock(plan.cudaArch, 2));
    sharedBytes = stages * stage;
    std::ostringstream call;
    call << "tc_gemm_mma<" << T << ", " << tile << ", " << tile << ", "
         << (strided->ta ? "true" : "false") << ", "
         << (strided->tb ? "true" : "false") << ", " << stages << ", "
         << sharedBytes << ">(" << M << ", " << N << ", " << K << ", "
         << strided->a << ", " << strided->lda << ", " << strided->b << ", "
         << strided->ldb << ", " << name << "_ep{&c}, mb);";
    const int64_t rowTiles = (M + tile - 1) / tile;
    cu << header(s, name, ::mpc::rt::cuda::kMmaGemmThreads) << " {\n"
       << gemmTiles(name, prologue, call.str(), rowTiles, batch, true)
       << "}\n\n";
    // (The emulation's plain product has no barriers, but for the loop's.)
    barrierFlag = loopsTiles(rowTiles, batch) ? "true" : "mpc_mma_gemm_fibers";
    launch(s, name, gemmGrid((N + tile - 1) / tile, rowTiles, batch),
           {::mpc::rt::cuda::kMmaGemmThreads, 1, 1});
    countFlops(2.0 * M * N * K * batch, tc);
    return;
  }
  int64_t threads = tc ? ::mpc::rt::cuda::kTcThreads
                       : ::mpc::rt::cuda::kSimtThreads;
  int64_t tileN = tc ? ::mpc::rt::cuda::kTcTileN : ::mpc::rt::cuda::kSimtTile;
  int64_t tileM = tc ? ::mpc::rt::cuda::kTcTileM : ::mpc::rt::cuda::kSimtTile;
  const int64_t rowTiles = (M + tileM - 1) / tileM;
  std::string call = (tc ? "tc_gemm<" + T + ">(" : std::string("simt_gemm(")) +
                     std::to_string(M) + ", " + std::to_string(N) + ", " +
                     std::to_string(K) + ", " + name + "_la{&c}, " + name +
                     "_lb{&c}, " + name + "_ep{&c}, mb);";
  cu << header(s, name, threads) << " {\n"
     << gemmTiles(name, prologue, call, rowTiles, batch, tc) << "}\n\n";
  barrier = tc && loopsTiles(rowTiles, batch);
  launch(s, name, gemmGrid((N + tileN - 1) / tileN, rowTiles, batch),
         {threads, 1, 1});
  countFlops(2.0 * M * N * K * batch, tc);
}

void Emitter::countFlops(double flops, bool tensorCores) {
  mod.flops += flops;
  if (tensorCores)
    mod.tensorCoreFlops += flops;
  gemmOnTensorCores = tensorCores;
}

bool Emitter::gemm(Step &s, const std::string &name) {
  const ValueInfo &a = val(s.inputs[0]);
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
  if (s.cuda.fusedRelu)
    epi += " v = mpc_relu(v);";
  epi += " st(Y, (i64)m * " + std::to_string(N) + " + n, v);";
  // cuBLASLt: C as a full matrix (beta * C) or a row vector (the bias
  // epilogue, beta 1); other broadcasts stay with the kernel.
  const ValueInfo &b = val(s.inputs[1]);
  if (libraryTypes(a.dtype, y.dtype) && b.dtype == a.dtype) {
    LibraryGemm g;
    g.m = M, g.n = N, g.k = K, g.transA = ta, g.transB = tb;
    g.relu = s.cuda.fusedRelu, g.alpha = alpha, g.a = s.inputs[0],
    g.b = s.inputs[1];
    bool ok = true;
    if (withC) {
      const ValueInfo &c = val(s.inputs[2]);
      if (c.dtype != y.dtype)
        ok = false;
      else if (c.shape == y.shape)
        g.c = s.inputs[2], g.beta = beta;
      else if (numElements(c.shape) == N && beta == 1.0 &&
               (c.shape.size() == 1 || (c.shape.size() == 2 && c.shape[0] == 1)))
        g.bias = s.inputs[2];
      else
        ok = false;
    }
    if (ok)
      s.cuda.gemm = g;
  }
  StridedOperands ops{"c.A", "c.B", ta ? M : K, tb ? K : N, ta, tb};
  gemmKernel(s, name, a.dtype, M, N, K, 1,
             "  c.A = in0; c.B = in1; c.C = " +
                 std::string(withC ? "in2" : "nullptr") + "; c.Y = out0;\n",
             loadA, loadB, epi, members, &ops);
  return true;
}

bool Emitter::matmul(Step &s, const std::string &name) {
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
  int64_t strideA = uniformStride(outBatch, as),
          strideB = uniformStride(outBatch, bs);
  if (batch > 1 && strideA == 1 && strideB == 0) {
    // Batches of rows times one matrix (a linear over a sequence): one
    // GEMM of all the rows, as torch's linear flattens them.
    M *= batch;
    batch = 1, strideA = 0;
    outBatch.clear();
  }
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
  std::string prologue = "  c.A = in0; c.B = in1; c.Y = out0;\n  { i64 z = zb; " +
                         offs + " c.oa = oa; c.ob = ob; }\n";
  if (libraryTypes(a.dtype, y.dtype) && b.dtype == a.dtype && strideA >= 0 &&
      strideB >= 0) {
    LibraryGemm g;
    g.m = M, g.n = N, g.k = K, g.batch = batch, g.relu = s.cuda.fusedRelu;
    g.strideA = strideA * M * K, g.strideB = strideB * K * N;
    g.a = s.inputs[0], g.b = s.inputs[1];
    s.cuda.gemm = g;
  }
  StridedOperands ops{"c.A + c.oa * " + std::to_string(M * K),
                      "c.B + c.ob * " + std::to_string(K * N), K, N, false,
                      false};
  gemmKernel(s, name, a.dtype, M, N, K, batch, prologue,
             rd("A", "oa * " + std::to_string(M * K) + " + (i64)m * " +
                         std::to_string(K) + " + k"),
             rd("B", "ob * " + std::to_string(K * N) + " + (i64)k * " +
                         std::to_string(N) + " + n"),
             "st(Y, z * " + std::to_string(M * N) + " + (i64)m * " +
                 std::to_string(N) + " + n, " +
                 (s.cuda.fusedRelu ? "mpc_relu(acc)" : "acc") +
                 ");",
             members, &ops);
  return true;
}

namespace {

std::string S(int64_t v) { return std::to_string(v); }

/// A 2-D convolution's sizes (x: [Nb, C, H, W], y: [Nb, Co, OH, OW],
/// kernel KH x KW, `groups` groups of Cg input and Mg output channels),
/// and where its operands keep an element: channels first, or with
/// `channels_last` x [Nb, H, W, C], y [Nb, OH, OW, Co] and the filter
/// [Co, KH, KW, Cg].
struct ConvGeometry {
  bool last;
  Window win;
  int64_t groups, Nb, C, H, W, Co, OH, OW, KH, KW, Cg, Mg;
  ConvGeometry(const Step &s, Shape x, Shape y, Shape w)
      : last(s.getInt("channels_last", 0)),
        win(s, first(x, last), first(y, last), kernel(first(w, last))),
        groups(s.getInt("group", 1)) {
    if (last)
      x = channelsFirstShape(x), y = channelsFirstShape(y);
    Nb = x[0], C = x[1], H = x[2], W = x[3], Co = y[1], OH = y[2], OW = y[3];
    KH = win.kernel[0], KW = win.kernel[1], Cg = C / groups, Mg = Co / groups;
  }
  static Shape first(const Shape &t, bool last) {
    return last ? channelsFirstShape(t) : t;
  }
  static Shape kernel(const Shape &w) { return Shape(w.begin() + 2, w.end()); }
  /// The index of image b, channel c, row h, column w of an [n, ch, h, w]
  /// tensor (as C++ expressions).
  std::string at(const std::string &b, int64_t ch, const std::string &c,
                 int64_t h, const std::string &y, int64_t w,
                 const std::string &x) const {
    if (last)
      return "(((i64)(" + b + ") * " + S(h) + " + (" + y + ")) * " + S(w) +
             " + (" + x + ")) * " + S(ch) + " + (" + c + ")";
    return "(((i64)(" + b + ") * " + S(ch) + " + (" + c + ")) * " + S(h) +
           " + (" + y + ")) * " + S(w) + " + (" + x + ")";
  }
  std::string xAt(const std::string &b, const std::string &c,
                  const std::string &h, const std::string &w) const {
    return at(b, C, c, H, h, W, w);
  }
  std::string yAt(const std::string &b, const std::string &c,
                  const std::string &h, const std::string &w) const {
    return at(b, Co, c, OH, h, OW, w);
  }
  /// Filter element (co, ci within the group, kernel tap kr = kh * KW + kw).
  std::string wAt(const std::string &co, const std::string &ci,
                  const std::string &kr) const {
    return last ? "((i64)(" + co + ") * " + S(KH * KW) + " + (" + kr + ")) * " +
                      S(Cg) + " + (" + ci + ")"
                : "((i64)(" + co + ") * " + S(Cg) + " + (" + ci + ")) * " +
                      S(KH * KW) + " + (" + kr + ")";
  }
};

/// Loader code returning im2col(x)[row][col] for group z: row = (ci, kh,
/// kw), col = (image, oh, ow); `zero` in the padding. `read(index)` is the
/// expression reading x at an index.
std::string im2colLoad(const ConvGeometry &g, const std::string &row,
                       const std::string &col, const std::string &zero,
                       const std::function<std::string(const std::string &)> &read) {
  const Window &win = g.win;
  return "int ci = " + row + " / " + S(g.KH * g.KW) + ", kr = " + row + " % " +
         S(g.KH * g.KW) + ", kh = kr / " + S(g.KW) + ", kw = kr % " + S(g.KW) +
         "; int b = " + col + " / " + S(g.OH * g.OW) + ", sp = " + col + " % " +
         S(g.OH * g.OW) + ", oh = sp / " + S(g.OW) + ", ow = sp % " + S(g.OW) +
         "; int ih = oh * " + S(win.strides[0]) + " - " + S(win.padBegin[0]) +
         " + kh * " + S(win.dilations[0]) + ", iw = ow * " + S(win.strides[1]) +
         " - " + S(win.padBegin[1]) + " + kw * " + S(win.dilations[1]) +
         "; if (ih < 0 || ih >= " + S(g.H) + " || iw < 0 || iw >= " + S(g.W) +
         ") return " + zero + "; return " +
         read(g.xAt("b", "z * " + S(g.Cg) + " + ci", "ih", "iw")) + ";";
}

/// The LibraryConv record of a convolution of geometry `g` when cuDNN's
/// legacy API computes it as written: symmetric padding, the output size
/// it derives itself, one float type `t` for every operand (`oneType`).
std::optional<LibraryConv> cudnnForm(LibraryConv::Kind kind,
                                     const ConvGeometry &g, bool oneType,
                                     DType t) {
  const Window &win = g.win;
  auto outSize = [](int64_t in, int64_t pad, int64_t k, int64_t stride,
                    int64_t dil) { return (in + 2 * pad - dil * (k - 1) - 1) / stride + 1; };
  if (!oneType || (t != DType::F16 && t != DType::BF16 && t != DType::F32) ||
      win.padBegin != win.padEnd ||
      g.OH != outSize(g.H, win.padBegin[0], g.KH, win.strides[0], win.dilations[0]) ||
      g.OW != outSize(g.W, win.padBegin[1], g.KW, win.strides[1], win.dilations[1]))
    return std::nullopt;
  LibraryConv v;
  v.kind = kind;
  v.n = g.Nb, v.c = g.C, v.h = g.H, v.w = g.W, v.k = g.Co, v.r = g.KH,
  v.s = g.KW;
  v.padH = win.padBegin[0], v.padW = win.padBegin[1];
  v.strideH = win.strides[0], v.strideW = win.strides[1];
  v.dilH = win.dilations[0], v.dilW = win.dilations[1], v.groups = g.groups;
  v.nhwc = g.last;
  return v;
}

} // namespace

bool Emitter::conv(Step &s, const std::string &name) {
  const ValueInfo &x = val(s.inputs[0]), &w = val(s.inputs[1]);
  const ValueInfo &y = val(s.outputs[0]);
  if (x.shape.size() != 4)
    return fail(s, "only 2-D convolution has a CUDA kernel yet");
  ConvGeometry g(s, x.shape, y.shape, w.shape);
  int64_t Mg = g.Mg, OH = g.OH, OW = g.OW;
  int64_t N = g.Nb * OH * OW, K = g.Cg * g.KH * g.KW;
  bool bias = s.inputs.size() > 2 && s.inputs[2] >= 0;
  // cuDNN: the convolution, then an FP32 bias added (cudnnAddTensor); with
  // a fp16/bf16 bias or a fused Relu, one fused call that adds the bias
  // and applies the Relu before the one rounding, as mpc's kernel does. A
  // Relu without a bias stays with mpc's kernel.
  if (!s.cuda.fusedRelu || bias)
    if (auto v = cudnnForm(LibraryConv::Forward, g,
                           w.dtype == x.dtype && y.dtype == x.dtype &&
                               (!bias || val(s.inputs[2]).dtype == x.dtype),
                           x.dtype))
      s.cuda.conv = *v;
  std::string T = ctype(x.dtype), Z = x.dtype == DType::F32 ? "0.0f" : T + "(0.0f)";
  bool f32 = x.dtype == DType::F32;
  std::string members = "  const " + T + " *X; const " + T + " *Wt; const " +
                        std::string(ctype(bias ? val(s.inputs[2]).dtype
                                               : x.dtype)) +
                        " *Bias; " + ctype(y.dtype) + " *Y;\n";
  std::string widx = g.wAt("z * " + S(Mg) + " + m", "k / " + S(g.KH * g.KW),
                           "k % " + S(g.KH * g.KW));
  std::string loadA = f32 ? "return ld(Wt, " + widx + ");" : "return Wt[" + widx + "];";
  // Implicit im2col: column n = (image, oh, ow), row k = (ci, kh, kw).
  std::string loadB = im2colLoad(g, "k", "n", Z, [&](const std::string &i) {
    return f32 ? "ld(X, " + i + ")" : "X[" + i + "]";
  });
  std::string epi = "i64 co = z * " + S(Mg) + " + m; int b = n / " +
                    S(OH * OW) + ", sp = n % " + S(OH * OW) + "; float v = acc" +
                    (bias ? " + ld(Bias, co)" : "") + ";" +
                    (s.cuda.fusedRelu ? " v = mpc_relu(v);" : "") +
                    " st(Y, " + g.yAt("b", "co", "sp / " + S(OW), "sp % " + S(OW)) +
                    ", v);";
  gemmKernel(s, name, x.dtype, Mg, N, K, g.groups,
             "  c.X = in0; c.Wt = in1; c.Bias = " +
                 std::string(bias ? "in2" : "nullptr") + "; c.Y = out0;\n",
             loadA, loadB, epi, members);
  return true;
}

/// Gradients of a 2-D convolution as implicit GEMMs on tensor cores.
/// Weight: dW[co, (ci,kh,kw)] = sum over (b,oh,ow) of dY * im2col(x).
/// Input: dX[ci, (b,ih,iw)] = sum over (co,kh,kw) of W * dY taken where
/// (ih + pad - kh*d) / stride lands on an output position (a gather, so
/// no atomics). ConvTranspose is the input gradient with X as dY, plus a
/// bias in the epilogue.
bool Emitter::convGrad(Step &s, const std::string &name) {
  bool weight = s.op == OpId::ConvGradWeight;
  bool bias = s.op == OpId::ConvTranspose && s.inputs.size() > 2 &&
              s.inputs[2] >= 0;
  const ValueInfo &dy = val(s.inputs[0]), &other = val(s.inputs[1]);
  const ValueInfo &out = val(s.outputs[0]);
  const ValueInfo &x = weight ? other : out, &w = weight ? out : other;
  if (x.shape.size() != 4)
    return fail(s, "only 2-D convolution gradients have a CUDA kernel yet");
  ConvGeometry g(s, x.shape, dy.shape, w.shape);
  const Window &win = g.win;
  int64_t H = g.H, W = g.W, OH = g.OH, OW = g.OW,
          KH = g.KH, KW = g.KW, Nb = g.Nb, Cg = g.Cg, Mg = g.Mg,
          groups = g.groups;
  if (!bias)
    if (auto v = cudnnForm(weight ? LibraryConv::BackwardFilter
                                  : LibraryConv::BackwardData,
                           g, dy.dtype == other.dtype && dy.dtype == out.dtype,
                           dy.dtype))
      s.cuda.conv = *v;
  std::string T = ctype(dy.dtype);
  bool f32 = dy.dtype == DType::F32;
  std::string Z = f32 ? "0.0f" : T + "(0.0f)";
  auto rd = [&](const std::string &p, const std::string &idx) {
    return f32 ? "ld(" + p + ", " + idx + ")" : p + "[" + idx + "]";
  };
  std::string members =
      "  const " + T + " *G; const " + T + " *O; " + ctype(out.dtype) +
      " *Y;\n" +
      (bias ? "  const " + std::string(ctype(val(s.inputs[2]).dtype)) +
                  " *Bias;\n"
            : "");
  std::string prologue = "  c.G = in0; c.O = in1; c.Y = out0;\n" +
                         std::string(bias ? "  c.Bias = in2;\n" : "");
  if (weight) {
    int64_t K = Cg * KH * KW, N = Nb * OH * OW;
    std::string loadA = // dY[b, z*Mg + m, sp] for column kk = (b, sp)
        "int b = k / " + S(OH * OW) + ", sp = k % " + S(OH * OW) +
        "; return " + rd("G", g.yAt("b", "z * " + S(Mg) + " + m",
                                    "sp / " + S(OW), "sp % " + S(OW))) + ";";
    // im2col(x)[n = (ci,kh,kw), k = (b, oh, ow)]
    std::string loadB = im2colLoad(g, "n", "k", Z, [&](const std::string &i) {
      return rd("O", i);
    });
    std::string epi = "st(Y, " + g.wAt("z * " + S(Mg) + " + m",
                                       "n / " + S(KH * KW), "n % " + S(KH * KW)) +
                      ", acc);";
    gemmKernel(s, name, dy.dtype, Mg, K, N, groups, prologue, loadA, loadB,
               epi, members);
  } else {
    int64_t K = Mg * KH * KW, N = Nb * H * W;
    std::string loadA = // W[z*Mg + co, m, kh, kw] for k = (co, kh, kw)
        "int co = k / " + S(KH * KW) + ", kr = k % " + S(KH * KW) +
        "; return " + rd("O", g.wAt("z * " + S(Mg) + " + co", "m", "kr")) + ";";
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
        rd("G", g.yAt("b", "z * " + S(Mg) + " + co", "oh", "ow")) + ";";
    std::string epi = "int b = n / " + S(H * W) + ", sp = n % " + S(H * W) +
                      "; st(Y, " +
                      g.xAt("b", "z * " + S(Cg) + " + m", "sp / " + S(W),
                            "sp % " + S(W)) +
                      ", acc" +
                      (bias ? " + ld(Bias, z * " + S(Cg) + " + m)" : "") +
                      ");";
    gemmKernel(s, name, dy.dtype, Cg, N, K, groups, prologue, loadA, loadB,
               epi, members);
  }
  return true;
}

void registerGemmEmitters(EmitterTable &t) {
  t.emit(OpId::Gemm, &Emitter::gemm);
  t.emit(OpId::MatMul, &Emitter::matmul);
  t.emit(OpId::Conv, &Emitter::conv);
  t.emit(OpId::ConvGradInput, &Emitter::convGrad);
  t.emit(OpId::ConvGradWeight, &Emitter::convGrad);
  t.emit(OpId::ConvTranspose, &Emitter::convGrad);
}

} // namespace mlir::mpc::cuda
