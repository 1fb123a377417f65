//===- NodeOrder.cpp - the order the importer visits a graph's nodes ------===//

#include "frontend/ImporterImpl.h"

#include "llvm/ADT/StringSet.h"

#include <queue>

namespace mlir::mpc::importer {

std::string displayName(const onnx::NodeProto &node) {
  if (!node.name().empty())
    return node.name();
  return node.output_size() ? node.output(0) : std::string();
}

void outerReads(const onnx::GraphProto &graph, llvm::StringSet<> &reads) {
  llvm::StringSet<> made;
  for (const auto &in : graph.input())
    made.insert(in.name());
  for (const auto &init : graph.initializer())
    made.insert(init.name());
  for (const auto &node : graph.node()) {
    auto read = [&](StringRef name) {
      if (!name.empty() && !made.count(name))
        reads.insert(name);
    };
    for (const auto &in : node.input())
      read(in);
    for (const auto &attr : node.attribute())
      if (attr.has_g()) {
        llvm::StringSet<> inner;
        outerReads(attr.g(), inner);
        for (const auto &name : inner)
          read(name.getKey());
      }
    for (const auto &out : node.output())
      made.insert(out);
  }
  for (const auto &out : graph.output())
    if (!made.count(out.name()))
      reads.insert(out.name());
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
  for (int i = 0; i < n; ++i) {
    // The node's inputs, and what its subgraphs (If's branches) read of
    // this graph.
    llvm::StringSet<> reads;
    for (const auto &in : graph.node(i).input())
      if (!in.empty())
        reads.insert(in);
    for (const auto &attr : graph.node(i).attribute())
      if (attr.has_g())
        outerReads(attr.g(), reads);
    for (const auto &in : reads) {
      auto it = producer.find(in.getKey());
      if (it != producer.end() && it->second != i) {
        ++pending[i];
        users[it->second].push_back(i);
      }
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
