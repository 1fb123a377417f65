//===- CudaReduceKernels.cpp - reductions, arg max/min, global pooling ----===//
//
// Folds of many elements into one, accumulated in double as the CPU backend
// does (so the order of the additions barely shows once rounded to FP32).
// Where the innermost axis is reduced, the elements of one output lie side
// by side: a warp shares them (a block of warps for long rows), each lane
// reading 16 bytes at a time where the contiguous run allows, and the
// partials meet in butterfly shuffles (across a block's warps, through
// shared memory). Where the innermost axis is kept, a thread per output
// already reads coalesced: neighbouring threads, neighbouring addresses.
// A few long folds (a loss summed over millions of elements: one block
// for a scalar) are split over blocks: a prologue kernel leaves each
// block's partials in the session's kernel scratch, and a block per
// output folds them.
//
//===----------------------------------------------------------------------===//

#include "codegen/CudaKernels.h"
#include "runtime/cuda/FoldOps.h"
#include "runtime/kernels/Common.h"

#include <algorithm>
#include <map>
#include <set>

using namespace ::mpc::rt;

namespace mlir::mpc::cuda {

namespace {

/// Reduced rows at least this long get a warp each (a lane then has at
/// least one element), at least kBlockFoldMin a block.
constexpr int64_t kWarpFoldMin = 32, kBlockFoldMin = 4096;
/// Where the innermost axis is kept: folds of at least kSliceFoldMin
/// elements into fewer than kSliceOutMax outputs split each output's
/// elements among a block's warps (a thread per output leaves the GPU idle).
constexpr int64_t kSliceFoldMin = 64, kSliceOutMax = 1 << 16;

/// acc = step(acc, v) from `init`; NaN propagates through max and min as
/// in the CPU backend.
struct Fold {
  const char *init, *step;
};
const std::map<std::string, Fold> &folds() {
  static const std::map<std::string, Fold> table = {
      {"sum", {"0.0", "acc + v"}},
      {"mean", {"0.0", "acc + v"}},
      {"log_sum", {"0.0", "acc + v"}},
      {"log_sum_exp", {"0.0", "acc + exp(v - mx)"}},
      {"max", {"-INFINITY", "(v != v || v > acc) ? v : acc"}},
      {"min", {"INFINITY", "(v != v || v < acc) ? v : acc"}},
      {"prod", {"1.0", "acc * v"}},
      {"l1", {"0.0", "acc + fabs(v)"}},
      {"l2", {"0.0", "acc + v * v"}},
      {"sum_square", {"0.0", "acc + v * v"}}};
  return table;
}

/// The reduced dims of a fold, innermost last, and how to walk them.
struct FoldShape {
  Shape kept, keptStrides, rdims, rstrides;
  int64_t outN = 1, redN = 1;
  int64_t run = 1; // elements of one output contiguous at stride 1
};

FoldShape foldShape(const Shape &shape, const std::set<int64_t> &red) {
  FoldShape f;
  Shape st = stridesOf(shape);
  for (int64_t i = 0; i < (int64_t)shape.size(); ++i)
    if (!red.count(i)) {
      f.kept.push_back(shape[i]);
      f.keptStrides.push_back(st[i]);
    } else if (shape[i] != 1) { // a unit dim moves nothing
      if (!f.rdims.empty() && f.rstrides.back() == st[i] * shape[i]) {
        f.rdims.back() *= shape[i]; // contiguous with the last: one dim
        f.rstrides.back() = st[i];
        continue;
      }
      f.rdims.push_back(shape[i]);
      f.rstrides.push_back(st[i]);
    }
  f.outN = numElements(f.kept);
  f.redN = numElements(f.rdims);
  for (int64_t d = (int64_t)f.rdims.size() - 1; d >= 0 && f.rstrides[d] == f.run;
       --d)
    f.run *= f.rdims[d];
  return f;
}

/// A value every thread of a fold's group carries: its partial result.
struct FoldVar {
  std::string type, name, identity;
};

/// How a fold kernel shares the elements of one output among threads:
/// - `lanes` threads side by side along a contiguous run (1: a thread per
///   output, 32: a warp, more: a block), `width` consecutive elements a
///   load;
/// - or, where outputs lie side by side (the innermost axis kept), a block
///   of 32 outputs whose warps take every `slices`-th reduced element.
struct FoldKernel {
  Emitter &e;
  Step &s;
  const std::string &name;
  FoldShape f;
  int64_t lanes = 1, slices = 1, blockThreads = 256, width = 1;
  /// Split folds: blocks a output, and the reduced elements each takes.
  int64_t parts = 1, chunk = 0;
  std::string load = "ld(in0, off)"; // input 0's element at `off`

  FoldKernel(Emitter &e, Step &s, const std::string &name, FoldShape shape,
             int64_t elemBytes, bool vectorLoads)
      : e(e), s(s), name(name), f(std::move(shape)) {
    if (f.run > 1 && f.redN >= kBlockFoldMin)
      lanes = blockThreads = f.outN <= 1024 ? 1024 : 256;
    else if (f.run > 1 && f.redN >= kWarpFoldMin)
      lanes = 32;
    else if (f.run == 1 && f.redN >= kSliceFoldMin && f.outN < kSliceOutMax)
      slices = f.redN >= 1024 ? 32 : 8, blockThreads = 32 * slices;
    int64_t w = std::min<int64_t>(8, 16 / elemBytes);
    if (vectorLoads && w >= 2 && f.run % w == 0)
      width = w;
  }

  /// Splits a block-per-output fold of few outputs over blocks (grid
  /// outputs x parts), so a scalar's millions of elements do not wait on
  /// one SM; each block's share a multiple of the load width.
  void split() {
    if (lanes <= 32)
      return;
    using namespace ::mpc::rt::cuda;
    int64_t p = std::min((kFoldTargetBlocks + f.outN - 1) / f.outN,
                         f.redN / kFoldSplitMin);
    if (p < 2)
      return;
    chunk = ((f.redN + p - 1) / p + width - 1) / width * width;
    parts = (f.redN + chunk - 1) / chunk;
  }

  /// `i` the output, `t` the thread's place in its group (its slice in the
  /// sliced form) and `lane` in its warp.
  std::string head(const std::vector<FoldVar> &vars,
                   const std::string &kernel = "") {
    std::ostringstream os;
    os << e.header(s, kernel.empty() ? name : kernel, (int)blockThreads)
       << " {\n";
    for (const FoldVar &v : vars)
      if (lanes > 32)
        os << "  __shared__ " << v.type << " part_" << v.name << "[32];\n";
      else if (slices > 1) // padded: the lanes of a slice hit distinct banks
        os << "  __shared__ " << v.type << " part_" << v.name << "[" << slices
           << "][33];\n";
    if (slices > 1)
      os << "  const int lane = threadIdx.x % 32, t = threadIdx.x / 32;\n"
         << "  const i64 i = (i64)blockIdx.x * 32 + lane;\n"
         << "  const bool live = i < " << f.outN << "LL;\n";
    else if (lanes == 1)
      os << "  const i64 i = global_index();\n  const int t = 0;\n";
    else if (lanes == 32)
      os << "  const i64 i = (i64)blockIdx.x * " << blockThreads / 32
         << "LL + threadIdx.x / 32;\n  const int t = threadIdx.x % 32;\n";
    else
      os << "  const i64 i = blockIdx.x;\n  const int t = threadIdx.x, lane = "
            "t % 32;\n";
    if ((lanes == 1 && slices == 1) || lanes == 32) // a warp leaves together
      os << "  if (i >= " << f.outN << "LL) return;\n";
    return os.str();
  }

  /// The loop over the thread's share: j0 steps through the reduced
  /// elements, `off` their place in input 0 (`o0` the output's first).
  /// `part`: the share of block (i, blockIdx.y) of a split fold.
  std::string share(const std::string &body, bool index = false,
                    bool part = false) {
    std::ostringstream os;
    int64_t step = slices > 1 ? slices : lanes * width;
    std::string first = "(i64)t * " + std::to_string(width),
                end = std::to_string(f.redN) + "LL";
    if (part) {
      first = "(i64)blockIdx.y * " + std::to_string(chunk) + "LL + " + first;
      os << "  const i64 jEnd = (i64)blockIdx.y * " << chunk << "LL + "
         << chunk << "LL < " << f.redN << "LL ? (i64)blockIdx.y * " << chunk
         << "LL + " << chunk << "LL : " << f.redN << "LL;\n";
      end = "jEnd";
    }
    os << "  for (i64 j0 = " << first << "; "
       << (slices > 1 ? "live && " : "") << "j0 < " << end << "; j0 += "
       << step << "LL) {\n    i64 off = o0";
    if (f.run == f.redN) {
      os << " + j0;\n";
    } else {
      os << ", q = j0;\n";
      for (int64_t d = (int64_t)f.rdims.size() - 1; d > 0; --d)
        os << "    off += (q % " << f.rdims[d] << "LL) * " << f.rstrides[d]
           << "LL; q /= " << f.rdims[d] << "LL;\n";
      os << "    off += q * " << f.rstrides[0] << "LL;\n"; // q < rdims[0]
    }
    if (width > 1)
      os << "    float vx[" << width << "]; ldv<" << width
         << ">(in0 + off, vx);\n#pragma unroll\n    for (int e = 0; e < "
         << width << "; ++e) {\n      const double v = vx[e];"
         << (index ? " const i64 j = j0 + e;" : "") << "\n      " << body
         << "\n    }\n";
    else
      os << "    const double v = " << load << ";"
         << (index ? " const i64 j = j0;" : "") << "\n    " << body << "\n";
    os << "  }\n";
    return os.str();
  }

  /// Combines every thread's `vars` of a group (`combine` reads another
  /// thread's as o_<var>), leaving each thread of it with the result.
  std::string combine(const std::vector<FoldVar> &vars,
                      const std::string &combine) {
    std::ostringstream os;
    if (slices > 1) { // each thread folds the slices' parts in slice order
      for (const FoldVar &v : vars)
        os << "  part_" << v.name << "[t][lane] = " << v.name << ";\n";
      os << "  __syncthreads();\n";
      for (const FoldVar &v : vars)
        os << "  " << v.name << " = part_" << v.name << "[0][lane];\n";
      os << "  for (int k = 1; k < " << slices << "; ++k) {\n";
      for (const FoldVar &v : vars)
        os << "    const " << v.type << " o_" << v.name << " = part_" << v.name
           << "[k][lane];\n";
      os << "    " << combine << "\n  }\n  __syncthreads();\n";
      return os.str();
    }
    if (lanes == 1)
      return "";
    auto butterfly = [&] {
      os << "  for (int o = 16; o > 0; o >>= 1) {\n";
      for (const FoldVar &v : vars)
        os << "    const " << v.type << " o_" << v.name
           << " = __shfl_xor_sync(0xffffffffu, " << v.name << ", o);\n";
      os << "    " << combine << "\n  }\n";
    };
    butterfly();
    if (lanes > 32) { // the warps' results, through shared memory
      os << "  if (lane == 0) {";
      for (const FoldVar &v : vars)
        os << " part_" << v.name << "[t / 32] = " << v.name << ";";
      os << " }\n  __syncthreads();\n";
      for (const FoldVar &v : vars)
        os << "  " << v.name << " = lane < " << lanes / 32 << " ? part_"
           << v.name << "[lane] : " << v.identity << ";\n";
      butterfly();
      os << "  __syncthreads();\n"; // before the next combine reuses parts
    }
    return os.str();
  }

  /// Leaves every thread but the one storing the output's result.
  std::string storer() {
    return slices > 1  ? "  if (t != 0 || !live) return;\n"
           : lanes > 1 ? "  if (t != 0) return;\n"
                       : "";
  }

  void launch() {
    if (lanes == 1 && slices == 1)
      return e.launch1d(s, name, f.outN);
    e.barrier = true; // lanes meet in shuffles, warps in shared memory
    int64_t perBlock = slices > 1 ? 32 : blockThreads / lanes;
    e.launch(s, name, {(f.outN + perBlock - 1) / perBlock, 1, 1},
             {blockThreads, 1, 1});
  }
};

/// For a reduction at the end of a chain (fuseChainsIntoReductions):
/// writes `<name>_elem(i, params...)`, the chain's value at element i of
/// the reduction's input (each member rounded to its type, as the chain
/// kernel would have stored it), and returns the fold's load through it.
std::string chainLoad(Emitter &e, const Step &s, const std::string &name) {
  const Shape &shape = e.val(s.inputs[0]).shape;
  const std::vector<int> ext = ::mpc::rt::kernelInputs(s);
  std::vector<Shape> strides;
  std::map<int, std::string> regs;
  std::ostringstream os;
  std::string call;
  os << "static __device__ __forceinline__ float " << name
     << "_elem(const i64 i";
  for (const auto &p : e.params(s))
    os << ", " << p.first, call += ", " + p.second;
  os << ") {\n";
  for (int v : ext)
    strides.push_back(broadcastStrides(e.val(v).shape, shape));
  os << offsetsCode(shape, strides);
  for (size_t k = 0; k < ext.size(); ++k) {
    std::string x = "x" + std::to_string(k);
    regs[ext[k]] = x;
    os << "  const float " << x << " = ld(in" << k << ", o" << k << ");\n";
  }
  size_t t = 0;
  for (int m : s.cuda.chain) // but the reduction, and sums fused in beside it
    if (!reducesChain(e.plan.steps[m]))
      os << e.chainMember(e.plan.steps[m], regs, t++);
  e.cu << os.str() << "  return " << regs.at(s.inputs[0]) << ";\n}\n\n";
  return name + "_elem(off" + call + ")";
}

/// Replaces the variable `v` of a fold step with `to`.
std::string renameV(std::string e, const std::string &to) {
  for (size_t at = 0; (at = e.find('v', at)) != std::string::npos;)
    if ((at == 0 || !isalnum(e[at - 1])) &&
        (at + 1 == e.size() || !isalnum(e[at + 1])))
      e.replace(at, 1, to), at += to.size();
    else
      ++at;
  return e;
}

} // namespace

/// `kind` (a reduce op's name without "reduce_") over the axes `red` of
/// input 0 into output 0, one value per kept index in order.
bool Emitter::foldAxes(Step &s, const std::string &name, const std::string &kind,
                       const std::set<int64_t> &red) {
  const ValueInfo &x = val(s.inputs[0]);
  auto fold = folds().find(kind);
  if (fold == folds().end())
    return fail(s, "no CUDA kernel for mpc." + std::string(opName(s.op)) +
                       " yet");
  bool chained = s.cuda.isChain(); // loads through the chain, one at a time
  FoldKernel k(*this, s, name, foldShape(x.shape, red), dtypeSize(x.dtype),
               !chained);
  if (chained)
    k.load = chainLoad(*this, s, name);
  std::string result = kind == "mean" ? "acc / " + dbl((double)k.f.redN)
                       : kind == "l2" ? "sqrt(acc)"
                       : kind == "log_sum" ? "log(acc)"
                       : kind == "log_sum_exp" ? "log(acc) + mx"
                                               : "acc";
  // Partials combine as the fold does, except that l1/l2/sum_square and
  // the sums of exponentials add what is already transformed.
  std::string combine = kind == "max" || kind == "min" || kind == "prod"
                            ? std::string(fold->second.step)
                            : "acc + v";
  FoldVar acc{"double", "acc", fold->second.init}, mx{"double", "mx", "-INFINITY"};
  bool lse = kind == "log_sum_exp"; // shifted by the max of its elements
  std::vector<FoldVar> vars{acc};
  if (lse)
    vars.push_back(mx);
  // Sums of the chain's inputs fused in beside it (fuseSiblingSums): an
  // accumulator each, stored as the kernel's extra outputs, in order.
  std::string siblingDecl, siblingAdd, siblingCombine, siblingStore;
  if (chained) {
    std::vector<int> ext = ::mpc::rt::kernelInputs(s);
    size_t n = 0;
    for (int m : s.cuda.chain) {
      const Step &sib = plan.steps[m];
      if (&sib == &s || !reducesChain(sib))
        continue;
      std::string a = "acc" + std::to_string(++n);
      size_t slot = std::find(ext.begin(), ext.end(), sib.inputs[0]) - ext.begin();
      size_t out = std::find(s.cuda.stores.begin(), s.cuda.stores.end(),
                             sib.outputs[0]) - s.cuda.stores.begin();
      if (slot == ext.size() || out == s.cuda.stores.size() ||
          !(kind == "sum" || kind == "mean"))
        return fail(s, "a fused sum whose operand the kernel does not read");
      vars.push_back({"double", a, "0.0"});
      siblingDecl += ", " + a + " = 0.0";
      siblingAdd += " " + a + " = " + a + " + (double)ld(in" +
                    std::to_string(slot) + ", off);";
      siblingCombine += " " + a + " = " + a + " + o_" + a + ";";
      siblingStore += "  st(out" + std::to_string(s.outputs.size() + out) +
                      ", i, (float)(" +
                      (kind == "mean" ? a + " / " + dbl((double)k.f.redN) : a) +
                      "));\n";
    }
  }
  std::string decl = "  double acc = " + std::string(fold->second.init) +
                     (lse ? ", mx = -INFINITY" : "") + siblingDecl + ";\n";
  std::string combineAll = "acc = " + renameV(combine, "o_acc") + ";" +
                           siblingCombine;
  std::string stores = k.storer() + "  st(out0, i, (float)(" + result +
                       "));\n" + siblingStore + "}\n\n";
  if (!lse) // its sums need the whole fold's max first
    k.split();
  if (k.parts > 1) {
    // The prologue leaves block (i, b)'s partial of var j at
    // scratch[(i * parts + b) * vars + j]; the kernel's threads fold an
    // output's parts, a part every blockThreads, then meet as a block.
    auto partial = [&](const std::string &b, size_t j) {
      return "scratch[(i * " + std::to_string(k.parts) + " + " + b + ") * " +
             std::to_string(vars.size()) + " + " + std::to_string(j) + "]";
    };
    s.cuda.scratch = k.f.outN * k.parts * (int64_t)vars.size() * 8;
    cu << k.head(vars, name + "_part")
       << offsetsCode(k.f.kept, {k.f.keptStrides}) << decl
       << k.share(std::string("acc = ") + fold->second.step + ";" + siblingAdd,
                  false, /*part=*/true)
       << k.combine(vars, combineAll) << "  if (t != 0) return;\n";
    for (size_t j = 0; j < vars.size(); ++j)
      cu << "  " << partial("blockIdx.y", j) << " = " << vars[j].name << ";\n";
    cu << "}\n\n";
    barrier = true;
    launch(s, name + "_part", {k.f.outN, k.parts, 1}, {k.blockThreads, 1, 1},
           /*prologue=*/true);
    cu << k.head(vars) << decl << "  for (i64 b = t; b < " << k.parts
       << "; b += " << k.blockThreads << ") {\n";
    for (size_t j = 0; j < vars.size(); ++j)
      cu << "    const double o_" << vars[j].name << " = " << partial("b", j)
         << ";\n";
    cu << "    " << combineAll << "\n  }\n" << k.combine(vars, combineAll)
       << stores;
    k.launch();
    return true;
  }
  cu << k.head(vars) << offsetsCode(k.f.kept, {k.f.keptStrides}) << decl;
  if (lse)
    cu << k.share("mx = fmax(mx, v);")
       << k.combine({mx}, "mx = fmax(mx, o_mx);");
  std::vector<FoldVar> sums = vars;
  if (lse)
    sums.erase(sums.begin() + 1);
  cu << k.share(std::string("acc = ") + fold->second.step + ";" + siblingAdd)
     << k.combine(sums, combineAll) << stores;
  k.launch();
  return true;
}

namespace {
/// A reduction over no axes with noop_with_empty_axes: a copy.
bool copiesOnly(const Step &s) {
  return s.getInts("axes").value_or(std::vector<int64_t>{}).empty() &&
         s.getInt("noop_with_empty_axes", 0);
}
} // namespace

/// A reduction (sum, mean, max, min, prod, l1, l2, sum_square, log_sum,
/// log_sum_exp); no axes with noop_with_empty_axes copies.
bool Emitter::reduce(Step &s, const std::string &name) {
  const ValueInfo &x = val(s.inputs[0]);
  int64_t rank = x.shape.size();
  if (copiesOnly(s))
    return stridedCopy(s, name, 0, stridesOf(x.shape));
  auto axes = s.getInts("axes").value_or(std::vector<int64_t>{});
  std::set<int64_t> red;
  for (int64_t a : axes)
    red.insert(a < 0 ? a + rank : a);
  if (red.empty())
    for (int64_t i = 0; i < rank; ++i)
      red.insert(i);
  if (!isFloat(x.dtype))
    return integerReduce(s, name, red);
  return foldAxes(s, name, std::string(opName(s.op)).substr(7), red);
}

/// An integer reduction (mBART counts its non-pad tokens with a sum): a
/// thread an output element, accumulating in FP64 in the input's order
/// and finishing as the CPU backend's reduceK does, so both agree.
bool Emitter::integerReduce(Step &s, const std::string &name,
                            const std::set<int64_t> &red) {
  const ValueInfo &x = val(s.inputs[0]), &y = val(s.outputs[0]);
  std::string acc, finish = "a", init = "0.0";
  switch (s.op) {
  case OpId::ReduceSum: case OpId::ReduceMean: case OpId::ReduceLogSum: acc = "a + v"; break;
  case OpId::ReduceMax: acc = "v > a ? v : a"; init = "-INFINITY"; break;
  case OpId::ReduceMin: acc = "v < a ? v : a"; init = "INFINITY"; break;
  case OpId::ReduceProd: acc = "a * v"; init = "1.0"; break;
  case OpId::ReduceL1: acc = "a + fabs(v)"; break;
  case OpId::ReduceL2: case OpId::ReduceSumSquare: acc = "a + v * v"; break;
  default:
    return fail(s, "integer " + std::string(opName(s.op)) + " has no CUDA kernel yet");
  }
  Shape xs = stridesOf(x.shape);
  int64_t count = 1;
  for (int64_t d : red)
    count *= x.shape[d];
  if (s.op == OpId::ReduceMean)
    finish = "a / " + std::to_string(count) + ".0";
  else if (s.op == OpId::ReduceL2)
    finish = "sqrt(a)";
  else if (s.op == OpId::ReduceLogSum)
    finish = "log(a)";
  const int64_t n = numElements(y.shape);
  cu << countedHead(s, name, n) << "  i64 r = i, base = 0;\n";
  for (int64_t d = (int64_t)x.shape.size() - 1; d >= 0; --d)
    if (!red.count(d))
      cu << "  base += r % " << x.shape[d] << "LL * " << xs[d] << "LL; r /= " << x.shape[d]
         << "LL;\n";
  cu << "  double a = " << init << ";\n  for (i64 j = 0; j < " << count
     << "LL; ++j) {\n    i64 q = j, off = base;\n";
  for (int64_t d = (int64_t)x.shape.size() - 1; d >= 0; --d)
    if (red.count(d))
      cu << "    off += q % " << x.shape[d] << "LL * " << xs[d] << "LL; q /= " << x.shape[d]
         << "LL;\n";
  cu << "    const double v = (double)in0[off];\n    a = " << acc << ";\n  }\n  a = " << finish
     << ";\n  out0[i] = (" << ctype(y.dtype) << ")a;\n}\n\n";
  launch1d(s, name, n);
  return true;
}

/// GlobalAveragePool / GlobalMaxPool: a mean / max over each plane.
bool Emitter::globalPool(Step &s, const std::string &name) {
  std::set<int64_t> planes;
  for (int64_t d = 2; d < (int64_t)val(s.inputs[0]).shape.size(); ++d)
    planes.insert(d);
  return foldAxes(s, name, s.op == OpId::GlobalMaxPool ? "max" : "mean",
                  planes);
}

/// ArgMax / ArgMin along `axis`: the first extreme (the last with
/// select_last_index), as the CPU backend's sequential scan finds it. A
/// thread's share skips NaN and keeps its best (value, index); shares
/// combine by value, then by index; a row whose first element is NaN
/// answers 0 (nothing compares better than it in the scan).
bool Emitter::argExtreme(Step &s, const std::string &name) {
  bool max = s.op == OpId::ArgMax, last = s.getInt("select_last_index", 0);
  const ValueInfo &x = val(s.inputs[0]);
  int64_t rank = x.shape.size(), axis = s.getInt("axis", 0);
  bool fl = isFloat(x.dtype); // integers exactly (a float loses above 2^24)
  FoldKernel k(*this, s, name,
               foldShape(x.shape, {axis < 0 ? axis + rank : axis}),
               dtypeSize(x.dtype), fl);
  if (!fl)
    k.load = "(double)in0[off]";
  std::string cmp = max ? " > " : " < ";
  FoldVar bv{"double", "bv", "0.0"}, best{"i64", "best", "-1"};
  cu << k.head({bv, best}) << offsetsCode(k.f.kept, {k.f.keptStrides})
     << "  double bv = 0.0;\n  i64 best = -1;\n"
     << k.share("if (v == v && (best < 0 || v" + cmp + "bv" +
                    (last ? " || v == bv" : "") + ")) { best = j; bv = v; }",
                true)
     << k.combine({bv, best}, "if (o_best >= 0 && (best < 0 || o_bv" + cmp +
                                  "bv || (o_bv == bv && o_best " +
                                  (last ? ">" : "<") +
                                  " best))) { bv = o_bv; best = o_best; }")
     << k.storer() << "  { const i64 off = o0; const double v = " << k.load
     << "; out0[i] = v != v || best < 0 ? 0 : best; }\n}\n\n";
  k.launch();
  return true;
}

bool reducesChain(const Step &s) {
  return ::mpc::rt::cuda::isFoldOp(s.op) && !copiesOnly(s);
}

void registerReduceEmitters(EmitterTable &t) {
  for (OpId op : ::mpc::rt::cuda::kFoldOps)
    if (op != OpId::GlobalAveragePool && op != OpId::GlobalMaxPool)
      t.emit(op, &Emitter::reduce);
  t.emit(OpId::ArgMax, &Emitter::argExtreme);
  t.emit(OpId::ArgMin, &Emitter::argExtreme);
  t.emit(OpId::GlobalAveragePool, &Emitter::globalPool);
  t.emit(OpId::GlobalMaxPool, &Emitter::globalPool);
}

} // namespace mlir::mpc::cuda
