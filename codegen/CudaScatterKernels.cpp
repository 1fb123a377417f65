//===- CudaScatterKernels.cpp - ScatterND and ScatterElements ------------===//
//
// A scatter writes data's copy, then its updates: a prologue kernel
// copies, the main one stores or combines the updates in the CPU
// backend's order (repeated indices combine, or the last one wins). The
// emitter table (CudaDataKernels.cpp) registers them.
//
//===----------------------------------------------------------------------===//

#include "codegen/CudaKernels.h"

#include <algorithm>

using namespace ::mpc::rt;

namespace mlir::mpc::cuda {

/// ScatterND: a prologue copies data to the result, then the updates'
/// slices are stored (a thread an element; ONNX forbids repeated tuples
/// without a reduction) or combined with what is there by a thread per
/// slice element walking the tuples in order, as the CPU backend does.
bool Emitter::scatterNd(Step &s, const std::string &name) {
  const ValueInfo &x = val(s.inputs[0]), &idx = val(s.inputs[1]);
  const std::string reduction = s.getString("reduction", "none");
  const int64_t rank = x.shape.size(), last = idx.shape.back(),
                n = numElements(x.shape);
  int64_t slice = 1;
  for (int64_t d = last; d < rank; ++d)
    slice *= x.shape[d];
  const int64_t tuples = last ? numElements(idx.shape) / last : 0;
  Shape st = stridesOf(x.shape);
  std::string offset = "  i64 off = 0;\n";
  for (int64_t j = 0; j < last; ++j)
    offset += "  { i64 k = in1[t * " + std::to_string(last) + "LL + " + std::to_string(j) +
              "]; off += (k < 0 ? k + " + std::to_string(x.shape[j]) + "LL : k) * " +
              std::to_string(st[j]) + "LL; }\n";
  cu << header(s, name + "_copy", 256) << " {\n  i64 i = global_index();\n  if (i < "
     << n << "LL) out0[i] = in0[i];\n}\n\n";
  const std::string S = std::to_string(slice) + "LL";
  if (reduction == "none") {
    cu << header(s, name, 256) << " {\n  i64 i = global_index();\n  if (i >= "
       << tuples * slice << "LL) return;\n  i64 t = i / " << S << ", e = i % " << S
       << ";\n" << offset << "  out0[off + e] = in2[i];\n}\n\n";
    launch(s, name + "_copy", {std::max<int64_t>((n + 255) / 256, 1), 1, 1}, {256, 1, 1},
           /*prologue=*/true);
    launch1d(s, name, tuples * slice);
    return true;
  }
  std::string combine = reduction == "add"   ? "a + b"
                        : reduction == "mul" ? "a * b"
                        : reduction == "max" ? "(a > b ? a : b)"
                        : reduction == "min" ? "(a < b ? a : b)"
                                             : "";
  if (combine.empty())
    return fail(s, "ScatterND reduction '" + reduction + "' is not one of none, add, mul, max, min");
  const bool fl = isFloat(x.dtype);
  cu << header(s, name, 256) << " {\n  i64 e = global_index();\n  if (e >= " << S
     << ") return;\n  for (i64 t = 0; t < " << tuples << "LL; ++t) {\n" << offset
     << (fl ? "  const float a = ld(out0, off + e), b = ld(in2, t * " + S +
                  " + e);\n  st(out0, off + e, " + combine + ");\n"
            : "  const i64 a = out0[off + e], b = in2[t * " + S + " + e];\n  out0[off + e] = (" +
                  std::string(ctype(x.dtype)) + ")(" + combine + ");\n")
     << "  }\n}\n\n";
  launch(s, name + "_copy", {std::max<int64_t>((n + 255) / 256, 1), 1, 1}, {256, 1, 1},
         /*prologue=*/true);
  launch1d(s, name, slice);
  return true;
}

/// ScatterElements: a prologue copies data to the result, then a thread
/// per column of the updates (their coordinates but for the axis) walks
/// it in index order, so repeated indices combine (or the last wins) as
/// in the CPU backend.
bool Emitter::scatterElements(Step &s, const std::string &name) {
  const ValueInfo &x = val(s.inputs[0]), &idx = val(s.inputs[1]);
  const std::string reduction = s.getString("reduction", "none");
  const int64_t rank = x.shape.size(), n = numElements(x.shape);
  int64_t axis = s.getInt("axis", 0);
  axis = axis < 0 ? axis + rank : axis;
  const std::string combine = reduction == "none"  ? "b"
                              : reduction == "add" ? "a + b"
                              : reduction == "mul" ? "a * b"
                              : reduction == "max" ? "(a > b ? a : b)"
                              : reduction == "min" ? "(a < b ? a : b)"
                                                   : "";
  if (combine.empty())
    return fail(s, "ScatterElements reduction '" + reduction +
                       "' is not one of none, add, mul, max, min");
  const Shape xs = stridesOf(x.shape), ist = stridesOf(idx.shape);
  const int64_t steps = idx.shape[axis],
                columns = steps ? numElements(idx.shape) / steps : 0;
  cu << header(s, name + "_copy", 256) << " {\n  i64 i = global_index();\n  if (i < "
     << n << "LL) out0[i] = in0[i];\n}\n\n";
  cu << header(s, name, 256) << " {\n  i64 i = global_index();\n  if (i >= " << columns
     << "LL) return;\n  i64 r = i, col = 0, off = 0;\n";
  for (int64_t d = rank - 1; d >= 0; --d) {
    if (d == axis)
      continue;
    cu << "  { const i64 c = r % " << idx.shape[d] << "LL; r /= " << idx.shape[d]
       << "LL; col += c * " << ist[d] << "LL; off += c * " << xs[d] << "LL; }\n";
  }
  const bool fl = isFloat(x.dtype);
  cu << "  for (i64 j = 0; j < " << steps << "LL; ++j) {\n    const i64 e = col + j * "
     << ist[axis] << "LL;\n    i64 k = in1[e]; if (k < 0) k += " << x.shape[axis]
     << "LL;\n    const i64 o = off + k * " << xs[axis] << "LL;\n"
     << (fl ? "    const float a = ld(out0, o), b = ld(in2, e); (void)a;\n    st(out0, o, " + combine +
                  ");\n"
            : "    const i64 a = out0[o], b = in2[e]; (void)a;\n    out0[o] = (" +
                  std::string(ctype(x.dtype)) + ")(" + combine + ");\n")
     << "  }\n}\n\n";
  launch(s, name + "_copy", {std::max<int64_t>((n + 255) / 256, 1), 1, 1}, {256, 1, 1},
         /*prologue=*/true);
  launch1d(s, name, columns);
  return true;
}

} // namespace mlir::mpc::cuda
