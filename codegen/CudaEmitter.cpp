//===- CudaEmitter.cpp - CUDA C++ for an execution plan -------------------===//
//
// The walk over the plan (fusion first, then one kernel per step or fused
// chain, as the emitter table says), the emitter table itself and the
// shared code-generation helpers (the elementwise and chain kernels are in
// CudaElementwiseKernels.cpp).
//
//===----------------------------------------------------------------------===//

#include "codegen/CudaKernels.h"
#include "codegen/CudaPrelude.h"
#include "runtime/AppliedOnly.h"
#include "runtime/Formulas.h"
#include "runtime/Philox.h"
#include "runtime/PlanFusionChecks.h"
#include "runtime/cuda/KernelCalls.h"
#include "runtime/kernels/Common.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/SHA256.h"

#include <algorithm>
#include <set>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>

using namespace ::mpc::rt;

namespace mlir::mpc::cuda {

//===----------------------------------------------------------------------===//
// The emitter table
//===----------------------------------------------------------------------===//

EmitterTable::Entry &EmitterTable::fresh(OpId op) {
  Entry &e = entries_[(size_t)op];
  if (e.any()) { // two families claiming one op
    std::fprintf(stderr, "mpc: internal error: two CUDA emitters for mpc.%s\n",
                 opName(op));
    std::abort();
  }
  return e;
}

void EmitterTable::emit(OpId op, Emit fn) { fresh(op).emit = fn; }
void EmitterTable::expr(OpId op, Expr fn) { fresh(op).expr = std::move(fn); }
void EmitterTable::alias(OpId op) { fresh(op).alias = true; }
void EmitterTable::unsupported(OpId op, const char *why) {
  fresh(op).unsupported = why;
}

const EmitterTable &emitters() {
  static const EmitterTable table = [] {
    EmitterTable t;
    registerElementwiseEmitters(t);
    registerExpressions(t);
    registerDataEmitters(t);
    registerGemmEmitters(t);
    registerNnEmitters(t);
    registerBatchNormEmitters(t);
    registerReduceEmitters(t);
    registerTrainEmitters(t);
    registerAttentionEmitters(t);
    ::mpc::rt::requireEveryOp(
        "CUDA emitter",
        "codegen/Cuda*.cpp: emit, expr, alias, or unsupported with the reason",
        [&](OpId op) { return t[op].any(); });
    return t;
  }();
  return table;
}

//===----------------------------------------------------------------------===//
// Code-generation helpers
//===----------------------------------------------------------------------===//

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
std::string roundedAs(DType t, const std::string &e) {
  switch (t) {
  case DType::F16:
    return "rnd_f16(" + e + ")";
  case DType::BF16:
    return "rnd_bf16(" + e + ")";
  case DType::I1:
    return "rnd_i1(" + e + ")";
  default:
    return e;
  }
}

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
  // Coordinates from the innermost out to the outermost any input moves
  // along; the outermost is what remains of r (i < the element count), so
  // the outer size appears nowhere and steps that differ only in it share
  // the kernel (the count is an argument).
  auto uses = [&](int64_t d) {
    std::ostringstream os;
    for (size_t k = 0; k < strides.size(); ++k)
      if (strides[k] != own && strides[k][d])
        os << " o" << k << " += (i64)c * " << strides[k][d] << "LL;";
    return os.str();
  };
  int64_t top = 0;
  while (uses(top).empty())
    ++top;
  for (int64_t d = (int64_t)out.size() - 1; d >= top; --d) {
    std::string u = uses(d);
    if (d == 0)
      os << "  { " << t << " c = r;" << u << " }\n";
    else if (d == top)
      os << "  { " << t << " c = r % " << out[d] << ";" << u << " }\n";
    else if (u.empty())
      os << "  r /= " << out[d] << ";\n";
    else
      os << "  { " << t << " c = r % " << out[d] << "; r /= " << out[d] << ";"
         << u << " }\n";
  }
  return os.str();
}

/// A step's kernel parameters: typed pointers for inputs then outputs
/// (absent optional inputs are null pointers), a chain's other results,
/// the underflow counter, the element count.
std::vector<std::pair<std::string, std::string>> Emitter::params(const Step &s) {
  std::vector<std::pair<std::string, std::string>> ps; // declaration, name
  auto add = [&](const std::string &type, const std::string &name) {
    ps.push_back({type + name, name});
  };
  std::vector<int> inputs = ::mpc::rt::kernelInputs(s);
  for (size_t k = 0; k < inputs.size(); ++k) {
    DType t = inputs[k] >= 0 ? val(inputs[k]).dtype : DType::F32;
    add(std::string("const ") + ctype(t) + " *__restrict__ ", "in" + std::to_string(k));
  }
  std::vector<int> outputs = ::mpc::rt::kernelOutputs(s);
  for (size_t k = 0; k < outputs.size(); ++k)
    add(std::string(ctype(val(outputs[k]).dtype)) + " *__restrict__ ",
        "out" + std::to_string(k));
  for (size_t k = 0; k < s.cuda.stores.size(); ++k) // a chain's other results
    add(std::string(ctype(val(s.cuda.stores[k]).dtype)) + " *__restrict__ ",
        "out" + std::to_string(s.outputs.size() + k));
  if (countsUnderflow(s)) // the session's counter
    add("unsigned long long *__restrict__ ", "underflow");
  if (s.cuda.scratch > 0) // the session's kernel scratch
    add("double *__restrict__ ", "scratch");
  if (s.cuda.count >= 0) // the element count, last
    add("const i64 ", "count");
  return ps;
}

/// Kernel header: extern "C" with the step's parameters.
std::string Emitter::header(const Step &s, const std::string &name, int threads,
                            int minBlocks) {
  std::ostringstream os;
  os << "extern \"C\" __global__ void __launch_bounds__(" << threads
     << (minBlocks > 0 ? ", " + std::to_string(minBlocks) : "") << ") "
     << name << "(";
  int n = 0;
  for (const auto &p : params(s))
    os << (n++ ? ", " : "") << p.first;
  os << ")";
  return os.str();
}

void Emitter::launch(Step &s, const std::string &name,
                     std::array<int64_t, 3> grid, std::array<int64_t, 3> block,
                     bool prologue, int64_t perBlock) {
  if (counted && !prologue) {
    // The element function countedHead began (now complete in `cu`), kept
    // for batched launches; the step's kernel runs it for its thread's
    // element.
    counted = false;
    element = {cu.str(), params(s), vectorWidth};
    std::string call;
    for (const auto &p : element.params)
      call += ", " + p.second;
    cu << header(s, name, (int)block[0]) << " {\n";
    if (vectorWidth > 1)
      cu << "  " << name << "_run(global_index(), (i64)gridDim.x * blockDim.x"
         << call << ");\n}\n\n";
    else
      cu << "  " << name << "_at(global_index()" << call << ");\n}\n\n";
  }
  if (prologue) { // before the step's kernel: one thread unless given
    s.cuda.prologue = name;
    if (grid[0] <= 0 || block[0] <= 0)
      grid = block = {1, 1, 1};
    s.cuda.prologueGrid = grid;
    s.cuda.prologueBlock = block;
    s.cuda.prologueSmem = sharedBytes;
  } else {
    s.cuda.kernel = name;
    s.cuda.grid = grid;
    s.cuda.block = block;
    s.cuda.smem = sharedBytes;
  }
  // The host launcher the emulation test runs (same arguments).
  std::ostringstream args;
  size_t k = 0;
  for (int v : ::mpc::rt::kernelInputs(s)) {
    args << (k ? ", " : "") << "(const "
         << ctype(v >= 0 ? val(v).dtype : DType::F32) << " *)p[" << k << "]";
    ++k;
  }
  std::vector<int> written = ::mpc::rt::kernelOutputs(s);
  written.insert(written.end(), s.cuda.stores.begin(), s.cuda.stores.end());
  for (int v : written) {
    args << (k ? ", " : "") << "(" << ctype(val(v).dtype) << " *)p[" << k
         << "]";
    ++k;
  }
  if (countsUnderflow(s)) {
    s.cuda.underflowCounter = true;
    args << (k ? ", " : "") << "(unsigned long long *)p[" << k << "]";
    ++k;
  }
  if (s.cuda.scratch > 0) {
    args << (k ? ", " : "") << "(double *)p[" << k << "]";
    ++k;
  }
  // A kernel shared by steps of several sizes: its grid from the count.
  std::string grid0 = std::to_string(grid[0]);
  if (s.cuda.count >= 0 && !prologue) {
    // Launchers get each parameter's value (as the driver copies it).
    std::string count = "(i64)(intptr_t)p[" + std::to_string(k) + "]";
    args << (k ? ", " : "") << count;
    ++k;
    std::string per = std::to_string(perBlock > 0 ? perBlock : block[0]);
    grid0 = "std::max<i64>((" + count + " + " + per + " - 1) / " + per + ", 1)";
    grid0 = vectorWidth > 1 // grid-strided, as launch1d caps it
                ? "(unsigned)std::min<i64>(" + grid0 + ", " +
                      std::to_string(::mpc::rt::kListMaxBlocks) + ")"
                : "(unsigned)" + grid0;
  }
  if (!prologue)
    vectorWidth = 1;
  emu << "extern \"C\" void emu_" << name << "(void **p) {\n  mpc_emulate({"
      << grid0 << ", " << grid[1] << ", " << grid[2] << "}, {" << block[0]
      << ", " << block[1] << ", " << block[2] << "}, "
      << (!barrierFlag.empty() ? barrierFlag : barrier ? "true" : "false")
      << ", [&] { " << name << "("
      << args.str() << "); });\n}\nextern \"C\" { int emu_" << name
      << "_nparams = " << k << "; }\n";
  if (sharedBytes > 0) // what the driver double checks launches give
    emu << "extern \"C\" { int emu_" << name << "_smem = " << sharedBytes
        << "; }\n";
  barrier = false;
  barrierFlag.clear();
  sharedBytes = 0;
}

std::string packedLauncher(const std::string &fn, const std::string &args,
                           size_t words, const std::vector<size_t> &countWords,
                           int64_t threads, int64_t perThread, bool barrier) {
  std::string w = std::to_string(words), t = std::to_string(threads);
  std::string per = std::to_string(perThread);
  std::string code =
      "extern \"C\" void emu_" + fn + "(void **p) {\n  static_assert(sizeof(" +
      args + ") == " + w + " * 8, \"packed arguments\");\n  " + args +
      " a;\n  for (int k = 0; k < " + w +
      "; ++k) { const i64 v = (i64)(intptr_t)p[k]; std::memcpy((char *)&a + 8 * "
      "k, &v, 8); }\n  unsigned blocks = 1;\n";
  if (!countWords.empty()) { // the grid as KernelCalls gives it
    code += "  i64 largest = 0;\n";
    for (size_t c : countWords)
      code += "  largest = std::max<i64>(largest, (i64)(intptr_t)p[" +
              std::to_string(c) + "]);\n";
    code += "  largest = (largest + " + per + " - 1) / " + per + ";\n" +
            "  blocks = (unsigned)std::min<i64>(std::max<i64>((largest + " + t +
            " - 1) / " + t + ", 1), " + std::to_string(::mpc::rt::kListMaxBlocks) +
            ");\n";
  }
  return code + "  mpc_emulate({blocks, 1, 1}, {" + t + ", 1, 1}, " +
         (barrier ? "true" : "false") + ", [&] { " + fn +
         "(a); });\n}\nextern \"C\" { int emu_" + fn + "_nparams = " + w +
         "; int emu_" + fn + "_packed = 1; }\n";
}

//===----------------------------------------------------------------------===//
// The walk
//===----------------------------------------------------------------------===//

bool Emitter::emitStep(Step &s) {
  std::string op = opName(s.op);
  if (s.countUnderflow && s.op != OpId::Cast)
    return fail(s, "only a cast can count underflowing gradients");
  if (s.cuda.inOtherKernel())
    return true;
  const EmitterTable::Entry &how = emitters()[s.op];
  if (!s.cuda.isChain() && how.alias && s.outputs.size() == 1) {
    s.cuda.alias = s.inputs[0];
    return true;
  }
  if (!s.cuda.isChain() && !how.emit && !how.expr) {
    std::string why = how.unsupported; // always set here
    return fail(s, "no CUDA kernel for mpc." + op + " yet" +
                       (why.empty() ? "" : " (" + why + ")"));
  }
  // Generated into fresh streams under the placeholder name. A step whose
  // results are all empty has nothing to compute: an empty kernel (the
  // generators' index arithmetic would divide by the zero sizes).
  bool empty = std::all_of(s.outputs.begin(), s.outputs.end(), [&](int v) {
    return numElements(val(v).shape) == 0;
  });
  std::ostringstream code, launcher;
  std::swap(cu, code);
  std::swap(emu, launcher);
  gemmOnTensorCores.reset();
  if (empty) {
    cu << header(s, kKernelName, 1) << " {}\n\n";
    launch(s, kKernelName, {1, 1, 1}, {1, 1, 1});
  }
  // A chain ending in a reduction is the reduction's kernel, loading
  // through the chain (fuseChainsIntoReductions).
  bool elementChain = s.cuda.isChain() && !reducesChain(s);
  bool ok = empty          ? true
            : elementChain ? chain(s, kKernelName)
            : how.emit     ? (this->*how.emit)(s, kKernelName)
                           : elementwise(s, kKernelName);
  std::swap(cu, code);
  std::swap(emu, launcher);
  if (!ok)
    return false;
  // A grid past the GPU's limits would fail at its launch: refused here,
  // naming the node. (The kernels put what grows with a model along x,
  // or loop past 65535 blocks along y and z, as the GEMMs' row tiles and
  // batches do.)
  namespace k = ::mpc::rt::cuda;
  for (const auto *grid : {&s.cuda.grid, &s.cuda.prologueGrid})
    if ((*grid)[0] > k::kMaxGridX || (*grid)[1] > k::kMaxGridYZ ||
        (*grid)[2] > k::kMaxGridYZ)
      return fail(s, "its CUDA kernel would launch " + std::to_string((*grid)[0]) +
                         " x " + std::to_string((*grid)[1]) + " x " +
                         std::to_string((*grid)[2]) +
                         " blocks, past a GPU's 2^31 - 1 x 65535 x 65535");
  std::string stem =
      s.cuda.isChain()
          ? "chain" + std::to_string(s.cuda.chain.size()) + "_" + op
          : op;
  finish(s, stem, code.str(), launcher.str());
  return true;
}

void Emitter::finish(Step &s, const std::string &stem, std::string code,
                     std::string launcher) {
  auto digest = llvm::SHA256::hash(llvm::arrayRefFromStringRef(code));
  std::string name =
      stem + "_" + llvm::toHex(llvm::ArrayRef(digest).take_front(6), true);
  auto rename = [&](std::string &text) {
    for (size_t at = 0; (at = text.find(kKernelName, at)) != std::string::npos;
         at += name.size())
      text.replace(at, std::strlen(kKernelName), name);
  };
  ElementFn fn = std::move(element);
  element = {};
  rename(s.cuda.kernel);
  rename(s.cuda.prologue);
  for (std::string &k : s.cuda.lists.kernels)
    rename(k);
  if (!named.insert(name).second)
    return; // the same kernel as an earlier step's
  rename(code);
  rename(launcher);
  if (!fn.code.empty())
    elements[name] = std::move(fn); // placeholder-named: batches rename it
  mod.kernels.push_back({name, std::move(code), std::move(launcher)});
  if (gemmOnTensorCores)
    (*gemmOnTensorCores ? mod.gemmKernels : mod.fp32GemmKernels)
        .push_back(name);
}

} // namespace mlir::mpc::cuda

namespace mlir::mpc {

std::string cudaSupport(::mpc::rt::OpId op) {
  const cuda::EmitterTable::Entry &e = cuda::emitters()[op];
  if (e.emit)
    return "kernel";
  if (e.expr)
    return "fusable";
  if (e.alias)
    return "alias";
  std::string why = e.unsupported ? e.unsupported : "";
  return "no kernel yet" + (why.empty() ? "" : " (" + why + ")");
}

std::string cudaPreludeConstants() {
  namespace k = ::mpc::rt::cuda;
  return "// Tile sizes the launches assume (runtime/cuda/KernelConfig.h).\n"
         "constexpr int MPC_TC_TILE_M = " + std::to_string(k::kTcTileM) +
         ", MPC_TC_TILE_N = " + std::to_string(k::kTcTileN) +
         ", MPC_TC_TILE_K = " + std::to_string(k::kTcTileK) +
         ", MPC_SIMT_TILE = " + std::to_string(k::kSimtTile) +
         ", MPC_MMA_GEMM_THREADS = " + std::to_string(k::kMmaGemmThreads) +
         ", MPC_MMA_GEMM_TILE_K = " + std::to_string(k::kMmaGemmTileK) +
         ";\n";
}

bool emitCuda(Plan &plan, CudaModule &out, std::string &error, bool fuse) {
  cuda::Emitter e{plan, out, error, {}, {}};
  if (fuse)
    cuda::fuseSteps(e);
  for (Step &s : plan.steps)
    if (!e.emitStep(s))
      return false;
  if (fuse) {
    if (plan.cudaGemm != "mpc") {
      cuda::fuseBiasGradients(plan);
      cuda::fuseGeluEpilogues(plan);
      cuda::fuseReluEpilogues(plan);
    }
    cuda::batchLaunches(e);
    cuda::updateStateInPlace(e);
  }
  // Kernels that always run take their applied-only members with them.
  ::mpc::rt::markAppliedOnlySteps(plan);
  // What the plan reader would refuse is a fusion bug: refused here too,
  // so a plan trained in process (mpc train --device cuda) is held to the
  // same checks as a compiled artifact.
  if (std::string why = ::mpc::rt::checkPlanFusions(plan); !why.empty())
    return (error = "internal error: the CUDA fusions left an inconsistent "
                    "plan: " + why, false);
  out.launches = cuda::launchedKernels(plan);
  out.libraryLaunches = cuda::launchedKernels(plan, true).size();
  out.microLaunches = cuda::launchedKernels(plan, false, true).size();
  // A kernel whose every launch was batched is gone (its element function
  // lives on in the batched kernel).
  std::set<std::string> used(out.launches.begin(), out.launches.end());
  out.kernels.erase(std::remove_if(out.kernels.begin(), out.kernels.end(),
                                   [&](const CudaKernel &k) {
                                     return e.elements.count(k.name) &&
                                            !used.count(k.name);
                                   }),
                    out.kernels.end());
  out.prelude = "// Emitted by mpc: the kernels of an execution plan, one per "
                "distinct step or\n// fused chain of steps.\n" +
                cudaPreludeConstants() + kCudaPrelude + kFormulaSource +
                kPhiloxSource + "\n";
  // Each kernel's code and launcher under a marker line, so tools can
  // take kernels.cu apart (the node tests' emulation merges artifacts).
  out.source = out.prelude;
  for (const CudaKernel &k : out.kernels)
    out.source += "// kernel " + k.name + "\n" + k.code;
  out.source += "#ifdef MPC_HOST_EMULATION\n";
  for (const CudaKernel &k : out.kernels)
    out.source += "// launcher " + k.name + "\n" + k.launcher;
  out.source += "#endif\n";
  return true;
}

} // namespace mlir::mpc
