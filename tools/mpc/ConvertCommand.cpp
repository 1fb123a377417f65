//===- ConvertCommand.cpp - `mpc convert`: FP32 ONNX -> mixed ONNX --------===//
//
// Classifies the model with mpc-amp-classify (the same decisions training
// uses) and rewrites the ONNX graph: low-precision nodes, casts only at
// precision boundaries, initializers read only by low nodes stored low.
// `--auto` keeps in FP32 the fewest nodes for the outputs to stay within
// tolerance on given inputs: one CPU-backend run measures every node's
// error against FP32, then a binary search over that ranking.
//
//===----------------------------------------------------------------------===//

#include "Commands.h"
#include "Prepare.h"
#include "TrainStep.h"

#include "codegen/PlanBuilder.h"
#include "frontend/MixedPrecisionRewrite.h"
#include "frontend/StableLogsRewrite.h"
#include "frontend/ModelLoader.h"
#include "frontend/OnnxImporter.h"
#include "ir/MpcOps.h"
#include "passes/AmpLists.h"
#include "passes/Passes.h"
#include "runtime/Executor.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/TypeUtilities.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <onnx/onnx_pb.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <set>

using namespace llvm;
namespace rt = ::mpc::rt;

namespace mpc {

cl::SubCommand convertCommand("convert",
                              "Convert an FP32 ONNX model to a mixed-precision "
                              "ONNX model (fp16 or bf16)");

static cl::opt<std::string> model(cl::Positional, cl::Required,
                                  cl::desc("<model.onnx>"),
                                  cl::sub(convertCommand));
static cl::opt<std::string> output("o", cl::Required,
                                   cl::desc("The converted model"),
                                   cl::value_desc("out.onnx"),
                                   cl::sub(convertCommand));
static cl::opt<std::string> precision("precision", cl::desc("fp16 | bf16"),
                                      cl::init("fp16"),
                                      cl::sub(convertCommand));
static cl::opt<bool> keepIoTypes("keep-io-types",
                                 cl::desc("Keep FP32 graph inputs and outputs "
                                          "(casts at the edges)"),
                                 cl::sub(convertCommand));
static cl::list<std::string> blockOps("block-op", cl::CommaSeparated,
                                      cl::desc("ONNX op types to keep in FP32"),
                                      cl::value_desc("Op,.."),
                                      cl::sub(convertCommand));
static cl::list<std::string> blockNodes("block-node", cl::CommaSeparated,
                                        cl::desc("Node names to keep in FP32"),
                                        cl::value_desc("name,.."),
                                        cl::sub(convertCommand));
static cl::opt<std::string> reportPath("report",
                                       cl::desc("Write what was done as JSON"),
                                       cl::value_desc("file.json"),
                                       cl::sub(convertCommand));
static cl::opt<bool> autoMode("auto",
                              cl::desc("Keep in FP32 the fewest nodes for the "
                                       "outputs to stay within --rtol/--atol "
                                       "of FP32 on the --validate inputs"),
                              cl::sub(convertCommand));
static cl::list<std::string> validate("validate",
                                      cl::desc("Input for --auto: NAME=FILE.npy"),
                                      cl::sub(convertCommand));
static cl::opt<double> rtol("rtol", cl::desc("--auto relative tolerance"),
                            cl::init(1e-2), cl::sub(convertCommand));
static cl::opt<double> atol("atol", cl::desc("--auto absolute tolerance"),
                            cl::init(1e-3), cl::sub(convertCommand));

namespace {

/// mpc-stable-logs on the ONNX nodes (log(sigmoid), log(1 - sigmoid),
/// log(softmax)); the Softplus nodes it adds join `keep` (FP32). Types come
/// from an import of the model's skeleton.
bool rewriteLogs(mlir::MLIRContext &ctx, onnx::ModelProto &proto,
                 std::vector<std::string> &keep, int &rewritten,
                 std::string &error) {
  rewritten = 0;
  bool any = false;
  for (const auto &n : proto.graph().node())
    any |= n.op_type() == "Log";
  if (!any)
    return true;
  onnx::ModelProto skeleton = mlir::mpc::skeletonOf(proto);
  mlir::mpc::ImportOptions options;
  options.modelPath = model;
  std::map<std::string, mlir::Type> types;
  options.tensorTypes = &types;
  if (!mlir::mpc::importModel(ctx, skeleton, options, error))
    return false;
  auto sameType = [&](const std::string &a, const std::string &b) {
    auto ia = types.find(a), ib = types.find(b);
    return ia != types.end() && ib != types.end() && ia->second == ib->second;
  };
  for (std::string &sp : mlir::mpc::rewriteStableLogs(*proto.mutable_graph(),
                                                      sameType, rewritten))
    keep.push_back(std::move(sp));
  return true;
}

/// Runs mpc-amp-classify (and mpc-insert-casts when `retype`) on `module`
/// with the block lists plus `keep`.
bool classify(mlir::ModuleOp module, const std::vector<std::string> &keep,
              bool retype, std::string &error) {
  mlir::PassManager pm(module.getContext());
  mlir::mpc::AmpClassifyOptions options;
  options.precision = precision == "fp16" ? "f16" : "bf16";
  std::vector<std::string> deny(blockOps.begin(), blockOps.end());
  options.deny = deny;
  options.keepFp32 = keep;
  // The rewrite casts all of a low node's float inputs, and ONNX gives
  // BatchNormalization one type before opset 15: batch norm stays FP32.
  options.mixedTypeOps = false;
  pm.addPass(mlir::mpc::createAmpClassify(options));
  if (retype)
    pm.addPass(mlir::mpc::createInsertCasts());
  return runPasses(pm, module, error);
}

/// Painted ops by node name, in program order.
std::vector<std::pair<std::string, mlir::Operation *>>
paintedOps(mlir::func::FuncOp func) {
  std::vector<std::pair<std::string, mlir::Operation *>> ops;
  for (mlir::Operation &op : func.getBody().front().without_terminator())
    if (std::string name = mlir::mpc::nodeNameOf(op.getLoc());
        op.hasAttr("mpc.precision") && !name.empty())
      ops.emplace_back(name, &op);
  return ops;
}

/// Appends the first result of every painted op to `func`'s results and
/// runs it; returns the graph outputs and the painted values by node.
bool runExposed(mlir::func::FuncOp func,
                const std::map<std::string, rt::Tensor> &feeds,
                std::vector<rt::Tensor> &outputs,
                std::map<std::string, rt::Tensor> &values, std::string &error) {
  auto ops = paintedOps(func);
  mlir::Operation *ret = func.getBody().front().getTerminator();
  unsigned graphOutputs = ret->getNumOperands();
  std::vector<std::string> names;
  for (auto &[name, op] : ops)
    if (op->getNumResults()) {
      ret->insertOperands(ret->getNumOperands(), op->getResult(0));
      names.push_back(name);
    }
  llvm::SmallVector<mlir::DictionaryAttr> attrs;
  func.getAllResultAttrs(attrs);
  attrs.resize(ret->getNumOperands(),
               mlir::DictionaryAttr::get(func.getContext()));
  func.setFunctionType(mlir::FunctionType::get(
      func.getContext(), func.getArgumentTypes(), ret->getOperandTypes()));
  func.setAllResultAttrs(attrs);
  rt::Plan plan;
  std::vector<rt::Tensor> results;
  if (!mlir::mpc::buildPlan(func, plan, error) ||
      !rt::runPlan(plan, feeds, results, error))
    return false;
  outputs.assign(results.begin(), results.begin() + graphOutputs);
  for (size_t i = 0; i < names.size(); ++i)
    values[names[i]] = results[graphOutputs + i];
  return true;
}

/// max |a - b| / (max |b|), the error of a value relative to its scale.
double relativeError(const rt::Tensor &a, const rt::Tensor &b) {
  if (!rt::isFloat(a.dtype()) || a.size() != b.size())
    return 0;
  double diff = 0, scale = 0;
  for (int64_t i = 0; i < a.size(); ++i) {
    double x = a.getFloat(i), y = b.getFloat(i);
    diff = std::max(diff, std::isfinite(x) ? std::fabs(x - y) : INFINITY);
    scale = std::max(scale, std::fabs(y));
  }
  return diff / std::max(scale, 1e-30);
}

/// Every output element within atol + rtol |reference|.
bool withinTolerance(const std::vector<rt::Tensor> &got,
                     const std::vector<rt::Tensor> &ref, double &worst) {
  worst = 0;
  bool ok = true;
  for (size_t k = 0; k < got.size(); ++k) {
    if (!rt::isFloat(ref[k].dtype()))
      continue;
    for (int64_t i = 0; i < ref[k].size(); ++i) {
      double x = got[k].getFloat(i), y = ref[k].getFloat(i);
      double excess = std::fabs(x - y) / (atol + rtol * std::fabs(y));
      if (!std::isfinite(x))
        excess = INFINITY;
      worst = std::max(worst, excess);
      ok &= excess <= 1;
    }
  }
  return ok;
}

struct AutoResult {
  std::vector<std::pair<std::string, double>> kept; // node, measured error
  int probes = 0;
  double worst = 0;
  size_t lowNodes = 0;
};

/// The fewest nodes (in order of measured error) to keep in FP32.
bool searchKeepSet(mlir::MLIRContext &ctx, AutoResult &result,
                   std::string &error) {
  Prepared ref;
  if (!prepare(ctx, model, validate, {}, 0, ref))
    return false;
  auto fresh = [&] { return mlir::OwningOpRef<mlir::ModuleOp>(ref.module->clone()); };
  std::vector<std::string> block(blockNodes.begin(), blockNodes.end());
  // FP32 reference values of every node, and the low-precision ones.
  std::vector<rt::Tensor> refOut, lowOut;
  std::map<std::string, rt::Tensor> refVals, lowVals;
  auto fp32 = fresh();
  if (!classify(*fp32, block, /*retype=*/false, error) ||
      !runExposed(mlir::mpc::entryFunction(*fp32), ref.feeds, refOut, refVals,
                  error))
    return false;
  auto low = fresh();
  if (!classify(*low, block, /*retype=*/true, error) ||
      !runExposed(mlir::mpc::entryFunction(*low), ref.feeds, lowOut, lowVals,
                  error))
    return false;
  // Rank low-precision nodes by the error of their result.
  std::vector<std::pair<double, std::string>> ranked;
  for (auto &[name, op] : paintedOps(mlir::mpc::entryFunction(*low)))
    if (!op->getAttrOfType<mlir::TypeAttr>("mpc.precision").getValue().isF32() &&
        refVals.count(name))
      ranked.emplace_back(relativeError(lowVals[name], refVals[name]), name);
  std::stable_sort(ranked.begin(), ranked.end(),
                   [](auto &a, auto &b) { return a.first > b.first; });
  result.lowNodes = ranked.size();
  auto keepTop = [&](size_t k) {
    std::vector<std::string> keep = block;
    for (size_t i = 0; i < k; ++i)
      keep.push_back(ranked[i].second);
    return keep;
  };
  auto passes = [&](size_t k, double &worst) -> std::optional<bool> {
    ++result.probes;
    auto m = fresh();
    std::vector<rt::Tensor> out;
    std::map<std::string, rt::Tensor> vals;
    if (!classify(*m, keepTop(k), true, error) ||
        !runExposed(mlir::mpc::entryFunction(*m), ref.feeds, out, vals, error))
      return std::nullopt;
    return withinTolerance(out, refOut, worst);
  };
  // Smallest k that passes (k = all is FP32 and passes by construction);
  // try k = 0 first, the common case. `hiWorst` is the measured excess of
  // the passing probe at `hi`, so the answer is not run twice.
  size_t lo = 0, hi = ranked.size();
  double worst = 0;
  std::optional<double> hiWorst;
  for (bool first = true; lo < hi; first = false) {
    size_t mid = first ? 0 : (lo + hi) / 2;
    auto ok = passes(mid, worst);
    if (!ok)
      return false;
    if (*ok) {
      hi = mid;
      hiWorst = worst;
    } else {
      lo = mid + 1;
    }
  }
  if (!hiWorst && !passes(lo, worst)) // every node kept: never probed
    return false;
  if (hiWorst)
    worst = *hiWorst;
  result.worst = worst;
  for (size_t i = 0; i < lo; ++i)
    result.kept.emplace_back(ranked[i].second, ranked[i].first);
  return true;
}

bool hasLowPrecisionTensors(const onnx::ModelProto &m, std::string &where) {
  auto low = [](int t) {
    return t == onnx::TensorProto::FLOAT16 || t == onnx::TensorProto::BFLOAT16;
  };
  for (const auto &v : m.graph().input())
    if (low(v.type().tensor_type().elem_type()))
      return where = "graph input '" + v.name() + "'", true;
  for (const auto &t : m.graph().initializer())
    if (low(t.data_type()))
      return where = "initializer '" + t.name() + "'", true;
  for (const auto &n : m.graph().node())
    if (n.op_type() == "Cast")
      for (const auto &a : n.attribute())
        if (a.name() == "to" && low((int)a.i()))
          return where = "Cast node '" + mlir::mpc::nodeKey(n) + "'", true;
  return false;
}

} // namespace

/// Each ONNX node's precision (an ONNX node may become several mpc ops:
/// low only if all of them are) and why: an FP32 op's reason where there
/// is one. An ONNX Attention or FlexAttention node (`attentionNodes`) is
/// low unless an op of it was kept FP32 (by --block-node, --auto, or as no
/// list's op): its FP32 softmax (deny) and what follows it or FP32 inputs
/// inside the node are what softmax_precision FLOAT, which the rewrite
/// gives it, computes in FP32, and the node's inputs are cast to its type.
static void nodeDecisions(mlir::func::FuncOp func, const AutoResult &autoResult,
                          const std::set<std::string> &attentionNodes,
                          std::map<std::string, bool> &lowNodes,
                          std::map<std::string, std::string> &reasons) {
  for (auto &[name, op] : paintedOps(func)) {
    bool isLow =
        !op->getAttrOfType<mlir::TypeAttr>("mpc.precision").getValue().isF32();
    llvm::StringRef why =
        op->getAttrOfType<mlir::StringAttr>("mpc.amp").getValue();
    bool kept = why.starts_with("kept fp32") || why.starts_with("not on") ||
                why.contains(", by ") || why.contains("kept fp32 by");
    bool low = isLow || (attentionNodes.count(name) && !kept);
    auto [it, inserted] = lowNodes.emplace(name, low);
    if (!inserted)
      it->second = it->second && low;
    if (!low)
      reasons[name] = why.str(); // (an FP32 op's reason)
    else
      reasons.emplace(name, why.str());
  }
  for (const std::string &name : attentionNodes)
    if (auto it = lowNodes.find(name); it != lowNodes.end() && it->second)
      reasons[name] = "allow (attention): its products run on tensor cores "
                      "with FP32 accumulation; softmax_precision FLOAT keeps "
                      "its softmax in FP32";
  for (auto &[name, err] : autoResult.kept)
    reasons[name] =
        "kept fp32 by --auto: in " + precision + " its result was " +
        (std::isfinite(err) ? formatv("{0:e2}", err).str() : std::string("inf")) +
        " off (relative), the largest error of any node";
}

/// The imported element types as ONNX TensorProto types.
static std::map<std::string, int>
onnxElemTypes(const std::map<std::string, mlir::Type> &tensorTypes) {
  std::map<std::string, int> elemTypes;
  for (const auto &[name, t] : tensorTypes) {
    mlir::Type e = mlir::getElementTypeOrSelf(t);
    elemTypes[name] =
        e.isF32()    ? onnx::TensorProto::FLOAT
        : e.isF16()  ? onnx::TensorProto::FLOAT16
        : e.isBF16() ? onnx::TensorProto::BFLOAT16
        : e.isInteger(1) ? onnx::TensorProto::BOOL
                         : onnx::TensorProto::INT64; // other ints: not float
  }
  return elemTypes;
}

/// --report: every node's precision and reason, the initializers stored
/// low (with saturated and flushed counts), --auto's choices.
static bool writeReport(const onnx::ModelProto &proto,
                        const std::map<std::string, bool> &lowNodes,
                        std::map<std::string, std::string> &reasons,
                        const mlir::mpc::RewriteReport &report,
                        const AutoResult &autoResult, double secs,
                        std::string &error) {
  json::Array nodes, stored, kept;
  for (const auto &n : proto.graph().node()) {
    auto it = lowNodes.find(mlir::mpc::nodeKey(n));
    if (it == lowNodes.end())
      continue;
    nodes.push_back(json::Object{{"name", it->first},
                                 {"op", n.op_type()},
                                 {"precision", it->second ? std::string(precision)
                                                          : std::string("fp32")},
                                 {"reason", reasons[it->first]}});
  }
  for (auto &s : report.storedLow)
    stored.push_back(json::Object{{"name", s.name},
                                  {"elements", s.elements},
                                  {"saturated", s.saturated},
                                  {"flushed_to_zero", s.flushed}});
  for (auto &[name, err] : autoResult.kept)
    kept.push_back(json::Object{
        {"name", name},
        // JSON has no infinity: an overflowing node's error is null.
        {"relative_error", std::isfinite(err) ? json::Value(err) : nullptr}});
  json::Object out{
      {"model", std::string(model)},
      {"output", std::string(output)},
      {"precision", std::string(precision)},
      {"keep_io_types", (bool)keepIoTypes},
      {"nodes", std::move(nodes)},
      {"casts_added", json::Array(report.castsAdded)},
      {"initializers_low", std::move(stored)},
      {"initializers_kept_fp32", json::Array(report.keptFp32)},
      {"io_retyped", json::Array(report.ioChanged)},
      {"seconds", secs}};
  if (autoMode)
    out["auto"] = json::Object{{"kept_fp32", std::move(kept)},
                               {"runs", autoResult.probes + 2},
                               {"worst_over_tolerance",
                                std::isfinite(autoResult.worst)
                                    ? json::Value(autoResult.worst)
                                    : nullptr},
                               {"rtol", (double)rtol},
                               {"atol", (double)atol}};
  return writeJsonFile(reportPath, json::Value(std::move(out)), error);
}

int runConvert() {
  auto start = std::chrono::steady_clock::now();
  if (precision != "fp16" && precision != "bf16")
    return reportError("--precision must be fp16 or bf16, got '" + precision +
                       "'");
  if (autoMode && validate.empty())
    return reportError("--auto needs inputs to validate on: --validate "
                       "NAME=FILE.npy");
  if (!autoMode && !validate.empty())
    return reportError("--validate is for --auto");
  std::error_code ec;
  std::string sourceDir =
      std::filesystem::absolute(model.getValue(), ec).parent_path().string();
  onnx::ModelProto proto;
  std::string error;
  if (!mlir::mpc::loadModel(model, proto, error))
    return reportError(model + ": " + error);
  for (const auto &meta : proto.metadata_props())
    if (meta.key() == "mpc.converted") {
      if (meta.value() != precision)
        return reportError(model + ": already converted to " + meta.value() +
                           " by mpc; convert the FP32 model to " + precision);
      // Converting again changes nothing: write the model as it is.
      if (!mlir::mpc::saveModelAtomically(proto, output, sourceDir, {}, error))
        return reportError(error);
      outs() << model << " is already converted to " << precision
             << " by mpc; wrote it unchanged to " << output << "\n";
      return 0;
    }
  if (std::string where; hasLowPrecisionTensors(proto, where))
    return reportError(model + ": already has low-precision tensors (" +
                       where + "); mpc convert takes an FP32 model");

  mlir::MLIRContext ctx;
  ctx.loadDialect<mlir::mpc::MpcDialect, mlir::func::FuncDialect>();
  std::vector<std::string> keep(blockNodes.begin(), blockNodes.end());
  int stableLogs = 0;
  if (!rewriteLogs(ctx, proto, keep, stableLogs, error))
    return reportError(model + ": " + error);
  AutoResult autoResult;
  if (autoMode) {
    if (!searchKeepSet(ctx, autoResult, error))
      return error.empty() ? 1 : reportError(model + ": " + error);
    for (auto &[name, err] : autoResult.kept)
      keep.push_back(name);
  }
  // Classification needs types and shapes, not weights: import a skeleton
  // whose float initializers are typed graph inputs (no weight copies).
  onnx::ModelProto skeleton = mlir::mpc::skeletonOf(proto);
  mlir::mpc::ImportOptions options;
  options.modelPath = model;
  std::map<std::string, mlir::Type> tensorTypes;
  options.tensorTypes = &tensorTypes;
  auto module = mlir::mpc::importModel(ctx, skeleton, options, error);
  if (!module)
    return reportError(model + ": " + error);
  if (!classify(*module, keep, /*retype=*/false, error))
    return reportError(model + ": " + error);

  std::map<std::string, bool> lowNodes;
  std::map<std::string, std::string> reasons;
  std::set<std::string> attentionNodes;
  for (const auto &n : proto.graph().node())
    if (((n.op_type() == "Attention" &&
          (n.domain().empty() || n.domain() == "ai.onnx")) ||
         (n.op_type() == "FlexAttention" && n.domain() == "ai.onnx.preview")) &&
        !llvm::is_contained(blockOps, n.op_type()))
      attentionNodes.insert(mlir::mpc::nodeKey(n));
  nodeDecisions(mlir::mpc::entryFunction(*module), autoResult, attentionNodes,
                lowNodes, reasons);
  mlir::mpc::RewriteOptions ro;
  ro.bf16 = precision == "bf16";
  ro.keepIoTypes = keepIoTypes;
  mlir::mpc::RewriteReport report;
  std::map<std::string, int> elemTypes = onnxElemTypes(tensorTypes);
  if (!mlir::mpc::rewriteMixedPrecision(proto, sourceDir, lowNodes, elemTypes,
                                        ro, report, error))
    return reportError(model + ": " + error);
  if (!mlir::mpc::saveModelAtomically(proto, output, sourceDir,
                                      report.wasExternal, error))
    return reportError(error);
  double secs = std::chrono::duration<double>(
                    std::chrono::steady_clock::now() - start)
                    .count();

  size_t low = 0;
  for (auto &[name, l] : lowNodes)
    low += l;
  int64_t saturated = 0, flushed = 0;
  for (auto &s : report.storedLow) {
    saturated += s.saturated;
    flushed += s.flushed;
  }
  outs() << formatv("wrote {0}: {1} of {2} float nodes in {3}, {4} casts, {5} "
                    "initializers stored in {3} ({6} values saturated, {7} "
                    "flushed to zero), {8:f3} s\n",
                    output, low, lowNodes.size(), precision,
                    report.castsAdded.size(), report.storedLow.size(),
                    saturated, flushed, secs);
  if (stableLogs)
    outs() << stableLogs
           << " Log node(s) of a sigmoid or softmax rewritten to forms that "
              "stay finite (log-sigmoid in fp32, LogSoftmax)\n";
  if (autoMode)
    outs() << formatv("--auto: kept {0} of {1} low-precision nodes in fp32 "
                      "({2} CPU-backend runs); outputs within {3:f2} of the "
                      "tolerance\n",
                      autoResult.kept.size(), autoResult.lowNodes,
                      autoResult.probes + 2, autoResult.worst);
  if (reportPath.empty())
    return 0;
  if (!writeReport(proto, lowNodes, reasons, report, autoResult, secs, error))
    return reportError(error);
  return 0;
}

} // namespace mpc
