//===- ModelValidator.h - onnx.checker-grade checks before import -*- C++ -*-===//
//
// Every model is checked here before anything is imported or allocated: each
// field that can be given twice or in two forms, the IR version, every
// tensor's declared size against the bytes that hold it (inline or in its
// external file), and the --max-tensor-bytes limit. Plain C++ on the
// protobuf, no MLIR, so the fuzz targets exercise it alone.
//
//===----------------------------------------------------------------------===//

#ifndef MPC_FRONTEND_MODELVALIDATOR_H
#define MPC_FRONTEND_MODELVALIDATOR_H

#include <cstdint>
#include <string>

namespace onnx {
class ModelProto;
class TensorProto;
} // namespace onnx

namespace mlir::mpc {

/// The newest ONNX IR version mpc reads (ONNX 1.23's IR_VERSION); a newer
/// one may carry fields this build would silently ignore.
constexpr int64_t kNewestIrVersion = 14;

/// The largest tensor a model may declare, in bytes (`--max-tensor-bytes`);
/// 16 GiB unless set. Applies to initializers, constants and attribute
/// tensors, checked against the declared shape before any allocation.
uint64_t maxTensorBytes();
void setMaxTensorBytes(uint64_t bytes);

/// Checks `model` (loaded from a file in `modelDir`). On failure returns
/// false and sets `error` to one line naming the field, graph, node and op.
bool validateModel(const onnx::ModelProto &model, const std::string &modelDir,
                   std::string &error);

/// The same checks for one tensor read on its own (--freeze NAME=FILE.pb);
/// `what` names it in the error.
bool validateTensor(const onnx::TensorProto &tensor,
                    const std::string &modelDir, const std::string &what,
                    std::string &error);

} // namespace mlir::mpc

#endif // MPC_FRONTEND_MODELVALIDATOR_H
