//===- WeightCopies.cpp - the fp16/bf16 weight copies a step keeps --------===//

#include "runtime/WeightCopies.h"

namespace mpc::rt {

static const char kPrefix[] = "mpc.half.";

std::vector<WeightCopy> weightCopies(const Plan &plan) {
  std::vector<WeightCopy> copies;
  for (const Binding &b : plan.inputs) {
    if (b.name.rfind(kPrefix, 0) != 0)
      continue;
    for (const Parameter &p : plan.params)
      if (p.name == b.name.substr(sizeof(kPrefix) - 1))
        copies.push_back({b.name, b.value, &p});
  }
  return copies;
}

bool isWeightCopy(const Plan &plan, const std::string &name) {
  for (const WeightCopy &c : weightCopies(plan))
    if (c.input == name)
      return true;
  return false;
}

std::string checkWeightCopies(const Plan &plan) {
  for (const WeightCopy &c : weightCopies(plan)) {
    const ValueInfo &copy = plan.values[c.value];
    const ValueInfo &master = plan.values[c.master->value];
    if ((copy.dtype != DType::F16 && copy.dtype != DType::BF16) ||
        copy.shape != master.shape)
      return "input '" + c.input + "' (" + dtypeName(copy.dtype) + shapeString(copy.shape) +
             ") is not an fp16/bf16 copy of parameter '" + c.master->name +
             "' (" + dtypeName(master.dtype) + shapeString(master.shape) + ")";
  }
  return "";
}

Tensor castCopy(const Tensor &master, DType to) {
  Tensor copy(to, master.shape());
  for (int64_t i = 0; i < master.size(); ++i)
    copy.setFloat(i, master.getFloat(i));
  return copy;
}

} // namespace mpc::rt
