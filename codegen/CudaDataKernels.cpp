//===- CudaDataKernels.cpp - data movement kernels ------------------------===//
//
// Kernels that move or select elements without arithmetic: strided copies
// (transpose, slice, expand), gathers and the embedding gradient's
// scatter-add, concat/split, trilu, pad, resize (weighted taps), TopK's
// selection; and the reshape-like ops, whose outputs alias their inputs.
// The scatters are in CudaScatterKernels.cpp.
//
//===----------------------------------------------------------------------===//

#include "codegen/CudaKernels.h"
#include "runtime/kernels/Common.h"

#include <algorithm>

using namespace ::mpc::rt;

namespace mlir::mpc::cuda {

// Tokens up to which an embedding's gradient ranks its tokens by compares
// (n^2 of them: 4.3G at this many, a few tenths of a millisecond).
constexpr int64_t kSortedGatherGradTokens = int64_t(1) << 16;

/// out[i] = in0[offset + sum c_d * stride_d] (raw element copy). Where
/// the innermost dim runs contiguously through the input and each run of
/// V = 16 / size elements starts 16-byte aligned (offset, outer strides
/// and the innermost size multiples of V; the arena aligns buffers to 256
/// bytes), a thread moves V elements as one 16-byte access: a transpose
/// that keeps the innermost dim (attention's heads), a slice of whole
/// rows (a fused QKV projection's parts).
bool Emitter::stridedCopy(Step &s, const std::string &name, int64_t offset,
                 const Shape &strides) {
  const ValueInfo &y = val(s.outputs[0]);
  int64_t n = numElements(y.shape), V = 16 / (int64_t)dtypeSize(y.dtype);
  size_t r = y.shape.size();
  bool vec = r > 0 && V > 1 && val(s.inputs[0]).dtype == y.dtype &&
             strides[r - 1] == 1 && y.shape[r - 1] % V == 0 && offset % V == 0;
  for (size_t d = 0; vec && d + 1 < r; ++d)
    vec = strides[d] % V == 0;
  if (vec) {
    Shape groups = y.shape, at = strides;
    groups[r - 1] /= V, at[r - 1] = V;
    cu << header(s, name, 256) << " {\n  i64 i = global_index();\n  if (i >= "
       << n / V << "LL) return;\n"
       << offsetsCode(groups, {at}) << "  mpc_put16(out0 + i * " << V
       << ", mpc_ld16(in0 + " << offset << "LL + o0));\n}\n\n";
    launch1d(s, name, n / V);
    return true;
  }
  cu << header(s, name, 256) << " {\n  i64 i = global_index();\n  if (i >= "
     << n << "LL) return;\n"
     << offsetsCode(y.shape, {strides}) << "  out0[i] = in0[" << offset
     << "LL + o0];\n}\n\n";
  launch1d(s, name, n);
  return true;
}

bool Emitter::transpose(Step &s, const std::string &name) {
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

bool Emitter::slice(Step &s, const std::string &name) {
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

/// Gather along `axis`: each index picks a run of `inner` contiguous
/// elements, which move 16 bytes a thread where the run is a multiple of
/// V = 16 / size elements (an embedding's rows).
bool Emitter::gather(Step &s, const std::string &name) {
  const ValueInfo &x = val(s.inputs[0]), &idx = val(s.inputs[1]);
  const ValueInfo &y = val(s.outputs[0]);
  int64_t rank = x.shape.size(), axis = s.getInt("axis", 0);
  axis = axis < 0 ? axis + rank : axis;
  AxisSplit sp = splitAt(x.shape, axis);
  int64_t ni = numElements(idx.shape), n = numElements(y.shape);
  int64_t V = 16 / (int64_t)dtypeSize(y.dtype);
  int64_t W = V > 1 && sp.inner % V == 0 ? V : 1; // elements a thread
  cu << header(s, name, 256) << " {\n  i64 i = global_index()"
     << (W > 1 ? " * " + std::to_string(W) : "") << ";\n  if (i >= " << n
     << "LL) return;\n  i64 in = i % " << sp.inner << "LL, t = i / "
     << sp.inner << "LL, j = t % " << ni << "LL, o = t / " << ni
     << "LL;\n  i64 k = in1[j]; if (k < 0) k += " << sp.dim << "LL;\n";
  std::string from = "(o * " + std::to_string(sp.dim) + "LL + k) * " +
                     std::to_string(sp.inner) + "LL + in";
  if (W > 1)
    cu << "  mpc_put16(out0 + i, mpc_ld16(in0 + " << from << "));\n}\n\n";
  else
    cu << "  out0[i] = in0[" << from << "];\n}\n\n";
  launch1d(s, name, n / W);
  return true;
}

/// GatherElements: out[i] = data at i's coordinates (in the indices'
/// shape) with the axis coordinate taken from indices[i].
bool Emitter::gatherElements(Step &s, const std::string &name) {
  const ValueInfo &x = val(s.inputs[0]), &idx = val(s.inputs[1]);
  int64_t rank = x.shape.size(), axis = s.getInt("axis", 0);
  axis = axis < 0 ? axis + rank : axis;
  Shape xs = stridesOf(x.shape);
  int64_t n = numElements(idx.shape);
  cu << header(s, name, 256) << " {\n  i64 i = global_index();\n  if (i >= "
     << n << "LL) return;\n  i64 r = i, off = 0;\n";
  for (int64_t d = rank - 1; d >= 0; --d) {
    cu << "  { i64 c = r % " << idx.shape[d] << "LL; r /= " << idx.shape[d]
       << "LL;";
    if (d == axis)
      cu << " c = in1[i]; if (c < 0) c += " << x.shape[d] << "LL;";
    cu << " off += c * " << xs[d] << "LL; }\n";
  }
  cu << "  out0[i] = in0[off];\n}\n\n";
  launch1d(s, name, n);
  return true;
}

/// An embedding's gradient (GatherGrad along axis 0 into FP32) without
/// atomics and in the CPU backend's order, in parallel: a prologue ranks
/// the n tokens by (row, position), a thread a token counting those
/// before it (n^2 compares through shared memory: 4M for BERT's 2048
/// tokens), and leaves the sorted rows and their tokens in the kernel
/// scratch; then a thread an output element finds its row's run by
/// binary search (the same run for a warp's columns) and sums the run's
/// gradient rows in token order, 0 where none. Before, a thread a column
/// zeroed the whole table and walked every token in turn: 768 threads,
/// 22% of BERT's fp16 step on an H200.
bool Emitter::sortedGatherGrad(Step &s, const std::string &name, int64_t rows,
                               int64_t inner, int64_t n) {
  const std::string D = std::to_string(rows) + "LL", I = std::to_string(inner) + "LL",
                    N = std::to_string(n) + "LL";
  s.cuda.scratch = 8 * n; // the headers take it: rows, then tokens (int32)
  auto row = [&](const std::string &j) { // the index, negatives from the end
    return "(int)(in1[" + j + "] < 0 ? in1[" + j + "] + " + D + " : in1[" + j + "])";
  };
  cu << header(s, name + "_rank", 256) << " {\n"
     << "  __shared__ int tile[256];\n"
     << "  const i64 j = (i64)blockIdx.x * 256 + threadIdx.x;\n"
     << "  const int k = j < " << N << " ? " << row("j") << " : 0;\n"
     << "  i64 pos = 0;\n"
     << "  for (i64 base = 0; base < " << N << "; base += 256) {\n"
     << "    __syncthreads();\n"
     << "    if (base + threadIdx.x < " << N << ") tile[threadIdx.x] = "
     << row("base + threadIdx.x") << ";\n"
     << "    __syncthreads();\n"
     << "    const int m = (int)(" << N << " - base < 256 ? " << N << " - base : 256);\n"
     << "    for (int e = 0; e < m; ++e)\n"
     << "      pos += tile[e] < k || (tile[e] == k && base + e < j);\n"
     << "  }\n"
     << "  if (j < " << N << ") {\n"
     << "    int *const sorted = (int *)scratch;\n"
     << "    sorted[pos] = k;\n    sorted[" << N << " + pos] = (int)j;\n  }\n}\n\n";
  cu << header(s, name, 256) << " {\n"
     << "  const i64 i = global_index();\n"
     << "  if (i >= " << rows * inner << "LL) return;\n"
     << "  const int k = (int)(i / " << I << ");\n"
     << "  const i64 c = i % " << I << ";\n"
     << "  const int *const sorted = (const int *)scratch, *const token = sorted + " << N
     << ";\n"
     << "  i64 lo = 0, hi = " << N << ";\n"
     << "  while (lo < hi) {\n"
     << "    const i64 mid = (lo + hi) / 2;\n"
     << "    if (sorted[mid] < k) lo = mid + 1; else hi = mid;\n  }\n"
     << "  float acc = 0.0f;\n"
     << "  for (i64 p = lo; p < " << N << " && sorted[p] == k; ++p)\n"
     << "    acc += ld(in0, (i64)token[p] * " << I << " + c);\n"
     << "  out0[i] = acc;\n}\n\n";
  barrier = true; // the rank kernel's tiles
  launch(s, name + "_rank", {(n + 255) / 256, 1, 1}, {256, 1, 1}, /*prologue=*/true);
  launch(s, name, {(rows * inner + 255) / 256, 1, 1}, {256, 1, 1});
  return true;
}

/// Scatter-add without atomics, in index order like the CPU backend (so
/// the sums are the same): an embedding's gradient by sortedGatherGrad;
/// else into an FP32 result each thread owns one (outer, inner) column and
/// walks the indices; any other result type accumulates each element in
/// FP32 from the indices that select it.
bool Emitter::gatherGrad(Step &s, const std::string &name) {
  const ValueInfo &g = val(s.inputs[0]), &idx = val(s.inputs[1]);
  const ValueInfo &y = val(s.outputs[0]);
  int64_t rank = y.shape.size(), axis = s.getInt("axis", 0);
  axis = axis < 0 ? axis + rank : axis;
  AxisSplit sp = splitAt(y.shape, axis);
  int64_t ni = numElements(idx.shape);
  if (numElements(g.shape) != sp.outer * ni * sp.inner)
    return fail(s, "the gradient does not match the gathered shape");
  std::string D = std::to_string(sp.dim) + "LL", I = std::to_string(sp.inner) + "LL",
              NI = std::to_string(ni) + "LL";
  if (y.dtype == DType::F32 && sp.outer == 1 && ni <= kSortedGatherGradTokens &&
      sp.dim < (int64_t(1) << 31))
    return sortedGatherGrad(s, name, sp.dim, sp.inner, ni);
  cu << header(s, name, 256) << " {\n  i64 i = global_index();\n";
  if (y.dtype == DType::F32) {
    cu << "  if (i >= " << sp.outer * sp.inner << "LL) return;\n  i64 in = i % "
       << I << ", o = i / " << I << ";\n  for (i64 k = 0; k < " << D
       << "; ++k) out0[(o * " << D << " + k) * " << I << " + in] = 0.0f;\n"
       << "  for (i64 j = 0; j < " << NI << "; ++j) { i64 k = in1[j]; if (k < 0) k += "
       << D << "; out0[(o * " << D << " + k) * " << I << " + in] += ld(in0, (o * "
       << NI << " + j) * " << I << " + in); }\n}\n\n";
    launch1d(s, name, sp.outer * sp.inner);
    return true;
  }
  int64_t n = numElements(y.shape);
  cu << "  if (i >= " << n << "LL) return;\n  i64 in = i % " << I
     << ", t = i / " << I << ", k = t % " << D << ", o = t / " << D
     << ";\n  float acc = 0.0f;\n  for (i64 j = 0; j < " << NI
     << "; ++j) { i64 kj = in1[j]; if (kj < 0) kj += " << D
     << "; if (kj == k) acc += ld(in0, (o * " << NI << " + j) * " << I
     << " + in); }\n  st(out0, i, acc);\n}\n\n";
  launch1d(s, name, n);
  return true;
}

/// GatherElements' data gradient: a thread per data element sums, in index
/// order, the grad elements of its column (same coordinates but the axis)
/// whose index points at it; positions outside the gathered shape get 0.
bool Emitter::gatherElementsGrad(Step &s, const std::string &name) {
  const ValueInfo &idx = val(s.inputs[1]), &y = val(s.outputs[0]);
  int64_t rank = y.shape.size(), axis = s.getInt("axis", 0);
  axis = axis < 0 ? axis + rank : axis;
  Shape ist = stridesOf(idx.shape);
  int64_t n = numElements(y.shape);
  cu << header(s, name, 256) << " {\n  i64 i = global_index();\n  if (i >= "
     << n << "LL) return;\n  i64 r = i, col = 0, k = 0; bool inside = true;\n";
  for (int64_t d = rank - 1; d >= 0; --d) {
    cu << "  { i64 c = r % " << y.shape[d] << "LL; r /= " << y.shape[d] << "LL; ";
    if (d == axis)
      cu << "k = c; }\n";
    else
      cu << "inside = inside && c < " << idx.shape[d] << "LL; col += c * "
         << ist[d] << "LL; }\n";
  }
  cu << "  float acc = 0.0f;\n  if (inside)\n    for (i64 j = 0; j < "
     << idx.shape[axis] << "LL; ++j) { i64 e = col + j * " << ist[axis]
     << "LL, kj = in1[e]; if (kj < 0) kj += " << y.shape[axis]
     << "LL; if (kj == k) acc += ld(in0, e); }\n  st(out0, i, acc);\n}\n\n";
  launch1d(s, name, n);
  return true;
}

/// Concat or Split along the axis: over the elements of the whole, find
/// the part owning the coordinate and move the element there; where the
/// runs below the axis are a multiple of V = 16 / size elements, a thread
/// moves V at a time (one 16-byte access: every run starts aligned).
bool Emitter::axisParts(Step &s, const std::string &name) {
  bool concatenate = s.op == OpId::Concat;
  const ValueInfo &whole = val(concatenate ? s.outputs[0] : s.inputs[0]);
  const std::vector<int> &parts = concatenate ? s.inputs : s.outputs;
  int64_t rank = whole.shape.size(), axis = s.getInt("axis", 0);
  axis = axis < 0 ? axis + rank : axis;
  AxisSplit sp = splitAt(whole.shape, axis);
  int64_t n = numElements(whole.shape), V = 16 / (int64_t)dtypeSize(whole.dtype);
  int64_t W = V > 1 && sp.inner % V == 0 ? V : 1; // elements a thread
  cu << header(s, name, 256) << " {\n  i64 i = global_index()"
     << (W > 1 ? " * " + std::to_string(W) : "") << ";\n  if (i >= " << n
     << "LL) return;\n  i64 in = i % " << sp.inner << "LL, t = i / "
     << sp.inner << "LL, a = t % " << sp.dim << "LL, o = t / " << sp.dim
     << "LL;\n";
  int64_t begin = 0;
  for (size_t k = 0; k < parts.size(); ++k) {
    int64_t d = val(parts[k]).shape[axis];
    std::string at = "(o * " + std::to_string(d) + "LL + a - " +
                     std::to_string(begin) + "LL) * " +
                     std::to_string(sp.inner) + "LL + in";
    std::string part = (concatenate ? "in" : "out") + std::to_string(k);
    std::string from = concatenate ? part + " + " + at : "in0 + i";
    std::string to = concatenate ? "out0 + i" : part + " + " + at;
    cu << "  if (a < " << begin + d << "LL) { "
       << (W > 1 ? "mpc_put16(" + to + ", mpc_ld16(" + from + "))"
                 : "*(" + to + ") = *(" + from + ")")
       << "; return; }\n";
    begin += d;
  }
  cu << "}\n\n";
  launch1d(s, name, n / W);
  return true;
}

bool Emitter::trilu(Step &s, const std::string &name) {
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

/// Tile: an element a thread, each coordinate modulo the input's extent
/// (the CPU backend's tileK).
bool Emitter::tile(Step &s, const std::string &name) {
  const ValueInfo &x = val(s.inputs[0]), &y = val(s.outputs[0]);
  const int64_t rank = y.shape.size(), n = numElements(y.shape);
  Shape xs = stridesOf(x.shape);
  cu << countedHead(s, name, n) << "  i64 r = i, off = 0;\n";
  for (int64_t d = rank - 1; d >= 0; --d)
    cu << "  off += (r % " << y.shape[d] << "LL) % " << x.shape[d] << "LL * " << xs[d]
       << "LL; r /= " << y.shape[d] << "LL;\n";
  cu << "  out0[i] = in0[off];\n}\n\n";
  launch1d(s, name, n);
  return true;
}

/// GatherND: an element a thread, its tuple's offset from the indices
/// (negative ones from the end), batch dimensions leading (gatherNdK).
bool Emitter::gatherNd(Step &s, const std::string &name) {
  const ValueInfo &x = val(s.inputs[0]), &idx = val(s.inputs[1]), &y = val(s.outputs[0]);
  const int64_t b = s.getInt("batch_dims", 0), last = idx.shape.back(),
                rank = x.shape.size(), n = numElements(y.shape);
  int64_t slice = 1, batch = 1;
  for (int64_t d = b + last; d < rank; ++d)
    slice *= x.shape[d];
  for (int64_t d = 0; d < b; ++d)
    batch *= x.shape[d];
  const int64_t tuples = last ? numElements(idx.shape) / last : 0;
  Shape xs = stridesOf(x.shape);
  cu << countedHead(s, name, n) << "  const i64 t = i / " << slice << "LL, e = i % "
     << slice << "LL;\n  i64 off = e" << (b ? " + t / " + std::to_string(tuples / batch) +
                                                  "LL * " + std::to_string(xs[b - 1]) + "LL"
                                            : "")
     << ";\n";
  for (int64_t j = 0; j < last; ++j)
    cu << "  { const i64 k = in1[t * " << last << "LL + " << j << "]; off += (k < 0 ? k + "
       << x.shape[b + j] << "LL : k) * " << xs[b + j] << "LL; }\n";
  cu << "  out0[i] = in0[off];\n}\n\n";
  launch1d(s, name, n);
  return true;
}

/// OneHot: an element a thread, `on` where its index (negative from the
/// end of `depth`) is its coordinate along the axis (oneHotK).
bool Emitter::oneHot(Step &s, const std::string &name) {
  const ValueInfo &idx = val(s.inputs[0]), &y = val(s.outputs[0]);
  const int64_t rank = y.shape.size(), depth = s.getInt("depth", 0),
                axis = s.getInt("axis", -1) < 0 ? s.getInt("axis", -1) + rank
                                                : s.getInt("axis", -1),
                n = numElements(y.shape);
  int64_t inner = 1;
  for (int64_t d = axis + 1; d < rank; ++d)
    inner *= y.shape[d];
  const std::string I = std::to_string(inner) + "LL", D = std::to_string(depth) + "LL";
  cu << countedHead(s, name, n) << "  const i64 at = i / (" << D << " * " << I << ") * "
     << I << " + i % " << I << ", d = i / " << I << " % " << D << ";\n  i64 v = "
     << (isFloat(idx.dtype) ? "(i64)ld(in0, at)" : "(i64)in0[at]") << ";\n  if (v < 0) v += "
     << D << ";\n  out0[i] = in1[v == d ? 1 : 0];\n}\n\n";
  launch1d(s, name, n);
  return true;
}

bool Emitter::pad(Step &s, const std::string &name) {
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
  int64_t n = numElements(y.shape), last = rank - 1;
  // Runs of V = 16 / size elements along the last dim lie wholly inside
  // or wholly in the padding when its sizes and leading pad are multiples
  // of V: a thread moves one run as a 16-byte access (raw bits; the
  // padding value repeated).
  int64_t V = 16 / (int64_t)dtypeSize(y.dtype);
  int64_t W = rank > 0 && V > 1 && begin[last] % V == 0 &&
                      x.shape[last] % V == 0 && y.shape[last] % V == 0
                  ? V
                  : 1;
  cu << header(s, name, 256) << " {\n  i64 i = global_index()"
     << (W > 1 ? " * " + std::to_string(W) : "") << ";\n  if (i >= " << n
     << "LL) return;\n  i64 r = i, off = 0; bool inside = true;\n";
  for (int64_t d = rank - 1; d >= 0; --d)
    cu << "  { i64 c = r % " << y.shape[d] << "LL - " << begin[d]
       << "LL; r /= " << y.shape[d] << "LL; inside = inside && c >= 0 && c < "
       << x.shape[d] << "LL; off += c * " << st[d] << "LL; }\n";
  std::string T = ctype(y.dtype);
  if (W > 1) {
    cu << "  uint4 w = make_uint4(0, 0, 0, 0);\n  if (inside) w = "
          "mpc_ld16(in0 + off);\n";
    if (value)
      cu << "  else { " << T << " p[" << W << "]; for (int l = 0; l < " << W
         << "; ++l) p[l] = in1[0]; memcpy(&w, p, 16); }\n";
    cu << "  mpc_put16(out0 + i, w);\n}\n\n";
  } else if (isFloat(x.dtype)) {
    cu << "  st(out0, i, inside ? ld(in0, off) : "
       << (value ? "ld(in1, 0)" : "0.0f") << ");\n}\n\n";
  } else { // integers and bools move as they are
    cu << "  out0[i] = inside ? in0[off] : "
       << (value ? std::string("in1[0]") : "(" + T + ")0") << ";\n}\n\n";
  }
  launch1d(s, name, n / W);
  return true;
}

/// Expand: a broadcasting copy.
bool Emitter::expand(Step &s, const std::string &name) {
  const ValueInfo &x = val(s.inputs[0]), &y = val(s.outputs[0]);
  return stridedCopy(s, name, 0, broadcastStrides(x.shape, y.shape));
}

/// Resize along one axis: the tap table as device arrays beside the kernel,
/// one thread per output element, taps summed in table order in FP32 (as
/// the CPU kernel does), zero weights skipped.
bool Emitter::resizeAxis(Step &s, const std::string &name) {
  const ValueInfo &x = val(s.inputs[0]), &y = val(s.outputs[0]);
  int64_t axis = s.getInt("axis", 0), size = s.getInt("size", 1);
  std::vector<int64_t> idx = s.getInts("indices").value_or(std::vector<int64_t>{});
  const Tensor *w = s.getTensor("weights"), *fill = s.getTensor("fill");
  int64_t taps = idx.size() / size;
  AxisSplit in = splitAt(x.shape, axis);
  auto table = [&](const char *type, const std::string &suffix, int64_t n,
                   auto value) {
    cu << "__device__ const " << type << " " << name << suffix << "[] = {";
    for (int64_t i = 0; i < n; ++i)
      cu << (i ? (i % 8 ? ", " : ",\n  ") : "") << value(i);
    cu << "};\n";
  };
  table("int", "_idx", idx.size(), [&](int64_t i) { return std::to_string(idx[i]); });
  table("float", "_w", idx.size(), [&](int64_t i) { return flt(w->data<float>()[i]); });
  if (fill)
    table("float", "_fill", size, [&](int64_t i) { return flt(fill->data<float>()[i]); });
  int64_t n = numElements(y.shape);
  cu << header(s, name, 256) << " {\n  i64 i = global_index();\n  if (i >= "
     << n << "LL) return;\n  i64 inner = i % " << in.inner << "LL, r = i / "
     << in.inner << "LL;\n  int o = (int)(r % " << size << "LL);\n  i64 base = (r / "
     << size << "LL) * " << in.dim * in.inner << "LL + inner;\n  float acc = "
     << (fill ? name + "_fill[o]" : std::string("0.0f")) << ";\n  for (int t = 0; t < "
     << taps << "; ++t) {\n    float wt = " << name << "_w[o * " << taps
     << " + t];\n    if (wt != 0.0f)\n      acc += wt * ld(in0, base + (i64)"
     << name << "_idx[o * " << taps << " + t] * " << in.inner
     << "LL);\n  }\n  st(out0, i, acc);\n}\n\n";
  launch1d(s, name, n);
  return true;
}

/// The most k x n a row of top_k's kernel takes (16M compares: tens of
/// milliseconds for its one thread).
constexpr int64_t kTopKMaxWork = 1 << 24;

/// TopK's indices: a thread per row along `axis` takes its k in order,
/// each the first of the elements that come after the last one taken
/// (larger, or smaller, value first, then the lower index; NaN above
/// every number), the CPU backend's order. k passes over the row: meant
/// for the few experts of a mixture-of-experts router, not a vocabulary.
bool Emitter::topK(Step &s, const std::string &name) {
  const ValueInfo &x = val(s.inputs[0]);
  const int64_t rank = x.shape.size(), k = s.getInt("k", 0),
                axis = s.getInt("axis", -1) < 0 ? s.getInt("axis", -1) + rank
                                                : s.getInt("axis", -1);
  const bool largest = s.getInt("largest", 1), fl = isFloat(x.dtype);
  int64_t inner = 1;
  for (int64_t d = axis + 1; d < rank; ++d)
    inner *= x.shape[d];
  const int64_t dim = x.shape[axis], rows = numElements(x.shape) / dim;
  // k passes over the row by one thread: torch.sort of a long axis (TopK
  // with k = n) would take seconds a row; say so instead.
  if (k * dim > kTopKMaxWork)
    return fail(s, "top_k's kernel takes k passes over a row: k = " +
                       std::to_string(k) + " of " + std::to_string(dim) +
                       " elements is past its " +
                       std::to_string(kTopKMaxWork) +
                       " (sort long rows on the CPU backend)");
  const std::string I = std::to_string(inner) + "LL", D = std::to_string(dim) + "LL",
                    K = std::to_string(k) + "LL", V = fl ? "double" : "i64",
                    cmp = largest ? " > " : " < ";
  // before(a, ia, b, ib): element (a, ia) comes first.
  std::string before =
      "(a != b ? a" + cmp + "b : ia < ib)";
  if (fl)
    before = "(a != a || b != b ? (a != a && b != b ? ia < ib : (a != a) == " +
             std::string(largest ? "true" : "false") + ") : " + before + ")";
  cu << countedHead(s, name, rows) << "  const i64 base = i / " << I << " * ("
     << D << " * " << I << ") + i % " << I << ";\n"
     << "  auto before = [](" << V << " a, i64 ia, " << V << " b, i64 ib) { return "
     << before << "; };\n"
     << "  " << V << " pv = 0; i64 pi = -1;\n"
     << "  for (i64 q = 0; q < " << K << "; ++q) {\n"
     << "    " << V << " bv = 0; i64 bi = -1;\n"
     << "    for (i64 j = 0; j < " << D << "; ++j) {\n"
     << "      const " << V << " v = " << (fl ? "ld(in0, base + j * " + I + ")"
                                             : "(i64)in0[base + j * " + I + "]")
     << ";\n"
     << "      if (pi >= 0 && !before(pv, pi, v, j)) continue; // taken\n"
     << "      if (bi < 0 || before(v, j, bv, bi)) { bv = v; bi = j; }\n"
     << "    }\n"
     << "    out0[(i / " << I << " * " << K << " + q) * " << I << " + i % " << I
     << "] = bi; pv = bv; pi = bi;\n  }\n}\n\n";
  launch1d(s, name, rows);
  return true;
}

void registerDataEmitters(EmitterTable &t) {
  t.emit(OpId::TopK, &Emitter::topK);
  for (OpId op : {OpId::Reshape, OpId::Flatten, OpId::Squeeze,
                  OpId::Unsqueeze})
    t.alias(op);
  t.emit(OpId::Transpose, &Emitter::transpose);
  t.emit(OpId::Slice, &Emitter::slice);
  t.emit(OpId::Expand, &Emitter::expand);
  t.emit(OpId::Gather, &Emitter::gather);
  t.emit(OpId::GatherElements, &Emitter::gatherElements);
  t.emit(OpId::GatherGrad, &Emitter::gatherGrad);
  t.emit(OpId::GatherElementsGrad, &Emitter::gatherElementsGrad);
  t.emit(OpId::Concat, &Emitter::axisParts);
  t.emit(OpId::Split, &Emitter::axisParts);
  t.emit(OpId::Trilu, &Emitter::trilu);
  t.emit(OpId::Pad, &Emitter::pad);
  t.emit(OpId::ScatterND, &Emitter::scatterNd);
  t.emit(OpId::ScatterElements, &Emitter::scatterElements);
  t.emit(OpId::ResizeAxis, &Emitter::resizeAxis);
  t.emit(OpId::Tile, &Emitter::tile);
  t.emit(OpId::GatherND, &Emitter::gatherNd);
  t.emit(OpId::OneHot, &Emitter::oneHot);
  // Range with computed bounds (a constant one folds at import).
  t.unsupported(OpId::Range, "shape arithmetic left unfolded: bind the input shapes");
}

} // namespace mlir::mpc::cuda
