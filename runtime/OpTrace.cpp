//===- OpTrace.cpp - which ops a backend ran, for test coverage -----------===//

#include "runtime/OpTrace.h"

#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <set>
#include <string>
#include <unistd.h>

namespace mpc::rt {

void traceOps(const char *backend, const Plan &plan) {
  static const char *dir = std::getenv("MPC_TRACE_OPS");
  if (!dir || !*dir)
    return;
  static std::mutex mutex;
  static std::set<std::string> written;
  std::lock_guard<std::mutex> lock(mutex);
  std::string path = std::string(dir) + "/" + backend + "-" +
                     std::to_string(getpid()) + ".txt";
  FILE *f = nullptr;
  for (const Step &s : plan.steps) {
    std::string key = std::string(backend) + " " + opName(s.op);
    if (!written.insert(key).second)
      continue;
    if (!f && !(f = std::fopen(path.c_str(), "a")))
      return; // coverage is best effort; never fail a run over it
    std::fprintf(f, "%s\n", opName(s.op));
  }
  if (f)
    std::fclose(f);
}

} // namespace mpc::rt
