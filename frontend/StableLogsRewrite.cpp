//===- StableLogsRewrite.cpp - finite log-sigmoid/log-softmax in ONNX -----===//

#include "frontend/StableLogsRewrite.h"

#include <onnx/onnx_pb.h>

#include <cstring>
#include <map>
#include <set>

namespace mlir::mpc {
namespace {

/// A float tensor of one element equal to 1.
bool isOne(const onnx::TensorProto &t) {
  int64_t n = 1;
  for (int64_t d : t.dims())
    n *= d;
  if (t.data_type() != onnx::TensorProto::FLOAT || n != 1 ||
      t.has_data_location())
    return false;
  float v;
  if (t.float_data_size() == 1)
    v = t.float_data(0);
  else if (t.raw_data().size() == sizeof(float))
    std::memcpy(&v, t.raw_data().data(), sizeof(float));
  else
    return false;
  return v == 1.0f;
}

} // namespace

std::vector<std::string> rewriteStableLogs(
    onnx::GraphProto &graph,
    const std::function<bool(const std::string &, const std::string &)> &sameType,
    int &rewritten) {
  rewritten = 0;
  std::map<std::string, const onnx::NodeProto *> producer;
  for (const auto &node : graph.node())
    for (const auto &out : node.output())
      producer[out] = &node;
  std::set<std::string> ones;
  for (const auto &init : graph.initializer())
    if (isOne(init))
      ones.insert(init.name());
  for (const auto &node : graph.node())
    if (node.op_type() == "Constant" && node.domain().empty() &&
        node.output_size() == 1 && node.attribute_size() == 1) {
      const auto &a = node.attribute(0);
      if ((a.name() == "value" && isOne(a.t())) ||
          (a.name() == "value_float" && a.f() == 1.0f))
        ones.insert(node.output(0));
    }
  auto made = [](const std::string &op, const std::string &name,
                 const std::string &in, const std::string &out) {
    onnx::NodeProto n;
    n.set_op_type(op);
    n.set_name(name);
    n.add_input(in);
    n.add_output(out);
    return n;
  };
  auto from = [&](const std::string &v, const char *op)
      -> const onnx::NodeProto * {
    auto it = producer.find(v);
    return it != producer.end() && it->second->op_type() == op &&
                   it->second->domain().empty()
               ? it->second
               : nullptr;
  };

  std::vector<std::string> softplus;
  google::protobuf::RepeatedPtrField<onnx::NodeProto> nodes;
  for (const auto &node : graph.node()) {
    if (node.op_type() != "Log" || !node.domain().empty() ||
        node.input_size() != 1 || node.output_size() != 1) {
      *nodes.Add() = node;
      continue;
    }
    const std::string &in = node.input(0), &out = node.output(0);
    std::string name = node.name().empty() ? out : node.name();
    const onnx::NodeProto *sig = from(in, "Sigmoid"), *sub = from(in, "Sub"),
                          *sm = from(in, "Softmax");
    const onnx::NodeProto *subSig =
        sub && sub->input_size() == 2 && ones.count(sub->input(0))
            ? from(sub->input(1), "Sigmoid")
            : nullptr;
    if (subSig && !sameType(in, subSig->output(0)))
      subSig = nullptr;
    if (sig || subSig) {
      // log(sigmoid(x)) = -softplus(-x); log(1 - sigmoid(x)) = -softplus(x)
      std::string x = (sig ? sig : subSig)->input(0), spIn = x;
      if (sig) {
        spIn = name + "/stable_log/neg_x";
        *nodes.Add() = made("Neg", spIn, x, spIn);
      }
      std::string sp = name + "/stable_log/softplus";
      *nodes.Add() = made("Softplus", sp, spIn, sp);
      *nodes.Add() = made("Neg", name, sp, out);
      softplus.push_back(sp);
    } else if (sm) {
      onnx::NodeProto lsm = made("LogSoftmax", name, sm->input(0), out);
      *lsm.mutable_attribute() = sm->attribute();
      *nodes.Add() = lsm;
    } else {
      *nodes.Add() = node;
      continue;
    }
    ++rewritten;
  }
  bool subgraphs = false; // may read any value: keep every node
  for (const auto &n : nodes)
    for (const auto &a : n.attribute())
      subgraphs |= a.has_g() || a.graphs_size() > 0;
  if (!rewritten || subgraphs) {
    if (rewritten)
      *graph.mutable_node() = nodes;
    return softplus;
  }
  // Drop the nodes the rewrite left unread (the sigmoid, 1 - sigmoid,
  // softmax), last first so chains go in one sweep.
  std::set<std::string> needed;
  for (const auto &o : graph.output())
    needed.insert(o.name());
  std::vector<bool> keep(nodes.size(), true);
  for (int i = nodes.size() - 1; i >= 0; --i) {
    const auto &n = nodes.Get(i);
    bool used = n.output_size() == 0;
    for (const auto &o : n.output())
      used |= needed.count(o) > 0;
    bool pure = n.domain().empty() &&
                (n.op_type() == "Sigmoid" || n.op_type() == "Sub" ||
                 n.op_type() == "Softmax" || n.op_type() == "Constant");
    keep[i] = used || !pure;
    if (keep[i])
      for (const auto &in : n.input())
        needed.insert(in);
  }
  graph.clear_node();
  for (int i = 0; i < nodes.size(); ++i)
    if (keep[i])
      *graph.add_node() = nodes.Get(i);
  return softplus;
}

} // namespace mlir::mpc
