//===- LibrarySteps.h - which steps a library runs ----------------*- C++ -*-===//
//
// Private to runtime/cuda/. What LibraryGemms and LibraryConvs share: one
// prepared descriptor set per distinct shape, its steps pointing at it,
// and the choice (Tuning.cpp) to hand a shape back to mpc's kernel.
//
//===----------------------------------------------------------------------===//

#ifndef MPC_RUNTIME_CUDA_LIBRARYSTEPS_H
#define MPC_RUNTIME_CUDA_LIBRARYSTEPS_H

#include <map>
#include <string>
#include <vector>

namespace mpc::rt {

class LibrarySteps {
public:
  /// Whether the library runs step `i`.
  bool runs(size_t i) const { return i < byStep.size() && byStep[i] >= 0; }

  /// The distinct shapes the library runs: key -> their steps.
  std::map<std::string, std::vector<size_t>> distinct() const {
    std::map<std::string, std::vector<size_t>> out;
    for (const auto &[key, index] : byKey)
      for (size_t i = 0; index >= 0 && i < byStep.size(); ++i)
        if (byStep[i] == index)
          out[key].push_back(i);
    return out;
  }

  virtual ~LibrarySteps() = default;

  /// Runs shape `key`'s steps on mpc's kernel instead (timed faster).
  virtual void useKernel(const std::string &key) {
    auto it = byKey.find(key);
    if (it == byKey.end() || it->second < 0)
      return;
    for (int &index : byStep)
      if (index == it->second)
        index = -1;
    it->second = -1;
  }

protected:
  std::map<std::string, int> byKey; // distinct shape -> prepared index or -1
  std::vector<int> byStep;          // step -> prepared index or -1
};

} // namespace mpc::rt

#endif // MPC_RUNTIME_CUDA_LIBRARYSTEPS_H
