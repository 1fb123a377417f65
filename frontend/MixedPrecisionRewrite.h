//===- MixedPrecisionRewrite.h - FP32 ONNX -> mixed-precision ONNX -*- C++ -*-===//
//
// Rewrites an ONNX model in place given, per node, the precision that
// mpc-amp-classify chose: low-precision nodes compute in fp16/bf16, casts
// only on edges whose ends differ (one per tensor and type), initializers
// and Constant values read only by low-precision nodes stored in low
// precision. Plain C++ (protobuf), no MLIR.
//
//===----------------------------------------------------------------------===//

#ifndef MPC_FRONTEND_MIXEDPRECISIONREWRITE_H
#define MPC_FRONTEND_MIXEDPRECISIONREWRITE_H

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace onnx {
class ModelProto;
class NodeProto;
} // namespace onnx

namespace mlir::mpc {

struct RewriteOptions {
  bool bf16 = false;
  /// Graph inputs and outputs keep their FP32 types (casts at the edges).
  bool keepIoTypes = false;
};

/// What the rewrite did, for the report.
struct RewriteReport {
  struct Stored {
    std::string name;
    int64_t elements = 0, saturated = 0, flushed = 0;
  };
  std::vector<Stored> storedLow;        // initializers/Constants now low
  std::vector<std::string> keptFp32;    // read by an FP32 node too
  std::vector<std::string> castsAdded;  // names of the Cast nodes
  std::vector<std::string> ioChanged;   // graph inputs/outputs retyped
  std::vector<std::string> wasExternal; // initializers stored as external data
};

/// `m` without weights: its float initializers become typed graph inputs
/// (for type inference and classification, which need no values).
/// Copies no weight data.
onnx::ModelProto skeletonOf(onnx::ModelProto &m);

/// The key the importer names a node by: its name, else its first output.
std::string nodeKey(const onnx::NodeProto &node);

/// Rewrites `model` (node precisions by nodeKey: true = low, false = fp32;
/// absent = not a float computation; `elemTypes`: ONNX element type of
/// every tensor by name, as the importer typed them). External
/// initializers are read from `modelDir`. False with a one-line `error`.
bool rewriteMixedPrecision(onnx::ModelProto &model, const std::string &modelDir,
                           const std::map<std::string, bool> &lowNodes,
                           const std::map<std::string, int> &elemTypes,
                           const RewriteOptions &options,
                           RewriteReport &report, std::string &error);

/// Writes `model` to `path` atomically. The initializers named in
/// `external` (and any still referring to external data in `sourceDir`)
/// go to `<path>.data`, written before the model is renamed into place.
bool saveModelAtomically(onnx::ModelProto &model, const std::string &path,
                         const std::string &sourceDir,
                         const std::vector<std::string> &external,
                         std::string &error);

} // namespace mlir::mpc

#endif // MPC_FRONTEND_MIXEDPRECISIONREWRITE_H
