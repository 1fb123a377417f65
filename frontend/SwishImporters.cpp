//===- SwishImporters.cpp - Swish (opset 24), SwiGLU (opset 28) -----------===//
//
// Swish(x) = x * sigmoid(alpha x) and SwiGLU(A, B) = Swish(A) * B (Llama's
// gated MLP as one node) are imported as their definitions: mpc.sigmoid
// and mpc.mul, which the CUDA backend fuses into one elementwise kernel
// (forward and gradient) and autodiff differentiates with the rules it
// has. alpha = 1 (SiLU) takes no multiply.
//
//===----------------------------------------------------------------------===//

#include "frontend/Composer.h"
#include "frontend/ImporterImpl.h"

#include "mlir/IR/TypeUtilities.h"

namespace mlir::mpc::importer {
namespace {

Value swish(Composer &m, Value x, float alpha) {
  if (!x)
    return {};
  Type type = llvm::cast<RankedTensorType>(x.getType()).getElementType();
  if (!llvm::isa<FloatType>(type)) {
    (void)m.c.fail("input must be a float tensor");
    return {};
  }
  Value gate = alpha == 1.0f ? x : m.bin("mpc.mul", x, m.scalar(type, alpha));
  return m.bin("mpc.mul", x, m.op("mpc.sigmoid", {gate}));
}

} // namespace

LogicalResult importSwish(NodeContext &c) {
  if (failed(c.requireInputs(1)) || failed(c.checkAttrs({"alpha"})))
    return failure();
  Composer m{c};
  Value y = swish(m, c.input(0), c.getFloat("alpha", 1.0f));
  if (c.failed())
    return failure();
  return c.setOutputs({y});
}

LogicalResult importSwiGLU(NodeContext &c) {
  if (failed(c.requireInputs(2)) || failed(c.checkAttrs({"alpha"})))
    return failure();
  auto a = llvm::cast<RankedTensorType>(c.input(0).getType()),
       b = llvm::cast<RankedTensorType>(c.input(1).getType());
  // The definition does not broadcast: A and B are one shape.
  if (a.getElementType() != b.getElementType() ||
      failed(verifyCompatibleShape(a.getShape(), b.getShape())))
    return c.fail("A and B must have one shape and type (SwiGLU does not "
                  "broadcast)");
  Composer m{c};
  Value y = m.bin("mpc.mul", swish(m, c.input(0), c.getFloat("alpha", 1.0f)),
                  c.input(1));
  if (c.failed())
    return failure();
  return c.setOutputs({y});
}

} // namespace mlir::mpc::importer
