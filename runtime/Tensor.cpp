//===- Tensor.cpp - runtime tensors ---------------------------------------===//

#include "runtime/Tensor.h"
#include "runtime/Half.h"

#include <cstring>

namespace mpc::rt {

size_t dtypeSize(DType t) {
  switch (t) {
  case DType::F32:
  case DType::I32:
    return 4;
  case DType::F16:
  case DType::BF16:
    return 2;
  case DType::I64:
    return 8;
  case DType::I1:
    return 1;
  }
  return 0;
}

const char *dtypeName(DType t) {
  static const char *names[] = {"f32", "f16", "bf16", "i64", "i32", "i1"};
  return names[static_cast<int>(t)];
}

bool isFloat(DType t) {
  return t == DType::F32 || t == DType::F16 || t == DType::BF16;
}

int64_t numElements(const Shape &shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

std::string shapeString(const Shape &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? "," : "") + std::to_string(shape[i]);
  return s + "]";
}

Tensor::Tensor(DType dtype, Shape shape)
    : dtype_(dtype), shape_(std::move(shape)), size_(numElements(shape_)) {
  // 64-byte aligned, zero-initialised storage (at least one byte).
  size_t n = std::max<size_t>(bytes(), 1);
  data_ = std::shared_ptr<uint8_t[]>(
      static_cast<uint8_t *>(::operator new[](n, std::align_val_t(64))),
      [](uint8_t *p) { ::operator delete[](p, std::align_val_t(64)); });
  std::memset(data_.get(), 0, n);
}

Tensor::Tensor(DType dtype, Shape shape, std::shared_ptr<uint8_t[]> storage)
    : dtype_(dtype), shape_(std::move(shape)), size_(numElements(shape_)),
      data_(std::move(storage)) {}

float Tensor::getFloat(int64_t i) const {
  switch (dtype_) {
  case DType::F32:
    return data<float>()[i];
  case DType::F16:
    return halfToFloat(data<uint16_t>()[i]);
  case DType::BF16:
    return bf16ToFloat(data<uint16_t>()[i]);
  case DType::I64:
    return (float)data<int64_t>()[i];
  case DType::I32:
    return (float)data<int32_t>()[i];
  case DType::I1:
    return data<uint8_t>()[i] ? 1.0f : 0.0f;
  }
  return 0;
}

int64_t Tensor::getInt(int64_t i) const {
  switch (dtype_) {
  case DType::I64:
    return data<int64_t>()[i];
  case DType::I32:
    return data<int32_t>()[i];
  case DType::I1:
    return data<uint8_t>()[i] != 0;
  default:
    return (int64_t)getFloat(i);
  }
}

void Tensor::setFloat(int64_t i, float v) {
  switch (dtype_) {
  case DType::F32:
    data<float>()[i] = v;
    break;
  case DType::F16:
    data<uint16_t>()[i] = floatToHalf(v);
    break;
  case DType::BF16:
    data<uint16_t>()[i] = floatToBf16(v);
    break;
  case DType::I64:
    data<int64_t>()[i] = (int64_t)v;
    break;
  case DType::I32:
    data<int32_t>()[i] = (int32_t)v;
    break;
  case DType::I1:
    data<uint8_t>()[i] = v != 0;
    break;
  }
}

void Tensor::setInt(int64_t i, int64_t v) {
  switch (dtype_) {
  case DType::I64:
    data<int64_t>()[i] = v;
    break;
  case DType::I32:
    data<int32_t>()[i] = (int32_t)v;
    break;
  case DType::I1:
    data<uint8_t>()[i] = v != 0;
    break;
  default:
    setFloat(i, (float)v);
  }
}

Tensor Tensor::reshaped(Shape shape) const {
  Tensor t = *this; // shares storage
  t.shape_ = std::move(shape);
  return t;
}

} // namespace mpc::rt
