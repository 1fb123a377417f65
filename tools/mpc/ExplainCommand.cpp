//===- ExplainCommand.cpp - `mpc explain`: why each op got its precision --===//
//
// Runs the forward mixed-precision passes (mpc-stable-logs,
// mpc-amp-classify, mpc-insert-casts, mpc-master-weights) and reports, per node, the chosen
// precision, the rule that decided it and the casts feeding it; then the
// share of FLOPs in low precision, the casts and the master copies.
//
//===----------------------------------------------------------------------===//

#include "Commands.h"
#include "Precision.h"
#include "TrainStep.h"

#include "frontend/OnnxImporter.h"
#include "ir/MpcOps.h"
#include "passes/AmpLists.h"
#include "passes/Passes.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/TypeUtilities.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

using namespace llvm;

namespace mpc {

cl::SubCommand explainCommand("explain",
                              "Show the precision mpc picks for every node, "
                              "and why");

static cl::opt<std::string> model(cl::Positional, cl::Required,
                                  cl::desc("<model.onnx>"),
                                  cl::sub(explainCommand));
static cl::opt<int64_t> batch("batch",
                              cl::desc("Batch size for the FLOP counts"),
                              cl::init(1), cl::sub(explainCommand));
static cl::opt<std::string> jsonPath("json",
                                     cl::desc("Also write the report as JSON"),
                                     cl::value_desc("file"),
                                     cl::sub(explainCommand));
static PrecisionFlags explainPrecision(explainCommand, /*training=*/false);

namespace {

/// A readable name for a value: its graph input, parameter or producer.
std::string valueName(mlir::Value v) {
  if (auto arg = dyn_cast<mlir::BlockArgument>(v)) {
    auto f = cast<mlir::func::FuncOp>(arg.getOwner()->getParentOp());
    if (auto p = f.getArgAttrOfType<mlir::FlatSymbolRefAttr>(arg.getArgNumber(),
                                                             "mpc.param"))
      return p.getValue().str();
    if (auto n = f.getArgAttrOfType<mlir::StringAttr>(arg.getArgNumber(),
                                                      "mpc.input"))
      return n.str();
    return "arg" + std::to_string(arg.getArgNumber());
  }
  return mlir::mpc::displayNameOf(v.getDefiningOp());
}

std::string precisionName(mlir::Type t) {
  return t.isF16() ? "fp16" : t.isBF16() ? "bf16" : t.isF32() ? "fp32" : "";
}

/// Multiply-adds count twice; every other op one FLOP per result element.
double flopsOf(mlir::Operation *op) {
  auto out = dyn_cast<mlir::RankedTensorType>(
      op->getNumResults() ? op->getResult(0).getType() : mlir::Type());
  if (!out || !out.hasStaticShape())
    return 0;
  double n = out.getNumElements();
  auto shapeOf = [&](unsigned i) {
    return cast<mlir::RankedTensorType>(op->getOperand(i).getType());
  };
  if (isa<mlir::mpc::MatMulOp>(op))
    return 2 * n * shapeOf(0).getShape().back();
  if (auto g = dyn_cast<mlir::mpc::GemmOp>(op))
    return 2 * n * shapeOf(0).getDimSize(g.getTransA() ? 0 : 1);
  if (isa<mlir::mpc::ConvOp>(op)) {
    auto w = shapeOf(1);
    return 2 * n * (w.getNumElements() / w.getDimSize(0));
  }
  return n;
}

} // namespace

/// Precision-boundary edges, on the painted graph before casts: float
/// values used by an op of another precision (or returned as fp32).
static int64_t countBoundaryEdges(mlir::func::FuncOp func) {
  auto precisionOf = [](mlir::Value v) -> mlir::Type {
    if (mlir::Operation *def = v.getDefiningOp()) {
      if (isa<mlir::mpc::ConstantOp>(def))
        return {}; // folded into the user's type, never a cast
      if (auto p = def->getAttrOfType<mlir::TypeAttr>("mpc.precision"))
        return p.getValue();
    }
    return mlir::getElementTypeOrSelf(v);
  };
  int64_t boundaryEdges = 0;
  func.walk([&](mlir::Operation *op) {
    auto p = op->getAttrOfType<mlir::TypeAttr>("mpc.precision");
    bool isReturn = isa<mlir::func::ReturnOp>(op);
    if (!p && !isReturn)
      return;
    for (mlir::Value v : op->getOperands()) {
      mlir::Type from = precisionOf(v);
      if (!mlir::mpc::isFloatTensor(v.getType()) || !from)
        continue;
      mlir::Type to = isReturn ? mlir::getElementTypeOrSelf(v) : p.getValue();
      boundaryEdges += from != to;
    }
  });
  return boundaryEdges;
}

/// Prints one painted op (precision, ONNX op, node; why; the casts feeding
/// it) and returns it as JSON.
static json::Object describeNode(mlir::Operation &op, double flops) {
  auto p = op.getAttrOfType<mlir::TypeAttr>("mpc.precision");
  std::string why = op.getAttrOfType<mlir::StringAttr>("mpc.amp").str();
  json::Array castIn;
  std::string castText;
  for (mlir::Value v : op.getOperands())
    if (auto c = v.getDefiningOp<mlir::mpc::CastOp>()) {
      std::string from = valueName(c.getX());
      castIn.push_back(json::Object{
          {"value", from},
          {"from", precisionName(mlir::getElementTypeOrSelf(c.getX()))},
          {"to", precisionName(mlir::getElementTypeOrSelf(c.getY()))},
          {"master_copy", c->hasAttr("mpc.master_copy")}});
      castText += (castText.empty() ? "" : ", ") + from +
                  (c->hasAttr("mpc.master_copy") ? " (master copy)" : "");
    }
  StringRef mnemonic = op.getName().stripDialect();
  const mlir::mpc::AmpOpInfo *info = mlir::mpc::ampInfo(mnemonic);
  std::string onnx = info ? info->onnx.str() : mnemonic.str();
  std::string name = mlir::mpc::displayNameOf(&op);
  outs() << format("%-5s %-20s ", precisionName(p.getValue()).c_str(),
                   onnx.c_str())
         << name << "\n      why: " << why << "\n";
  if (!castText.empty())
    outs() << "      cast to " << precisionName(p.getValue())
           << " on the way in: " << castText << "\n";
  return json::Object{{"name", name},
                      {"op", onnx},
                      {"precision", precisionName(p.getValue())},
                      {"reason", why},
                      {"flops", flops},
                      {"casts_in", std::move(castIn)}};
}

int runExplain() {
  std::string error;
  if (!explainPrecision.precision.getNumOccurrences())
    explainPrecision.precision = "fp16";
  if (!explainPrecision.validate(error))
    return reportError(error);
  if (!explainPrecision.isLow())
    return reportError("mpc explain shows a mixed-precision plan: use "
                       "--precision fp16 or bf16");
  mlir::MLIRContext ctx;
  auto module = importWithBatch(ctx, model, batch, error);
  if (!module)
    return reportError(error);
  auto func = mlir::mpc::entryFunction(*module);

  // Boundary edges are counted on the painted graph, before casts.
  mlir::PassManager paintOnly(&ctx);
  mlir::mpc::PrecisionPipelineOptions precision;
  explainPrecision.apply(precision);
  // As compile does: losses rewritten to stay finite before painting.
  paintOnly.addPass(mlir::mpc::createStableLogs());
  mlir::mpc::addClassifyPass(paintOnly, precision);
  if (!runPasses(paintOnly, *module, error))
    return reportError(model + ": " + error);
  int64_t boundaryEdges = countBoundaryEdges(func);

  int64_t castsBefore = 0;
  func.walk([&](mlir::mpc::CastOp) { ++castsBefore; });
  mlir::PassManager pm(&ctx);
  pm.addPass(mlir::mpc::createInsertCasts());
  pm.addPass(mlir::mpc::createPromoteHalfParams()); // as training does
  pm.addPass(mlir::mpc::createMasterWeights());
  if (!runPasses(pm, *module, error))
    return reportError(model + ": " + error);

  json::Array nodes;
  double flops = 0, lowFlops = 0;
  int64_t casts = -castsBefore, backToBack = 0, masterCopies = 0, params = 0;
  std::string low = explainPrecision.precision;
  outs() << "mpc explain " << model << " --precision " << low << "\n\n"
         << "How mpc decides: ops that run on tensor cores (allow list: "
            "MatMul, Gemm, Conv) run in "
         << low
         << " with FP32 accumulation; ops that are numerically sensitive "
            "(deny list: reductions, softmax, layer and group norms, "
            "exp/log/pow, losses) stay in fp32; every other op follows its "
            "inputs (infer and clear lists; batch norm keeps its statistics, "
            "scale and bias in FP32), so no cast is needed between "
            "neighbours. A "
            "cast is inserted only where precisions meet, once per value. "
            "Parameters stay FP32 (the master weights the optimizer "
            "updates); ops read a low-precision copy made once per step.\n\n"
         << "Per node: precision, ONNX op, node name; why; the casts "
            "feeding it.\n\n";
  for (mlir::Operation &op : func.getBody().front().without_terminator()) {
    if (auto c = dyn_cast<mlir::mpc::CastOp>(op)) {
      ++casts;
      backToBack += (bool)c.getX().getDefiningOp<mlir::mpc::CastOp>();
      masterCopies += c->hasAttr("mpc.master_copy");
      continue;
    }
    auto p = op.getAttrOfType<mlir::TypeAttr>("mpc.precision");
    if (!p)
      continue;
    double f = flopsOf(&op);
    flops += f;
    if (!p.getValue().isF32())
      lowFlops += f;
    nodes.push_back(describeNode(op, f));
  }
  for (mlir::BlockArgument arg : func.getArguments())
    params += func.getArgAttr(arg.getArgNumber(), "mpc.param") != nullptr;
  double share = flops > 0 ? lowFlops / flops : 0;
  outs() << "\n"
         << format("FLOPs in %s: %.1f%% (%.4g of %.4g per batch of %lld)\n",
                   low.c_str(), 100 * share, lowFlops, flops,
                   (long long)batch)
         << format("casts: %lld at %lld precision-boundary edges (%lld "
                   "back-to-back)\n",
                   (long long)casts, (long long)boundaryEdges,
                   (long long)backToBack)
         << format("parameters: %lld, of which %lld are read by %s ops and "
                   "get a low-precision copy of their FP32 master each step\n",
                   (long long)params, (long long)masterCopies, low.c_str());
  if (!jsonPath.empty()) {
    json::Object report{
        {"model", model},
        {"precision", low},
        {"batch", (int64_t)batch},
        {"nodes", std::move(nodes)},
        {"totals", json::Object{{"flops", flops},
                                {"low_precision_flops", lowFlops},
                                {"low_precision_flop_share", share},
                                {"casts", casts},
                                {"boundary_edges", boundaryEdges},
                                {"back_to_back_casts", backToBack},
                                {"parameters", params},
                                {"master_copies", masterCopies}}}};
    if (!writeJsonFile(jsonPath, json::Value(std::move(report)), error))
      return reportError(error);
  }
  return 0;
}

} // namespace mpc
