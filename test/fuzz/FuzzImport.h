//===- FuzzImport.h - shared body of the model fuzz targets ------*- C++ -*-===//
//
// Bytes -> ModelProto (binary or text) -> validation -> import into MLIR ->
// verification. Any outcome but a crash, leak or undefined behaviour is
// fine: the targets look for those, and for errors that are not one line.
//
//===----------------------------------------------------------------------===//

#ifndef MPC_TEST_FUZZ_FUZZIMPORT_H
#define MPC_TEST_FUZZ_FUZZIMPORT_H

#include "frontend/ModelLoader.h"
#include "frontend/ModelValidator.h"
#include "frontend/OnnxImporter.h"
#include "ir/MpcDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"

#include <memory>
#include "mlir/IR/Verifier.h"

#include <onnx/onnx_pb.h>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace mpc::fuzz {

/// A model's declared tensors stay small, so the fuzzer spends its time on
/// structure rather than on allocating what a model may legitimately ask.
inline void limitTensors() { mlir::mpc::setMaxTensorBytes(1 << 20); }

/// Errors are one line: a newline in one is a finding.
inline void checkOneLine(const std::string &error) {
  if (error.find('\n') != std::string::npos) {
    std::fprintf(stderr, "multi-line error: %s\n", error.c_str());
    std::abort();
  }
}

inline void importBytes(const std::string &bytes, const char *path) {
  limitTensors();
  onnx::ModelProto model;
  std::string error;
  if (!mlir::mpc::parseModelBytes(bytes, path, model, error))
    return checkOneLine(error);
  // A context keeps every attribute and type it ever uniqued: a fresh one
  // every few thousand inputs keeps millions of runs within libFuzzer's
  // memory limit (one context for ~11M inputs grew past 4 GiB).
  static std::unique_ptr<mlir::MLIRContext> ctx;
  static unsigned uses = 0;
  if (!ctx || ++uses % 4096 == 0) {
    ctx.reset(); // before the next one: no two live at once
    ctx = std::make_unique<mlir::MLIRContext>(
        mlir::MLIRContext::Threading::DISABLED);
    ctx->loadDialect<mlir::mpc::MpcDialect, mlir::func::FuncDialect>();
    ctx->printOpOnDiagnostic(false);
  }
  mlir::mpc::ImportOptions options;
  options.modelPath = path;
  auto module = mlir::mpc::importModel(*ctx, model, options, error);
  if (!module)
    return checkOneLine(error);
  // An imported module is well formed, whatever the model was.
  if (mlir::failed(mlir::verify(*module)))
    std::abort();
}

} // namespace mpc::fuzz

#endif // MPC_TEST_FUZZ_FUZZIMPORT_H
