//===- CudaNnKernels.cpp - normalisation, softmax, pooling -----------------===//
//
// Kernels that accumulate: all in FP32, rounding once to the output type.
// Batch normalization has its own file (CudaBatchNormKernels.cpp).
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

/// Rows at least this long get a warp each (a thread each below: the
/// shuffles would cost more than they save).
constexpr int64_t kWarpRowMin = 64;
/// Values of a row operand a thread holds in registers at most: a warp
/// holds rows of up to 1024 elements, a block of kRowThreads up to 8192.
/// Longer rows than a warp holds get a block each.
constexpr int64_t kCachedPerThread = 32;

/// Elements a lane moves at a time along a row of `n` whose narrowest
/// operand has `narrowest` bytes: 16 bytes of it, at most 8, halved until
/// it divides the row (0: none).
static int64_t widthFor(int64_t narrowest, int64_t n) {
  int64_t width = std::min<int64_t>(8, 16 / narrowest);
  while (width >= 2 && n % width != 0)
    width /= 2;
  return width >= 2 ? width : 0;
}

/// The widest vectors of a row kernel's loops: widthFor its narrowest
/// operand of all.
static int64_t rowWidth(const Plan &plan, const Step &s, int64_t n) {
  int64_t narrowest = 16;
  std::vector<int> vals = ::mpc::rt::kernelInputs(s);
  for (int v : ::mpc::rt::kernelOutputs(s))
    vals.push_back(v);
  vals.insert(vals.end(), s.cuda.stores.begin(), s.cuda.stores.end());
  for (int v : vals)
    if (v >= 0)
      narrowest = std::min<int64_t>(narrowest, dtypeSize(plan.values[v].dtype));
  return widthFor(narrowest, n);
}

bool Emitter::warpHoldsRow(const Step &s, int64_t n) {
  // At the kernel's widest vectors (one element a lane where none divide
  // the row: such rows are read element by element, never held).
  int64_t width = std::max<int64_t>(rowWidth(plan, s, n), 1);
  return (n + 32 * width - 1) / (32 * width) * width <= kCachedPerThread;
}

/// A kernel over `rows` contiguous rows of `n`: a warp per row when they
/// are long (lanes stride along it, `sum`/`max` combine the lanes with
/// butterfly shuffles), a block per row when a warp cannot hold them in
/// registers (the warps' partials combined through shared memory), else
/// a thread per row (lane 0, stride 1, the combines the identity). Rows
/// a warp or block holds are read from memory once (RowLoop::cached).
/// The prologue defines i, lane, n and base; the rows past the last leave
/// (a warp or block together). The row count is the kernel's `count`
/// argument, so steps that differ only in it share the kernel.
Emitter::RowLoop Emitter::rowLoop(Step &s, int64_t rows, int64_t n) {
  s.cuda.count = rows;
  sumStored = false;
  std::string tail = "  if (i >= count) return;\n  const i64 n = " +
                     std::to_string(n) + "LL, base = i * n;\n";
  // Where an operand of the Add taken as it loads repeats along the rows.
  if (s.cuda.hasPrologueAdd())
    for (int v : s.cuda.prologueAdd)
      if (int64_t k = prologueAddRepeat(s, val(s.inputs[0]).shape, val(v).shape);
          k > 0 && val(v).shape != val(s.inputs[0]).shape)
        tail += "  const i64 bbase = base % " + std::to_string(k) + "LL;\n";
  if (n < kWarpRowMin)
    return {"  const i64 i = global_index();\n  const int lane = 0;\n" + tail,
            "1", "", "", false};
  RowLoop r;
  if (warpHoldsRow(s, n)) {
    r = {"  const i64 i = (i64)blockIdx.x * " + std::to_string(kRowThreads / 32) +
             "LL + threadIdx.x / 32;\n  const int lane = threadIdx.x % 32;\n" +
             tail,
         "32", "mpc_warp_sum", "mpc_warp_max", true};
  } else {
    r = {"  const i64 i = blockIdx.x;\n  const int lane = threadIdx.x;\n" + tail,
         std::to_string(kRowThreads), "mpc_block_sum", "mpc_block_max", true};
    r.block = true;
  }
  r.hold = true;
  return r;
}

/// Where the parenthesis closing the call whose arguments start at
/// `from` in `code` is (code.size() when none does).
static size_t closingParen(const std::string &code, size_t from) {
  size_t end = from;
  for (int depth = 0; end < code.size(); ++end) {
    if (code[end] == '(')
      ++depth;
    else if (code[end] == ')' && depth-- == 0)
      break;
  }
  return end;
}

/// `body` with its store of output 0, st(out0, base + j, EXPR), as
/// { const float y_ = EXPR; st(out0, base + j, y_); `then` }, so `then`
/// can store or test the same value; `body` when it has no such store.
static std::string afterStore0(const std::string &body, const std::string &then) {
  const std::string from = "st(out0, base + j, ";
  size_t at = body.find(from);
  if (at == std::string::npos)
    return body;
  size_t end = closingParen(body, at + from.size());
  return body.substr(0, at) + "{ const float y_ = " +
         body.substr(at + from.size(), end - at - from.size()) +
         "; st(out0, base + j, y_); " + then + " }" + body.substr(end + 1);
}

/// Counts y_ into the session's counter when cast `v` (a gradient cast
/// counting underflow) flushes it to zero; "" for other casts.
std::string Emitter::flushCount(int v) {
  const Step *c = v >= 0 ? storedCast(v) : nullptr;
  return c && c->countUnderflow
             ? "if (y_ != 0.0f && " + roundedAs(val(v).dtype, "y_") +
                   " == 0.0f) atomicAdd(underflow, 1ULL);"
             : "";
}

/// `body` also storing output 0's value as the cast stored beside it
/// (fuseOutputCasts) and, for a gradient cast, counting what that flushes.
std::string Emitter::storeBeside(const Step &s, const std::string &body) {
  // The cast's store: not the sum of a prologue Add.
  size_t slot = 0;
  while (slot < s.cuda.stores.size() && s.cuda.hasPrologueAdd() &&
         s.cuda.stores[slot] == s.inputs[0])
    ++slot;
  if (slot == s.cuda.stores.size())
    return body;
  std::string count = flushCount(s.cuda.stores[slot]);
  return afterStore0(body, "st(out" + std::to_string(s.outputs.size() + slot) +
                               ", base + j, y_);" +
                               (count.empty() ? "" : " " + count));
}

std::string Emitter::countStored(const Step &s, const std::string &body) {
  std::string count = flushCount(s.cuda.storedAs);
  return count.empty() ? body : afterStore0(body, count);
}

std::string Emitter::addedInput(const Step &s, const std::string &body) {
  const std::string load = "ld(in0, base + j)";
  if (!s.cuda.hasPrologueAdd() || body.find(load) == std::string::npos)
    return body;
  std::string uses = body;
  for (size_t at = 0; (at = uses.find(load, at)) != std::string::npos; at += 2)
    uses.replace(at, load.size(), "x_");
  // b is the kernel's last input (MemoryPlan.cpp: kernelInputs); an
  // operand repeating along the rows is read from the row's start in it
  // (rowLoop's bbase).
  size_t b = ::mpc::rt::kernelInputs(s).size() - 1;
  auto at = [&](int v) -> std::string {
    return val(v).shape == val(s.inputs[0]).shape ? "base + j)" : "bbase + j)";
  };
  std::string sum = "{ const float x_ = " +
                    roundedAs(val(s.inputs[0]).dtype,
                              "ld(in0, " + at(s.cuda.prologueAdd[0]) +
                                  " + ld(in" + std::to_string(b) + ", " +
                                  at(s.cuda.prologueAdd[1])) +
                    ";";
  const std::vector<int> &st = s.cuda.stores;
  auto slot = std::find(st.begin(), st.end(), s.inputs[0]);
  if (slot != st.end() && !sumStored) {
    sum += " st(out" + std::to_string(s.outputs.size() + (slot - st.begin())) +
           ", base + j, x_);";
    sumStored = true;
  }
  return sum + " " + uses + " }";
}

std::string Emitter::rowEach(const Step &s, RowLoop &r, int64_t n,
                             const std::string &rowBody,
                             const std::string &len) {
  std::string body = countStored(s, addedInput(s, rowBody));
  if (!s.cuda.isChain() && !s.cuda.stores.empty())
    body = storeBeside(s, body);
  std::string scalar = "  for (i64 j = lane; j < " + len + "; j += " +
                       r.stride + ") " + body + "\n";
  if (!r.warp)
    return scalar;
  // The row operands the body reads or writes at base + j (or, repeating
  // along the rows, bbase + j: rowLoop), by input and where.
  std::vector<std::pair<size_t, std::string>> loads;
  std::vector<size_t> stores;
  int64_t narrowest = 16;
  const std::vector<int> ins = ::mpc::rt::kernelInputs(s);
  for (size_t k = 0; k < ins.size(); ++k)
    for (const char *from : {"base", "bbase"})
      if (ins[k] >= 0 && body.find("ld(in" + std::to_string(k) + ", " + from +
                                   " + j)") != std::string::npos) {
        loads.push_back({k, from});
        narrowest = std::min<int64_t>(narrowest, dtypeSize(val(ins[k]).dtype));
      }
  std::vector<int> written = ::mpc::rt::kernelOutputs(s);
  if (!s.cuda.isChain())
    written.insert(written.end(), s.cuda.stores.begin(), s.cuda.stores.end());
  for (size_t k = 0; k < written.size(); ++k)
    if (body.find("st(out" + std::to_string(k) + ", base + j, ") != std::string::npos) {
      stores.push_back(k);
      narrowest = std::min<int64_t>(narrowest, dtypeSize(val(written[k]).dtype));
    }
  // The widest that divides the row: fp16 logits over 300 classes load 8
  // bytes a lane (4 elements) where 16 would not divide the row. A row
  // held in registers keeps one width in every loop.
  int64_t width = widthFor(narrowest, n);
  if (width < 2 || (loads.empty() && stores.empty()))
    return scalar; // (no row operand: nothing held to read)
  if (r.hold) { // the first vector loop: hold the row if it fits
    r.hold = false;
    int64_t threads = std::stoll(r.stride);
    int64_t per = (n + threads * width - 1) / (threads * width) * width;
    if (per <= kCachedPerThread)
      r.width = width, r.iters = per / width;
  }
  if (r.iters)
    width = r.width;
  std::string W = std::to_string(width), lanes = body;
  auto replaceAll = [&](const std::string &from, const std::string &to) {
    for (size_t at = 0; (at = lanes.find(from, at)) != std::string::npos;
         at += to.size())
      lanes.replace(at, from.size(), to);
  };
  auto lanesOf = [](size_t k, const std::string &from) {
    return (from == "base" ? "vx" : "vb") + std::to_string(k);
  };
  // Held operands: "rx<k>"/"rb<k>", declared by the loop loading them.
  auto heldOf = [](size_t k, const std::string &from) {
    return (from == "base" ? "rx" : "rb") + std::to_string(k);
  };
  std::ostringstream os;
  std::vector<std::pair<size_t, std::string>> fresh; // loaded here, then held
  for (auto &[k, from] : loads) {
    bool held = r.cached.count({k, from}) > 0;
    if (r.iters && !held && r.cached.size() < 2) { // at most 2 rows held
      r.cached.insert({k, from});
      fresh.push_back({k, from});
      os << "  float " << heldOf(k, from) << "[" << r.iters * width << "];\n";
      held = true;
    }
    replaceAll("ld(in" + std::to_string(k) + ", " + from + " + j)",
               held ? heldOf(k, from) + "[t * " + W + " + e]"
                    : lanesOf(k, from) + "[e]");
  }
  for (size_t k : stores) { // st(outK, base + j, EXPR); -> vyK[e] = EXPR;
    std::string from = "st(out" + std::to_string(k) + ", base + j, ";
    for (size_t at; (at = lanes.find(from)) != std::string::npos;) {
      size_t end = closingParen(lanes, at + from.size());
      lanes.replace(at, end + 1 - at,
                    "vy" + std::to_string(k) + "[e] = " +
                        lanes.substr(at + from.size(), end - at - from.size()));
    }
  }
  std::string ind = "    ";
  if (r.iters) { // a fixed trip count, unrolled: the held arrays stay in registers
    os << "#pragma unroll\n  for (int t = 0; t < " << r.iters << "; ++t) {\n"
       << "    const i64 j0 = (lane + (i64)t * " << r.stride << ") * " << W
       << ";\n";
    if (n % (std::stoll(r.stride) * width) != 0)
      os << "    if (j0 < " << len << ") {\n", ind = "      ";
  } else {
    os << "  for (i64 j0 = lane * " << W << "; j0 < " << len << "; j0 += "
       << r.stride << " * " << W << ") {\n";
  }
  for (auto &[k, from] : loads) {
    bool held = r.cached.count({k, from}) > 0;
    bool load = !held || std::count(fresh.begin(), fresh.end(),
                                    std::make_pair(k, from)) > 0;
    if (!load)
      continue;
    std::string to = held ? "&" + heldOf(k, from) + "[t * " + W + "]"
                          : lanesOf(k, from);
    if (!held)
      os << ind << "float " << lanesOf(k, from) << "[" << W << "];\n";
    os << ind << "ldv<" << W << ">(in" << k << " + " << from << " + j0, " << to
       << ");\n";
  }
  for (size_t k : stores)
    os << ind << "float vy" << k << "[" << W << "];\n";
  os << "#pragma unroll\n" << ind << "for (int e = 0; e < " << W
     << "; ++e) { const i64 j = j0 + e; " << lanes << " }\n";
  for (size_t k : stores)
    os << ind << "stv<" << W << ">(out" << k << " + base + j0, vy" << k << ");\n";
  if (ind.size() > 4)
    os << "    }\n";
  os << "  }\n";
  return os.str();
}

void Emitter::rowLaunch(Step &s, const std::string &name, const RowLoop &r,
                        int64_t rows) {
  if (!r.warp)
    return launch1d(s, name, rows);
  barrier = true; // the lanes meet in the shuffles (host emulation)
  if (r.block)
    return launch(s, name, {rows, 1, 1}, {kRowThreads, 1, 1}, false, 1);
  launch(s, name, {(rows + kRowThreads / 32 - 1) / (kRowThreads / 32), 1, 1},
         {kRowThreads, 1, 1}, false, kRowThreads / 32);
}

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
  t.unsupported(OpId::CumSum);
}

} // namespace mlir::mpc::cuda
