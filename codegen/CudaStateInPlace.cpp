//===- CudaStateInPlace.cpp - a train step's state updated in place -------===//
//
// A train step's new weights (`mpc.new.<p>`), their fp16/bf16 copies
// (`mpc.half.<p>`), optimizer moments (`mpc.opt.*`) and gradient
// accumulators (`mpc.accum.*`) are outputs the
// runtime feeds back into the inputs they replace
// (runtime/TrainProtocol.cpp), by a device-to-device copy unless the
// output lives in the input's buffer: for Adam, 24 bytes a parameter each
// step (the weight and both moments read and written), about as much again
// as the update kernel moves. Each update is an elementwise chain reading
// the old value element by element (mpc-optimizer's where(found_inf, old,
// new) among them; a weight copy's old value it does not read), so where
// no step reads the old value after that kernel, the chain writes the new
// value over it, as torch.optim and apex update parameters in place. Decided after batching (a batched chain runs at
// its batch's launch); runtime/UpdatesInPlace.cpp says what is allowed.
//
//===----------------------------------------------------------------------===//

#include "codegen/CudaKernels.h"
#include "runtime/PlanFusionChecks.h"
#include "runtime/cuda/MemoryPlan.h"
#include "runtime/TrainProtocol.h"

#include <algorithm>
#include <map>

namespace mlir::mpc::cuda {

void updateStateInPlace(Emitter &e) {
  Plan &plan = e.plan;
  ::mpc::rt::InPlaceUpdates allowed(plan);
  std::map<int, size_t> producer;
  for (size_t i = 0; i < plan.steps.size(); ++i)
    for (int v : plan.steps[i].outputs)
      producer[v] = i;
  // What TrainProtocol feeds back, but the loss-scale state (two scalars
  // a one-thread kernel writes: not worth it).
  ::mpc::rt::TrainProtocol protocol(plan);
  std::vector<std::pair<size_t, std::string>> state;
  for (const auto *list : protocol.fedBack())
    if (list != &protocol.scaleState)
      state.insert(state.end(), list->begin(), list->end());
  for (const auto &[index, name] : state) {
    const ::mpc::rt::Binding &out = plan.outputs[index];
    int input = ::mpc::rt::valueOfName(plan, name);
    auto p = producer.find(out.value);
    if (p == producer.end())
      continue;
    size_t k = ::mpc::rt::kernelStep(plan, (int)p->second); // its chain
    // An Expand in the chain reads its data broadcast, a split its parts
    // (and its input's operands): at other elements; a concat's chain
    // stores its parts at other elements too.
    const std::vector<int> &chain = plan.steps[k].cuda.chain;
    if (plan.steps[k].op == OpId::Concat ||
        std::any_of(chain.begin(), chain.end(), [&](int m) {
          const Step &s = plan.steps[m];
          return s.op == OpId::Split || // (its whole's operands too)
                 (s.op == OpId::Expand &&
                  std::find(s.inputs.begin(), s.inputs.end(), input) !=
                      s.inputs.end());
        }))
      continue;
    if (allowed.problem(k, out.value, input).empty()) {
      std::vector<int> &pairs = plan.steps[k].cuda.updatesInPlace;
      pairs.push_back(out.value);
      pairs.push_back(input);
    }
  }
}

} // namespace mlir::mpc::cuda
