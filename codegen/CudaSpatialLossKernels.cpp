//===- CudaSpatialLossKernels.cpp - losses over [N, C, d1, ...] scores ----===//
//
// softmax_cross_entropy_loss and nll_loss (and their gradients) over
// scores with spatial dimensions, as segmentation trains them (Segformer,
// U-Net: [N, C, H, W] against [N, H, W] labels). A row is one (n, d): its C
// classes lie D = d1 * ... apart, so a thread takes a row and neighbouring
// threads read neighbouring pixels (coalesced at every class); rows span
// the grid. The loss's sum stays one block's, in a fixed order, over the
// rows' losses that the grid left in the kernel scratch; the gradient's
// denominator (the weights' sum) one block's prologue.
//
//===----------------------------------------------------------------------===//

#include "codegen/CudaKernels.h"

using namespace ::mpc::rt;

namespace mlir::mpc::cuda {

namespace {

/// The geometry of [N, C, d1, ...] scores: R = N * D rows of C classes
/// D apart.
struct Spatial {
  int64_t n = 0, c = 0, d = 1;
  int64_t rows() const { return n * d; }
  /// Code declaring `base`, row r's class 0.
  std::string base() const {
    return "    const i64 base = (r / " + std::to_string(d) + "LL) * " +
           std::to_string(c * d) + "LL + r % " + std::to_string(d) + "LL;\n";
  }
  /// Row r's element of class `j`.
  std::string at(const std::string &j) const {
    return "base + (i64)(" + j + ") * " + std::to_string(d) + "LL";
  }
};

Spatial spatialOf(const ValueInfo &x) {
  Spatial g{x.shape[0], x.shape[1], 1};
  for (size_t i = 2; i < x.shape.size(); ++i)
    g.d *= x.shape[i];
  return g;
}

} // namespace

bool Emitter::spatialCrossEntropy(Step &s, const std::string &name) {
  bool fromLogProb = s.op == OpId::NegativeLogLikelihoodLoss;
  Spatial g = spatialOf(val(s.inputs[0]));
  std::string red = s.getString("reduction", "mean");
  bool weights = s.inputs.size() > 2 && s.inputs[2] >= 0;
  bool logp = !fromLogProb && s.outputs.size() > 1;
  std::string R = std::to_string(g.rows()) + "LL", C = std::to_string(g.c);
  std::string w = weights ? "ld(in2, label)" : "1.0f";
  // The rows: a thread each, its loss (0 where ignored) to the scratch.
  s.cuda.scratch = 8 * g.rows(); // (a double a row)
  cu << header(s, name + "_rows", 256) << " {\n"
     << "  const i64 r = (i64)blockIdx.x * 256 + threadIdx.x;\n"
     << "  if (r >= " << R << ") return;\n"
     << g.base();
  if (fromLogProb) {
    cu << "    const float lse = 0.0f;\n";
  } else {
    cu << "    float mx = -INFINITY, sum = 0.0f;\n"
       << "    for (int j = 0; j < " << C << "; ++j) mx = fmaxf(mx, ld(in0, "
       << g.at("j") << "));\n"
       << "    for (int j = 0; j < " << C << "; ++j) sum += expf(ld(in0, "
       << g.at("j") << ") - mx);\n"
       << "    const float lse = mx + logf(sum);\n";
    if (logp)
      cu << "    for (int j = 0; j < " << C << "; ++j) st(out1, " << g.at("j")
         << ", ld(in0, " << g.at("j") << ") - lse);\n";
  }
  cu << "    const i64 label = in1[r];\n"
     << "    const float l = (" << ignoredLabel(s) << ") ? 0.0f : -" << w
     << " * (ld(in0, " << g.at("label") << ") - lse);\n"
     << (red == "none" ? "    st(out0, r, l);\n" : "")
     << "    scratch[r] = l;\n}\n\n";
  launch(s, name + "_rows", {(g.rows() + 255) / 256, 1, 1}, {256, 1, 1},
         /*prologue=*/true);
  // The sum: one block, each thread's rows in order, then a tree.
  cu << header(s, name, 256) << " {\n  __shared__ float ls[256], ws[256];\n"
     << "  float lsum = 0.0f, wsum = 0.0f;\n"
     << "  for (i64 r = threadIdx.x; r < " << R << "; r += 256) {\n"
     << "    const i64 label = in1[r];\n"
     << "    if (" << ignoredLabel(s) << ") continue;\n"
     << "    lsum += (float)scratch[r]; wsum += " << w << ";\n  }\n"
     << "  ls[threadIdx.x] = lsum; ws[threadIdx.x] = wsum;\n";
  lossSum(s, name, 128, g.rows() * g.c);
  return true;
}

bool Emitter::spatialCrossEntropyGrad(Step &s, const std::string &name) {
  bool withSoftmax = s.op == OpId::SoftmaxCrossEntropyLossGrad;
  Spatial g = spatialOf(val(s.inputs[1]));
  std::string red = s.getString("reduction", "mean");
  bool weights = s.inputs.size() > 3 && s.inputs[3] >= 0;
  std::string R = std::to_string(g.rows()) + "LL", C = std::to_string(g.c);
  std::string w = weights ? "ld(in3, label)" : "1.0f";
  // The denominator once (the weights' sum, a fixed order), to the scratch.
  s.cuda.scratch = 8;
  cu << header(s, name + "_denom", 256) << " {\n"
     << labelWeightSum(s, g.rows(), w)
     << "  if (threadIdx.x == 0) scratch[0] = ws[0];\n}\n\n";
  barrier = true;
  launch(s, name + "_denom", {1, 1, 1}, {256, 1, 1}, /*prologue=*/true);
  cu << header(s, name, 256) << " {\n"
     << "  const i64 r = (i64)blockIdx.x * 256 + threadIdx.x;\n"
     << "  if (r >= " << R << ") return;\n"
     << "  const float denom = " << (red == "mean" ? "(float)scratch[0]" : "1.0f")
     << ";\n"
     << g.base() << "    const i64 label = in2[r];\n"
     << "    const float scale = (" << ignoredLabel(s) << ") ? 0.0f : " << w
     << " * ld(in0, " << (red == "none" ? "r" : "0") << ") / denom;\n"
     << "    for (int j = 0; j < " << C << "; ++j) st(out0, " << g.at("j")
     << ", "
     << (withSoftmax ? "expf(ld(in1, " + g.at("j") + ")) * scale - "
                     : std::string("-"))
     << "(j == label ? scale : 0.0f));\n}\n\n";
  launch(s, name, {(g.rows() + 255) / 256, 1, 1}, {256, 1, 1});
  return true;
}

} // namespace mlir::mpc::cuda
