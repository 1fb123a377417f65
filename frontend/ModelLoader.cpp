//===- ModelLoader.cpp - read ONNX models (binary or text) ----------------===//

#include "frontend/ModelLoader.h"
#include "frontend/MixedPrecisionRewrite.h"
#include "frontend/ModelValidator.h"
#include "runtime/Half.h"

#include <onnx/defs/parser.h>
#include <onnx/onnx_pb.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace fs = std::filesystem;

namespace mlir::mpc {

static bool endsWith(const std::string &s, const std::string &suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

static std::string firstLine(std::string s) {
  for (char &c : s)
    if (c == '\n' || c == '\r')
      c = ' ';
  return s;
}

bool parseModelText(const std::string &text, onnx::ModelProto &model,
                    std::string &error) {
  try {
    auto status = onnx::OnnxParser::Parse(model, text.c_str());
    if (!status.IsOK()) {
      error = "invalid ONNX text syntax: " + firstLine(status.ErrorMessage());
      return false;
    }
  } catch (const std::exception &e) {
    error = std::string("invalid ONNX text syntax: ") + e.what();
    return false;
  }
  return true;
}

bool loadModel(const std::string &path, onnx::ModelProto &model,
               std::string &error) {
  std::error_code ec;
  if (!fs::exists(path, ec)) {
    error = "no such file";
    return false;
  }
  if (fs::is_directory(path, ec)) {
    error = "is a directory, not an ONNX model file";
    return false;
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    error = "cannot open file for reading";
    return false;
  }
  // Read in one piece into a string of the file's size (a stream buffer
  // grows by copies, and its str() copies again: 3x a 1 GB model).
  std::string bytes(fs::file_size(path, ec), '\0');
  if (ec || !in.read(bytes.data(), (std::streamsize)bytes.size())) {
    error = "cannot read the file";
    return false;
  }
  return parseModelBytes(bytes, path, model, error);
}

static bool parseModelBytesImpl(const std::string &bytes,
                                const std::string &path,
                                onnx::ModelProto &model, std::string &error);

std::string oneLine(const std::string &message) {
  std::string out;
  for (unsigned char c : message) {
    if (c == '\n')
      out += "\\n";
    else if (c == '\r')
      out += "\\r";
    else if (c < 32 || c == 127)
      out += '?';
    else
      out += (char)c;
  }
  return out;
}

bool parseModelBytes(const std::string &bytes, const std::string &path,
                     onnx::ModelProto &model, std::string &error) {
  bool ok = parseModelBytesImpl(bytes, path, model, error);
  if (!ok)
    error = oneLine(error);
  return ok;
}

static bool parseModelBytesImpl(const std::string &bytes,
                                const std::string &path,
                                onnx::ModelProto &model, std::string &error) {
  size_t firstChar = bytes.find_first_not_of(" \t\r\n");
  bool isText = endsWith(path, ".onnxtxt") || endsWith(path, ".onnxtext") ||
                (firstChar != std::string::npos && bytes[firstChar] == '<');
  if (isText) {
    // Strip lit RUN/CHECK comment lines ('#' and '//' are not ONNX syntax).
    std::istringstream lines(bytes);
    std::string line, text;
    while (std::getline(lines, line)) {
      size_t p = line.find_first_not_of(" \t");
      bool comment = p != std::string::npos &&
                     (line[p] == '#' || line.compare(p, 2, "//") == 0);
      text += comment ? "\n" : line + "\n";
    }
    if (!parseModelText(text, model, error))
      return false;
  } else if (bytes.size() > INT32_MAX) {
    error = "model file is over 2 GB; store weights as external data";
    return false;
  } else if (!model.ParseFromArray(bytes.data(), (int)bytes.size())) {
    error = "not a valid ONNX protobuf (truncated or corrupt file)";
    return false;
  }
  if (!model.has_graph() || model.ir_version() <= 0) {
    error = "not an ONNX model (no graph or no ir_version)";
    return false;
  }
  std::error_code dirError;
  return validateModel(model,
                       fs::absolute(path, dirError).parent_path().string(),
                       error);
}

bool loadTensor(const std::string &path, onnx::TensorProto &tensor,
                std::string &error) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    error = "cannot open '" + path + "'";
    return false;
  }
  std::ostringstream buffer;
  buffer << in.rdbuf();
  std::string bytes = buffer.str();
  if (bytes.size() > INT32_MAX ||
      !tensor.ParseFromArray(bytes.data(), (int)bytes.size())) {
    error = "'" + path + "' is not a serialized ONNX TensorProto";
    return false;
  }
  return true;
}

/// `given`, the trained bytes of `init`, in its own element type: as they
/// are, or an FP32 master (twice the bytes) rounded to the FP16/BF16 the
/// model stores.
static std::string storedBytes(const onnx::TensorProto &init,
                               const std::string &given) {
  size_t count = 1;
  for (int64_t d : init.dims())
    count *= size_t(d);
  const auto type = init.data_type();
  if ((type != onnx::TensorProto::FLOAT16 &&
       type != onnx::TensorProto::BFLOAT16) ||
      given.size() != 4 * count)
    return given;
  std::string bytes(2 * count, '\0');
  for (size_t i = 0; i < count; ++i) {
    float v;
    std::memcpy(&v, given.data() + 4 * i, 4);
    uint16_t h = ::mpc::rt::narrow16(v, type == onnx::TensorProto::BFLOAT16);
    std::memcpy(&bytes[2 * i], &h, 2);
  }
  return bytes;
}

bool writeModelWithWeights(
    const std::string &modelPath, const std::string &outPath,
    const std::map<std::string, std::string> &weights, std::string &error) {
  onnx::ModelProto model;
  if (!loadModel(modelPath, model, error))
    return false;
  size_t replaced = 0;
  for (auto &init : *model.mutable_graph()->mutable_initializer()) {
    auto it = weights.find(init.name());
    if (it == weights.end())
      continue;
    init.clear_float_data();
    init.clear_int32_data();
    init.clear_int64_data();
    init.clear_double_data();
    init.clear_uint64_data();
    init.clear_external_data();
    init.set_data_location(onnx::TensorProto::DEFAULT);
    init.set_raw_data(storedBytes(init, it->second));
    ++replaced;
  }
  if (replaced != weights.size()) {
    error = "the model lacks some trained initializers";
    return false;
  }
  // Initializers kept as external data stay external (in OUT.data).
  return saveModelAtomically(
      model, outPath,
      std::filesystem::absolute(modelPath).parent_path().string(), {}, error);
}

bool locateExternalData(const onnx::TensorProto &tensor,
                        const std::string &modelDir, ExternalSpan &span,
                        std::string &error) {
  std::string location;
  long long offset = 0, length = -1;
  for (const auto &entry : tensor.external_data()) {
    try {
      size_t used = 0;
      if (entry.key() == "location")
        location = entry.value();
      else if (entry.key() == "offset")
        offset = std::stoll(entry.value(), &used);
      else if (entry.key() == "length")
        length = std::stoll(entry.value(), &used);
      if ((entry.key() == "offset" || entry.key() == "length") &&
          (used != entry.value().size() || (entry.key() == "offset" ? offset
                                                                    : length) < 0))
        throw std::invalid_argument("");
    } catch (const std::exception &) {
      error = "external data " + entry.key() + " '" + entry.value() +
              "' is not a non-negative number";
      return false;
    }
  }
  if (location.empty()) {
    error = "external data has no location";
    return false;
  }
  // A NUL would silently cut the path the OS sees.
  if (location.find('\0') != std::string::npos) {
    error = "external data location contains a NUL byte";
    return false;
  }
  fs::path rel(location);
  if (rel.is_absolute()) {
    error = "external data location '" + location +
            "' is absolute; it must be relative to the model's directory";
    return false;
  }
  std::error_code ec;
  fs::path dir = fs::weakly_canonical(modelDir.empty() ? "." : modelDir, ec);
  fs::path file = fs::weakly_canonical(dir / rel, ec);
  auto [dirEnd, fileIt] =
      std::mismatch(dir.begin(), dir.end(), file.begin(), file.end());
  if (ec || dirEnd != dir.end()) {
    error = "external data location '" + location +
            "' points outside the model's directory";
    return false;
  }
  auto status = fs::status(file, ec);
  if (ec || !fs::exists(status)) {
    error = "external data file '" + location + "' is missing";
    return false;
  }
  if (!fs::is_regular_file(status)) {
    error = "external data location '" + location + "' is not a regular file";
    return false;
  }
  long long size = (long long)fs::file_size(file, ec);
  if (ec) {
    error = "cannot read the size of external data file '" + location + "'";
    return false;
  }
  if (offset > size || (length >= 0 && length > size - offset)) {
    error = "external data range [" + std::to_string(offset) + ", +" +
            std::to_string(length) + ") lies outside '" + location + "' (" +
            std::to_string(size) + " bytes)";
    return false;
  }
  span.file = file.string();
  span.location = location;
  span.offset = offset;
  span.length = length < 0 ? size - offset : length;
  return true;
}

bool readExternalData(const onnx::TensorProto &tensor,
                      const std::string &modelDir, std::vector<char> &bytes,
                      std::string &error) {
  ExternalSpan span;
  if (!locateExternalData(tensor, modelDir, span, error))
    return false;
  std::ifstream in(span.file, std::ios::binary);
  if (!in) {
    error = "external data file '" + span.location + "' cannot be opened";
    return false;
  }
  bytes.resize(span.length);
  in.seekg(span.offset);
  if (!in.read(bytes.data(), span.length)) {
    error = "external data file '" + span.location + "' ended early";
    return false;
  }
  return true;
}

} // namespace mlir::mpc
