//===- ModelValidator.cpp - onnx.checker-grade checks before import -------===//
//
// Mirrors onnx/checker.cc where it matters to a consumer: a field given twice
// or in two forms is ambiguous, and the importer would otherwise pick one
// silently. Sizes are checked against the bytes that hold them before the
// importer allocates anything.
//
//===----------------------------------------------------------------------===//

#include "frontend/ModelValidator.h"
#include "frontend/ModelLoader.h"
#include "runtime/TensorLimit.h"

#include <onnx/onnx_pb.h>

#include <atomic>
#include <limits>
#include <set>

namespace mlir::mpc {

namespace {


// TensorProto.DataType numbers (Debian's onnx-ml.proto predates FLOAT8+).
enum : int32_t {
  kUndefined = 0, kFloat = 1, kUint8 = 2, kInt8 = 3, kUint16 = 4, kInt16 = 5,
  kInt32 = 6, kInt64 = 7, kString = 8, kBool = 9, kFloat16 = 10,
  kDouble = 11, kUint32 = 12, kUint64 = 13, kComplex64 = 14,
  kComplex128 = 15, kBfloat16 = 16, kLastFloat8 = 20, kUint4 = 21,
  kInt4 = 22, kFloat4 = 23, kFloat8E8M0 = 24, kUint2 = 25, kInt2 = 26,
};

/// Bits per element; 0 for STRING and unknown types.
int bitsOf(int32_t type) {
  switch (type) {
  case kUint8: case kInt8: case kBool: case kFloat8E8M0:
    return 8;
  case kUint16: case kInt16: case kFloat16: case kBfloat16:
    return 16;
  case kFloat: case kInt32: case kUint32:
    return 32;
  case kInt64: case kDouble: case kUint64: case kComplex64:
    return 64;
  case kComplex128:
    return 128;
  case kUint4: case kInt4: case kFloat4:
    return 4;
  case kUint2: case kInt2:
    return 2;
  default:
    return type > kBfloat16 && type <= kLastFloat8 ? 8 : 0;
  }
}

std::string typeName(int32_t type) {
  if (onnx::TensorProto::DataType_IsValid(type))
    return onnx::TensorProto::DataType_Name(
        static_cast<onnx::TensorProto::DataType>(type));
  return "data type " + std::to_string(type);
}

std::string shapeString(const google::protobuf::RepeatedField<int64_t> &dims) {
  std::string s = "[";
  for (int i = 0; i < dims.size(); ++i)
    s += (i ? "," : "") + std::to_string(dims[i]);
  return s + "]";
}

/// The typed field a value of `type` lives in, as checker.cc requires.
const char *typedFieldOf(int32_t type) {
  switch (type) {
  case kFloat: case kComplex64:
    return "float_data";
  case kInt64:
    return "int64_data";
  case kString:
    return "string_data";
  case kDouble: case kComplex128:
    return "double_data";
  case kUint32: case kUint64:
    return "uint64_data";
  default:
    return "int32_data";
  }
}

class Validator {
public:
  Validator(const std::string &modelDir, std::string &error)
      : modelDir(modelDir), error(error) {}

  bool model(const onnx::ModelProto &m);
  bool tensor(const onnx::TensorProto &t, const std::string &where);

private:
  bool fail(const std::string &where, const std::string &what) {
    error = where + " " + what;
    return false;
  }
  bool graph(const onnx::GraphProto &g, const std::string &where);
  bool node(const onnx::NodeProto &n, const std::string &where);
  bool attribute(const onnx::AttributeProto &a, const std::string &where);
  bool initializerMatchesInput(const onnx::TensorProto &t,
                               const onnx::ValueInfoProto &input);
  template <typename List, typename KeyFn>
  bool unique(const List &list, KeyFn key, const std::string &where,
              const std::string &what);

  const std::string &modelDir;
  std::string &error;
};

template <typename List, typename KeyFn>
bool Validator::unique(const List &list, KeyFn key, const std::string &where,
                       const std::string &what) {
  std::set<std::string> seen;
  for (const auto &item : list) {
    std::string k = key(item);
    if (!seen.insert(k).second)
      return fail(where, "has two " + what + " '" + k + "'");
  }
  return true;
}

bool Validator::model(const onnx::ModelProto &m) {
  if (m.ir_version() > kNewestIrVersion)
    return fail("ir_version", std::to_string(m.ir_version()) +
                                  " is newer than any mpc reads (up to " +
                                  std::to_string(kNewestIrVersion) + ")");
  auto domainOf = [](const onnx::OperatorSetIdProto &op) {
    return op.domain() == "ai.onnx" || op.domain().empty() ? std::string("ai.onnx")
                                                           : op.domain();
  };
  if (!unique(m.opset_import(), domainOf, "opset_import",
              "entries for domain"))
    return false;
  for (const auto &op : m.opset_import())
    if (op.version() < 1)
      return fail("opset_import of domain '" + domainOf(op) + "'",
                  "has version " + std::to_string(op.version()));
  if (!unique(m.metadata_props(), [](const auto &p) { return p.key(); },
              "metadata_props", "entries with key"))
    return false;
  if (!unique(m.functions(),
              [](const auto &f) { return f.domain() + "." + f.name(); },
              "the model", "functions named"))
    return false;
  if (!graph(m.graph(), "graph"))
    return false;
  for (const auto &info : m.training_info()) {
    auto key = [](const auto &kv) { return kv.key(); };
    if (!unique(info.initialization_binding(), key, "training_info",
                "initialization bindings of") ||
        !unique(info.update_binding(), key, "training_info",
                "update bindings of"))
      return false;
    if ((info.has_initialization() &&
         !graph(info.initialization(), "training initialization graph")) ||
        (info.has_algorithm() &&
         !graph(info.algorithm(), "training algorithm graph")))
      return false;
  }
  return true;
}

bool Validator::graph(const onnx::GraphProto &g, const std::string &kind) {
  std::string where = kind + (g.name().empty() ? "" : " '" + g.name() + "'");
  auto name = [](const auto &v) { return v.name(); };
  if (!unique(g.input(), name, where, "inputs named") ||
      !unique(g.output(), name, where, "outputs named") ||
      !unique(g.initializer(), name, where, "initializers named") ||
      !unique(g.value_info(), name, where, "value_info entries for"))
    return false;
  if (g.sparse_initializer_size())
    return fail("sparse initializer '" + g.sparse_initializer(0).values().name() +
                    "'",
                "is not supported; store it as a dense initializer");
  for (const auto &init : g.initializer()) {
    if (!tensor(init, "initializer '" + init.name() + "'"))
      return false;
    for (const auto &input : g.input())
      if (input.name() == init.name() && !initializerMatchesInput(init, input))
        return false;
  }
  for (const auto &n : g.node())
    if (!node(n, where))
      return false;
  return true;
}

bool Validator::initializerMatchesInput(const onnx::TensorProto &t,
                                        const onnx::ValueInfoProto &input) {
  if (!input.type().has_tensor_type())
    return fail("graph input '" + input.name() + "'",
                "is not a tensor but has a tensor initializer");
  const auto &tt = input.type().tensor_type();
  std::string where = "graph input '" + input.name() + "'";
  if (tt.elem_type() != kUndefined && tt.elem_type() != t.data_type())
    return fail(where, "is declared " + typeName(tt.elem_type()) +
                           " but its initializer is " +
                           typeName(t.data_type()));
  if (!tt.has_shape())
    return true;
  bool same = tt.shape().dim_size() == t.dims_size();
  for (int i = 0; same && i < t.dims_size(); ++i) {
    const auto &dim = tt.shape().dim(i);
    same = !dim.has_dim_value() || dim.dim_value() == t.dims(i);
  }
  if (same)
    return true;
  std::string declared = "[";
  for (int i = 0; i < tt.shape().dim_size(); ++i) {
    const auto &dim = tt.shape().dim(i);
    declared += (i ? "," : "") + (dim.has_dim_value()
                                      ? std::to_string(dim.dim_value())
                                      : dim.dim_param().empty() ? "?"
                                                                : dim.dim_param());
  }
  return fail(where, "is declared with shape " + declared +
                         "] but its initializer has shape " +
                         shapeString(t.dims()));
}

bool Validator::node(const onnx::NodeProto &n, const std::string &graphWhere) {
  std::string op = (n.domain().empty() || n.domain() == "ai.onnx"
                        ? ""
                        : n.domain() + ".") +
                   n.op_type();
  std::string label = !n.name().empty()     ? n.name()
                      : n.output_size() > 0 ? n.output(0)
                                            : std::string();
  std::string where = "node '" + label + "' (" + op + ")";
  if (n.op_type().empty())
    return fail(where, "in " + graphWhere + " has no op_type");
  if (!unique(n.attribute(), [](const auto &a) { return a.name(); }, where,
              "attributes named"))
    return false;
  for (const auto &a : n.attribute())
    if (!attribute(a, where))
      return false;
  return true;
}

bool Validator::attribute(const onnx::AttributeProto &a,
                          const std::string &nodeWhere) {
  std::string where = nodeWhere + ": attribute '" + a.name() + "'";
  if (a.name().empty())
    return fail(nodeWhere, "has an attribute without a name");
  using A = onnx::AttributeProto;
  struct Field {
    const char *name;
    A::AttributeType type;
    bool set;
  } fields[] = {
      {"f", A::FLOAT, a.has_f()},
      {"i", A::INT, a.has_i()},
      {"s", A::STRING, a.has_s()},
      {"t", A::TENSOR, a.has_t()},
      {"g", A::GRAPH, a.has_g()},
      {"sparse_tensor", A::SPARSE_TENSOR, a.has_sparse_tensor()},
      {"tp", A::TYPE_PROTO, a.has_tp()},
      {"floats", A::FLOATS, a.floats_size() > 0},
      {"ints", A::INTS, a.ints_size() > 0},
      {"strings", A::STRINGS, a.strings_size() > 0},
      {"tensors", A::TENSORS, a.tensors_size() > 0},
      {"graphs", A::GRAPHS, a.graphs_size() > 0},
      {"sparse_tensors", A::SPARSE_TENSORS, a.sparse_tensors_size() > 0},
      {"type_protos", A::TYPE_PROTOS, a.type_protos_size() > 0},
  };
  const Field *used = nullptr;
  for (const Field &f : fields) {
    if (!f.set)
      continue;
    if (used)
      return fail(where, std::string("has two values, in ") + used->name +
                             " and " + f.name);
    used = &f;
  }
  if (a.type() != A::UNDEFINED && used && used->type != a.type())
    return fail(where, "is declared " + A::AttributeType_Name(a.type()) +
                           " but holds its value in " + used->name);
  if (a.has_t() && !tensor(a.t(), where + " tensor"))
    return false;
  for (const auto &t : a.tensors())
    if (!tensor(t, where + " tensor"))
      return false;
  if (a.has_g() && !graph(a.g(), where + " graph"))
    return false;
  for (const auto &g : a.graphs())
    if (!graph(g, where + " graph"))
      return false;
  return true;
}

bool Validator::tensor(const onnx::TensorProto &t, const std::string &where) {
  if (t.data_type() == kUndefined)
    return fail(where, "has no data_type");
  // The data, in every form a TensorProto can hold it.
  struct Form {
    const char *name;
    int count;
  } forms[] = {
      {"float_data", t.float_data_size()},   {"int32_data", t.int32_data_size()},
      {"string_data", t.string_data_size()}, {"int64_data", t.int64_data_size()},
      {"double_data", t.double_data_size()}, {"uint64_data", t.uint64_data_size()},
      {"raw_data", t.has_raw_data() ? 1 : 0},
  };
  bool external = t.data_location() == onnx::TensorProto::EXTERNAL;
  const Form *used = nullptr;
  for (const Form &f : forms) {
    if (!f.count)
      continue;
    if (external)
      return fail(where, std::string("has both external data and ") + f.name);
    if (used)
      return fail(where, std::string("has both ") + used->name + " and " +
                             f.name);
    used = &f;
  }
  if (!external && t.external_data_size())
    return fail(where, "has external_data entries but its data_location is "
                       "not EXTERNAL");
  static const std::set<std::string> externalKeys = {
      "location", "offset", "length", "checksum", "basepath"};
  if (!unique(t.external_data(), [](const auto &kv) { return kv.key(); },
              where, "external_data entries with key"))
    return false;
  for (const auto &kv : t.external_data())
    if (!externalKeys.count(kv.key()))
      return fail(where, "has an unknown external_data key '" + kv.key() +
                             "'");
  if (t.data_type() == kString && t.has_raw_data())
    return fail(where, "is STRING but holds raw_data (strings go in "
                       "string_data)");
  if (used && std::string(used->name) != "raw_data" &&
      used->name != std::string(typedFieldOf(t.data_type())))
    return fail(where, "is " + typeName(t.data_type()) +
                           " but holds its values in " + used->name +
                           " (they belong in " + typedFieldOf(t.data_type()) +
                           ")");

  int64_t numel = 1;
  for (int64_t d : t.dims()) {
    // Bounded so that numel times any element width (up to 128 bits) fits.
    if (d < 0 || (d > 0 && numel > std::numeric_limits<int64_t>::max() / 256 / d))
      return fail(where, "has invalid dimension " + std::to_string(d));
    numel *= d;
  }
  int bits = bitsOf(t.data_type());
  if (!bits) // STRING or a type no reader knows: nothing to size.
    return true;
  int64_t bytes = (numel * bits + 7) / 8;
  if ((uint64_t)bytes > maxTensorBytes())
    return fail(where, "declares shape " + shapeString(t.dims()) + " of " +
                           typeName(t.data_type()) + ", " +
                           std::to_string(bytes) +
                           " bytes, over the limit of " +
                           std::to_string(maxTensorBytes()) +
                           " (raise it with --max-tensor-bytes)");
  int64_t held;
  if (external) {
    ExternalSpan span;
    if (!locateExternalData(t, modelDir, span, error))
      return fail(where, error);
    held = span.length;
  } else if (t.has_raw_data()) {
    held = (int64_t)t.raw_data().size();
  } else {
    if (bits < 8) // packed several to an int32: sized by the reader
      return true;
    int64_t perElement = t.data_type() == kComplex64 ||
                                 t.data_type() == kComplex128
                             ? 2
                             : 1;
    int64_t count = used ? used->count : 0;
    if (count != numel * perElement)
      return fail(where, "holds " + std::to_string(count) +
                             " values but its shape " + shapeString(t.dims()) +
                             " needs " + std::to_string(numel * perElement));
    return true;
  }
  if (held != bytes)
    return fail(where, "holds " + std::to_string(held) +
                           " bytes but its shape " + shapeString(t.dims()) +
                           " of " + typeName(t.data_type()) + " needs " +
                           std::to_string(bytes));
  return true;
}

} // namespace

uint64_t maxTensorBytes() { return ::mpc::rt::maxTensorBytes(); }
void setMaxTensorBytes(uint64_t bytes) { ::mpc::rt::setMaxTensorBytes(bytes); }

bool validateTensor(const onnx::TensorProto &tensor,
                    const std::string &modelDir, const std::string &what,
                    std::string &error) {
  if (Validator(modelDir, error).tensor(tensor, what))
    return true;
  error = oneLine(error);
  return false;
}

bool validateModel(const onnx::ModelProto &model, const std::string &modelDir,
                   std::string &error) {
  if (Validator(modelDir, error).model(model))
    return true;
  error = oneLine(error); // names quoted from the model may hold any byte
  return false;
}

} // namespace mlir::mpc
