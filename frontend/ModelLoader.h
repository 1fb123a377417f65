//===- ModelLoader.h - read ONNX models (binary or text) ---------*- C++ -*-===//
//
// Loads a ModelProto from a binary .onnx file or from ONNX's textual syntax,
// and reads external tensor data. No MLIR here: this library is built with
// exceptions enabled so that throwing parser code is contained.
//
//===----------------------------------------------------------------------===//

#ifndef MPC_FRONTEND_MODELLOADER_H
#define MPC_FRONTEND_MODELLOADER_H

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace onnx {
class ModelProto;
class TensorProto;
} // namespace onnx

namespace mlir::mpc {

/// Reads `path` into `model`. ONNX text syntax is recognised by the
/// extensions .onnxtxt/.onnxtext or by a leading '<'. On failure returns
/// false and sets `error` to a one-line message (without the file name).
bool loadModel(const std::string &path, onnx::ModelProto &model,
               std::string &error);

/// The same from the file's bytes; `path` tells text from binary (by its
/// extension) and anchors external data.
bool parseModelBytes(const std::string &bytes, const std::string &path,
                     onnx::ModelProto &model, std::string &error);

/// `message` with newlines escaped and other control bytes as '?': names
/// from a model (nodes, tensors, files) may hold any byte, and an error
/// stays one line.
std::string oneLine(const std::string &message);

/// Reads a serialized TensorProto (.pb, as in ONNX test data).
bool loadTensor(const std::string &path, onnx::TensorProto &tensor,
                std::string &error);

/// Writes `modelPath`'s model to `outPath` with the initializers named in
/// `weights` replaced by the given little-endian bytes of their own element
/// type (FP32 weights, an int64 step counter), or by FP32 bytes for an
/// FP16/BF16 initializer (its FP32 master, stored rounded to nearest even),
/// atomically (temporary file + rename). Other fields, opsets and metadata
/// are kept.
bool writeModelWithWeights(const std::string &modelPath,
                           const std::string &outPath,
                           const std::map<std::string, std::string> &weights,
                           std::string &error);

/// Parses ONNX text syntax.
bool parseModelText(const std::string &text, onnx::ModelProto &model,
                    std::string &error);

/// Where a tensor's external data lies: checked to be a regular file inside
/// the model's directory, with [offset, offset + length) within it.
struct ExternalSpan {
  std::string file;     ///< resolved path
  std::string location; ///< as the model wrote it, for messages
  int64_t offset = 0;
  int64_t length = 0;
};
bool locateExternalData(const onnx::TensorProto &tensor,
                        const std::string &modelDir, ExternalSpan &span,
                        std::string &error);

/// Reads the external data of `tensor` (data_location == EXTERNAL) relative
/// to `modelDir`, refusing locations outside it.
bool readExternalData(const onnx::TensorProto &tensor,
                      const std::string &modelDir, std::vector<char> &bytes,
                      std::string &error);

} // namespace mlir::mpc

#endif // MPC_FRONTEND_MODELLOADER_H
