//===- CudaEmitter.cpp - CUDA C++ for an execution plan -------------------===//
//
// The walk over the plan (epilogue fusion, one kernel per step), the shared
// code-generation helpers, and the elementwise and data-movement kernels.
//
//===----------------------------------------------------------------------===//

#include "codegen/CudaKernels.h"
#include "codegen/CudaPrelude.h"
#include "runtime/kernels/Common.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>

using namespace ::mpc::rt;

namespace mlir::mpc::cuda {

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

/// Code computing offsets `o<k>` of each input for flat output index `i`
/// given per-input strides over the output's dims.
std::string offsetsCode(const Shape &out, const std::vector<Shape> &strides) {
  // An input read in the output's own layout uses the flat index as is; the
  // others walk the output's coordinates, in 32-bit arithmetic when the
  // output allows (a 64-bit division costs several times more).
  Shape own = stridesOf(out);
  std::ostringstream os, walk;
  bool any = false;
  for (size_t k = 0; k < strides.size(); ++k)
    if (strides[k] == own) {
      os << "  i64 o" << k << " = i;\n";
    } else {
      os << "  i64 o" << k << " = 0;\n";
      for (int64_t st : strides[k])
        any = any || st != 0; // all zero: a scalar, read at 0
    }
  if (!any)
    return os.str();
  const char *t = numElements(out) < (int64_t(1) << 31) ? "int" : "i64";
  os << "  " << t << " r = (" << t << ")i;\n";
  for (int64_t d = (int64_t)out.size() - 1; d >= 0; --d) {
    os << "  { " << t << " c = r % " << out[d] << "; r /= " << out[d] << ";";
    for (size_t k = 0; k < strides.size(); ++k)
      if (strides[k] != own && strides[k][d])
        os << " o" << k << " += (i64)c * " << strides[k][d] << "LL;";
    os << " }\n";
  }
  return os.str();
}

/// Kernel header: extern "C" with typed pointer params for inputs then
/// outputs (absent optional inputs are null pointers).
std::string Emitter::header(const Step &s, const std::string &name, int threads) {
  std::ostringstream os;
  os << "extern \"C\" __global__ void __launch_bounds__(" << threads << ") "
     << name << "(";
  int n = 0;
  std::vector<int> inputs = ::mpc::rt::kernelInputs(s);
  for (size_t k = 0; k < inputs.size(); ++k) {
    DType t = inputs[k] >= 0 ? val(inputs[k]).dtype : DType::F32;
    os << (n++ ? ", " : "") << "const " << ctype(t) << " *__restrict__ in"
       << k;
  }
  for (size_t k = 0; k < s.outputs.size(); ++k)
    os << (n++ ? ", " : "") << ctype(val(s.outputs[k]).dtype)
       << " *__restrict__ out" << k;
  if (s.has("mpc.count_underflow")) // the session's counter, last
    os << ", unsigned long long *__restrict__ underflow";
  os << ")";
  return os.str();
}

void Emitter::launch(Step &s, const std::string &name, Shape grid, Shape block,
                     bool prologue) {
  if (prologue) { // one thread, before the step's kernel
    s.attrs["cuda.prologue"] = name;
    grid = block = {1, 1, 1};
  } else {
    s.attrs["cuda.kernel"] = name;
    s.attrs["cuda.grid"] = grid;
    s.attrs["cuda.block"] = block;
  }
  mod.kernels.push_back(name);
  // The host launcher the emulation test runs (same arguments).
  emu << "extern \"C\" void emu_" << name << "(void **p) {\n  mpc_emulate({"
      << grid[0] << ", " << grid[1] << ", " << grid[2] << "}, {" << block[0]
      << ", " << block[1] << ", " << block[2] << "}, "
      << (barrier ? "true" : "false") << ", [&] { " << name << "(";
  size_t k = 0;
  for (int v : ::mpc::rt::kernelInputs(s)) {
    emu << (k ? ", " : "") << "(const "
        << ctype(v >= 0 ? val(v).dtype : DType::F32) << " *)p[" << k << "]";
    ++k;
  }
  for (int v : s.outputs) {
    emu << (k ? ", " : "") << "(" << ctype(val(v).dtype) << " *)p[" << k
        << "]";
    ++k;
  }
  if (s.has("mpc.count_underflow")) {
    s.attrs["cuda.underflow_counter"] = int64_t(1);
    emu << (k ? ", " : "") << "(unsigned long long *)p[" << k++ << "]";
  }
  emu << "); });\n}\nextern \"C\" { int emu_" << name << "_nparams = " << k
      << "; }\n";
  barrier = false;
}


bool Emitter::elementwise(Step &s, const std::string &name, const std::string &e) {
  const ValueInfo &y = val(s.outputs[0]);
  if (!isFloat(y.dtype) && y.dtype != DType::I1 &&
      !(s.op == "cast" || s.op == "identity"))
    return fail(s, "integer arithmetic has no CUDA kernel yet");
  std::vector<Shape> strides;
  for (int in : s.inputs)
    strides.push_back(broadcastStrides(val(in).shape, y.shape));
  int64_t n = numElements(y.shape);
  cu << header(s, name, 256) << " {\n  i64 i = global_index();\n  if (i >= "
     << n << "LL) return;\n"
     << offsetsCode(y.shape, strides);
  for (size_t k = 0; k < s.inputs.size(); ++k)
    cu << "  float " << kOperandNames[k] << " = ld(in" << k << ", o" << k
       << ");\n";
  cu << "  st(out0, i, " << e << ");\n";
  if (s.has("mpc.count_underflow")) // a gradient flushed to zero
    cu << "  if (a != 0.0f && ld(out0, i) == 0.0f) atomicAdd(underflow, 1ULL);\n";
  cu << "}\n\n";
  launch1d(s, name, n);
  return true;
}

/// A fused elementwise chain (CudaFusion.cpp): each member in plan order
/// into a register, rounded to its type unless FP32; the last one stored.
bool Emitter::chain(Step &s, const std::string &name) {
  const ValueInfo &y = val(s.outputs[0]);
  std::vector<int> ext = ::mpc::rt::kernelInputs(s);
  std::map<int, std::string> reg; // value -> C++ expression holding it
  std::vector<Shape> strides;
  for (size_t k = 0; k < ext.size(); ++k) {
    strides.push_back(broadcastStrides(val(ext[k]).shape, y.shape));
    reg[ext[k]] = "x" + std::to_string(k);
  }
  int64_t n = numElements(y.shape);
  cu << header(s, name, 256) << " {\n  i64 i = global_index();\n  if (i >= "
     << n << "LL) return;\n"
     << offsetsCode(y.shape, strides);
  for (size_t k = 0; k < ext.size(); ++k)
    cu << "  float x" << k << " = ld(in" << k << ", o" << k << ");\n";
  std::vector<int64_t> members = *s.getInts("cuda.chain");
  for (int64_t m : members) {
    const Step &member = plan.steps[m];
    int out = member.outputs[0];
    std::string t = "t" + std::to_string(m);
    cu << "  float " << t << ";\n  { ";
    std::vector<int> operands = chainOperands(member);
    for (size_t k = 0; k < operands.size(); ++k)
      cu << "float " << kOperandNames[k] << " = " << reg.at(operands[k]) << "; ";
    std::string e = member.op == "expand" ? "a" : *expr(member);
    DType dt = val(out).dtype;
    cu << t << " = "
       << (dt == DType::F16    ? "rnd_f16(" + e + ")"
           : dt == DType::BF16 ? "rnd_bf16(" + e + ")"
           : dt == DType::I1   ? "rnd_i1(" + e + ")"
                               : e)
       << "; }\n";
    reg[out] = t;
    mod.flops += n;
  }
  cu << "  st(out0, i, " << reg.at(s.outputs[0]) << ");\n}\n\n";
  launch1d(s, name, n);
  return true;
}

/// out[i] = in0[offset + sum c_d * stride_d] (raw element copy).
bool Emitter::stridedCopy(Step &s, const std::string &name, int64_t offset,
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

bool Emitter::gather(Step &s, const std::string &name) {
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

/// Scatter-add without atomics, in index order like the CPU backend (so
/// the sums are the same): into an FP32 result each thread owns one
/// (outer, inner) column and walks the indices; any other result type
/// accumulates each element in FP32 from the indices that select it.
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

/// Concat (`concatenate`) or Split along the axis: over the elements of the
/// whole, find the part owning the coordinate and move the element there.
bool Emitter::axisParts(Step &s, const std::string &name, bool concatenate) {
  const ValueInfo &whole = val(concatenate ? s.outputs[0] : s.inputs[0]);
  const std::vector<int> &parts = concatenate ? s.inputs : s.outputs;
  int64_t rank = whole.shape.size(), axis = s.getInt("axis", 0);
  axis = axis < 0 ? axis + rank : axis;
  AxisSplit sp = splitAt(whole.shape, axis);
  int64_t n = numElements(whole.shape);
  cu << header(s, name, 256) << " {\n  i64 i = global_index();\n  if (i >= "
     << n << "LL) return;\n  i64 in = i % " << sp.inner << "LL, t = i / "
     << sp.inner << "LL, a = t % " << sp.dim << "LL, o = t / " << sp.dim
     << "LL;\n";
  int64_t begin = 0;
  for (size_t k = 0; k < parts.size(); ++k) {
    int64_t d = val(parts[k]).shape[axis];
    std::string at = "[(o * " + std::to_string(d) + "LL + a - " +
                     std::to_string(begin) + "LL) * " +
                     std::to_string(sp.inner) + "LL + in]";
    cu << "  if (a < " << begin + d << "LL) { "
       << (concatenate ? "out0[i] = in" + std::to_string(k) + at
                       : "out" + std::to_string(k) + at + " = in0[i]")
       << "; return; }\n";
    begin += d;
  }
  cu << "}\n\n";
  launch1d(s, name, n);
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

bool Emitter::emitStep(Step &s, size_t index) {
  std::string name = "k" + std::to_string(index) + "_" + s.op;
  if (s.has("mpc.count_underflow") && s.op != "cast")
    return fail(s, "only a cast can count underflowing gradients");
  static const std::set<std::string> aliases = {"reshape", "flatten",
                                                "squeeze", "unsqueeze",
                                                "identity"};
  if (s.has("cuda.alias") || s.has("cuda.fused")) // in another's kernel
    return true;
  if (auto members = s.getInts("cuda.chain")) // k<i>_chain<n>_<last op>
    return chain(s, "k" + std::to_string(index) + "_chain" +
                        std::to_string(members->size()) + "_" + s.op);
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
  if (op == "batch_norm" || op == "batch_norm_train")
    return batchNorm(s, name, op == "batch_norm_train");
  if (op == "layer_norm")
    return layerNorm(s, name);
  if (op.rfind("reduce_", 0) == 0)
    return reduce(s, name, op.substr(7));
  if (op == "arg_max" || op == "arg_min")
    return argExtreme(s, name, op == "arg_max");
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
  if (op == "gather_elements")
    return gatherElements(s, name);
  if (op == "gather_grad")
    return gatherGrad(s, name);
  if (op == "concat" || op == "split")
    return axisParts(s, name, op == "concat");
  if (op == "conv_grad_input" || op == "conv_grad_weight")
    return convGrad(s, name, op == "conv_grad_weight");
  if (op == "max_pool_grad" || op == "average_pool_grad")
    return poolGrad(s, name, op == "max_pool_grad");
  if (op == "expand") { // a broadcasting copy
    const ValueInfo &x = val(s.inputs[0]), &y = val(s.outputs[0]);
    return stridedCopy(s, name, 0, broadcastStrides(x.shape, y.shape));
  }
  if (op == "softmax_cross_entropy_loss_grad" || op == "nll_loss_grad")
    return crossEntropyGrad(s, name, op != "nll_loss_grad");
  if (op == "unscale_grads")
    return unscaleGrads(s, name);
  if (op == "update_loss_scale")
    return updateLossScale(s, name);
  if (op == "momentum" || op == "adagrad" || op == "adam")
    return onnxOptimizer(s, name);
  if (op == "trilu")
    return trilu(s, name);
  if (op == "pad")
    return pad(s, name);
  if (op == "clip") { // min and max: optional scalar operands
    auto bound = [&](size_t k, const char *none) {
      return s.inputs.size() > k && s.inputs[k] >= 0
                 ? "ld(in" + std::to_string(k) + ", 0)"
                 : std::string(none);
    };
    const ValueInfo &y = val(s.outputs[0]);
    if (!isFloat(y.dtype))
      return fail(s, "integer arithmetic has no CUDA kernel yet");
    int64_t n = numElements(y.shape);
    cu << header(s, name, 256) << " {\n  i64 i = global_index();\n  if (i >= "
       << n << "LL) return;\n  float a = ld(in0, i);\n  st(out0, i, a != a ? a : "
       << "fminf(fmaxf(a, " << bound(1, "-INFINITY") << "), "
       << bound(2, "INFINITY") << "));\n}\n\n";
    launch1d(s, name, n);
    return true;
  }
  if (auto e = expr(s)) {
    mod.flops += numElements(val(s.outputs[0]).shape);
    return elementwise(s, name, *e);
  }
  return fail(s, "no CUDA kernel for mpc." + op + " yet");
}

} // namespace mlir::mpc::cuda

namespace mlir::mpc {

bool emitCuda(Plan &plan, CudaModule &out, std::string &error, bool fuse) {
  cuda::Emitter e{plan, out, error, {}, {}};
  if (fuse)
    cuda::fuseSteps(e);
  e.cu << "// Emitted by mpc: the kernels of an execution plan, one per step or\n"
          "// fused chain of steps.\n"
       << kCudaPrelude << "\n";
  for (size_t i = 0; i < plan.steps.size(); ++i)
    if (!e.emitStep(plan.steps[i], i))
      return false;
  e.cu << "#ifdef MPC_HOST_EMULATION\n" << e.emu.str() << "#endif\n";
  out.source = e.cu.str();
  return true;
}

} // namespace mlir::mpc
