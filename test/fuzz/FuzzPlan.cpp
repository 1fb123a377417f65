//===- FuzzPlan.cpp - fuzz the artifact reader (plan.txt + weights.bin) ----===//
//
// The input is plan.txt, then a NUL byte, then weights.bin.

#include "runtime/PlanIO.h"

#include <cstdlib>
#include <cstring>
#include <sstream>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *text = (const char *)data;
  const void *nul = std::memchr(data, 0, size);
  size_t textSize = nul ? (const uint8_t *)nul - data : size;
  std::istringstream plan(std::string(text, textSize));
  std::string weights = nul ? std::string(text + textSize + 1,
                                          size - textSize - 1)
                            : std::string();
  mpc::rt::Plan result;
  std::string error;
  if (!mpc::rt::parsePlan(plan, std::move(weights), "fuzz", result, error) &&
      error.find('\n') != std::string::npos)
    std::abort();
  return 0;
}
