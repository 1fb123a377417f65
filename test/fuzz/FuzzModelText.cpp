//===- FuzzModelText.cpp - fuzz the ONNX text-syntax loader and importer ---===//

#include "FuzzImport.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  mpc::fuzz::importBytes(std::string((const char *)data, size),
                         "/nonexistent/fuzz.onnxtxt");
  return 0;
}
