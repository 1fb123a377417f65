//===- TensorReader.cpp - ONNX TensorProto -> DenseElementsAttr -----------===//
//
// Also the one float64 form the importer takes: a Constant only Casts to
// FLOAT read (narrowedDoubleConstant).
//
//===----------------------------------------------------------------------===//

#include "frontend/ImporterImpl.h"
#include "frontend/ModelLoader.h"

#include "mlir/IR/BuiltinTypes.h"

#include <cstring>

using namespace mlir;

namespace mlir::mpc::importer {

Type elementTypeOf(int32_t onnxType, MLIRContext *ctx) {
  Builder b(ctx);
  switch (onnxType) {
  case onnx::TensorProto::FLOAT:
    return b.getF32Type();
  case onnx::TensorProto::FLOAT16:
    return b.getF16Type();
  case onnx::TensorProto::BFLOAT16:
    return b.getBF16Type();
  case onnx::TensorProto::INT64:
    return b.getI64Type();
  case onnx::TensorProto::INT32:
    return b.getI32Type();
  case onnx::TensorProto::BOOL:
    return b.getI1Type();
  default:
    return {};
  }
}

std::string dataTypeName(int32_t onnxType) {
  if (onnx::TensorProto::DataType_IsValid(onnxType))
    return onnx::TensorProto::DataType_Name(
        static_cast<onnx::TensorProto::DataType>(onnxType));
  return "data type " + std::to_string(onnxType);
}

static std::string shapeString(ArrayRef<int64_t> dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i)
    s += (i ? "," : "") + std::to_string(dims[i]);
  return s + "]";
}

/// Element values of the typed repeated field that holds `dataType`.
template <typename T>
static std::vector<T> typedValues(const onnx::TensorProto &t) {
  std::vector<T> out;
  switch (t.data_type()) {
  case onnx::TensorProto::FLOAT:
    out.assign(t.float_data().begin(), t.float_data().end());
    break;
  case onnx::TensorProto::INT64:
    out.assign(t.int64_data().begin(), t.int64_data().end());
    break;
  default: // INT32, BOOL, FLOAT16, BFLOAT16 (bits) live in int32_data.
    out.assign(t.int32_data().begin(), t.int32_data().end());
    break;
  }
  return out;
}

FailureOr<DenseElementsAttr> readTensor(const onnx::TensorProto &t,
                                        MLIRContext *ctx,
                                        const std::string &modelDir,
                                        std::string &error) {
  Type elem = elementTypeOf(t.data_type(), ctx);
  if (!elem) {
    error = "element type " + dataTypeName(t.data_type()) +
            " is not supported (mpc supports FLOAT, FLOAT16, BFLOAT16, "
            "INT64, INT32, BOOL)";
    return failure();
  }
  SmallVector<int64_t> dims;
  int64_t numel = 1;
  for (int64_t d : t.dims()) {
    if (d < 0 || (d > 0 && numel > (int64_t(1) << 40) / d)) {
      error = "has invalid dimension " + std::to_string(d);
      return failure();
    }
    dims.push_back(d);
    numel *= d;
  }
  auto type = RankedTensorType::get(dims, elem);
  size_t width = elem.isInteger(1) ? 1 : elem.getIntOrFloatBitWidth() / 8;

  std::vector<char> external;
  const std::string *raw = nullptr;
  if (t.data_location() == onnx::TensorProto::EXTERNAL) {
    if (!mpc::readExternalData(t, modelDir, external, error))
      return failure();
  } else if (t.has_raw_data()) {
    raw = &t.raw_data();
  }
  if (raw || t.data_location() == onnx::TensorProto::EXTERNAL) {
    const char *data = raw ? raw->data() : external.data();
    size_t size = raw ? raw->size() : external.size();
    if (size != numel * width) {
      error = "holds " + std::to_string(size) + " bytes but its shape " +
              shapeString(dims) + " of " + dataTypeName(t.data_type()) +
              " needs " + std::to_string(numel * width);
      return failure();
    }
    // Every element the same (each equals the next): a splat, as
    // DenseElementsAttr::get makes of typed values. torch exports
    // torch.zeros as a raw constant: GPT-NeoX's baddbmm addend is 512 MiB
    // of zeros at 4k tokens.
    if (size > width && std::memcmp(data, data + width, size - width) == 0)
      size = width;
    if (elem.isInteger(1)) {
      SmallVector<bool> values;
      for (size_t i = 0; i < size; ++i)
        values.push_back(data[i] != 0);
      return DenseElementsAttr::get(type, ArrayRef<bool>(values));
    }
    return DenseElementsAttr::getFromRawBuffer(type, ArrayRef<char>(data, size));
  }

  size_t count = t.data_type() == onnx::TensorProto::FLOAT ? t.float_data_size()
                 : t.data_type() == onnx::TensorProto::INT64
                     ? t.int64_data_size()
                     : t.int32_data_size();
  if ((int64_t)count != numel) {
    error = "holds " + std::to_string(count) + " values but its shape " +
            shapeString(dims) + " needs " + std::to_string(numel);
    return failure();
  }
  switch (t.data_type()) {
  case onnx::TensorProto::FLOAT:
    return DenseElementsAttr::get(type, ArrayRef(typedValues<float>(t)));
  case onnx::TensorProto::INT64:
    return DenseElementsAttr::get(type, ArrayRef(typedValues<int64_t>(t)));
  case onnx::TensorProto::INT32:
    return DenseElementsAttr::get(type, ArrayRef(typedValues<int32_t>(t)));
  case onnx::TensorProto::BOOL: {
    SmallVector<bool> values;
    for (int32_t v : typedValues<int32_t>(t))
      values.push_back(v != 0);
    return DenseElementsAttr::get(type, ArrayRef<bool>(values));
  }
  default: { // FLOAT16 / BFLOAT16: 16-bit patterns in int32_data.
    std::vector<uint16_t> bits;
    for (int32_t v : typedValues<int32_t>(t))
      bits.push_back(static_cast<uint16_t>(v));
    return DenseElementsAttr::getFromRawBuffer(
        type, ArrayRef<char>(reinterpret_cast<const char *>(bits.data()),
                             bits.size() * 2));
  }
  }
}

/// A Constant of float64 (which mpc does not compute in) that only Casts
/// to FLOAT read, as a FLOAT constant: the same values those Casts make
/// (torch exports such scalars: GPT-NeoX's rotary embedding). Others stay
/// refused by the importer.
std::optional<onnx::NodeProto>
narrowedDoubleConstant(const onnx::GraphProto &graph, int idx,
                       const std::vector<int> &users) {
  const onnx::NodeProto &node = graph.node(idx);
  if (node.op_type() != "Constant" || !(node.domain().empty() || node.domain() == "ai.onnx") ||
      node.attribute_size() != 1 || node.attribute(0).name() != "value" ||
      node.attribute(0).t().data_type() != onnx::TensorProto::DOUBLE ||
      node.attribute(0).t().data_location() == onnx::TensorProto::EXTERNAL ||
      users.empty())
    return std::nullopt;
  for (const auto &out : graph.output())
    if (out.name() == node.output(0))
      return std::nullopt;
  for (int u : users) {
    const onnx::NodeProto &cast = graph.node(u);
    bool toFloat = false;
    if (cast.op_type() == "Cast")
      for (const auto &a : cast.attribute())
        if (a.name() == "to")
          toFloat = a.i() == onnx::TensorProto::FLOAT;
    if (!toFloat)
      return std::nullopt;
  }
  const onnx::TensorProto &t = node.attribute(0).t();
  std::vector<double> values(t.double_data().begin(), t.double_data().end());
  if (t.has_raw_data()) {
    if (t.raw_data().size() % 8)
      return std::nullopt;
    values.resize(t.raw_data().size() / 8);
    std::memcpy(values.data(), t.raw_data().data(), t.raw_data().size());
  }
  onnx::NodeProto copy = node;
  onnx::TensorProto *f = copy.mutable_attribute(0)->mutable_t();
  f->clear_raw_data();
  f->clear_double_data();
  f->set_data_type(onnx::TensorProto::FLOAT);
  for (double v : values)
    f->add_float_data((float)v);
  return copy;
}

} // namespace mlir::mpc::importer
