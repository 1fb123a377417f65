//===- Tensor.h - runtime tensors ---------------------------------*- C++ -*-===//

#ifndef MPC_RUNTIME_TENSOR_H
#define MPC_RUNTIME_TENSOR_H

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace mpc::rt {

enum class DType : uint8_t { F32, F16, BF16, I64, I32, I1 };

size_t dtypeSize(DType t);
const char *dtypeName(DType t); // "f32", "f16"...
bool isFloat(DType t);

using Shape = std::vector<int64_t>;
int64_t numElements(const Shape &shape);
std::string shapeString(const Shape &shape); // "[2,3]"

/// A dense row-major tensor owning its storage (16-bit floats as raw bits,
/// i1 as one byte per element).
class Tensor {
public:
  Tensor() = default;
  /// Zero-filled.
  Tensor(DType dtype, Shape shape);
  /// Uses `storage` (at least bytes() long, contents unspecified).
  Tensor(DType dtype, Shape shape, std::shared_ptr<uint8_t[]> storage);

  /// The shared storage (for buffer reuse by the executor).
  const std::shared_ptr<uint8_t[]> &storage() const { return data_; }

  DType dtype() const { return dtype_; }
  const Shape &shape() const { return shape_; }
  int64_t rank() const { return (int64_t)shape_.size(); }
  int64_t dim(int64_t i) const { return shape_[i]; }
  int64_t size() const { return size_; }
  size_t bytes() const { return size_ * dtypeSize(dtype_); }

  void *raw() { return data_.get(); }
  const void *raw() const { return data_.get(); }
  template <typename T> T *data() { return static_cast<T *>(raw()); }
  template <typename T> const T *data() const {
    return static_cast<const T *>(raw());
  }

  /// Element i converted to float / to int64 (any dtype).
  float getFloat(int64_t i) const;
  int64_t getInt(int64_t i) const;
  /// Stores v into element i, rounding to nearest even for f16/bf16.
  void setFloat(int64_t i, float v);
  void setInt(int64_t i, int64_t v);

  /// Same data, new shape (element counts must agree).
  Tensor reshaped(Shape shape) const;

private:
  DType dtype_ = DType::F32;
  Shape shape_;
  int64_t size_ = 0;
  std::shared_ptr<uint8_t[]> data_;
};

} // namespace mpc::rt

#endif // MPC_RUNTIME_TENSOR_H
