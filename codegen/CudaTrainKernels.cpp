//===- CudaTrainKernels.cpp - losses, loss scaling, optimizers -------------===//
//
// The kernels a train step adds around the model: classification losses
// and their gradients, the fused unscale + all-finite check, the dynamic
// loss-scale update, and the ai.onnx.preview.training optimizers. All in
// FP32, rounding once to the output type.
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

/// Rows of at least this many classes get a warp each (lanes stride along
/// the row, coalesced; shuffles combine), shorter rows a thread each.
constexpr int64_t kWarpClassesMin = 64;

/// softmax_cross_entropy_loss (scores) or nll_loss (`fromLogProb`): one
/// block, so the loss is summed in one fixed order; a warp per row for
/// long rows (vocabularies), a thread per row for short ones.
bool Emitter::crossEntropy(Step &s, const std::string &name) {
  bool fromLogProb = s.op == OpId::NegativeLogLikelihoodLoss;
  const ValueInfo &x = val(s.inputs[0]);
  if (x.shape.size() != 2)
    return fail(s, "only [N, C] scores have a CUDA kernel yet");
  int64_t N = x.shape[0], C = x.shape[1];
  std::string red = s.getString("reduction", "mean");
  bool weights = s.inputs.size() > 2 && s.inputs[2] >= 0;
  bool ignore = s.has("ignore_index");
  int64_t ig = s.getInt("ignore_index", 0);
  // (nll_loss reads one element a row: a thread per row.)
  bool warp = !fromLogProb && C >= kWarpClassesMin;
  // Workers: 8 warps (lanes stride the classes) or 256 threads.
  std::string workers = warp ? "8" : "256", stride = warp ? "32" : "1";
  std::string first = warp ? "lane" : "0";
  std::string wsumF = warp ? "mpc_warp_sum" : "", wmaxF = warp ? "mpc_warp_max" : "";
  std::string row = "n * " + std::to_string(C) + "LL + c";
  std::string loop = "    for (i64 c = " + first + "; c < " + std::to_string(C) +
                     "LL; c += " + stride + ") ";
  cu << header(s, name, 256) << " {\n  __shared__ float ls[256], ws[256];\n"
     << "  const int worker = threadIdx.x" << (warp ? " / 32" : "")
     << ", lane = threadIdx.x" << (warp ? " % 32" : " * 0") << ";\n"
     << "  float lsum = 0.0f, wsum = 0.0f;\n"
     << "  for (i64 n = worker; n < " << N << "LL; n += " << workers << ") {\n"
     << "    float mx = -INFINITY, sum = 0.0f, lse = 0.0f;\n";
  if (!fromLogProb)
    cu << loop << "mx = fmaxf(mx, ld(in0, " << row << "));\n"
       << "    mx = " << wmaxF << "(mx);\n"
       << loop << "sum += expf(ld(in0, " << row << ") - mx);\n"
       << "    lse = mx + logf(" << wsumF << "(sum));\n";
  if (!fromLogProb && s.outputs.size() > 1)
    cu << loop << "st(out1, " << row << ", ld(in0, " << row << ") - lse);\n";
  cu << "    i64 label = in1[n];\n"
     << "    if (" << (ignore ? "label == " + std::to_string(ig) + "LL" : "false")
     << ") { " << (red == "none" ? "if (lane == 0) st(out0, n, 0.0f); " : "")
     << "continue; }\n"
     << "    float w = " << (weights ? "ld(in2, label)" : "1.0f") << ";\n"
     << "    float l = -w * (ld(in0, n * " << C << "LL + label) - lse);\n"
     << (red == "none" ? "    if (lane == 0) st(out0, n, l);\n" : "")
     << "    lsum += l; wsum += w;\n  }\n"
     << "  if (lane == 0) { ls[worker] = lsum; ws[worker] = wsum; }\n"
     << "  __syncthreads();\n"
     << "  for (int h = " << (warp ? 4 : 128) << "; h > 0; h >>= 1) { if "
        "(threadIdx.x < h) { ls[threadIdx.x] += ls[threadIdx.x + h]; "
        "ws[threadIdx.x] += ws[threadIdx.x + h]; } __syncthreads(); }\n";
  if (red != "none")
    cu << "  if (threadIdx.x == 0) st(out0, 0, ls[0]"
       << (red == "mean" ? " / ws[0]" : "") << ");\n";
  cu << "}\n\n";
  barrier = true;
  launch(s, name, {1, 1, 1}, {256, 1, 1});
  mod.flops += 4.0 * N * C;
  return true;
}

/// softmax_cross_entropy_loss_grad (`withSoftmax`: softmax(logp) * scale
/// everywhere, minus scale at the label) or nll_loss_grad (-scale at the
/// label only); scale = weight[label] * dloss / denom, as the CPU backend.
/// Every block sums the weights for `denom` itself; then a warp per row
/// (lanes along the classes, coalesced) for long rows, a thread per row
/// for short ones.
bool Emitter::crossEntropyGrad(Step &s, const std::string &name) {
  bool withSoftmax = s.op == OpId::SoftmaxCrossEntropyLossGrad;
  const ValueInfo &lp = val(s.inputs[1]);
  if (lp.shape.size() != 2)
    return fail(s, "only [N, C] scores have a CUDA kernel yet");
  int64_t N = lp.shape[0], C = lp.shape[1];
  std::string red = s.getString("reduction", "mean");
  bool weights = s.inputs.size() > 3 && s.inputs[3] >= 0;
  bool ignore = s.has("ignore_index");
  bool warp = C >= kWarpClassesMin;
  int64_t rowsPerBlock = warp ? 8 : 256;
  std::string skip = ignore ? "label == " + std::to_string(s.getInt("ignore_index", 0)) + "LL"
                            : std::string("false");
  std::string w = weights ? "ld(in3, label)" : "1.0f";
  std::string at = "n * " + std::to_string(C) + "LL + c";
  cu << header(s, name, 256) << " {\n  __shared__ float ws[256];\n"
     << "  float wsum = 0.0f;\n  for (i64 n = threadIdx.x; n < " << N
     << "; n += 256) { i64 label = in2[n]; if (!(" << skip << ")) wsum += "
     << w << "; }\n  ws[threadIdx.x] = wsum; __syncthreads();\n"
     << "  for (int h = 128; h > 0; h >>= 1) { if (threadIdx.x < h) "
        "ws[threadIdx.x] += ws[threadIdx.x + h]; __syncthreads(); }\n"
     << "  float denom = " << (red == "mean" ? "ws[0]" : "1.0f") << ";\n"
     << "  i64 n = (i64)blockIdx.x * " << rowsPerBlock << " + threadIdx.x"
     << (warp ? " / 32" : "") << ";\n"
     << "  if (n < " << N << "LL) {\n"
     << "    i64 label = in2[n];\n"
     << "    float scale = (" << skip << ") ? 0.0f : " << w << " * ld(in0, "
     << (red == "none" ? "n" : "0") << ") / denom;\n"
     << "    for (i64 c = " << (warp ? "threadIdx.x % 32" : "0") << "; c < "
     << C << "LL; c += " << (warp ? 32 : 1) << ") st(out0, " << at << ", "
     << (withSoftmax ? "expf(ld(in1, " + at + ")) * scale - " : "-")
     << "(c == label ? scale : 0.0f));\n  }\n}\n\n";
  barrier = true;
  launch(s, name, {(N + rowsPerBlock - 1) / rowsPerBlock, 1, 1}, {256, 1, 1});
  return true;
}

/// Every gradient times 1/scale, and one all-finite flag: a one-thread
/// prologue clears the flag, then every block strides over all gradients
/// and a thread that meets inf/NaN sets it (all writers write 1).
bool Emitter::unscaleGrads(Step &s, const std::string &name) {
  size_t n = s.inputs.size() - 1;
  int64_t largest = 1;
  for (size_t k = 0; k < n; ++k)
    largest = std::max(largest, numElements(val(s.inputs[k]).shape));
  int64_t blocks = std::min<int64_t>((largest + 255) / 256, 1024);
  cu << header(s, name + "_clear", 1) << " {\n  out" << n << "[0] = 0;\n}\n\n";
  launch(s, name + "_clear", {}, {}, /*prologue=*/true);
  cu << header(s, name, 256) << " {\n"
     << "  float inv = (float)(1.0 / (double)ld(in" << n << ", 0));\n"
     << "  i64 first = (i64)blockIdx.x * 256 + threadIdx.x, stride = "
        "(i64)gridDim.x * 256;\n  int bad = 0;\n";
  for (size_t k = 0; k < n; ++k)
    cu << "  for (i64 i = first; i < " << numElements(val(s.inputs[k]).shape)
       << "LL; i += stride) { float v = ld(in" << k
       << ", i); bad |= !isfinite(v); st(out" << k << ", i, v * inv); }\n";
  cu << "  if (bad) out" << n << "[0] = 1;\n}\n\n";
  launch(s, name, {blocks, 1, 1}, {256, 1, 1});
  return true;
}

/// A gradient bucket's all-reduce as one rank computes it: the identity.
/// With several ranks the session hands the step to NCCL instead
/// (runtime/cuda/Nccl.cpp), out of place from the same buffers.
bool Emitter::allReduce(Step &s, const std::string &name) {
  int64_t largest = 1;
  for (int v : s.inputs)
    largest = std::max(largest, numElements(val(v).shape));
  int64_t blocks = std::min<int64_t>((largest + 255) / 256, 1024);
  cu << header(s, name, 256) << " {\n"
     << "  i64 first = (i64)blockIdx.x * 256 + threadIdx.x, stride = "
        "(i64)gridDim.x * 256;\n";
  for (size_t k = 0; k < s.inputs.size(); ++k)
    cu << "  for (i64 i = first; i < " << numElements(val(s.inputs[k]).shape)
       << "LL; i += stride) st(out" << k << ", i, ld(in" << k << ", i));\n";
  cu << "}\n\n";
  launch(s, name, {blocks, 1, 1}, {256, 1, 1});
  return true;
}

/// ai.onnx.preview.training Momentum / Adagrad / Adam as runtime/kernels/
/// Training.cpp computes them: operands (R, T, X..., G..., state...), a
/// thread per element index across the optimized tensors.
bool Emitter::onnxOptimizer(Step &s, const std::string &name) {
  OpId op = s.op;
  int groups = op == OpId::Adam ? 4 : 3;
  size_t n = (s.inputs.size() - 2) / groups;
  int64_t largest = 1;
  for (size_t k = 0; k < n; ++k)
    largest = std::max(largest, numElements(val(s.inputs[2 + k]).shape));
  auto in = [&](size_t group, size_t k) {
    return "ld(in" + std::to_string(2 + group * n + k) + ", i)";
  };
  auto out = [&](size_t group, size_t k) {
    return "out" + std::to_string(group * n + k);
  };
  float lambda = (float)s.getFloat("norm_coefficient", 0);
  cu << header(s, name, 256) << " {\n  i64 i = global_index();\n"
     << "  float r = ld(in0, 0); i64 t = in1[0];\n";
  if (op == OpId::Momentum)
    cu << "  float alpha = " << flt((float)s.getFloat("alpha", 0))
       << ", beta = t > 0 ? " << flt((float)s.getFloat("beta", 0))
       << " : 1.0f;\n";
  else if (op == OpId::Adagrad)
    cu << "  float rate = r / (1.0f + (float)t * "
       << flt((float)s.getFloat("decay_factor", 0)) << ");\n";
  else
    cu << "  float alpha = " << flt((float)s.getFloat("alpha", 0.9))
       << ", beta = " << flt((float)s.getFloat("beta", 0.999))
       << ";\n  float rate = t > 0 ? (float)(r * sqrt(1.0 - pow((double)beta, "
          "(double)t)) / (1.0 - pow((double)alpha, (double)t))) : r;\n";
  for (size_t k = 0; k < n; ++k) {
    cu << "  if (i < " << numElements(val(s.inputs[2 + k]).shape)
       << "LL) {\n    float x = " << in(0, k) << ", gr = " << flt(lambda)
       << " * x + " << in(1, k) << ";\n";
    if (op == OpId::Momentum)
      cu << "    float vn = alpha * " << in(2, k) << " + beta * gr;\n    st("
         << out(1, k) << ", i, vn);\n    st(" << out(0, k) << ", i, "
         << (s.getString("mode", "standard") == "nesterov"
                 ? "x - r * (gr + alpha * vn)"
                 : "x - r * vn")
         << ");\n";
    else if (op == OpId::Adagrad)
      cu << "    float hn = " << in(2, k) << " + gr * gr;\n    st(" << out(1, k)
         << ", i, hn);\n    st(" << out(0, k) << ", i, x - rate * gr / (sqrtf(hn) + "
         << flt((float)s.getFloat("epsilon", 1e-6)) << "));\n";
    else
      cu << "    float vn = alpha * " << in(2, k) << " + (1 - alpha) * gr;\n"
         << "    float hn = beta * " << in(3, k) << " + (1 - beta) * gr * gr;\n"
         << "    st(" << out(1, k) << ", i, vn); st(" << out(2, k)
         << ", i, hn);\n    st(" << out(0, k) << ", i, (1 - "
         << flt((float)s.getFloat("norm_coefficient_post", 0))
         << ") * (x - rate * (vn / (sqrtf(hn) + "
         << flt((float)s.getFloat("epsilon", 1e-6)) << "))));\n";
    cu << "  }\n";
  }
  cu << "}\n\n";
  launch1d(s, name, largest);
  return true;
}

bool Emitter::updateLossScale(Step &s, const std::string &name) {
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

void registerTrainEmitters(EmitterTable &t) {
  t.emit(OpId::SoftmaxCrossEntropyLoss, &Emitter::crossEntropy);
  t.emit(OpId::NegativeLogLikelihoodLoss, &Emitter::crossEntropy);
  t.emit(OpId::SoftmaxCrossEntropyLossGrad, &Emitter::crossEntropyGrad);
  t.emit(OpId::NegativeLogLikelihoodLossGrad, &Emitter::crossEntropyGrad);
  t.emit(OpId::UnscaleGrads, &Emitter::unscaleGrads);
  t.emit(OpId::AllReduce, &Emitter::allReduce);
  t.emit(OpId::UpdateLossScale, &Emitter::updateLossScale);
  for (OpId op : {OpId::Momentum, OpId::Adagrad, OpId::Adam})
    t.emit(op, &Emitter::onnxOptimizer);
}

} // namespace mlir::mpc::cuda
