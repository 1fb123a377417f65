//===- PlanIO.cpp - save and load an execution plan -----------------------===//
//
// plan.txt, one record per line, tokens separated by spaces (names and
// strings are %-escaped so they contain no spaces):
//   mpc-plan <version>
//   value <dtype> <d0,d1,...|->            (ids count from 0)
//   input <name> <id>
//   output <name> <id>
//   param <name> <id> <trainable 0|1> <offset> <bytes>
//   const <id> <offset> <bytes>
//   step <op> <name> <in,in,...|-> <out,...|->
//   train loss=<output> loss-scale-init=<double hex> adam-betas=<f>,<f>
//   gradient <output> <param>                (train-step plans)
// and after a step, its attributes and what codegen decided for it:
//   attr <key> i <int> | f <double hex> | s <str> | I <i,i,...|-> |
//        S <s,s,...|-> | t <dtype> <dims|-> <offset> <bytes>
//   amp <why this precision, to the end of the line>
//   count-underflow
//   cuda [kernel=K] [prologue=K] [grid=x,y,z block=x,y,z] [alias=V]
//        [fused-into=S] [chain=S,S,...] [inputs=V,V,...] [fused-relu]
//        [underflow-counter]
// A plan of another version is refused in one line: its steps may not
// mean the same.
//
//===----------------------------------------------------------------------===//

#include "runtime/PlanIO.h"

#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

namespace mpc::rt {
namespace {

/// Version 2: typed steps (op ids, `amp`, `count-underflow`, `cuda`
/// records) instead of free-form `mpc.*` and `cuda.*` attributes.
constexpr int kPlanVersion = 2;

std::string escape(const std::string &s) {
  if (s.empty())
    return "%";
  std::string out;
  for (unsigned char c : s) {
    if (c <= ' ' || c == '%' || c == ',' || c >= 0x7f) {
      char buf[4];
      std::snprintf(buf, sizeof buf, "%%%02X", c);
      out += buf;
    } else {
      out += (char)c;
    }
  }
  return out;
}

/// Free text, the rest of a line: only `%` and control characters escaped.
std::string escapeText(const std::string &s) {
  std::string out;
  for (unsigned char c : s) {
    if (c < ' ' || c == '%') {
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

template <typename T, typename F>
std::string joinList(const std::vector<T> &v, F f) {
  if (v.empty())
    return "-";
  std::string out;
  for (size_t i = 0; i < v.size(); ++i)
    out += (i ? "," : "") + f(v[i]);
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


/// Every bit of a double, as C's %a (strtod reads it back).
std::string hexFloat(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%a", v);
  return buf;
}

/// Reads the key=value tokens of a `train` record.
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
    } else {
      return false;
    }
  }
  return true;
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
    os << "S " << joinList(*ss, escape);
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
  if (!c.prologue.empty())
    out += " prologue=" + escape(c.prologue);
  if (c.alias >= 0)
    out += " alias=" + std::to_string(c.alias);
  if (c.fusedInto >= 0)
    out += " fused-into=" + std::to_string(c.fusedInto);
  if (c.isChain())
    out += " chain=" + ints(c.chain) + " inputs=" + ints(c.inputs);
  if (c.fusedRelu)
    out += " fused-relu";
  if (c.underflowCounter)
    out += " underflow-counter";
  return out;
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
    else if (key == "block")
      ok = triple(value, c.block);
    else if (key == "alias")
      c.alias = std::stoi(value);
    else if (key == "fused-into")
      c.fusedInto = std::stoi(value);
    else if (key == "chain")
      ok = intList(value, c.chain);
    else if (key == "inputs")
      ok = intList(value, c.inputs);
    else if (key == "fused-relu")
      c.fusedRelu = true;
    else if (key == "underflow-counter")
      c.underflowCounter = true;
    else
      ok = false;
    if (!ok)
      return false;
  }
  return true;
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
  for (const Parameter &p : plan.params)
    os << "param " << escape(p.name) << " " << p.value << " " << p.trainable
       << " " << putTensor(blob, p.init) << "\n";
  for (const auto &[id, t] : plan.constants)
    os << "const " << id << " " << putTensor(blob, t) << "\n";
  if (const auto &t = plan.train) {
    os << "train loss=" << t->loss << " loss-scale-init=" << hexFloat(t->lossScaleInit)
       << " adam-betas=" << hexFloat(t->adamBeta1) << "," << hexFloat(t->adamBeta2)
       << "\n";
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
      os << "amp " << escapeText(s.amp) << "\n";
    if (s.countUnderflow)
      os << "count-underflow\n";
    if (std::string cuda = cudaText(s.cuda); !cuda.empty())
      os << "cuda" << cuda << "\n";
  }
  return writeFileAtomically(dir + "/weights.bin", blob, error) &&
         writeFileAtomically(dir + "/plan.txt", os.str(), error);
}

bool loadPlan(const std::string &dir, Plan &plan, std::string &error) {
  std::ifstream in(dir + "/plan.txt");
  std::ifstream wf(dir + "/weights.bin", std::ios::binary);
  if (!in || !wf) {
    error = dir + " is not an mpc artifact (needs plan.txt and weights.bin)";
    return false;
  }
  std::string blob((std::istreambuf_iterator<char>(wf)),
                   std::istreambuf_iterator<char>());
  plan = Plan();
  std::string line;
  int lineNo = 0;
  auto fail = [&](const std::string &why) {
    error = dir + "/plan.txt:" + std::to_string(lineNo) + ": " + why;
    return false;
  };
  auto readTensor = [&](std::istream &is, DType t, const Shape &shape,
                        Tensor &out) {
    size_t offset, bytes;
    if (!(is >> offset >> bytes) || offset + bytes > blob.size())
      return false;
    out = Tensor(t, shape);
    if (out.bytes() != bytes)
      return false;
    std::memcpy(out.raw(), blob.data() + offset, bytes);
    return true;
  };
  auto parseShape = [](const std::string &s) {
    Shape shape;
    for (const std::string &d : splitList(s))
      shape.push_back(std::stoll(d));
    return shape;
  };
  Step *step = nullptr;
  while (std::getline(in, line)) {
    ++lineNo;
    std::istringstream is(line);
    std::string kind;
    is >> kind;
    try {
      if (lineNo == 1) {
        int version = 0;
        if (kind != "mpc-plan" || !(is >> version))
          return fail("not an mpc plan");
        if (version != kPlanVersion)
          return fail("plan format " + std::to_string(version) +
                      ", this mpc reads format " +
                      std::to_string(kPlanVersion) +
                      ": compile the artifact again with this mpc");
      } else if (kind == "value") {
        std::string t, s;
        DType d;
        if (!(is >> t >> s) || !parseDType(t, d))
          return fail("bad value");
        plan.values.push_back({d, parseShape(s)});
      } else if (kind == "input" || kind == "output") {
        std::string name;
        int id;
        if (!(is >> name >> id) || id < 0 || id >= (int)plan.values.size())
          return fail("bad binding");
        (kind == "input" ? plan.inputs : plan.outputs).push_back({unescape(name), id});
      } else if (kind == "param") {
        std::string name;
        int id, trainable;
        if (!(is >> name >> id >> trainable) || id < 0 ||
            id >= (int)plan.values.size())
          return fail("bad param");
        Parameter p{unescape(name), id, trainable != 0, Tensor()};
        if (!readTensor(is, plan.values[id].dtype, plan.values[id].shape, p.init))
          return fail("bad param data");
        plan.params.push_back(std::move(p));
      } else if (kind == "const") {
        int id;
        if (!(is >> id) || id < 0 || id >= (int)plan.values.size())
          return fail("bad constant");
        Tensor t;
        if (!readTensor(is, plan.values[id].dtype, plan.values[id].shape, t))
          return fail("bad constant data");
        plan.constants[id] = std::move(t);
      } else if (kind == "train") {
        plan.train.emplace();
        if (!parseTrain(is, *plan.train))
          return fail("bad train record");
      } else if (kind == "gradient") {
        int output;
        std::string param;
        if (!plan.train || !(is >> output >> param))
          return fail("bad gradient record");
        plan.train->gradients.emplace_back(output, unescape(param));
      } else if (kind == "step") {
        Step s;
        std::string op, name, ins, outs;
        if (!(is >> op >> name >> ins >> outs))
          return fail("bad step");
        std::optional<OpId> id = opFromName(op);
        if (!id || !inPlans(*id))
          return fail("unknown op '" + op + "'");
        s.op = *id;
        s.name = unescape(name);
        for (const std::string &v : splitList(ins))
          s.inputs.push_back(std::stoi(v));
        for (const std::string &v : splitList(outs))
          s.outputs.push_back(std::stoi(v));
        plan.steps.push_back(std::move(s));
        step = &plan.steps.back();
      } else if (kind == "attr") {
        std::string key, type;
        if (!step || !(is >> key >> type))
          return fail("bad attribute");
        AttrValue v;
        std::string s;
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
          if (!(is >> t >> dims) || !parseDType(t, d))
            return fail("bad tensor attribute");
          Tensor tensor;
          if (!readTensor(is, d, parseShape(dims), tensor))
            return fail("bad tensor attribute data");
          v = std::move(tensor);
        } else {
          return fail("unknown attribute type '" + type + "'");
        }
        if (is.fail())
          return fail("bad attribute value");
        step->attrs[unescape(key)] = std::move(v);
      } else if (kind == "amp") {
        if (!step || line.size() < 4)
          return fail("bad amp record");
        step->amp = unescape(line.substr(4));
      } else if (kind == "count-underflow") {
        if (!step)
          return fail("count-underflow before any step");
        step->countUnderflow = true;
      } else if (kind == "cuda") {
        if (!step || !parseCuda(is, step->cuda))
          return fail("bad cuda record");
      } else if (!kind.empty()) {
        return fail("unknown record '" + kind + "'");
      }
    } catch (const std::exception &) {
      return fail("malformed number");
    }
  }
  return true;
}

} // namespace mpc::rt
