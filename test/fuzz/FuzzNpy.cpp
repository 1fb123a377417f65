//===- FuzzNpy.cpp - fuzz the .npy reader ----------------------------------===//

#include "runtime/Npy.h"

#include <cstdlib>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  mpc::rt::Tensor tensor;
  std::string error;
  if (!mpc::rt::parseNpy(std::string((const char *)data, size), "fuzz.npy",
                         tensor, error) &&
      error.find('\n') != std::string::npos)
    std::abort();
  return 0;
}
