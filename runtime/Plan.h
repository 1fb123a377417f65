//===- Plan.h - the execution plan the runtime runs ---------------*- C++ -*-===//
//
// A straight-line program over numbered values: each step names an op (the
// mpc mnemonic, e.g. "gemm"), its input and output value ids and its
// attributes. codegen/ builds it from the mpc IR; the runtime needs nothing
// of MLIR to run it.
//
//===----------------------------------------------------------------------===//

#ifndef MPC_RUNTIME_PLAN_H
#define MPC_RUNTIME_PLAN_H

#include "runtime/Tensor.h"

#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace mpc::rt {

/// An attribute value: integer (also bools), float, string, integer list,
/// string list, or tensor (constants, ConstantOfShape's value...).
using AttrValue = std::variant<int64_t, double, std::string,
                               std::vector<int64_t>, std::vector<std::string>,
                               Tensor>;

struct Step {
  std::string op;
  std::string name; // location (ONNX node name) for messages
  std::vector<int> inputs;
  std::vector<int> outputs;
  std::map<std::string, AttrValue> attrs;

  bool has(const std::string &key) const { return attrs.count(key) != 0; }
  int64_t getInt(const std::string &key, int64_t dflt) const;
  double getFloat(const std::string &key, double dflt) const;
  std::string getString(const std::string &key, const std::string &dflt) const;
  std::optional<std::vector<int64_t>> getInts(const std::string &key) const;
  const Tensor *getTensor(const std::string &key) const;
};

struct ValueInfo {
  DType dtype;
  Shape shape;
};

/// A named input or output of the plan.
struct Binding {
  std::string name;
  int value;
};

/// A parameter (FP32 master weight or state) with its initial value.
struct Parameter {
  std::string name;
  int value;
  bool trainable;
  Tensor init;
};

struct Plan {
  std::vector<ValueInfo> values;
  std::vector<Binding> inputs;
  std::vector<Parameter> params;
  std::map<int, Tensor> constants;
  std::vector<Step> steps;
  std::vector<Binding> outputs;
};

} // namespace mpc::rt

#endif // MPC_RUNTIME_PLAN_H
