//===- FuzzTensor.cpp - fuzz TensorProto validation and reading -----------===//
//
// A serialized TensorProto (as --freeze and ONNX test data give them) is
// validated as an initializer of a one-tensor model, then read into an
// elements attribute.

#include "FuzzImport.h"

#include "frontend/ImporterImpl.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  mpc::fuzz::limitTensors();
  onnx::ModelProto model;
  model.set_ir_version(8);
  model.add_opset_import()->set_version(17);
  onnx::TensorProto *tensor = model.mutable_graph()->add_initializer();
  if (!tensor->ParseFromArray(data, (int)size))
    return 0;
  std::string error;
  if (!mlir::mpc::validateModel(model, "/nonexistent", error)) {
    mpc::fuzz::checkOneLine(error);
    return 0;
  }
  static mlir::MLIRContext ctx(mlir::MLIRContext::Threading::DISABLED);
  // Memory safety only: the importer prefixes and escapes this error.
  (void)mlir::mpc::importer::readTensor(*tensor, &ctx, "/nonexistent", error);
  return 0;
}
