//===- FuzzModelBinary.cpp - fuzz the binary ONNX loader and importer -----===//

#include "FuzzImport.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  // A path in a missing directory: external data can never be read.
  mpc::fuzz::importBytes(std::string((const char *)data, size),
                         "/nonexistent/fuzz.onnx");
  return 0;
}
