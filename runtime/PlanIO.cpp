//===- PlanIO.cpp - write an execution plan, and the text helpers ---------===//
//
// The format is described in runtime/PlanText.h; PlanReader.cpp reads it.
//
//===----------------------------------------------------------------------===//

#include "runtime/PlanIO.h"
#include "runtime/PlanText.h"

#include <cstdio>
#include <fstream>
#include <sstream>

namespace mpc::rt {

namespace plantext {

std::string escape(const std::string &s, bool text) {
  if (s.empty() && !text)
    return "%";
  std::string out;
  for (unsigned char c : s) {
    bool special = text ? (c < ' ' || c == '%')
                        : (c <= ' ' || c == '%' || c == ',' || c >= 0x7f);
    if (special) {
      char buf[4];
      std::snprintf(buf, sizeof buf, "%%%02X", c);
      out += buf;
    } else {
      out += (char)c;
    }
  }
  return out;
}

std::string unescape(const std::string &s) {
  if (s == "%")
    return "";
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size()) {
      out += (char)std::stoi(s.substr(i + 1, 2), nullptr, 16);
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

std::vector<std::string> splitList(const std::string &s) {
  std::vector<std::string> out;
  if (s == "-")
    return out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ','))
    out.push_back(item);
  return out;
}

bool parseDType(const std::string &s, DType &t) {
  for (DType d : {DType::F32, DType::F16, DType::BF16, DType::I64, DType::I32,
                  DType::I1})
    if (s == dtypeName(d))
      return t = d, true;
  return false;
}

std::string hexFloat(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%a", v);
  return buf;
}

std::string trainRecord(const TrainInfo &t) {
  std::ostringstream os;
  os << "train loss=" << t.loss << " loss-scale-init=" << hexFloat(t.lossScaleInit)
     << " adam-betas=" << hexFloat(t.adamBeta1) << "," << hexFloat(t.adamBeta2);
  if (t.lr)
    os << " lr=" << hexFloat(*t.lr);
  if (t.lrSchedule) // no spaces: validated
    os << " lr-schedule=" << t.lrSchedule->spec;
  if (t.accumulate != 1)
    os << " accumulate=" << t.accumulate;
  if (t.emaWarmup) { // the decay alone: num_updates' form
    os << " ema-warmup=" << hexFloat(t.emaWarmup->decay);
    if (!t.emaWarmup->numUpdates)
      os << "," << hexFloat(t.emaWarmup->power) << ","
         << hexFloat(t.emaWarmup->gamma);
  }
  return os.str();
}

bool parseTrain(std::istream &is, TrainInfo &t) {
  for (std::string token; is >> token;) {
    size_t eq = token.find('=');
    if (eq == std::string::npos)
      return false;
    std::string key = token.substr(0, eq), value = token.substr(eq + 1);
    if (key == "loss") {
      t.loss = std::stoi(value);
    } else if (key == "loss-scale-init") {
      t.lossScaleInit = std::strtod(value.c_str(), nullptr);
    } else if (key == "adam-betas") {
      std::vector<std::string> b = splitList(value);
      if (b.size() != 2)
        return false;
      t.adamBeta1 = (float)std::strtod(b[0].c_str(), nullptr);
      t.adamBeta2 = (float)std::strtod(b[1].c_str(), nullptr);
    } else if (key == "lr") {
      t.lr = (float)std::strtod(value.c_str(), nullptr);
    } else if (key == "accumulate") {
      t.accumulate = std::stoll(value);
      if (t.accumulate < 1)
        return false;
    } else if (key == "ema-warmup") {
      std::vector<std::string> w = splitList(value);
      if (w.size() != 1 && w.size() != 3)
        return false;
      TrainInfo::EmaWarmup &e = t.emaWarmup.emplace();
      e.decay = std::strtod(w[0].c_str(), nullptr);
      e.numUpdates = w.size() == 1;
      if (!e.numUpdates) {
        e.power = std::strtod(w[1].c_str(), nullptr);
        e.gamma = std::strtod(w[2].c_str(), nullptr);
      }
      if (!(e.decay >= 0 && e.decay < 1 &&
            (e.numUpdates || (e.power > 0 && e.gamma > 0))))
        return false;
    } else if (std::string error; key == "lr-schedule") {
      if (!parseLrSchedule(value, t.lrSchedule.emplace(), error))
        return false;
    } else {
      return false;
    }
  }
  return true;
}

} // namespace plantext

namespace {

using namespace plantext;

/// Appends tensor bytes to the weights blob, returns "offset bytes".
std::string putTensor(std::string &blob, const Tensor &t) {
  // 64-byte aligned offsets, so a loader can use them in place.
  blob.resize((blob.size() + 63) / 64 * 64, '\0');
  std::string ref = std::to_string(blob.size()) + " " + std::to_string(t.bytes());
  blob.append(static_cast<const char *>(t.raw()), t.bytes());
  return ref;
}

std::string shapeList(const Shape &s) {
  return joinList(s, [](int64_t d) { return std::to_string(d); });
}

std::string ints(const std::vector<int> &v) {
  return joinList(v, [](int i) { return std::to_string(i); });
}

std::string attrText(const AttrValue &value, std::string &blob) {
  std::ostringstream os;
  if (auto *i = std::get_if<int64_t>(&value)) {
    os << "i " << *i;
  } else if (auto *f = std::get_if<double>(&value)) {
    os << "f " << hexFloat(*f);
  } else if (auto *str = std::get_if<std::string>(&value)) {
    os << "s " << escape(*str);
  } else if (auto *is = std::get_if<std::vector<int64_t>>(&value)) {
    os << "I " << shapeList(*is);
  } else if (auto *ss = std::get_if<std::vector<std::string>>(&value)) {
    os << "S " << joinList(*ss, [](const std::string &x) { return escape(x); });
  } else {
    const Tensor &t = std::get<Tensor>(value);
    os << "t " << dtypeName(t.dtype()) << " " << shapeList(t.shape()) << " "
       << putTensor(blob, t);
  }
  return os.str();
}

/// The ` key=value` tokens of a `cuda` record ("" when there is nothing).
std::string cudaText(const CudaLaunch &c) {
  std::string out;
  auto triple = [](const std::array<int64_t, 3> &a) {
    return std::to_string(a[0]) + "," + std::to_string(a[1]) + "," +
           std::to_string(a[2]);
  };
  if (!c.kernel.empty())
    out += " kernel=" + escape(c.kernel) + " grid=" + triple(c.grid) +
           " block=" + triple(c.block);
  if (c.smem > 0)
    out += " smem=" + std::to_string(c.smem);
  if (!c.prologue.empty())
    out += " prologue=" + escape(c.prologue);
  if (c.prologueGrid != std::array<int64_t, 3>{1, 1, 1} ||
      c.prologueBlock != std::array<int64_t, 3>{1, 1, 1})
    out += " prologue-grid=" + triple(c.prologueGrid) +
           " prologue-block=" + triple(c.prologueBlock);
  if (c.prologueSmem > 0)
    out += " prologue-smem=" + std::to_string(c.prologueSmem);
  if (c.alias >= 0)
    out += " alias=" + std::to_string(c.alias);
  if (c.inPlace)
    out += " in-place";
  if (c.fusedInto >= 0)
    out += " fused-into=" + std::to_string(c.fusedInto);
  if (c.storedAs >= 0)
    out += " stored-as=" + std::to_string(c.storedAs);
  if (c.written >= 0)
    out += " written=" + std::to_string(c.written);
  if (c.isChain())
    out += " chain=" + ints(c.chain) + " inputs=" + ints(c.inputs);
  if (!c.stores.empty())
    out += " stores=" + ints(c.stores);
  if (c.fusedRelu)
    out += " fused-relu";
  if (c.epilogueAdd >= 0)
    out += " epilogue-add=" + std::to_string(c.epilogueAdd);
  if (c.hasPrologueAdd())
    out += " prologue-add=" + std::to_string(c.prologueAdd[0]) + "," +
           std::to_string(c.prologueAdd[1]);
  if (c.hasPrologueDropout())
    out += " prologue-dropout=" +
           ints({c.prologueDropout.begin(), c.prologueDropout.end()});
  if (!c.updatesInPlace.empty())
    out += " overwrites=" + ints(c.updatesInPlace);
  if (c.underflowCounter)
    out += " underflow-counter";
  if (c.scratch > 0)
    out += " scratch=" + std::to_string(c.scratch);
  if (c.count >= 0)
    out += " count=" + std::to_string(c.count);
  if (const StepBatch &b = c.batch; b.valid())
    out += " batch=" + std::to_string(b.perLaunch) +
           (b.perThread > 1 ? "x" + std::to_string(b.perThread) : "") + ":" +
           ints(b.steps) + "@" + escape(b.kernel);
  if (c.batchedInto >= 0)
    out += " batched-into=" + std::to_string(c.batchedInto);
  if (const TensorLists &l = c.lists; l.valid()) {
    out += " lists=" + std::to_string(l.tensors) + "," +
           std::to_string(l.perLaunch);
    for (int x : l.shared)
      out += "," + std::to_string(x);
    for (size_t k = 0; k < l.kernels.size(); ++k)
      out += " launch=" + ints(l.slots[k]) + "@" + escape(l.kernels[k]);
  }
  if (const LibraryGemm &g = c.gemm; g.valid()) {
    auto i = [](int64_t v) { return std::to_string(v) + ","; };
    out += " gemm=" + i(g.m) + i(g.n) + i(g.k) + i(g.batch) + i(g.transA) +
           i(g.transB) + i(g.relu) + i(g.strideA) + i(g.strideB) + i(g.a) +
           i(g.b) + i(g.c) + i(g.bias) + hexFloat(g.alpha) + "," +
           hexFloat(g.beta);
    if (g.biasGrad >= 0)
      out += (g.biasGradOfB ? " bias-grad-b=" : " bias-grad=") +
             std::to_string(g.biasGrad);
    if (g.geluOut >= 0)
      out += " gelu-out=" + std::to_string(g.geluOut);
    if (g.dgeluOut >= 0)
      out += " dgelu-out=" + std::to_string(g.dgeluOut);
    if (g.geluAux >= 0)
      out += " gelu-aux=" + std::to_string(g.geluAux);
    if (g.reluMask >= 0)
      out += " relu-mask=" + std::to_string(g.reluMask);
    if (g.dreluOut >= 0)
      out += " drelu-out=" + std::to_string(g.dreluOut);
  }
  if (c.libraryFusedInto >= 0)
    out += " library-fused-into=" + std::to_string(c.libraryFusedInto);
  if (const LibraryConv &v = c.conv; v.valid()) {
    out += " conv=" + std::to_string((int)v.kind);
    for (int64_t x : {v.n, v.c, v.h, v.w, v.k, v.r, v.s, v.padH, v.padW,
                      v.strideH, v.strideW, v.dilH, v.dilW, v.groups,
                      (int64_t)v.nhwc})
      out += "," + std::to_string(x);
  }
  return out;
}

} // namespace

bool writeFileAtomically(const std::string &path, const std::string &text,
                         std::string &error) {
  std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out.write(text.data(), (std::streamsize)text.size());
    if (!out) {
      error = "cannot write " + path;
      std::remove(tmp.c_str());
      return false;
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    error = "cannot write " + path;
    std::remove(tmp.c_str());
    return false;
  }
  return true;
}

bool savePlan(const Plan &plan, const std::string &dir, std::string &error) {
  std::ostringstream os;
  std::string blob;
  os << "mpc-plan " << kPlanVersion << "\n";
  for (const ValueInfo &v : plan.values)
    os << "value " << dtypeName(v.dtype) << " " << shapeList(v.shape) << "\n";
  for (const Binding &b : plan.inputs)
    os << "input " << escape(b.name) << " " << b.value << "\n";
  for (const Binding &b : plan.outputs)
    os << "output " << escape(b.name) << " " << b.value << "\n";
  // Before the params: a seeded one is drawn in ONNX's layout, then
  // permuted (PlanReader).
  for (const auto &[name, perm] : plan.layouts)
    os << "layout " << escape(name) << " " << joinList(perm, [](int64_t p) {
      return std::to_string(p);
    }) << "\n";
  for (const Parameter &p : plan.params) {
    os << "param " << escape(p.name) << " " << p.value << " " << p.trainable
       << " ";
    if (p.seeded) // drawn where it is read: no bytes
      os << "seed=" << p.seeded->seed << ":" << hexFloat(p.seeded->mean) << ":"
         << hexFloat(p.seeded->std)
         << (p.seeded->rounding == DType::F32
                 ? ""
                 : ":" + std::string(dtypeName(p.seeded->rounding)))
         << "\n";
    else
      os << putTensor(blob, p.init) << "\n";
  }
  for (const auto &[id, t] : plan.constants)
    os << "const " << id << " " << putTensor(blob, t) << "\n";
  if (!plan.cudaArch.empty())
    os << "cuda-arch " << joinList(plan.cudaArch, [](const std::string &a) {
      return escape(a);
    }) << "\n";
  if (plan.cudaGemm != "auto")
    os << "cuda-gemm " << escape(plan.cudaGemm) << "\n";
  if (plan.cudaConv != "auto")
    os << "cuda-conv " << escape(plan.cudaConv) << "\n";
  if (plan.cudaTf32)
    os << "cuda-tf32\n";
  if (plan.cudaAttentionDq != "auto")
    os << "cuda-attention-dq " << escape(plan.cudaAttentionDq) << "\n";
  if (plan.cudaAttentionRows != 128)
    os << "cuda-attention-rows " << plan.cudaAttentionRows << "\n";
  if (const auto &t = plan.train) {
    os << trainRecord(*t) << "\n";
    for (const auto &[output, param] : t->gradients)
      os << "gradient " << output << " " << escape(param) << "\n";
  }
  auto ids = [](const std::vector<int> &v) {
    return joinList(v, [](int i) { return std::to_string(i); });
  };
  for (const Step &s : plan.steps) {
    os << "step " << opName(s.op) << " " << escape(s.name) << " "
       << ids(s.inputs) << " " << ids(s.outputs) << "\n";
    for (const auto &[key, value] : s.attrs)
      os << "attr " << escape(key) << " " << attrText(value, blob) << "\n";
    if (!s.amp.empty())
      os << "amp " << escape(s.amp, /*text=*/true) << "\n";
    if (s.countUnderflow)
      os << "count-underflow\n";
    if (s.appliedOnly)
      os << "applied-only\n";
    if (std::string cuda = cudaText(s.cuda); !cuda.empty())
      os << "cuda" << cuda << "\n";
  }
  return writeFileAtomically(dir + "/weights.bin", blob, error) &&
         writeFileAtomically(dir + "/plan.txt", os.str(), error);
}

} // namespace mpc::rt
