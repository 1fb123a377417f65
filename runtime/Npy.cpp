//===- Npy.cpp - NumPy .npy files -----------------------------------------===//

#include "runtime/Npy.h"

#include <algorithm>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <unistd.h>

namespace mpc::rt {
namespace {

/// Value of `key` in the header dict ("'descr': '<f4'" -> "<f4").
std::string headerField(const std::string &h, const std::string &key) {
  size_t p = h.find("'" + key + "'");
  if (p == std::string::npos)
    return "";
  p = h.find(':', p);
  if (p == std::string::npos)
    return "";
  ++p;
  while (p < h.size() && h[p] == ' ')
    ++p;
  if (p < h.size() && h[p] == '\'') {
    size_t e = h.find('\'', p + 1);
    return e == std::string::npos ? "" : h.substr(p + 1, e - p - 1);
  }
  if (p < h.size() && h[p] == '(') {
    size_t e = h.find(')', p);
    return e == std::string::npos ? "" : h.substr(p + 1, e - p - 1);
  }
  size_t e = h.find_first_of(",}", p);
  return h.substr(p, e == std::string::npos ? std::string::npos : e - p);
}

/// `s` fit for a one-line message: at most 40 characters, control and
/// non-ASCII bytes as '?'.
std::string printable(const std::string &s) {
  std::string out;
  for (char c : s.substr(0, 40))
    out += (c >= 32 && c < 127) ? c : '?';
  return s.size() > 40 ? out + "..." : out;
}

} // namespace

bool readNpy(const std::string &path, Tensor &tensor, std::string &error) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    error = "cannot open '" + path + "'";
    return false;
  }
  std::ostringstream buf;
  buf << in.rdbuf();
  return parseNpy(buf.str(), path, tensor, error);
}

bool parseNpy(const std::string &bytes, const std::string &path,
              Tensor &tensor, std::string &error) {
  if (bytes.size() < 10 || bytes.compare(0, 6, "\x93NUMPY") != 0) {
    error = "'" + path + "' is not a .npy file";
    return false;
  }
  int major = (unsigned char)bytes[6];
  size_t hlen, hstart;
  if (major == 1) {
    hlen = (unsigned char)bytes[8] | ((unsigned char)bytes[9] << 8);
    hstart = 10;
  } else {
    if (bytes.size() < 12) {
      error = "'" + path + "' has a truncated header";
      return false;
    }
    hlen = 0;
    for (int i = 3; i >= 0; --i)
      hlen = (hlen << 8) | (unsigned char)bytes[8 + i];
    hstart = 12;
  }
  if (hlen > bytes.size() - hstart) {
    error = "'" + path + "' has a truncated header";
    return false;
  }
  std::string header = bytes.substr(hstart, hlen);
  std::string descr = headerField(header, "descr");
  std::string order = headerField(header, "fortran_order");
  std::string shapeText = headerField(header, "shape");
  if (order.find("True") != std::string::npos) {
    error = "'" + path + "' is Fortran-ordered; save it C-ordered";
    return false;
  }
  DType dtype;
  if (descr == "<f4")
    dtype = DType::F32;
  else if (descr == "<f2")
    dtype = DType::F16;
  else if (descr == "<i8")
    dtype = DType::I64;
  else if (descr == "<i4")
    dtype = DType::I32;
  else if (descr == "|b1")
    dtype = DType::I1;
  else {
    error = "'" + path + "' has dtype '" + printable(descr) +
            "'; mpc reads float32, float16, int64, int32 and bool";
    return false;
  }
  // The shape, checked against the data bytes before anything is allocated.
  Shape shape;
  std::stringstream ss(shapeText);
  std::string item;
  size_t data = hstart + hlen;
  uint64_t available = bytes.size() - data, numel = 1;
  while (std::getline(ss, item, ',')) {
    size_t a = item.find_first_not_of(" ");
    if (a == std::string::npos)
      continue;
    char *end = nullptr;
    errno = 0;
    long long d = std::strtoll(item.c_str() + a, &end, 10);
    while (end && *end == ' ')
      ++end;
    if (errno || !end || *end || d < 0) {
      error = "'" + path + "' has an invalid shape (" + printable(shapeText) + ")";
      return false;
    }
    shape.push_back(d);
  }
  // The element count, refused as soon as it passes the bytes present (so
  // it cannot overflow); an array with a 0 dimension holds no bytes.
  if (std::find(shape.begin(), shape.end(), 0) != shape.end())
    numel = 0;
  else
    for (int64_t d : shape) {
      if (numel > available / (uint64_t)d) {
        error = "'" + path + "' has an invalid shape (" +
                printable(shapeText) + ")";
        return false;
      }
      numel *= (uint64_t)d;
    }
  uint64_t needed = numel * dtypeSize(dtype);
  if (available != needed) {
    error = "'" + path + "' holds " + std::to_string(available) +
            " data bytes, its shape " + shapeString(shape) + " needs " +
            std::to_string(needed);
    return false;
  }
  tensor = Tensor(dtype, shape);
  std::memcpy(tensor.raw(), bytes.data() + data, tensor.bytes());
  return true;
}

bool writeNpy(const std::string &path, const Tensor &tensor,
              std::string &error) {
  Tensor t = tensor;
  if (t.dtype() == DType::BF16) {
    t = Tensor(DType::F32, tensor.shape());
    for (int64_t i = 0; i < t.size(); ++i)
      t.setFloat(i, tensor.getFloat(i));
  }
  static const char *descr[] = {"<f4", "<f2", "<f4", "<i8", "<i4", "|b1"};
  std::string shape = "(";
  for (int64_t d : t.shape())
    shape += std::to_string(d) + ", ";
  if (t.rank() > 1)
    shape.resize(shape.size() - 1), shape.back() = ')';
  else
    shape += ")";
  if (t.rank() == 1)
    shape = "(" + std::to_string(t.dim(0)) + ",)";
  std::string header = "{'descr': '" +
                       std::string(descr[static_cast<int>(t.dtype())]) +
                       "', 'fortran_order': False, 'shape': " + shape + ", }";
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::string tmp = path + ".tmp." + std::to_string(getpid());
  {
    std::ofstream out(tmp, std::ios::binary);
    if (!out) {
      error = "cannot write '" + path + "'";
      return false;
    }
    out.write("\x93NUMPY\x01\x00", 8);
    char len[2] = {char(header.size() & 0xff), char(header.size() >> 8)};
    out.write(len, 2);
    out << header;
    out.write(static_cast<const char *>(t.raw()), t.bytes());
    if (!out) {
      error = "cannot write '" + path + "'";
      std::remove(tmp.c_str());
      return false;
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    error = "cannot write '" + path + "'";
    std::remove(tmp.c_str());
    return false;
  }
  return true;
}

} // namespace mpc::rt
