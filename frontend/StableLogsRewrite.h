//===- StableLogsRewrite.h - finite log-sigmoid/log-softmax in ONNX -*- C++ -*-===//
//
// mpc-stable-logs for `mpc convert`, which writes ONNX rather than running
// the MLIR pipeline: the same three rewrites on the model's nodes.
// Plain C++ (protobuf), no MLIR.
//
//===----------------------------------------------------------------------===//

#ifndef MPC_FRONTEND_STABLELOGSREWRITE_H
#define MPC_FRONTEND_STABLELOGSREWRITE_H

#include <functional>
#include <string>
#include <vector>

namespace onnx {
class GraphProto;
} // namespace onnx

namespace mlir::mpc {

/// Rewrites, in the main graph, Log(Sigmoid(x)) to Neg(Softplus(Neg(x))),
/// Log(1 - Sigmoid(x)) to Neg(Softplus(x)) and Log(Softmax(x)) to
/// LogSoftmax(x); the Log's output and name carry over. `sameType(a, b)`
/// says whether tensors a and b have one type and shape (1 - sigmoid must
/// not broadcast). Returns the names of the Softplus nodes added (to keep in
/// FP32); `rewritten` counts the Log nodes replaced.
std::vector<std::string> rewriteStableLogs(
    onnx::GraphProto &graph,
    const std::function<bool(const std::string &, const std::string &)> &sameType,
    int &rewritten);

} // namespace mlir::mpc

#endif // MPC_FRONTEND_STABLELOGSREWRITE_H
