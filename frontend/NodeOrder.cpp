//===- NodeOrder.cpp - the order the importer visits a graph's nodes ------===//

#include "frontend/ImporterImpl.h"

#include <queue>

namespace mlir::mpc::importer {

std::string displayName(const onnx::NodeProto &node) {
  if (!node.name().empty())
    return node.name();
  return node.output_size() ? node.output(0) : std::string();
}

LogicalResult nodeOrder(const onnx::GraphProto &graph,
                        llvm::function_ref<bool(StringRef)> defined,
                        std::vector<int> &order, std::vector<std::vector<int>> &users,
                        std::string &error) {
  int n = graph.node_size();
  llvm::StringMap<int> producer;
  for (int i = 0; i < n; ++i)
    for (const auto &out : graph.node(i).output()) {
      if (out.empty())
        continue;
      if (defined(out) || !producer.try_emplace(out, i).second) {
        error = "node '" + displayName(graph.node(i)) + "' (" + graph.node(i).op_type() +
                "): output '" + out + "' is already defined";
        return failure();
      }
    }
  std::vector<int> pending(n, 0);
  users.assign(n, {});
  for (int i = 0; i < n; ++i)
    for (const auto &in : graph.node(i).input()) {
      auto it = producer.find(in);
      if (!in.empty() && it != producer.end()) {
        ++pending[i];
        users[it->second].push_back(i);
      }
    }
  // Smallest index first: a graph already in order imports in file order.
  std::priority_queue<int, std::vector<int>, std::greater<int>> ready;
  for (int i = 0; i < n; ++i)
    if (!pending[i])
      ready.push(i);
  order.clear();
  while (!ready.empty()) {
    int i = ready.top();
    ready.pop();
    order.push_back(i);
    for (int u : users[i])
      if (!--pending[u])
        ready.push(u);
  }
  for (int i = 0; i < n; ++i)
    if (pending[i]) { // leftover nodes form a cycle
      error = "node '" + displayName(graph.node(i)) + "' (" + graph.node(i).op_type() +
              ") is part of a cycle";
      return failure();
    }
  return success();
}

} // namespace mlir::mpc::importer
