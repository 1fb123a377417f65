//===- CudaRowLoops.cpp - how row kernels walk their rows -----------------===//
//
// The loops every row kernel (softmax, norms, their gradients, the
// classification losses) is written in: a thread, a warp or a block a
// row, lanes moving 16-byte vectors, rows held in registers across
// passes, and what a kernel takes in as it loads (a residual Add, a
// dropout: addedInput) or stores beside its result (a cast).
//
//===----------------------------------------------------------------------===//

#include "codegen/CudaKernels.h"
#include "runtime/Philox.h"

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

/// The kernel input of a prologue Add's operand `k` (0 or 1): input 0,
/// or the last but a dropout's counter (MemoryPlan.cpp: kernelInputs).
static size_t addendSlot(const Step &s, int k) {
  return k == 0 ? 0
                : ::mpc::rt::kernelInputs(s).size() - 1 -
                      (s.cuda.prologueDropout[3] >= 0 ? 1 : 0);
}

std::string Emitter::addedInput(const Step &s, const std::string &body) {
  const std::string load = "ld(in0, base + j)";
  if (!s.cuda.hasPrologueAdd() || body.find(load) == std::string::npos)
    return body;
  std::string uses = body;
  for (size_t at = 0; (at = uses.find(load, at)) != std::string::npos; at += 2)
    uses.replace(at, load.size(), "x_");
  // An operand repeating along the rows is read from the row's start in
  // it (rowLoop's bbase).
  const auto &drop = s.cuda.prologueDropout;
  size_t b = addendSlot(s, 1);
  auto at = [&](int v) -> std::string {
    return val(v).shape == val(s.inputs[0]).shape ? "base + j)" : "bbase + j)";
  };
  std::string ops[2] = {"ld(in0, " + at(s.cuda.prologueAdd[0]),
                        "ld(in" + std::to_string(b) + ", " +
                            at(s.cuda.prologueAdd[1])};
  if (drop[0] >= 0) // the dropout's input there, kept or zeroed (rowEach)
    ops[drop[1]] = std::string(kDropToken) + "(" + ops[drop[1]] + ")";
  std::string sum = "{ const float x_ = " +
                    roundedAs(val(s.inputs[0]).dtype, ops[0] + " + " + ops[1]) +
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

/// `code` with every kDropToken(X) replaced by `dropped(X)`.
static std::string
withDrops(std::string code,
          const std::function<std::string(const std::string &)> &dropped) {
  const std::string token = std::string(Emitter::kDropToken) + "(";
  for (size_t at = 0; (at = code.find(token, at)) != std::string::npos;) {
    size_t end = closingParen(code, at + token.size());
    std::string to = dropped(code.substr(at + token.size(), end - at - token.size()));
    code.replace(at, end + 1 - at, to);
    at += to.size();
  }
  return code;
}

std::string Emitter::rowEach(const Step &s, RowLoop &r, int64_t n,
                             const std::string &rowBody,
                             const std::string &len) {
  std::string body = countStored(s, addedInput(s, rowBody));
  if (!s.cuda.isChain() && !s.cuda.stores.empty())
    body = storeBeside(s, body);
  // A prologue dropout's operand (addedInput's kDropToken(x)), element
  // base + j: x kept (times the scale, rounded to the dropout's type) or
  // zeroed; its draw's counter is the kernel's last input.
  const auto &pd = s.cuda.prologueDropout;
  std::optional<Draw> draw;
  DType dropType = DType::F32;
  if (pd[0] >= 0 && body.find(kDropToken) != std::string::npos) {
    draw = dropoutDraw(plan.steps[pd[0]],
                       pd[3] >= 0 ? (int)::mpc::rt::kernelInputs(s).size() - 1
                                  : -1);
    dropType = val(plan.steps[pd[0]].outputs[0]).dtype;
  }
  auto dropped = [&](const std::string &keep, const std::string &x) {
    return roundedAs(dropType, "(" + keep + " ? " + x + " * " +
                                   flt(draw->scale) + " : 0.0f)");
  };
  std::string scalar =
      "  for (i64 j = lane; j < " + len + "; j += " + r.stride + ") " +
      (draw ? withDrops(body,
                        [&](const std::string &x) {
                          return dropped(draw->keep("base + j"), x);
                        })
            : body) +
      "\n";
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
  if (draw) {
    // The group's keep words where it is whole Philox groups (base and j0
    // multiples of 4), else a draw an element.
    bool grouped = width % 4 == 0 && n % 4 == 0 && draw->n % 4 == 0;
    std::string words = ind + "unsigned int pw[" + W + "];\n";
    for (int64_t q = 0; q < width / 4; ++q)
      words += ind +
               draw->words("(unsigned long long)(base + j0) / 4 + " +
                               std::to_string(q),
                           "pw + " + std::to_string(4 * q)) +
               "\n";
    std::string keep = grouped ? "(pw[e] >= " +
                                     std::to_string(draw->threshold) + "ull)"
                               : draw->keep("base + j0 + e");
    size_t kd = addendSlot(s, pd[1]);
    if (r.cached.count({kd, "base"})) {
      // A held row is dropped once, as it is loaded; every pass reads it so.
      if (std::count(fresh.begin(), fresh.end(), std::make_pair(kd, std::string("base")))) {
        std::string x = heldOf(kd, "base") + "[t * " + W + " + e]";
        os << (grouped ? words : "") << "#pragma unroll\n"
           << ind << "for (int e = 0; e < " << W << "; ++e) " << x << " = "
           << dropped(keep, x) << ";\n";
      }
      lanes = withDrops(lanes, [](const std::string &x) { return x; });
    } else {
      os << (grouped ? words : "");
      lanes = withDrops(lanes, [&](const std::string &x) { return dropped(keep, x); });
    }
  }
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

} // namespace mlir::mpc::cuda
