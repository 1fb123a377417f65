//===- CudaTrainKernels.cpp - losses, loss scaling, optimizers -------------===//
//
// The kernels a train step adds around the model: classification losses
// and their gradients, the fused unscale + all-finite check, the dynamic
// loss-scale update, and the ai.onnx.preview.training optimizers. All in
// FP32, rounding once to the output type.
//
//===----------------------------------------------------------------------===//

#include "codegen/CudaKernels.h"
#include "runtime/cuda/KernelCalls.h"
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

std::string ignoredLabel(const Step &s) {
  return s.has("ignore_index")
             ? "label == " + std::to_string(s.getInt("ignore_index", 0)) + "LL"
             : std::string("false");
}

std::string labelWeightSum(const Step &s, int64_t rows, const std::string &w) {
  return "  __shared__ float ws[256];\n  float wsum = 0.0f;\n"
         "  for (i64 r = threadIdx.x; r < " + std::to_string(rows) +
         "LL; r += 256) { const i64 label = in2[r]; if (!(" + ignoredLabel(s) +
         ")) wsum += " + w + "; }\n"
         "  ws[threadIdx.x] = wsum; __syncthreads();\n"
         "  for (int h = 128; h > 0; h >>= 1) { if (threadIdx.x < h) "
         "ws[threadIdx.x] += ws[threadIdx.x + h]; __syncthreads(); }\n";
}

/// The end of a one-block loss kernel whose workers left their sums of
/// losses and weights in ls[] and ws[]: a tree from `half` down (a fixed
/// order), the reduced loss stored unless "none", then its launch.
void Emitter::lossSum(Step &s, const std::string &name, int half,
                      int64_t elements) {
  std::string red = s.getString("reduction", "mean");
  cu << "  __syncthreads();\n"
     << "  for (int h = " << half << "; h > 0; h >>= 1) { if "
        "(threadIdx.x < h) { ls[threadIdx.x] += ls[threadIdx.x + h]; "
        "ws[threadIdx.x] += ws[threadIdx.x + h]; } __syncthreads(); }\n";
  if (red != "none")
    cu << "  if (threadIdx.x == 0) st(out0, 0, ls[0]"
       << (red == "mean" ? " / ws[0]" : "") << ");\n";
  cu << "}\n\n";
  barrier = true;
  launch(s, name, {1, 1, 1}, {256, 1, 1});
  mod.flops += 4.0 * elements;
}

/// softmax_cross_entropy_loss (scores) or nll_loss (`fromLogProb`): one
/// block, so the loss is summed in one fixed order; a warp per row for
/// long rows (vocabularies), a thread per row for short ones.
bool Emitter::crossEntropy(Step &s, const std::string &name) {
  bool fromLogProb = s.op == OpId::NegativeLogLikelihoodLoss;
  const ValueInfo &x = val(s.inputs[0]);
  if (x.shape.size() > 2)
    return spatialCrossEntropy(s, name);
  if (x.shape.size() != 2)
    return fail(s, "scores of rank " + std::to_string(x.shape.size()) +
                       " (not [N, C, ...])");
  int64_t N = x.shape[0], C = x.shape[1];
  std::string red = s.getString("reduction", "mean");
  bool weights = s.inputs.size() > 2 && s.inputs[2] >= 0;
  // (nll_loss reads one element a row: a thread per row.)
  bool warp = !fromLogProb && C >= kWarpClassesMin;
  if (warp && s.outputs.size() > 1 && val(s.outputs[1]).dtype == DType::F32)
    return crossEntropyRows(s, name);
  // Workers: 8 warps (lanes stride the classes) or 256 threads.
  std::string workers = warp ? "8" : "256", stride = warp ? "32" : "1";
  RowLoop r{"", stride, warp ? "mpc_warp_sum" : "",
            warp ? "mpc_warp_max" : "", warp};
  r.hold = warp; // a row of up to 1024 classes read once
  std::string len = std::to_string(C) + "LL";
  cu << header(s, name, 256) << " {\n  __shared__ float ls[256], ws[256];\n"
     << "  const int worker = threadIdx.x" << (warp ? " / 32" : "")
     << ", lane = threadIdx.x" << (warp ? " % 32" : " * 0") << ";\n"
     << "  float lsum = 0.0f, wsum = 0.0f;\n"
     << "  for (i64 n = worker; n < " << N << "LL; n += " << workers << ") {\n"
     << "    const i64 base = n * " << len << ";\n"
     << (fromLogProb ? "    const float lse = 0.0f;\n"
                     : rowLogSoftmax(s, r, C, s.outputs.size() > 1));
  cu << "    i64 label = in1[n];\n"
     << "    if (" << ignoredLabel(s)
     << ") { " << (red == "none" ? "if (lane == 0) st(out0, n, 0.0f); " : "")
     << "continue; }\n"
     << "    float w = " << (weights ? "ld(in2, label)" : "1.0f") << ";\n"
     << "    float l = -w * (ld(in0, n * " << C << "LL + label) - lse);\n"
     << (red == "none" ? "    if (lane == 0) st(out0, n, l);\n" : "")
     << "    lsum += l; wsum += w;\n  }\n"
     << "  if (lane == 0) { ls[worker] = lsum; ws[worker] = wsum; }\n";
  lossSum(s, name, warp ? 4 : 128, N * C);
  return true;
}

std::string Emitter::rowLogSoftmax(const Step &s, RowLoop &r,
                                   int64_t C, bool store) {
  // In order: the first loop over the row declares what the others read
  // (RowLoop::cached), and a chain of + leaves its operands unsequenced.
  std::string len = std::to_string(C) + "LL";
  std::ostringstream os;
  os << "  float mx = -INFINITY, sum = 0.0f;\n"
     << rowEach(s, r, C, "mx = fmaxf(mx, ld(in0, base + j));", len)
     << "  mx = " << r.max << "(mx);\n"
     << rowEach(s, r, C, "sum += expf(ld(in0, base + j) - mx);", len)
     << "  const float lse = mx + logf(" << r.sum << "(sum));\n";
  if (store)
    os << rowEach(s, r, C, "st(out1, base + j, ld(in0, base + j) - lse);", len);
  return os.str();
}

/// softmax_cross_entropy_loss with its log-probabilities as an FP32 output
/// (a train step) over long rows (vocabularies): the rows over as many
/// blocks as they need (a prologue: a warp or, over 1024 classes, a block
/// per row writes x - lse), then
/// one block sums -w * logp[label] in a fixed order. Each row's loss has
/// the bits of the one-kernel form; only the sum's order differs.
bool Emitter::crossEntropyRows(Step &s, const std::string &name) {
  const ValueInfo &x = val(s.inputs[0]);
  int64_t N = x.shape[0], C = x.shape[1];
  std::string red = s.getString("reduction", "mean");
  bool weights = s.inputs.size() > 2 && s.inputs[2] >= 0;
  std::string skip = ignoredLabel(s);
  // A warp a row, held in registers, up to 1024 classes; a block a row
  // above (a vocabulary: its re-reads stay in L2 with fewer rows in flight).
  bool block = !warpHoldsRow(s, C);
  int64_t rowsPerBlock = block ? 1 : kRowThreads / 32;
  RowLoop r{"", block ? std::to_string(kRowThreads) : "32",
            block ? "mpc_block_sum" : "mpc_warp_sum",
            block ? "mpc_block_max" : "mpc_warp_max", true};
  r.block = block;
  r.hold = true; // rows of up to 32 values a thread read once
  std::string len = std::to_string(C) + "LL";
  cu << header(s, name + "_rows", kRowThreads) << " {\n"
     << (block ? "  const i64 n = blockIdx.x;\n  const int lane = threadIdx.x;\n"
               : "  const i64 n = (i64)blockIdx.x * " +
                     std::to_string(rowsPerBlock) +
                     " + threadIdx.x / 32;\n  const int lane = threadIdx.x % 32;\n")
     << "  if (n >= " << N << "LL) return;\n"
     << "  const i64 base = n * " << len << ";\n"
     << rowLogSoftmax(s, r, C, true) << "}\n\n";
  barrier = true; // the lanes meet in the shuffles (host emulation)
  launch(s, name + "_rows", {(N + rowsPerBlock - 1) / rowsPerBlock, 1, 1},
         {kRowThreads, 1, 1}, /*prologue=*/true);
  cu << header(s, name, 256) << " {\n  __shared__ float ls[256], ws[256];\n"
     << "  float lsum = 0.0f, wsum = 0.0f;\n"
     << "  for (i64 n = threadIdx.x; n < " << N << "LL; n += 256) {\n"
     << "    i64 label = in1[n];\n"
     << "    if (" << skip << ") { "
     << (red == "none" ? "st(out0, n, 0.0f); " : "") << "continue; }\n"
     << "    float w = " << (weights ? "ld(in2, label)" : "1.0f") << ";\n"
     << "    float l = -w * ld(out1, n * " << C << "LL + label);\n"
     << (red == "none" ? "    st(out0, n, l);\n" : "")
     << "    lsum += l; wsum += w;\n  }\n"
     << "  ls[threadIdx.x] = lsum; ws[threadIdx.x] = wsum;\n";
  lossSum(s, name, 128, N * C);
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
  if (lp.shape.size() > 2)
    return spatialCrossEntropyGrad(s, name);
  if (lp.shape.size() != 2)
    return fail(s, "scores of rank " + std::to_string(lp.shape.size()) +
                       " (not [N, C, ...])");
  int64_t N = lp.shape[0], C = lp.shape[1];
  std::string red = s.getString("reduction", "mean");
  bool weights = s.inputs.size() > 3 && s.inputs[3] >= 0;
  bool warp = C >= kWarpClassesMin;
  int64_t rowsPerBlock = warp ? 8 : 256;
  std::string skip = ignoredLabel(s);
  std::string w = weights ? "ld(in3, label)" : "1.0f";
  RowLoop r{"", warp ? "32" : "1", "", "", warp};
  cu << header(s, name, 256) << " {\n" << labelWeightSum(s, N, w)
     << "  float denom = " << (red == "mean" ? "ws[0]" : "1.0f") << ";\n"
     << "  i64 n = (i64)blockIdx.x * " << rowsPerBlock << " + threadIdx.x"
     << (warp ? " / 32" : "") << ";\n"
     << "  if (n < " << N << "LL) {\n"
     << "    i64 label = in2[n];\n"
     << "    float scale = (" << skip << ") ? 0.0f : " << w << " * ld(in0, "
     << (red == "none" ? "n" : "0") << ") / denom;\n"
     << "    const i64 base = n * " << C << "LL;\n"
     << "    const int lane = " << (warp ? "threadIdx.x % 32" : "0") << ";\n"
     << rowEach(s, r, C,
                "st(out0, base + j, " +
                    (withSoftmax ? "expf(ld(in1, base + j)) * scale - "
                                 : std::string("-")) +
                    "(j == label ? scale : 0.0f));",
                std::to_string(C) + "LL")
     << "  }\n}\n\n";
  barrier = true;
  launch(s, name, {(N + rowsPerBlock - 1) / rowsPerBlock, 1, 1}, {256, 1, 1});
  return true;
}

/// Tensors a multi-tensor launch takes at most (apex's multi_tensor_apply
/// takes ~110 by value; 32 keep the parameter struct under 1 KiB).
constexpr int kTensorsPerLaunch = 32;

/// A multi-tensor step (TensorLists in runtime/Plan.h): tensors grouped by
/// their operands' types, each group in launches of `perLaunch` slots; a
/// kernel per group taking one struct (KernelCalls' packed layout) whose
/// slot array it walks, each slot's elements grid-strided, its bulk in
/// 16-byte vectors (the arena's buffers are 256-byte aligned). In
/// `c.body`, `$X<g>, i` and `$Y<g>, i` address input and output group g's
/// operand at element i; shared operands are in<j> and out<j> (leading
/// then trailing). `c.slotEnd` runs after each slot's elements, in slot t.
bool Emitter::tensorLists(Step &s, const std::string &name,
                          const Emitter::TensorListCode &c) {
  TensorLists &l = s.cuda.lists;
  l.shared = c.shared;
  int inShared = c.shared[0] + c.shared[1], outShared = c.shared[2] + c.shared[3];
  int outGroups = c.outGroups;
  int64_t outs = (int64_t)s.outputs.size() - outShared,
          ins = (int64_t)s.inputs.size() - inShared;
  // Without per-tensor outputs (a step that only reads its tensors) each
  // input is a tensor.
  int n = outGroups == 0 ? (outs == 0 ? (int)ins : 0)
          : outs > 0 && outs % outGroups == 0 ? (int)(outs / outGroups)
                                              : 0;
  if (n <= 0 || ins < 0 || ins % n)
    return fail(s, "operands that do not form tensor lists");
  int inGroups = (int)(ins / n);
  auto input = [&](int g, int t) { return s.inputs[c.shared[0] + g * n + t]; };
  auto output = [&](int g, int t) { return s.outputs[c.shared[2] + g * n + t]; };
  // Tensors whose operands have the same types share a kernel.
  std::vector<std::string> kinds;
  std::map<std::string, std::vector<int>> members;
  for (int t = 0; t < n; ++t) {
    std::string kind;
    for (int g = 0; g < inGroups; ++g)
      kind += std::string(ctype(val(input(g, t)).dtype)) + ",";
    for (int g = 0; g < outGroups; ++g)
      kind += std::string(ctype(val(output(g, t)).dtype)) + ",";
    if (!members.count(kind))
      kinds.push_back(kind);
    members[kind].push_back(t);
  }
  int per = 1;
  for (auto &[kind, ts] : members)
    per = std::max(per, std::min<int>((int)ts.size(), kTensorsPerLaunch));
  l.tensors = n;
  l.perLaunch = per;
  for (size_t k = 0; k < kinds.size(); ++k) {
    const std::vector<int> &ts = members[kinds[k]];
    std::string kernel = name + (k ? "_" + std::to_string(k) : "");
    int t0 = ts[0]; // the types of the group, from its first tensor
    // The struct, in KernelCalls' order: shared inputs (leading, trailing),
    // shared outputs alike, then the slots. `local` names the shared
    // operands for the code.
    std::string shared, local, slot, vectors, stores, aligned;
    auto sharedOperands = [&](bool in) {
      const std::vector<int> &vs = in ? s.inputs : s.outputs;
      int lead = c.shared[in ? 0 : 2], trail = c.shared[in ? 1 : 3];
      for (int j = 0; j < lead + trail; ++j) {
        int v = j < lead ? vs[j] : vs[vs.size() - (lead + trail) + j];
        std::string type = std::string(in ? "const " : "") +
                           ctype(v >= 0 ? val(v).dtype : DType::F32) + " *";
        std::string field = (in ? "in" : "out") + std::to_string(j);
        shared += "  " + type + field + ";\n";
        local += "  " + type + "__restrict__ " + field + " = a." + field + ";\n";
      }
    };
    sharedOperands(true);
    sharedOperands(false);
    if (c.scratch) {
      shared += "  double *scratch;\n";
      local += "  double *const scratch = a.scratch;\n";
    }
    // Each slot's bulk: `width` elements of its narrowest operand (16 bytes).
    int64_t narrowest = 8;
    for (bool in : {true, false})
      for (int g = 0; g < (in ? inGroups : outGroups); ++g)
        narrowest = std::min<int64_t>(
            narrowest, dtypeSize(val(in ? input(g, t0) : output(g, t0)).dtype));
    std::string width = std::to_string(16 / narrowest);
    std::string bulk = c.body, tail = c.body;
    for (bool in : {true, false})
      for (int g = 0; g < (in ? inGroups : outGroups); ++g) {
        DType dt = val(in ? input(g, t0) : output(g, t0)).dtype;
        std::string field = (in ? "x" : "y") + std::to_string(g);
        std::string vec = "mpc_vec<" + std::string(ctype(dt)) + ", " + width + ">";
        slot += std::string("    ") + (in ? "const " : "") + ctype(dt) + " *" +
                field + ";\n";
        aligned += "      mpc_check_aligned(q." + field +
                   ", 16, \"multi-tensor vector access\");\n";
        if (in) {
          vectors += "      const " + vec + " v" + field + " = ((const " + vec +
                     " *)q." + field + ")[b];\n";
        } else {
          vectors += "      " + vec + " v" + field + ";\n";
          stores += "      ((" + vec + " *)q." + field + ")[b] = v" + field + ";\n";
        }
        std::string mark = (in ? "$X" : "$Y") + std::to_string(g);
        for (auto [text, to] : {std::pair{&bulk, "v" + field + ".v, u"},
                                std::pair{&tail, "q." + field + ", i"}})
          for (size_t at = 0; (at = text->find(mark + ", i", at)) != std::string::npos;
               at += to.size())
            text->replace(at, mark.size() + 3, to);
      }
    std::string args = kernel + "_args";
    cu << "struct " << args << " {\n" << shared << "  struct {\n" << slot
       << "    i64 n;\n  } s[" << per << "];\n};\n\n";
    auto head = [&](const std::string &fn, int64_t threads) {
      return "extern \"C\" __global__ void __launch_bounds__(" +
             std::to_string(threads) + ") " + fn + "(const __grid_constant__ " +
             args + " a) {\n" + local;
    };
    const size_t lead = (size_t)(inShared + outShared) + (c.scratch ? 1 : 0);
    size_t words = lead + (size_t)per * (inGroups + outGroups + 1);
    std::vector<size_t> countWords;
    for (int t = 0; t < per; ++t)
      countWords.push_back(lead + t * (inGroups + outGroups + 1) + inGroups +
                           outGroups);
    if (k == 0 && !c.prologue.empty()) { // once a step, before its launches
      s.cuda.prologue = name + "_first";
      cu << head(s.cuda.prologue, 1) << c.prologue << "}\n\n";
      emu << packedLauncher(s.cuda.prologue, args, words, {}, 1);
    }
    std::string threads = std::to_string(kListThreads);
    cu << head(kernel, kListThreads) << "  const i64 first = (i64)blockIdx.x * "
       << threads << " + threadIdx.x, stride = (i64)gridDim.x * " << threads
       << ";\n"
       << c.setup << "#pragma unroll 1\n  for (int t = 0; t < " << per
       << "; ++t) {\n    const auto &q = a.s[t];\n"
       // (Under host emulation: the 16-byte accesses a GPU requires aligned.)
       << "#if defined(MPC_HOST_EMULATION)\n    if (q.n >= " << width << ") {\n"
       << aligned << "    }\n#endif\n"
       << "    for (i64 b = first; b < q.n / " << width << "; b += stride) {\n"
       << vectors << "#pragma unroll\n      for (int u = 0; u < " << width
       << "; ++u) {\n"
       << bulk << "      }\n"
       << stores << "    }\n"
       << "    for (i64 i = q.n / " << width << " * " << width
       << " + first; i < q.n; i += stride) {\n"
       << tail << "    }\n"
       << c.slotEnd << "  }\n"
       << c.end << "}\n\n";
    emu << packedLauncher(kernel, args, words, countWords, kListThreads, 1,
                          c.barrier);
    for (size_t at = 0; at < ts.size(); at += per) {
      std::vector<int> slots(per, -1);
      for (int j = 0; j < per && at + j < ts.size(); ++j)
        slots[j] = ts[at + j];
      l.kernels.push_back(kernel);
      l.slots.push_back(std::move(slots));
    }
  }
  s.cuda.kernel = l.kernels.front();
  s.cuda.grid = {1, 1, 1}; // per launch: KernelCalls
  s.cuda.block = {kListThreads, 1, 1};
  barrier = false;
  return true;
}

/// Every gradient times 1/scale, and one all-finite flag: a one-thread
/// prologue clears the flag, then each launch's blocks stride over its
/// gradients and a thread that meets inf/NaN sets it (all writers write 1).
bool Emitter::unscaleGrads(Step &s, const std::string &name) {
  return tensorLists(
      s, name,
      {{0, 1, 0, 1},
       1,
       "  const float inv = (float)(1.0 / (double)ld(in0, 0));\n  int bad = 0;\n",
       "    float v = ld($X0, i); bad |= !isfinite(v); st($Y0, i, v * inv);\n",
       "  if (bad) out0[0] = 1;\n",
       "  out0[0] = 0;\n"});
}

/// 1/scale and the all-finite flag only, for updates that unscale as they
/// read: the one-thread prologue takes the reciprocal (as unscaleGrads
/// does) and clears the flag; the gradients are read, never written.
bool Emitter::checkGrads(Step &s, const std::string &name) {
  return tensorLists(
      s, name,
      {{0, 1, 0, 2},
       0,
       "  int bad = 0;\n",
       "    bad |= !isfinite(ld($X0, i));\n",
       "  if (bad) out1[0] = 1;\n",
       "  st(out0, 0, (float)(1.0 / (double)ld(in0, 0)));\n  out1[0] = 0;\n"});
}

/// A gradient bucket's all-reduce as one rank computes it: the identity.
/// With several ranks the session hands the step to NCCL instead
/// (runtime/cuda/Nccl.cpp), out of place from the same buffers.
bool Emitter::allReduce(Step &s, const std::string &name) {
  return tensorLists(s, name,
                     {{0, 0, 0, 0}, 1, "", "    st($Y0, i, ld($X0, i));\n", "", ""});
}

/// ai.onnx.preview.training Momentum / Adagrad / Adam as runtime/kernels/
/// Training.cpp computes them: operands (R, T, X..., G..., state...), a
/// multi-tensor kernel over the optimized tensors.
bool Emitter::onnxOptimizer(Step &s, const std::string &name) {
  OpId op = s.op;
  float lambda = (float)s.getFloat("norm_coefficient", 0);
  std::ostringstream setup, body;
  setup << "  const float r = ld(in0, 0); const i64 t = in1[0];\n";
  if (op == OpId::Momentum)
    setup << "  const float alpha = " << flt((float)s.getFloat("alpha", 0))
          << ", beta = t > 0 ? " << flt((float)s.getFloat("beta", 0))
          << " : 1.0f;\n";
  else if (op == OpId::Adagrad)
    setup << "  const float rate = r / (1.0f + (float)t * "
          << flt((float)s.getFloat("decay_factor", 0)) << ");\n";
  else
    setup << "  const float alpha = " << flt((float)s.getFloat("alpha", 0.9))
          << ", beta = " << flt((float)s.getFloat("beta", 0.999))
          << ";\n  const float rate = t > 0 ? (float)(r * sqrt(1.0 - "
             "pow((double)beta, (double)t)) / (1.0 - pow((double)alpha, "
             "(double)t))) : r;\n";
  body << "    float x = ld($X0, i), gr = " << flt(lambda)
       << " * x + ld($X1, i);\n";
  if (op == OpId::Momentum)
    body << "    float vn = alpha * ld($X2, i) + beta * gr;\n"
         << "    st($Y1, i, vn);\n    st($Y0, i, "
         << (s.getString("mode", "standard") == "nesterov"
                 ? "x - r * (gr + alpha * vn)"
                 : "x - r * vn")
         << ");\n";
  else if (op == OpId::Adagrad)
    body << "    float hn = ld($X2, i) + gr * gr;\n    st($Y1, i, hn);\n"
         << "    st($Y0, i, x - rate * gr / (sqrtf(hn) + "
         << flt((float)s.getFloat("epsilon", 1e-6)) << "));\n";
  else
    body << "    float vn = alpha * ld($X2, i) + (1 - alpha) * gr;\n"
         << "    float hn = beta * ld($X3, i) + (1 - beta) * gr * gr;\n"
         << "    st($Y1, i, vn); st($Y2, i, hn);\n"
         << "    st($Y0, i, (1 - "
         << flt((float)s.getFloat("norm_coefficient_post", 0))
         << ") * (x - rate * (vn / (sqrtf(hn) + "
         << flt((float)s.getFloat("epsilon", 1e-6)) << "))));\n";
  return tensorLists(s, name,
                     {{2, 0, 0, 0}, op == OpId::Adam ? 3 : 2, setup.str(),
                      body.str(), "", ""});
}

bool Emitter::updateLossScale(Step &s, const std::string &name) {
  cu << header(s, name, 1) << " {\n  double scale = ld(in0, 0);\n"
     << "  i64 good = in1[0];\n"
     << (s.inputs.size() > 3 ? "  if (!in3[0]) { st(out0, 0, (float)scale); "
                               "out1[0] = good; return; }\n"
                             : "")
     << "  if (in2[0]) { scale *= "
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
  t.emit(OpId::CheckGrads, &Emitter::checkGrads);
  t.emit(OpId::GlobalNorm, &Emitter::globalNorm);
  t.emit(OpId::AllReduce, &Emitter::allReduce);
  t.emit(OpId::UpdateLossScale, &Emitter::updateLossScale);
  for (OpId op : {OpId::Momentum, OpId::Adagrad, OpId::Adam})
    t.emit(op, &Emitter::onnxOptimizer);
}

} // namespace mlir::mpc::cuda
