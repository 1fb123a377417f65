//===- LibraryConvs.h - a session's convolutions through cuDNN ---*- C++ -*-===//
//
// Private to runtime/cuda/. For the steps codegen marked with a
// LibraryConv, when the plan's choice allows and cuDNN loads: tensor,
// filter and convolution descriptors and an algorithm per distinct
// convolution (cuDNN's heuristics, once, when the session opens), and a
// cudnnConvolutionForward (then cudnnAddTensor for an FP32 bias; with a
// fused Relu or a fp16/bf16 bias, cudnnConvolutionBiasActivationForward,
// rounding once) or
// cudnnConvolutionBackwardData/Filter per step on the session's stream
// (captured in its CUDA graph like the kernels). Tensor cores for
// fp16/bf16 (FP32 accumulation); FP32 as FP32 (no TF32).
//
//===----------------------------------------------------------------------===//

#ifndef MPC_RUNTIME_CUDA_LIBRARYCONVS_H
#define MPC_RUNTIME_CUDA_LIBRARYCONVS_H

#include "runtime/Plan.h"
#include "runtime/cuda/Cudnn.h"
#include "runtime/cuda/LibrarySteps.h"

#include <map>
#include <string>
#include <vector>

namespace mpc::rt {

class LibraryConvs : public LibrarySteps {
public:
  LibraryConvs() = default;
  LibraryConvs(const LibraryConvs &) = delete;
  ~LibraryConvs();

  /// As LibraryGemms::open, for plan.cudaConv ("auto", "cudnn", "mpc");
  /// `stream` is the session's.
  bool open(const Plan &plan, void *stream, std::string &summary,
            std::string &error);
  size_t workspaceBytes() const { return workspace; }
  /// Enqueues step `i`; `address(v)` is value v's device address.
  template <typename Address>
  bool launch(size_t i, const Address &address, unsigned long long work,
              std::string &error) const {
    const Step &s = plan->steps[i];
    bool bias = s.cuda.conv.kind == LibraryConv::Forward &&
                s.inputs.size() > 2 && s.inputs[2] >= 0;
    return enqueue(i, address(s.inputs[0]), address(s.inputs[1]),
                   bias ? address(s.inputs[2]) : 0, address(s.outputs[0]),
                   work, error);
  }

private:
  struct Prepared {
    // Forward: x the input, dy the output, bias [1, K, 1, 1] if any.
    dnn::Handle x = nullptr, dy = nullptr, filter = nullptr, conv = nullptr,
                bias = nullptr;
    dnn::Handle activation = nullptr; // the fused forward's (bias + Relu)
    int algo = 0;
    size_t workspace = 0;
  };
  const Plan *plan = nullptr;
  dnn::Library *lib = nullptr;
  dnn::Handle handle = nullptr;
  std::vector<Prepared> prepared;
  size_t workspace = 0;

  bool prepare(const Step &s, Prepared &p, std::string &why);
  bool enqueue(size_t i, unsigned long long in0, unsigned long long in1,
               unsigned long long bias, unsigned long long out,
               unsigned long long work, std::string &error) const;
};

} // namespace mpc::rt

#endif // MPC_RUNTIME_CUDA_LIBRARYCONVS_H
