//===- LoraMerge.h - adapters merged into their weights for -o --*- C++ -*-===//
//
// `mpc train --lora-rank r -o OUT.onnx` writes the model as PEFT's
// merge_and_unload() leaves it: each adapted weight W + s * (A B) (in W's
// stored layout), the adapters themselves gone, so OUT.onnx is the model's
// own graph with fine-tuned weights (W's type kept: an FP16 weight is
// stored rounded, as any FP32 master is).
//
//===----------------------------------------------------------------------===//

#ifndef MPC_TOOLS_MPC_LORAMERGE_H
#define MPC_TOOLS_MPC_LORAMERGE_H

#include "mlir/IR/BuiltinOps.h"
#include "runtime/Tensor.h"

#include <map>
#include <string>
#include <vector>

namespace mpc {

/// One adapter pair mpc-lora added (read from `<p>.lora_A`'s attributes).
struct LoraPair {
  std::string base, a, b;
  double scale = 1.0;
  bool transposed = false; // the base stored [out, in]
};

/// The adapter pairs in `module` (none without mpc-lora).
std::vector<LoraPair> loraPairs(mlir::ModuleOp module);

/// `held` with every pair merged: the base (from `held`, else from
/// `bases`) replaced by an FP32 W + s * (A B), computed in double, and the
/// adapters removed. False with `error` when a tensor is missing.
bool mergeAdapters(const std::vector<LoraPair> &pairs,
                   std::map<std::string, rt::Tensor> &held,
                   const std::map<std::string, rt::Tensor> &bases,
                   std::string &error);

} // namespace mpc

#endif // MPC_TOOLS_MPC_LORAMERGE_H
