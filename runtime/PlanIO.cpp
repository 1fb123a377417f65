//===- PlanIO.cpp - save and load an execution plan -----------------------===//
//
// plan.txt, one record per line, tokens separated by spaces (names and
// strings are %-escaped so they contain no spaces):
//   mpc-plan 1
//   value <id> <dtype> <d0,d1,...|->
//   input <name> <id>
//   output <name> <id>
//   param <name> <id> <trainable 0|1> <offset> <bytes>
//   const <id> <offset> <bytes>
//   step <op> <name> <in,in,...|-> <out,...|-> <nattrs>
//   attr <key> i <int> | f <double hex> | s <str> | I <i,i,...|-> |
//        S <s,s,...|-> | t <dtype> <dims|-> <offset> <bytes>
//
//===----------------------------------------------------------------------===//

#include "runtime/PlanIO.h"

#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

namespace mpc::rt {
namespace {

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
  os << "mpc-plan 1\n";
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
  auto ids = [](const std::vector<int> &v) {
    return joinList(v, [](int i) { return std::to_string(i); });
  };
  for (const Step &s : plan.steps) {
    os << "step " << s.op << " " << escape(s.name) << " " << ids(s.inputs)
       << " " << ids(s.outputs) << " " << s.attrs.size() << "\n";
    for (const auto &[key, value] : s.attrs) {
      os << "attr " << escape(key) << " ";
      if (auto *i = std::get_if<int64_t>(&value)) {
        os << "i " << *i;
      } else if (auto *f = std::get_if<double>(&value)) {
        char buf[64];
        std::snprintf(buf, sizeof buf, "%a", *f);
        os << "f " << buf;
      } else if (auto *str = std::get_if<std::string>(&value)) {
        os << "s " << escape(*str);
      } else if (auto *is = std::get_if<std::vector<int64_t>>(&value)) {
        os << "I " << shapeList(*is);
      } else if (auto *ss = std::get_if<std::vector<std::string>>(&value)) {
        os << "S " << joinList(*ss, escape);
      } else {
        const Tensor &t = std::get<Tensor>(value);
        os << "t " << dtypeName(t.dtype()) << " " << shapeList(t.shape())
           << " " << putTensor(blob, t);
      }
      os << "\n";
    }
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
        if (line != "mpc-plan 1")
          return fail("not an mpc plan (version 1)");
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
      } else if (kind == "step") {
        Step s;
        std::string name, ins, outs;
        size_t nattrs;
        if (!(is >> s.op >> name >> ins >> outs >> nattrs))
          return fail("bad step");
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
