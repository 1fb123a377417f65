//===- Tuning.cpp - library or mpc kernel, chosen by timing ---------------===//

#include "runtime/cuda/Tuning.h"

#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <unistd.h>

namespace mpc::rt {
namespace {

struct Choice {
  std::string who; // the library's name in the file, or "mpc"
  double libraryMs = 0, kernelMs = 0;
};

/// The choices recorded in `file`, by "<kind> <key>"; lines that do not
/// parse are dropped (their shapes are timed again).
std::map<std::string, Choice> readChoices(const std::string &file) {
  std::map<std::string, Choice> out;
  std::ifstream in(file);
  for (std::string line; std::getline(in, line);) {
    std::istringstream is(line);
    std::string kind, key;
    Choice c;
    if (is >> kind >> key >> c.who >> c.libraryMs >> c.kernelMs &&
        (kind == "gemm" || kind == "conv") &&
        (c.who == "mpc" || c.who == (kind == "gemm" ? "cublaslt" : "cudnn")))
      out[kind + " " + key] = c;
  }
  return out;
}

/// Writes `choices` to `file` through a temporary renamed over it (a
/// reader never sees half a file); "" or why not.
std::string writeChoices(const std::string &file,
                         const std::map<std::string, Choice> &choices) {
  std::string tmp = file + ".tmp." + std::to_string(getpid());
  {
    std::ofstream out(tmp);
    for (const auto &[kindKey, c] : choices)
      out << kindKey << " " << c.who << " " << c.libraryMs << " "
          << c.kernelMs << "\n";
    if (!out.flush())
      return std::remove(tmp.c_str()), "cannot write " + tmp;
  }
  if (std::rename(tmp.c_str(), file.c_str()) != 0)
    return std::remove(tmp.c_str()), "cannot replace " + file;
  return "";
}

} // namespace

std::string tuningFile(const std::string &dir) { return dir + "/tuning.txt"; }

bool chooseFastest(LibrarySteps &steps, const TuningKind &what,
                   const std::string &file, const TimeCandidate &library,
                   const TimeCandidate &kernel, std::string &summary,
                   std::string &error) {
  std::map<std::string, std::vector<size_t>> shapes = steps.distinct();
  if (shapes.empty())
    return true;
  std::map<std::string, Choice> choices = readChoices(file);
  size_t timed = 0, onKernel = 0;
  for (const auto &[key, members] : shapes) {
    auto known = choices.find(what.kind + (" " + key));
    if (known == choices.end()) {
      Choice c;
      c.libraryMs = library(members[0], error);
      if (c.libraryMs < 0)
        return false;
      c.kernelMs = kernel(members[0], error);
      if (c.kernelMs < 0)
        return false;
      c.who = c.libraryMs <= c.kernelMs ? what.library : "mpc";
      known = choices.emplace(what.kind + (" " + key), c).first;
      ++timed;
    }
    if (known->second.who == "mpc") {
      steps.useKernel(key);
      ++onKernel;
    }
  }
  summary += "; fastest per shape: " + std::to_string(shapes.size() - onKernel) +
             " on " + what.libraryName + ", " + std::to_string(onKernel) +
             " on mpc's kernels (" + std::to_string(timed) + " timed now, " +
             std::to_string(shapes.size() - timed) + " from tuning.txt";
  if (timed)
    if (std::string why = writeChoices(file, choices); !why.empty())
      summary += "; not saved: " + why;
  summary += ")";
  return true;
}

} // namespace mpc::rt
