//===- PlanReader.cpp - read an execution plan ----------------------------===//
//
// plan.txt (runtime/PlanText.h) and weights.bin, one record at a time; a
// bad record is reported with the file and line.
//
//===----------------------------------------------------------------------===//

#include "runtime/PlanFusionChecks.h"
#include "runtime/PlanIO.h"
#include "runtime/PlanText.h"
#include "runtime/WeightCopies.h"
#include "runtime/cuda/KernelCalls.h"
#include "runtime/cuda/KernelConfig.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

namespace mpc::rt {
namespace {

using namespace plantext;

Shape parseShape(const std::string &s) {
  Shape shape;
  for (const std::string &d : splitList(s))
    shape.push_back(std::stoll(d));
  return shape;
}

/// gemm=M,N,K,BATCH,TA,TB,RELU,SA,SB,A,B,C,BIAS,ALPHA,BETA.
bool parseLibraryGemm(const std::string &text, LibraryGemm &g) {
  std::vector<std::string> f = splitList(text);
  if (f.size() != 15)
    return false;
  try {
    int64_t v[13];
    for (int i = 0; i < 13; ++i)
      v[i] = std::stoll(f[i]);
    g = {v[0], v[1], v[2], v[3], v[4] != 0, v[5] != 0, v[6] != 0, v[7], v[8],
         std::stod(f[13]), std::stod(f[14]), (int)v[9], (int)v[10],
         (int)v[11], (int)v[12]};
  } catch (...) {
    return false;
  }
  return g.valid() && g.n > 0 && g.k > 0 && g.batch > 0;
}

/// conv=KIND,N,C,H,W,K,R,S,PH,PW,SH,SW,DH,DW,GROUPS,NHWC.
bool parseLibraryConv(const std::string &text, LibraryConv &v) {
  std::vector<std::string> f = splitList(text);
  if (f.size() != 16)
    return false;
  int64_t x[16];
  try {
    for (int i = 0; i < 16; ++i)
      x[i] = std::stoll(f[i]);
  } catch (...) {
    return false;
  }
  if (x[0] != LibraryConv::BackwardData && x[0] != LibraryConv::BackwardFilter &&
      x[0] != LibraryConv::Forward)
    return false;
  for (int i = 1; i < 15; ++i)
    if (x[i] < (i == 8 || i == 9 ? 0 : 1)) // pads may be 0, the rest >= 1
      return false;
  v.kind = (LibraryConv::Kind)x[0];
  v.n = x[1], v.c = x[2], v.h = x[3], v.w = x[4], v.k = x[5], v.r = x[6],
  v.s = x[7], v.padH = x[8], v.padW = x[9], v.strideH = x[10],
  v.strideW = x[11], v.dilH = x[12], v.dilW = x[13], v.groups = x[14];
  if (x[15] != 0 && x[15] != 1)
    return false;
  v.nhwc = x[15];
  return true;
}

/// lists=TENSORS,PER_LAUNCH,LEAD_IN,TRAIL_IN,LEAD_OUT,TRAIL_OUT.
bool parseTensorLists(const std::string &text, TensorLists &l) {
  std::vector<std::string> f = splitList(text);
  if (f.size() != 6)
    return false;
  l.tensors = std::stoi(f[0]);
  l.perLaunch = std::stoi(f[1]);
  for (int i = 0; i < 4; ++i)
    l.shared[i] = std::stoi(f[2 + i]);
  return l.tensors > 0 && l.perLaunch > 0;
}

/// Reads the tokens of a `cuda` record; false on an unknown or bad one.
bool parseCuda(std::istream &is, CudaLaunch &c) {
  auto intList = [](const std::string &s, std::vector<int> &out) {
    for (const std::string &v : splitList(s))
      out.push_back(std::stoi(v));
    return true;
  };
  auto triple = [&](const std::string &s, std::array<int64_t, 3> &out) {
    std::vector<int> v;
    intList(s, v);
    if (v.size() != 3)
      return false;
    std::copy(v.begin(), v.end(), out.begin());
    return true;
  };
  for (std::string token; is >> token;) {
    size_t eq = token.find('=');
    std::string key = token.substr(0, eq);
    std::string value = eq == std::string::npos ? "" : token.substr(eq + 1);
    bool ok = true;
    if (key == "kernel")
      c.kernel = unescape(value);
    else if (key == "prologue")
      c.prologue = unescape(value);
    else if (key == "grid")
      ok = triple(value, c.grid);
    else if (key == "prologue-grid")
      ok = triple(value, c.prologueGrid);
    else if (key == "prologue-block")
      ok = triple(value, c.prologueBlock);
    else if (key == "block")
      ok = triple(value, c.block);
    else if (key == "alias")
      c.alias = std::stoi(value);
    else if (key == "in-place")
      c.inPlace = true;
    else if (key == "fused-into")
      c.fusedInto = std::stoi(value);
    else if (key == "stored-as")
      ok = (c.storedAs = std::stoi(value)) >= 0;
    else if (key == "written")
      ok = (c.written = std::stoi(value)) >= 0;
    else if (key == "chain")
      ok = intList(value, c.chain);
    else if (key == "inputs")
      ok = intList(value, c.inputs);
    else if (key == "stores")
      ok = intList(value, c.stores);
    else if (key == "fused-relu")
      c.fusedRelu = true;
    else if (key == "epilogue-add")
      ok = (c.epilogueAdd = std::stoi(value)) >= 0;
    else if (key == "prologue-add") {
      std::vector<int> ab;
      ok = intList(value, ab) && ab.size() == 2 && ab[0] >= 0 && ab[1] >= 0;
      if (ok)
        c.prologueAdd = {ab[0], ab[1]};
    }
    else if (key == "prologue-dropout") {
      std::vector<int> d;
      ok = intList(value, d) && d.size() == 4 && d[0] >= 0 &&
           (d[1] == 0 || d[1] == 1) && d[2] >= 0 && d[3] >= -1;
      if (ok)
        std::copy(d.begin(), d.end(), c.prologueDropout.begin());
    }
    else if (key == "overwrites")
      ok = intList(value, c.updatesInPlace) && !c.updatesInPlace.empty() &&
           c.updatesInPlace.size() % 2 == 0;
    else if (key == "underflow-counter")
      c.underflowCounter = true;
    else if (key == "scratch") // bytes; a kernel's partial sums are small
      ok = !value.empty() && (c.scratch = std::stoll(value)) > 0 &&
           c.scratch <= kKernelScratchLimit;
    else if (key == "count")
      ok = !value.empty() && (c.count = std::stoll(value)) >= 0;
    else if (key == "smem" || key == "prologue-smem") {
      // Dynamic shared memory: no GPU gives a block more.
      int64_t &bytes = key == "smem" ? c.smem : c.prologueSmem;
      ok = !value.empty() && (bytes = std::stoll(value)) > 0 &&
           bytes <= cuda::kMaxSharedBytes;
    }
    else if (key == "batch") {
      // PER_LAUNCH[xPER_THREAD]:STEPS@KERNEL
      size_t colon = value.find(':'), at = value.find('@'), x = value.find('x');
      ok = colon != std::string::npos && at != std::string::npos && colon < at &&
           (c.batch.perLaunch = std::stoi(value.substr(0, colon))) > 0 &&
           (x > colon ||
            (c.batch.perThread = std::stoi(value.substr(x + 1, colon - x - 1))) > 0) &&
           intList(value.substr(colon + 1, at - colon - 1), c.batch.steps) &&
           !c.batch.steps.empty();
      c.batch.kernel = unescape(value.substr(at + 1));
    } else if (key == "batched-into")
      ok = (c.batchedInto = std::stoi(value)) >= 0;
    else if (key == "lists")
      ok = parseTensorLists(value, c.lists);
    else if (key == "launch") {
      size_t at = value.find('@');
      c.lists.slots.emplace_back();
      ok = at != std::string::npos && c.lists.valid() &&
           intList(value.substr(0, at), c.lists.slots.back()) &&
           (int)c.lists.slots.back().size() == c.lists.perLaunch;
      if (ok)
        c.lists.kernels.push_back(unescape(value.substr(at + 1)));
    } else if (key == "gemm")
      ok = parseLibraryGemm(value, c.gemm);
    else if (key == "bias-grad" || key == "bias-grad-b")
      ok = c.gemm.valid() && c.gemm.biasGrad < 0 &&
           (c.gemm.biasGrad = std::stoi(value)) >= 0 &&
           ((c.gemm.biasGradOfB = key == "bias-grad-b"), true);
    else if (key == "gelu-out")
      ok = c.gemm.valid() && c.gemm.geluOut < 0 &&
           (c.gemm.geluOut = std::stoi(value)) >= 0;
    else if (key == "dgelu-out")
      ok = c.gemm.valid() && c.gemm.dgeluOut < 0 &&
           (c.gemm.dgeluOut = std::stoi(value)) >= 0;
    else if (key == "gelu-aux")
      ok = c.gemm.valid() && c.gemm.geluAux < 0 &&
           (c.gemm.geluAux = std::stoi(value)) >= 0;
    else if (key == "relu-mask")
      ok = c.gemm.valid() && c.gemm.reluMask < 0 &&
           (c.gemm.reluMask = std::stoi(value)) >= 0;
    else if (key == "drelu-out")
      ok = c.gemm.valid() && c.gemm.dreluOut < 0 &&
           (c.gemm.dreluOut = std::stoi(value)) >= 0;
    else if (key == "library-fused-into")
      ok = (c.libraryFusedInto = std::stoi(value)) >= 0;
    else if (key == "conv")
      ok = parseLibraryConv(value, c.conv);
    else
      ok = false;
    if (!ok)
      return false;
  }
  return true;
}

/// Reads plan.txt's records into `plan`; each returns "" or what is wrong
/// with the record.
class PlanReader {
public:
  PlanReader(Plan &plan, std::string blob)
      : plan(plan), blob(std::move(blob)) {}

  std::string record(const std::string &kind, std::istream &is,
                     const std::string &line) {
    if (kind == "step" || kind == "attr" || kind == "amp" ||
        kind == "count-underflow" || kind == "applied-only" || kind == "cuda")
      return stepRecord(kind, is, line);
    return planRecord(kind, is);
  }

private:
  Plan &plan;
  std::string blob; // weights.bin
  Step *step = nullptr;

  bool validId(int id) const { return id >= 0 && id < (int)plan.values.size(); }

  /// "<offset> <bytes>" of weights.bin as a tensor of `t` and `shape`,
  /// checked against the file before anything is allocated.
  bool readTensor(std::istream &is, DType t, const Shape &shape, Tensor &out) {
    size_t offset, bytes;
    uint64_t needed;
    if (!(is >> offset >> bytes) || offset > blob.size() ||
        bytes > blob.size() - offset || !byteSize(t, shape, needed) ||
        needed != bytes)
      return false;
    out = Tensor(t, shape);
    std::memcpy(out.raw(), blob.data() + offset, bytes);
    return true;
  }

  /// The bytes a tensor of `t` and `shape` takes; false for a negative
  /// dimension or a size no file could hold.
  static bool byteSize(DType t, const Shape &shape, uint64_t &bytes) {
    uint64_t n = dtypeSize(t);
    for (int64_t d : shape) {
      if (d < 0 || (d > 0 && n > (uint64_t(1) << 50) / (uint64_t)d))
        return false;
      n *= (uint64_t)d;
    }
    bytes = n;
    return true;
  }

  /// Values, bindings, parameters, constants, train information.
  std::string planRecord(const std::string &kind, std::istream &is) {
    if (kind == "value") {
      std::string t, s;
      DType d;
      uint64_t bytes;
      if (!(is >> t >> s) || !parseDType(t, d) ||
          !byteSize(d, parseShape(s), bytes))
        return "bad value";
      plan.values.push_back({d, parseShape(s)});
    } else if (kind == "input" || kind == "output") {
      std::string name;
      int id;
      if (!(is >> name >> id) || !validId(id))
        return "bad binding";
      (kind == "input" ? plan.inputs : plan.outputs)
          .push_back({unescape(name), id});
    } else if (kind == "layout") { // NAME PERM: held as transpose(ONNX, PERM)
      std::string name, list;
      if (!(is >> name >> list))
        return "bad layout";
      std::vector<int64_t> perm;
      try {
        for (const std::string &p : splitList(list))
          perm.push_back(std::stoll(p));
      } catch (...) {
        return "bad layout";
      }
      if (!isPerm(perm, perm.size()) || perm.empty())
        return "bad layout";
      plan.layouts[unescape(name)] = perm;
    } else if (kind == "param") {
      std::string name;
      int id, trainable;
      if (!(is >> name >> id >> trainable) || !validId(id))
        return "bad param";
      auto layout = plan.layouts.find(unescape(name));
      if (layout != plan.layouts.end() &&
          layout->second.size() != plan.values[id].shape.size())
        return "bad param layout";
      Parameter p{unescape(name), id, trainable != 0, Tensor(), std::nullopt};
      if (is >> std::ws; is.peek() == 's') { // seed=S:MEAN:STD
        std::string rec;
        is >> rec;
        SeededInit s;
        char *end = nullptr;
        size_t a = rec.find(':'), b = rec.find(':', a + 1);
        if (rec.rfind("seed=", 0) != 0 || b == std::string::npos ||
            !isFloat(plan.values[id].dtype))
          return "bad seeded param";
        s.seed = std::strtoull(rec.c_str() + 5, &end, 10);
        s.mean = std::strtod(rec.c_str() + a + 1, &end);
        s.std = std::strtod(rec.c_str() + b + 1, &end);
        // :f16 / :bf16: the draws are rounded to the parameter's stored
        // type (an FP32 master of an FP16 parameter).
        if (*end == ':' && parseDType(end + 1, s.rounding) &&
            (s.rounding == DType::F16 || s.rounding == DType::BF16))
          end += std::strlen(end);
        if (*end || !(s.std >= 0))
          return "bad seeded param";
        // Drawn as ONNX lays the parameter out, then held as stored.
        const Shape &stored = plan.values[id].shape;
        Shape onnx = stored;
        if (layout != plan.layouts.end())
          onnx = permutedShape(stored, inversePerm(layout->second));
        p.init = Tensor(plan.values[id].dtype, onnx);
        drawSeeded(p.init, p.name, s);
        if (layout != plan.layouts.end())
          p.init = permuted(p.init, layout->second);
        p.seeded = s;
      } else if (!readTensor(is, plan.values[id].dtype, plan.values[id].shape,
                             p.init))
        return "bad param data";
      plan.params.push_back(std::move(p));
    } else if (kind == "const") {
      int id;
      Tensor t;
      if (!(is >> id) || !validId(id))
        return "bad constant";
      if (!readTensor(is, plan.values[id].dtype, plan.values[id].shape, t))
        return "bad constant data";
      plan.constants[id] = std::move(t);
    } else if (kind == "cuda-arch") {
      std::string list;
      if (!(is >> list))
        return "bad cuda-arch record";
      for (const std::string &a : splitList(list))
        plan.cudaArch.push_back(unescape(a));
    } else if (kind == "cuda-conv") {
      std::string mode;
      if (!(is >> mode) || (mode != "auto" && mode != "cudnn" && mode != "mpc"))
        return "bad cuda-conv record";
      plan.cudaConv = mode;
    } else if (kind == "cuda-tf32") {
      std::string extra;
      if (is >> extra)
        return "bad cuda-tf32 record";
      plan.cudaTf32 = true;
    } else if (kind == "cuda-attention-dq") {
      std::string mode;
      int64_t splits;
      if (!(is >> mode) || !parseAttentionDq(mode, splits))
        return "bad cuda-attention-dq record";
      plan.cudaAttentionDq = mode;
    } else if (kind == "cuda-attention-rows") {
      int64_t rows = 0;
      if (!(is >> rows) || (rows != 64 && rows != 128))
        return "bad cuda-attention-rows record";
      plan.cudaAttentionRows = rows;
    } else if (kind == "cuda-gemm") {
      std::string mode;
      if (!(is >> mode) || (mode != "auto" && mode != "cublaslt" && mode != "mpc"))
        return "bad cuda-gemm record";
      plan.cudaGemm = mode;
    } else if (kind == "train") {
      plan.train.emplace();
      if (!parseTrain(is, *plan.train))
        return "bad train record";
    } else if (kind == "gradient") {
      int output;
      std::string param;
      if (!plan.train || !(is >> output >> param))
        return "bad gradient record";
      plan.train->gradients.emplace_back(output, unescape(param));
    } else if (!kind.empty()) {
      return "unknown record '" + kind + "'";
    }
    return "";
  }

  /// A step and the records that follow it.
  std::string stepRecord(const std::string &kind, std::istream &is,
                         const std::string &line) {
    if (kind == "step") {
      Step s;
      std::string op, name, ins, outs;
      if (!(is >> op >> name >> ins >> outs))
        return "bad step";
      std::optional<OpId> id = opFromName(op);
      if (!id || !inPlans(*id))
        return "unknown op '" + op + "'";
      s.op = *id;
      s.name = unescape(name);
      for (const std::string &v : splitList(ins))
        s.inputs.push_back(std::stoi(v));
      for (const std::string &v : splitList(outs))
        s.outputs.push_back(std::stoi(v));
      // Absent optional inputs are -1; everything else names a value.
      for (int v : s.inputs)
        if (v != -1 && !validId(v))
          return "step input " + std::to_string(v) + " is not a value";
      for (int v : s.outputs)
        if (!validId(v))
          return "step output " + std::to_string(v) + " is not a value";
      plan.steps.push_back(std::move(s));
      step = &plan.steps.back();
      return "";
    }
    if (!step)
      return "'" + kind + "' before any step";
    if (kind == "attr")
      return attrRecord(is);
    if (kind == "amp")
      step->amp = unescape(line.substr(std::min<size_t>(line.size(), 4)));
    else if (kind == "count-underflow")
      step->countUnderflow = true;
    else if (kind == "applied-only")
      step->appliedOnly = true;
    else if (!parseCuda(is, step->cuda))
      return "bad cuda record";
    else if (const LibraryGemm &g = step->cuda.gemm; g.valid()) {
      auto operand = [&](int v) {
        return std::find(step->inputs.begin(), step->inputs.end(), v) !=
               step->inputs.end();
      };
      if (!operand(g.a) || !operand(g.b) || (g.c != -1 && !operand(g.c)) ||
          (g.bias != -1 && !operand(g.bias)) || step->outputs.size() != 1)
        return "gemm record names a value that is not the step's operand";
    }
    if (std::string why = checkTensorLists(*step); !why.empty())
      return why;
    if (std::string why = checkKernelScratch(plan, *step); !why.empty())
      return why;
    if (step->cuda.conv.valid() &&
        (step->inputs.size() < 2 || step->inputs[0] < 0 ||
         step->inputs[1] < 0 || step->outputs.size() != 1))
      return "conv record on a step without its operands";
    return "";
  }

  std::string attrRecord(std::istream &is) {
    std::string key, type, s;
    if (!(is >> key >> type))
      return "bad attribute";
    AttrValue v;
    if (type == "i") {
      int64_t i;
      is >> i;
      v = i;
    } else if (type == "f") {
      is >> s;
      v = std::strtod(s.c_str(), nullptr);
    } else if (type == "s") {
      is >> s;
      v = unescape(s);
    } else if (type == "I") {
      is >> s;
      v = parseShape(s);
    } else if (type == "S") {
      is >> s;
      std::vector<std::string> strs;
      for (const std::string &x : splitList(s))
        strs.push_back(unescape(x));
      v = strs;
    } else if (type == "t") {
      std::string t, dims;
      DType d;
      Tensor tensor;
      if (!(is >> t >> dims) || !parseDType(t, d))
        return "bad tensor attribute";
      if (!readTensor(is, d, parseShape(dims), tensor))
        return "bad tensor attribute data";
      v = std::move(tensor);
    } else {
      return "unknown attribute type '" + type + "'";
    }
    if (is.fail())
      return "bad attribute value";
    step->attrs[unescape(key)] = std::move(v);
    return "";
  }
};

} // namespace

bool loadPlan(const std::string &dir, Plan &plan, std::string &error) {
  std::ifstream in(dir + "/plan.txt");
  std::ifstream wf(dir + "/weights.bin", std::ios::binary);
  if (!in || !wf) {
    error = dir + " is not an mpc artifact (needs plan.txt and weights.bin)";
    return false;
  }
  return parsePlan(in,
                   std::string(std::istreambuf_iterator<char>(wf),
                               std::istreambuf_iterator<char>()),
                   dir, plan, error);
}

bool parsePlan(std::istream &in, std::string weights, const std::string &dir,
               Plan &plan, std::string &error) {
  plan = Plan();
  PlanReader reader(plan, std::move(weights));
  std::string line;
  int lineNo = 0;
  while (std::getline(in, line)) {
    ++lineNo;
    std::istringstream is(line);
    std::string kind, why;
    is >> kind;
    try {
      int version = 0;
      if (lineNo > 1)
        why = reader.record(kind, is, line);
      else if (kind != "mpc-plan" || !(is >> version))
        why = "not an mpc plan";
      else if (version != kPlanVersion)
        why = "plan format " + std::to_string(version) +
              ", this mpc reads format " + std::to_string(kPlanVersion) +
              ": compile the artifact again with this mpc";
    } catch (const std::exception &) {
      why = "malformed number";
    }
    if (!why.empty()) {
      error = dir + "/plan.txt:" + std::to_string(lineNo) + ": " + why;
      return false;
    }
  }
  if (lineNo == 0) {
    error = dir + "/plan.txt is empty";
    return false;
  }
  if (std::string why = checkPlanFusions(plan); !why.empty()) {
    error = dir + "/plan.txt: " + why;
    return false;
  }
  // Train records name outputs by index: they must exist.
  if (plan.train) {
    auto isOutput = [&](int k) {
      return k >= 0 && k < (int)plan.outputs.size();
    };
    bool ok = plan.train->loss == -1 || isOutput(plan.train->loss);
    for (const auto &g : plan.train->gradients)
      ok &= isOutput(g.first);
    if (!ok) {
      error = dir + "/plan.txt: a train record names an output the plan "
                    "does not have";
      return false;
    }
  }
  return true;
}

} // namespace mpc::rt
