//===- CudaNnKernels.cpp - normalisation, softmax, pooling -----------------===//
//
// Kernels that accumulate: all in FP32, rounding once to the output type.
// Batch normalization has its own file (CudaBatchNormKernels.cpp), the
// row kernels' loops theirs (CudaRowLoops.cpp).
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
/// row, rowLoop); xhat and dxhat recomputed rather than stored; dx plus
/// its reader Add's addend where the kernel computes that Add.
bool Emitter::normGrad(Step &s, const std::string &name) {
  const ValueInfo &x = val(s.inputs[1]);
  int64_t rank = x.shape.size(), axis = s.getInt("axis", -1);
  AxisSplit sp = splitAt(x.shape, axis < 0 ? axis + rank : axis);
  int64_t rows = sp.outer, cols = sp.dim * sp.inner;
  int64_t sc = std::max<int64_t>(numElements(val(s.inputs[2]).shape), 1);
  bool layer = s.inputs.size() > 4 && s.inputs[4] >= 0;
  RowLoop r = rowLoop(s, rows, cols);
  // dx, plus the addend of the Add reading it, rounded as the Add rounds
  // (cuda.epilogueAdd: the residual stream's gradient).
  std::string dx = "k * (dh - a - xh * p)";
  DType t = val(s.outputs[0]).dtype;
  if (s.cuda.epilogueAdd >= 0)
    dx = roundedAs(t, roundedAs(t, dx) + " + ld(in" +
                          std::to_string(s.inputs.size()) + ", base + j)");
  std::string terms = "{ const float xh = (ld(in1, base + j) - m) * k, dh = "
                      "ld(in0, base + j) * ld(in2, j % " +
                      std::to_string(sc) + "LL); ";
  cu << header(s, name, r.warp ? kRowThreads : 256) << " {\n" << r.prologue
     << "  const float m = " << (layer ? "ld(in4, i)" : "0.0f")
     << ", k = ld(in3, i);\n  float a = 0.0f, p = 0.0f;\n"
     << rowEach(s, r, cols, terms + "a += dh; p += dh * xh; }")
     << "  a = " << (layer ? r.sum + "(a) / (float)n" : std::string("0.0f"))
     << ";\n  p = " << r.sum << "(p) / (float)n;\n"
     << rowEach(s, r, cols, terms + "st(out0, base + j, " + dx + "); }")
     << "}\n\n";
  rowLaunch(s, name, r, rows);
  return true;
}

bool Emitter::pool(Step &s, const std::string &name) {
  bool max = s.op == OpId::MaxPool;
  const ValueInfo &x = val(s.inputs[0]), &y = val(s.outputs[0]);
  if (x.shape.size() != 4)
    return fail(s, "only 2-D pooling has a CUDA kernel yet");
  // Channels last (max_pool's channels_last): a thread per output element
  // in NHWC order, so neighbouring threads take neighbouring channels.
  bool last = s.getInt("channels_last", 0);
  Shape xs = last ? channelsFirstShape(x.shape) : x.shape;
  Shape ys = last ? channelsFirstShape(y.shape) : y.shape;
  Window win(s, xs, ys, {});
  int64_t C = xs[1], H = xs[2], W = xs[3], OH = ys[2], OW = ys[3];
  int64_t n = numElements(y.shape);
  bool includePad = s.getInt("count_include_pad", 0);
  std::string S_C = std::to_string(C), HW = std::to_string(H * W) + "LL";
  // p: the (image, channel) plane; read(sp): x at spatial offset sp of it.
  auto read = [&](const std::string &sp) {
    return last ? "(p / " + S_C + " * " + HW + " + " + sp + ") * " + S_C +
                      " + p % " + S_C
                : "p * " + HW + " + " + sp;
  };
  cu << header(s, name, 256) << " {\n  i64 i = global_index();\n  if (i >= "
     << n << "LL) return;\n"
     << (last ? "  i64 t = i / " + S_C + ", p = t / " +
                    std::to_string(OH * OW) + "LL * " + S_C + " + i % " + S_C +
                    "; int o = t % " + std::to_string(OH * OW) + "LL"
              : "  i64 p = i / " + std::to_string(OH * OW) + "LL; int o = i % " +
                    std::to_string(OH * OW) + "LL")
     << ", oh = o / " << OW << ", ow = o % " << OW << ";\n"
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
     << "      float v = ld(in0, " << read("ih * " + std::to_string(W) + " + iw")
     << "); ++cnt; sum += v;\n"
     << "      if (arg < 0 || v > best || v != v) { best = v; arg = ih * " << W
     << " + iw; }\n    }\n"
     << (max ? "  st(out0, i, best);\n" : "  st(out0, i, sum / cnt);\n");
  if (max && s.outputs.size() > 1) // storage_order 1: column-major h, w
    cu << "  out1[i] = "
       << read(s.getInt("storage_order", 0) == 1
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
  // Channels last: a thread per input element in NHWC order; the outputs
  // it compares with are NHWC too (max_pool_grad's channels_last).
  bool last = s.getInt("channels_last", 0);
  if (last && (!max || !s.getInts("kernel_shape")))
    return fail(s, "a channels-last pooling gradient needs max_pool's window");
  Shape dxs = last ? channelsFirstShape(dx.shape) : dx.shape;
  Shape dys = last ? channelsFirstShape(dy.shape) : dy.shape;
  Window win(s, dxs, dys, {1, 1});
  int64_t C = dxs[1], H = dxs[2], W = dxs[3], OH = dys[2], OW = dys[3];
  int64_t n = numElements(dx.shape);
  bool includePad = s.getInt("count_include_pad", 0);
  std::string S_C = std::to_string(C);
  cu << header(s, name, 256) << " {\n  i64 i = global_index();\n  if (i >= "
     << n << "LL) return;\n"
     << (last ? "  i64 t = i / " + S_C + ", p = t / " + std::to_string(H * W) +
                    "LL * " + S_C + " + i % " + S_C + "; int sp = t % " +
                    std::to_string(H * W) + "LL"
              : "  i64 p = i / " + std::to_string(H * W) + "LL; int sp = i % " +
                    std::to_string(H * W) + "LL")
     << ", ih = sp / " << W << ", iw = sp % " << W
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
      cu << "      i64 o = "
         << (last ? "(p / " + S_C + " * " + std::to_string(OH * OW) +
                        "LL + oh * " + std::to_string(OW) + " + ow) * " + S_C +
                        " + p % " + S_C
                  : "p * " + std::to_string(OH * OW) + "LL + oh * " +
                        std::to_string(OW) + " + ow")
         << "; if (in1[o] == i) acc += ld(in0, o);\n    }\n  }\n";
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

/// CumSum and CumProd: a thread per line along `axis`, accumulated in
/// order as the CPU backend does (floats in FP64, stored rounded;
/// integers exactly, a product wrapping), so both give the same values
/// (Bloom's ALiBi positions are a cumsum of the attention mask).
bool Emitter::cumulative(Step &s, const std::string &name) {
  const ValueInfo &x = val(s.inputs[0]), &y = val(s.outputs[0]);
  int64_t rank = x.shape.size(), axis = s.getInt("axis", 0);
  AxisSplit sp = splitAt(x.shape, axis < 0 ? axis + rank : axis);
  bool exclusive = s.getInt("exclusive", 0), reverse = s.getInt("reverse", 0);
  bool fl = isFloat(x.dtype), prod = s.op == OpId::CumProd;
  std::string j = reverse ? "(" + std::to_string(sp.dim - 1) + "LL - j)" : "j";
  std::string step = "base + " + j + " * " + std::to_string(sp.inner) + "LL";
  std::string acc = fl ? "double" : prod ? "unsigned long long" : "i64";
  std::string read = fl ? "(double)ld(in0, i)" : "(" + acc + ")in0[i]";
  std::string write = fl ? std::string("st(out0, i, (float)acc);")
                         : "out0[i] = (" + std::string(ctype(y.dtype)) + ")acc;";
  std::string add = prod ? "acc *= " + read + ";" : "acc += " + read + ";";
  cu << header(s, name, 256)
     << " {\n  i64 t = global_index();\n  if (t >= " << sp.outer * sp.inner
     << "LL) return;\n  i64 base = (t / " << sp.inner << "LL) * "
     << sp.dim * sp.inner << "LL + t % " << sp.inner << "LL;\n  " << acc
     << " acc = " << (prod ? 1 : 0) << ";\n  for (i64 j = 0; j < " << sp.dim
     << "LL; ++j) {\n    i64 i = " << step << ";\n"
     << (exclusive ? "    " + write + "\n    " + add + "\n"
                   : "    " + add + "\n    " + write + "\n")
     << "  }\n}\n\n";
  launch1d(s, name, sp.outer * sp.inner);
  return true;
}

/// mpc.cum_prod_grad, as the CPU backend computes it: a thread per line
/// walks it from its end for r (FP64, each kept rounded in the output),
/// then from its start multiplying by the exclusive product.
bool Emitter::cumProdGrad(Step &s, const std::string &name) {
  const ValueInfo &x = val(s.inputs[0]);
  int64_t rank = x.shape.size(), axis = s.getInt("axis", 0);
  AxisSplit sp = splitAt(x.shape, axis < 0 ? axis + rank : axis);
  bool exclusive = s.getInt("exclusive", 0), reverse = s.getInt("reverse", 0);
  std::string n = std::to_string(sp.dim) + "LL";
  // Element k of the line in cum_prod's direction.
  auto elem = [&](const std::string &k) {
    std::string along =
        reverse ? std::to_string(sp.dim - 1) + "LL - (" + k + ")" : k;
    return "base + (" + along + ") * " + std::to_string(sp.inner) + "LL";
  };
  cu << header(s, name, 256)
     << " {\n  i64 t = global_index();\n  if (t >= " << sp.outer * sp.inner
     << "LL) return;\n  i64 base = (t / " << sp.inner << "LL) * "
     << sp.dim * sp.inner << "LL + t % " << sp.inner << "LL;\n"
     << "  double r = 0;\n  for (i64 k = " << n << " - 1; k >= 0; --k) {\n"
     << "    double next = k + 1 < " << n << " ? (double)ld(in0, "
     << elem("k + 1") << ") * r : 0.0;\n"
     << (exclusive ? "    double own = k + 1 < " + n + " ? (double)ld(in1, " +
                         elem("k + 1") + ") : 0.0;\n"
                   : "    double own = (double)ld(in1, " + elem("k") + ");\n")
     << "    r = own + next;\n    st(out0, " << elem("k")
     << ", (float)r);\n  }\n  double e = 1;\n  for (i64 k = 0; k < " << n
     << "; ++k) {\n    i64 i = " << elem("k")
     << ";\n    double x = (double)ld(in0, i);\n"
     << "    st(out0, i, (float)(e * (double)ld(out0, i)));\n    e *= x;\n  "
        "}\n}\n\n";
  launch1d(s, name, sp.outer * sp.inner);
  return true;
}

void registerNnEmitters(EmitterTable &t) {
  t.emit(OpId::Softmax, &Emitter::softmax);
  t.emit(OpId::LogSoftmax, &Emitter::softmax);
  t.emit(OpId::LayerNorm, &Emitter::layerNorm);
  t.emit(OpId::RmsNorm, &Emitter::rmsNorm);
  t.emit(OpId::NormGrad, &Emitter::normGrad);
  t.emit(OpId::MaxPool, &Emitter::pool);
  t.emit(OpId::AveragePool, &Emitter::pool);
  t.emit(OpId::MaxPoolGrad, &Emitter::poolGrad);
  t.emit(OpId::AveragePoolGrad, &Emitter::poolGrad);
  t.emit(OpId::CumSum, &Emitter::cumulative);
  t.emit(OpId::CumProd, &Emitter::cumulative);
  t.emit(OpId::CumProdGrad, &Emitter::cumProdGrad);
}

} // namespace mlir::mpc::cuda
