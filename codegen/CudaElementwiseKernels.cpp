//===- CudaElementwiseKernels.cpp - elementwise kernels and fused chains ---===//
//
// A thread-per-element kernel is a device function of its element
// (`<k>_at`), where its operands allow a vector form (`<k>_vec`, `<k>_run`:
// 16 bytes of the narrowest operand at a time, grid-strided), and a kernel
// calling them; the batched launches (CudaBatching.cpp) call the same
// functions.
//
//===----------------------------------------------------------------------===//

#include "codegen/CudaKernels.h"
#include "runtime/Philox.h"
#include "runtime/cuda/KernelCalls.h"

#include <algorithm>
#include <map>
#include <sstream>

using namespace ::mpc::rt;

namespace mlir::mpc::cuda {

std::optional<std::string> Emitter::expr(const Step &s) {
  const EmitterTable::Expr &fn = emitters()[s.op].expr;
  return fn ? fn(s) : std::nullopt;
}

std::string Emitter::countedHead(Step &s, const std::string &name, int64_t n) {
  s.cuda.count = n;
  counted = true;
  std::string head = "static __device__ __forceinline__ void " + name +
                     "_at(const i64 i";
  for (const auto &p : params(s))
    head += ", " + p.first;
  return head + ") {\n  if (i >= count) return;\n";
}

void Emitter::launch1d(Step &s, const std::string &name, int64_t n) {
  int64_t t = ::mpc::rt::cuda::kThreads, per = t * vectorWidth;
  int64_t blocks = std::max<int64_t>((n + per - 1) / per, 1);
  if (vectorWidth > 1)
    blocks = std::min(blocks, ::mpc::rt::kListMaxBlocks);
  launch(s, name, {blocks, 1, 1}, {t, 1, 1}, false, per);
}

namespace {

/// How a vector group reads an input: as V consecutive elements, as one
/// value for the whole group, or not at all (no vector path).
enum class GroupRead { Lanes, Once, None };

GroupRead groupRead(const Shape &out, const Shape &strides, int64_t width) {
  if (strides == stridesOf(out))
    return GroupRead::Lanes;
  if (std::all_of(strides.begin(), strides.end(), [](int64_t v) { return v == 0; }))
    return GroupRead::Once;
  // A group of V elements lies in one innermost row when the row's length
  // is a multiple of V; along it the input moves by its innermost stride.
  if (out.empty() || out.back() % width != 0)
    return GroupRead::None;
  return strides.back() == 1   ? GroupRead::Lanes
         : strides.back() == 0 ? GroupRead::Once
                               : GroupRead::None;
}

bool laneType(DType t) {
  return t == DType::F32 || t == DType::F16 || t == DType::BF16 ||
         t == DType::I1;
}

} // namespace

void Emitter::elementFunctions(
    Step &s, const std::string &name, int64_t n, const Shape &out,
    const std::vector<Shape> &strides, const std::vector<std::string> &names,
    const std::function<std::string(const Store &)> &body,
    const std::vector<Draw> &draws, const std::vector<int64_t> &offsets,
    const std::vector<ResultView> &views) {
  std::vector<int> ins = ::mpc::rt::kernelInputs(s);
  std::vector<int> outs = ::mpc::rt::kernelOutputs(s);
  outs.insert(outs.end(), s.cuda.stores.begin(), s.cuda.stores.end());
  // Where each result goes: output k at the element, or as `views` say
  // (a concat's parts: output 0 with its own strides, from the part's
  // offset). Their offsets are o<ins.size() + k>.
  std::vector<ResultView> results = views;
  if (results.empty())
    for (size_t k = 0; k < outs.size(); ++k)
      results.push_back({k, stridesOf(out), 0});
  std::vector<Shape> walks = strides;
  for (const ResultView &r : results)
    walks.push_back(r.strides);
  auto at = [&](size_t k) { // result k's offset in its output
    return views.empty() ? std::string("i")
                         : "o" + std::to_string(ins.size() + k);
  };
  // Inputs read from `offsets[k]` elements in (a split's part).
  std::string shift;
  for (size_t k = 0; k < offsets.size(); ++k)
    if (offsets[k] != 0)
      shift += "  o" + std::to_string(k) + " += " +
               std::to_string(offsets[k]) + "LL;\n";
  for (size_t k = 0; k < views.size(); ++k)
    if (views[k].offset != 0)
      shift += "  o" + std::to_string(ins.size() + k) + " += " +
               std::to_string(views[k].offset) + "LL;\n";
  // A vector group's lanes stay aligned only at offsets of whole groups.
  auto readOf = [&](size_t k, int64_t width) {
    if (k < offsets.size() && offsets[k] % width != 0)
      return GroupRead::None;
    return groupRead(out, strides[k], width);
  };
  const bool counts = countsUnderflow(s);
  // The arithmetic once, `<name>_op`: the operands and keep bits in, the
  // results out (the scalar and the vector path call it; inlined, it
  // costs nothing).
  auto opCall = [&](const std::function<std::string(size_t)> &in,
                    const std::function<std::string(size_t)> &keep,
                    const std::function<std::string(size_t)> &result) {
    std::vector<std::string> args;
    for (size_t k = 0; k < names.size(); ++k)
      if (!names[k].empty())
        args.push_back(in(k));
    for (size_t j = 0; j < draws.size(); ++j)
      args.push_back(keep(j));
    for (size_t k = 0; k < results.size(); ++k)
      args.push_back(result(k));
    if (counts)
      args.push_back("underflow");
    std::string call = name + "_op(";
    for (size_t k = 0; k < args.size(); ++k)
      call += (k ? ", " : "") + args[k];
    return call + ");";
  };
  std::vector<std::string> decls;
  for (const std::string &v : names)
    if (!v.empty())
      decls.push_back("const float " + v);
  for (size_t j = 0; j < draws.size(); ++j)
    decls.push_back("const bool k" + std::to_string(j));
  for (size_t k = 0; k < results.size(); ++k)
    decls.push_back("float &y" + std::to_string(k));
  if (counts)
    decls.push_back("unsigned long long *__restrict__ underflow");
  std::string opParams;
  for (size_t k = 0; k < decls.size(); ++k)
    opParams += (k ? ", " : "") + decls[k];
  cu << "static __device__ __forceinline__ void " << name << "_op("
     << opParams << ") {\n"
     << body([](size_t k, const std::string &v) {
          return "  y" + std::to_string(k) + " = " + v + ";\n";
        })
     << "}\n\n";
  cu << countedHead(s, name, n)
     << offsetsCode(out, views.empty() ? strides : walks) << shift;
  for (size_t k = 0; k < names.size(); ++k)
    if (!names[k].empty())
      cu << "  const float " << names[k] << " = ld(in" << k << ", o" << k
         << ");\n";
  cu << "  float";
  for (size_t k = 0; k < results.size(); ++k)
    cu << (k ? ", y" : " y") << k;
  cu << ";\n  "
     << opCall([&](size_t k) { return names[k]; },
               [&](size_t j) { return draws[j].keep("i"); },
               [](size_t k) { return "y" + std::to_string(k); })
     << "\n";
  for (size_t k = 0; k < results.size(); ++k)
    cu << "  st(out" << results[k].out << ", " << at(k) << ", y" << k
       << ");\n";
  cu << "}\n\n";
  // The width: 16 bytes of the narrowest operand moved as lanes, at most 8.
  int64_t narrowest = 16;
  bool ok = ins.size() == names.size();
  for (int v : outs) {
    ok = ok && laneType(val(v).dtype);
    narrowest = std::min<int64_t>(narrowest, dtypeSize(val(v).dtype));
  }
  int64_t width = std::min<int64_t>(8, 16 / narrowest);
  std::vector<GroupRead> reads;
  for (size_t k = 0; ok && k < ins.size(); ++k) {
    reads.push_back(ins[k] < 0 ? GroupRead::None : readOf(k, width));
    ok = reads[k] != GroupRead::None &&
         (reads[k] == GroupRead::Once || laneType(val(ins[k]).dtype));
    if (ok && reads[k] == GroupRead::Lanes)
      narrowest = std::min<int64_t>(narrowest, dtypeSize(val(ins[k]).dtype));
  }
  width = std::min<int64_t>(8, 16 / narrowest);
  // Every lane stream holds `width` values live across the group's
  // arithmetic (an IEEE division or square root calls a slow path that
  // keeps them): an Adam update writing its fp16 weight copy (4 streams in,
  // 4 out) spilled at 8 lanes on sm_80, so wide groups of many streams
  // take 4 lanes.
  int64_t streams = (int64_t)results.size() + (int64_t)draws.size() +
                    std::count(reads.begin(), reads.end(), GroupRead::Lanes);
  if (width > 4 && width * streams > 48)
    width = 4;
  // A narrower input may widen the group past a broadcast row's length.
  for (size_t k = 0; ok && k < ins.size(); ++k)
    ok = readOf(k, width) == reads[k];
  // Each result's group: consecutive and aligned in its output.
  for (const ResultView &r : results)
    ok = ok && r.offset % width == 0 &&
         groupRead(out, r.strides, width) == GroupRead::Lanes;
  if (!ok || width < 2)
    return;
  vectorWidth = (int)width;
  std::string W = std::to_string(width), decl, call, aligned;
  for (const auto &p : params(s))
    decl += ", " + p.first, call += ", " + p.second;
  auto align = [&](const std::string &p) {
    aligned += " && mpc_aligned<" + W + ">(" + p + ")";
  };
  std::ostringstream v;
  v << "static __device__ __forceinline__ void " << name << "_vec(const i64 i"
    << decl << ") {\n" << offsetsCode(out, views.empty() ? strides : walks)
    << shift;
  for (size_t k = 0; k < ins.size(); ++k) {
    std::string in = "in" + std::to_string(k), x = "vx" + std::to_string(k);
    if (reads[k] == GroupRead::Lanes) {
      v << "  float " << x << "[" << W << "]; ldv<" << W << ">(" << in
        << " + o" << k << ", " << x << ");\n";
      align(in);
    } else if (!names[k].empty()) {
      v << "  const float " << x << " = ld(" << in << ", o" << k << ");\n";
    }
  }
  // A group of whole Philox groups draws each once: i is a multiple of
  // the width, and rank r's counters start at r n.
  std::vector<bool> wordsOnce;
  for (size_t j = 0; j < draws.size(); ++j) {
    const Draw &d = draws[j];
    wordsOnce.push_back(width % 4 == 0 && d.n % 4 == 0);
    if (!wordsOnce.back())
      continue;
    std::string w = "w" + std::to_string(j);
    v << "  unsigned int " << w << "[" << W << "];\n";
    for (int64_t q = 0; q < width / 4; ++q)
      v << "  "
        << d.words("(unsigned long long)i / 4 + " + std::to_string(q),
                   w + " + " + std::to_string(4 * q))
        << "\n";
  }
  for (size_t k = 0; k < results.size(); ++k)
    v << "  float vy" << k << "[" << W << "];\n";
  for (size_t k = 0; k < outs.size(); ++k)
    align("out" + std::to_string(k));
  v << "#pragma unroll\n  for (int e = 0; e < " << W << "; ++e) "
    << opCall(
           [&](size_t k) {
             return "vx" + std::to_string(k) +
                    (reads[k] == GroupRead::Lanes ? "[e]" : "");
           },
           [&](size_t j) {
             return wordsOnce[j] ? "w" + std::to_string(j) + "[e] >= " +
                                       std::to_string(draws[j].threshold) +
                                       "ull"
                                 : draws[j].keep("i + e");
           },
           [](size_t k) { return "vy" + std::to_string(k) + "[e]"; })
    << "\n";
  for (size_t k = 0; k < results.size(); ++k)
    v << "  stv<" << W << ">(out" << results[k].out << " + " << at(k)
      << ", vy" << k << ");\n";
  v << "}\n\n";
  // A thread's share: whole groups as vectors when every pointer is
  // aligned (else none), the rest one element at a time, both strided by
  // the grid. The rest first: `first` then dies before the vector loop
  // (held across it, ptxas kept it on the stack).
  v << "static __device__ __forceinline__ void " << name
    << "_run(const i64 first, const i64 stride" << decl
    << ") {\n  const i64 whole = " << aligned.substr(4) << " ? count / " << W
    << " * " << W << " : 0;\n  for (i64 i = whole + first; i < count; i += stride) "
    << name << "_at(i" << call << ");\n  for (i64 i = first * " << W
    << "; i < whole; i += stride * " << W << ") " << name << "_vec(i" << call
    << ");\n}\n\n";
  cu << v.str();
}

/// One thread per element: the op's expression (CudaExpressions.cpp) on
/// the operands widened to FP32, rounded once on store.
bool Emitter::elementwise(Step &s, const std::string &name) {
  std::optional<std::string> e = expr(s);
  if (!e)
    return fail(s, "no CUDA kernel for this form of mpc." +
                       std::string(opName(s.op)) + " yet");
  const ValueInfo &y = val(s.outputs[0]);
  if (s.op == OpId::Cast && !isFloat(y.dtype) && y.dtype != DType::I1)
    return integerCast(s, name);
  if (!isFloat(y.dtype) && y.dtype != DType::I1)
    return integerElementwise(s, name);
  mod.flops += numElements(y.shape);
  std::vector<Shape> strides;
  for (int in : s.inputs)
    strides.push_back(broadcastStrides(val(in).shape, y.shape));
  int64_t n = numElements(y.shape);
  std::vector<std::string> names;
  for (size_t k = 0; k < s.inputs.size(); ++k)
    names.push_back(std::string(1, kOperandNames[k]));
  elementFunctions(s, name, n, y.shape, strides, names, [&](const Store &st) {
    if (!s.countUnderflow)
      return st(0, *e);
    // A gradient flushed to zero: nonzero, zero once stored.
    return "  const float u = " + *e + ";\n" + st(0, "u") +
           "  if (a != 0.0f && " + roundedAs(y.dtype, "u") +
           " == 0.0f) atomicAdd(underflow, 1ULL);\n";
  });
  launch1d(s, name, n);
  return true;
}

/// Integer arithmetic (an input's positions from its mask: Bloom's ALiBi
/// cumsum(mask) - 1, Mistral's window bounds), exact in 64 bits as the
/// CPU backend computes it, stored to the result's type.
bool Emitter::integerElementwise(Step &s, const std::string &name) {
  const ValueInfo &y = val(s.outputs[0]);
  const bool fmod = s.getInt("fmod", 0);
  std::string e;
  switch (s.op) {
  case OpId::Add: e = "a + b"; break;
  case OpId::Sub: e = "a - b"; break;
  case OpId::Mul: e = "a * b"; break;
  case OpId::Div: e = "b == 0 ? 0 : a / b"; break;
  case OpId::Mod: // (the divisor's sign without fmod, as Python's)
    e = fmod ? "b == 0 ? 0 : a % b"
             : "b == 0 ? 0 : (a % b != 0 && ((a % b < 0) != (b < 0)) ? a % b + b : a % b)";
    break;
  case OpId::Max: e = "a > b ? a : b"; break;
  case OpId::Min: e = "a < b ? a : b"; break;
  case OpId::Neg: e = "-a"; break;
  case OpId::Abs: e = "a < 0 ? -a : a"; break;
  case OpId::Where: e = "a ? b : c"; break;
  default:
    return fail(s, "integer " + std::string(opName(s.op)) + " has no CUDA kernel yet");
  }
  if (s.inputs.size() > (s.op == OpId::Where ? 3u : 2u))
    return fail(s, "integer " + std::string(opName(s.op)) +
                       " of more than two operands has no CUDA kernel yet");
  std::vector<Shape> strides;
  for (int in : s.inputs)
    strides.push_back(broadcastStrides(val(in).shape, y.shape));
  const int64_t n = numElements(y.shape);
  cu << countedHead(s, name, n) << offsetsCode(y.shape, strides);
  for (size_t k = 0; k < s.inputs.size(); ++k)
    cu << "  const i64 " << kOperandNames[k] << " = (i64)in" << k << "[o" << k << "];\n";
  cu << "  out0[i] = (" << ctype(y.dtype) << ")(" << e << ");\n}\n\n";
  launch1d(s, name, n);
  return true;
}

/// A cast to i64/i32, exact: an integer source is converted as an integer
/// (a float would lose everything above 2^24), a float one as the CPU
/// backend does (mpc_f2i).
bool Emitter::integerCast(Step &s, const std::string &name) {
  const ValueInfo &x = val(s.inputs[0]), &y = val(s.outputs[0]);
  int64_t n = numElements(y.shape);
  bool to32 = y.dtype == DType::I32;
  std::string value =
      isFloat(x.dtype)
          ? std::string("mpc_f2i(ld(in0, i), ") +
                (to32 ? "-2147483648.0, 2147483647.0"
                      : "-9223372036854775808.0, 9223372036854774784.0") +
                ")"
          : "in0[i]";
  cu << countedHead(s, name, n) << "  out0[i] = (" << ctype(y.dtype) << ")"
     << value << ";\n}\n\n";
  launch1d(s, name, n);
  return true;
}

/// Clip: min and max are optional scalar operands.
bool Emitter::clip(Step &s, const std::string &name) {
  auto bound = [&](size_t k, const char *none) {
    return s.inputs.size() > k && s.inputs[k] >= 0
               ? "ld(in" + std::to_string(k) + ", 0)"
               : std::string(none);
  };
  const ValueInfo &y = val(s.outputs[0]);
  if (!isFloat(y.dtype))
    return fail(s, "integer arithmetic has no CUDA kernel yet");
  int64_t n = numElements(y.shape);
  cu << countedHead(s, name, n) << "  st(out0, i, mpc_clip(ld(in0, i), "
     << bound(1, "-INFINITY") << ", " << bound(2, "INFINITY") << "));\n}\n\n";
  launch1d(s, name, n);
  return true;
}

std::pair<std::string, std::string> Emitter::dropoutCounter(const Step &s,
                                                            size_t slot) {
  if (slot >= s.inputs.size() || s.inputs[slot] < 0)
    return {"0ull", "0ull"};
  return counterIn(s.inputs[slot], slot);
}

std::pair<std::string, std::string> Emitter::counterIn(int value,
                                                       size_t slot) {
  std::string in = "(unsigned long long)in" + std::to_string(slot);
  return {in + "[0]", numElements(val(value).shape) > 1 ? in + "[1]" : "0ull"};
}

std::optional<float> Emitter::dropoutRatio(const Step &s) {
  auto given = [&](size_t k) { return k < s.inputs.size() && s.inputs[k] >= 0; };
  float ratio = 0.5f;
  if (given(1)) {
    const Tensor *r = constant(s.inputs[1]);
    if (!r)
      return std::nullopt;
    ratio = r->getFloat(0);
  }
  if (given(2)) {
    const Tensor *t = constant(s.inputs[2]);
    if (!t)
      return std::nullopt;
    if (t->getInt(0) == 0)
      return 0.0f; // keeps everything, times 1
  } else {
    return 0.0f; // inference mode
  }
  return ratio;
}

std::optional<Emitter::Draw> Emitter::dropoutDraw(const Step &s, int slot) {
  std::optional<float> ratio = dropoutRatio(s);
  if (!ratio)
    return std::nullopt;
  Draw d;
  d.seed = (uint64_t)s.getInt("seed", 0);
  d.stream = (uint32_t)s.getInt("stream", 0);
  d.threshold = ::mpc::philox::mpc_dropout_threshold(*ratio);
  d.scale = ::mpc::philox::mpc_dropout_scale(*ratio);
  d.n = numElements(val(s.outputs[0]).shape);
  if (slot >= 0)
    std::tie(d.step, d.rank) = counterIn(s.inputs[3], slot);
  return d;
}

/// Dropout: a thread draws one Philox group (runtime/Philox.h) and keeps
/// or zeroes its four elements, as the CPU kernel draws them, with 16-byte
/// (FP32) or 8-byte (fp16/bf16) accesses where the count allows. The
/// ratio and the training flag must be constants (what exports write);
/// the step and the data-parallel rank from the [step, rank] input
/// (mpc-dropout-steps; rank r's elements numbered after the r ranks
/// before it, as one process over the global batch), 0 without. The mask
/// is written only where something reads it (`cuda.written`: the
/// backward draws it again).
bool Emitter::dropout(Step &s, const std::string &name) {
  bool hasStep = s.inputs.size() > 3 && s.inputs[3] >= 0;
  std::optional<Draw> draw = dropoutDraw(s, hasStep ? 3 : -1);
  if (!draw)
    return fail(s, s.inputs.size() > 1 && s.inputs[1] >= 0 &&
                           !constant(s.inputs[1])
                       ? "dropout's ratio must be a constant for the CUDA kernel"
                       : "dropout's training_mode must be a constant for the "
                         "CUDA kernel");
  const bool mask = s.cuda.written != 1;
  const ValueInfo &y = val(s.outputs[0]);
  int64_t n = numElements(y.shape), groups = (n + 3) / 4;
  std::string threshold = std::to_string(draw->threshold) + "ull";
  cu << header(s, name, 256) << " {\n  i64 g = global_index();\n  if (g >= "
     << groups << "LL) return;\n  i64 i = g * 4;\n";
  if (n % 4 == 0) {
    // The rank's groups follow whole groups of the ranks before it.
    cu << "  unsigned int w[4];\n  "
       << draw->words("(unsigned long long)g", "w") << "\n";
    cu << "  float x[4];\n  unsigned char k[4];\n  ldv<4>(in0 + i, x);\n"
       << "#pragma unroll\n  for (int l = 0; l < 4; ++l) {\n    k[l] = w[l] >= "
       << threshold << ";\n    x[l] = k[l] ? x[l] * " << flt(draw->scale)
       << " : 0.0f;\n  }\n  stv<4>(out0 + i, x);\n";
    if (mask)
      cu << "  unsigned int m;\n  memcpy(&m, k, 4);\n"
         << "  *(unsigned int *)(out1 + i) = m;\n";
    cu << "}\n\n";
  } else {
    // Groups straddle ranks: a draw an element.
    cu << "  for (int l = 0; l < 4 && i + l < " << n
       << "LL; ++l) {\n    bool k = " << draw->keep("i + l") << ";\n"
       << (mask ? "    out1[i + l] = k;\n" : "")
       << "    st(out0, i + l, k ? ld(in0, i + l) * " << flt(draw->scale)
       << " : 0.0f);\n  }\n}\n\n";
  }
  launch1d(s, name, groups);
  return true;
}

/// mpc.random: a thread an element, its Philox number (runtime/Philox.h)
/// as the CPU kernel draws it, the step and rank from the [step, rank]
/// input (mpc-dropout-steps), 0 without.
bool Emitter::random(Step &s, const std::string &name) {
  const ValueInfo &y = val(s.outputs[0]);
  const int64_t n = numElements(y.shape);
  const bool hasStep = s.inputs.size() > 1 && s.inputs[1] >= 0;
  auto [step, rank] = hasStep ? counterIn(s.inputs[1], 1)
                              : std::pair<std::string, std::string>{"0ull", "0ull"};
  const float a = (float)s.getFloat("a", 0.0), b = (float)s.getFloat("b", 1.0);
  const bool normal = s.getString("distribution", "uniform") == "normal";
  const std::string key = std::to_string((uint64_t)s.getInt("seed", 0)) + "ull, " +
                          std::to_string((uint32_t)s.getInt("stream", 0)) + "u, " + step +
                          ", " + rank + " * " + std::to_string(n) +
                          "ull + (unsigned long long)i";
  cu << header(s, name, 256) << " {\n  i64 i = global_index();\n  if (i >= " << n
     << "LL) return;\n  st(out0, i, "
     << (normal ? flt(a) + " + " + flt(b) + " * mpc_random_normal(" + key + ")"
                : flt(a) + " + " + flt(b - a) + " * mpc_random_uniform(" + key + ")")
     << ");\n}\n\n";
  launch1d(s, name, n);
  return true;
}

void registerElementwiseEmitters(EmitterTable &t) {
  t.emit(OpId::Dropout, &Emitter::dropout);
  t.emit(OpId::Random, &Emitter::random);
  t.emit(OpId::Clip, &Emitter::clip);
}

} // namespace mlir::mpc::cuda
