//===- Session.cpp - the CPU backend as a session -------------------------===//

#include "runtime/Session.h"
#include "runtime/AppliedOnly.h"
#include "runtime/Executor.h"
#include "runtime/WeightCopies.h"

#include <map>
#include <vector>

namespace mpc::rt {

int valueOfName(const Plan &plan, const std::string &name) {
  for (const Binding &b : plan.inputs)
    if (b.name == name)
      return b.value;
  for (const Parameter &p : plan.params)
    if (p.name == name)
      return p.value;
  return -1;
}

namespace {

class CpuSession : public Session {
public:
  explicit CpuSession(const Plan &plan)
      : plan(plan), copies(weightCopies(plan)) {}

  bool set(const std::string &name, const Tensor &t,
           std::string &error) override {
    if (valueOfName(plan, name) < 0)
      return (error = "the plan has no input '" + name + "'", false);
    feeds[name] = t;
    for (const WeightCopy &c : copies)
      if (c.master->name == name)
        feeds.erase(c.input); // runPlan casts the new master
    return true;
  }
  bool run(std::string &error) override {
    stats = RunStats();
    return runPlan(plan, feeds, results, error, &stats);
  }
  bool output(size_t index, Tensor &t, std::string &error) override {
    if (index >= results.size())
      return (error = "no output " + std::to_string(index), false);
    if (skipped(index))
      return (error = skippedOutputError(plan.outputs[index].name), false);
    t = results[index];
    return true;
  }
  bool feedBack(size_t index, const std::string &name,
                std::string &error) override {
    if (skipped(index))
      return true; // the old value, as the update would have kept it
    Tensor t;
    return output(index, t, error) && set(name, t, error);
  }
  bool get(const std::string &name, Tensor &t, std::string &error) override {
    if (auto it = feeds.find(name); it != feeds.end()) {
      t = it->second;
      return true;
    }
    for (const Parameter &p : plan.params)
      if (p.name == name) {
        t = p.init;
        return true;
      }
    return (error = "input '" + name + "' was never set", false);
  }
  int64_t underflow() const override { return stats.underflow; }

private:
  bool skipped(size_t index) const override {
    return index < appliedOnly.size() && stats.skippedApplied &&
           appliedOnly[index];
  }

  const Plan &plan;
  std::vector<bool> appliedOnly = appliedOnlyOutputs(plan);
  std::vector<WeightCopy> copies; // runPlan casts them from their masters
  std::map<std::string, Tensor> feeds;
  std::vector<Tensor> results;
  RunStats stats;
};

} // namespace

std::unique_ptr<Session> openCpuSession(const Plan &plan) {
  return std::make_unique<CpuSession>(plan);
}

} // namespace mpc::rt
