//===- TrainedModel.h - the model mpc train writes (-o) ----------*- C++
//-*-===//
//
// `mpc train -o OUT.onnx` (and --ema-output): the input model with its
// initializers replaced by the trained values, in ONNX's layouts and the
// initializers' own types (an FP16 weight stored rounded from its FP32
// master). With --lora-rank it is the model as PEFT's merge_and_unload()
// leaves it: each adapted weight W + s * (A B) (in W's stored layout), the
// adapters themselves gone, so OUT.onnx is the model's own graph with
// fine-tuned weights.
//
//===----------------------------------------------------------------------===//

#ifndef MPC_TOOLS_MPC_TRAINEDMODEL_H
#define MPC_TOOLS_MPC_TRAINEDMODEL_H

#include "mlir/IR/BuiltinOps.h"
#include "runtime/Plan.h"
#include "runtime/StoredLayouts.h"
#include "runtime/Tensor.h"

#include <map>
#include <string>
#include <vector>

namespace mpc {

/// A copy of each of `plan`'s parameters `params` lacks (the FP32 masters,
/// from the model's initializers).
void addInitialParams(const rt::Plan &plan,
                      std::map<std::string, rt::Tensor> &params);

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

/// Writes `model` to `path` atomically with the trained tensors `held`
/// (in the layouts `stored` records) as ONNX lays them out, `lora`'s pairs
/// merged; false with a one-line `error`.
bool writeTrainedModel(const std::string &model, const std::string &path,
                       std::map<std::string, rt::Tensor> held,
                       const rt::StoredLayouts &stored,
                       const std::vector<LoraPair> &lora,
                       const std::map<std::string, rt::Tensor> &bases,
                       std::string &error);

} // namespace mpc

#endif // MPC_TOOLS_MPC_TRAINEDMODEL_H
