//===- RunCommand.cpp - `mpc run`: execute a model on the CPU backend -----===//

#include "Commands.h"

#include "codegen/PlanBuilder.h"
#include "frontend/ModelLoader.h"
#include "frontend/OnnxImporter.h"
#include "ir/MpcOps.h"
#include "runtime/Executor.h"
#include "runtime/Npy.h"
#include "runtime/Parallel.h"
#include "frontend/ImporterImpl.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <chrono>
#include <set>

using namespace llvm;
namespace rt = ::mpc::rt;

namespace mpc {

cl::SubCommand runCommand("run",
                          "Run a model on the CPU reference backend and write "
                          "its outputs as .npy");

static cl::opt<std::string> modelPath(cl::Positional, cl::Required,
                                      cl::desc("<model.onnx>"),
                                      cl::sub(runCommand));
static cl::list<std::string>
    inputs("input",
           cl::desc("Feed graph input NAME from FILE (.npy or ONNX "
                    "TensorProto .pb): --input NAME=FILE"),
           cl::sub(runCommand));
static cl::list<std::string>
    freeze("freeze",
           cl::desc("Replace graph input NAME by the constant in FILE.pb: "
                    "--freeze NAME=FILE"),
           cl::sub(runCommand));
static cl::opt<int64_t> batch("batch",
                              cl::desc("Bind the batch dimension (else "
                                       "taken from the inputs)"),
                              cl::init(0), cl::sub(runCommand));
static cl::opt<std::string> outputDir("output-dir",
                                      cl::desc("Write <output>.npy files here"),
                                      cl::value_desc("dir"),
                                      cl::sub(runCommand));
static cl::opt<int> repeat("repeat",
                           cl::desc("Time N more runs after the first and "
                                    "print the median (benchmarks)"),
                           cl::init(0), cl::sub(runCommand));
static cl::opt<int> threads("threads", cl::desc("Worker threads (default: all)"),
                            cl::init(0), cl::sub(runCommand));

/// Reads FILE as .npy or as a serialized TensorProto.
static bool readInput(const std::string &path, mlir::MLIRContext &ctx,
                      rt::Tensor &tensor, std::string &error) {
  if (StringRef(path).ends_with(".npy"))
    return rt::readNpy(path, tensor, error);
  onnx::TensorProto proto;
  if (!mlir::mpc::loadTensor(path, proto, error))
    return false;
  // ONNX test data stores bfloat16 as UINT16 bit patterns (numpy has no
  // bfloat16); mpc has no uint16, so read those bits as bfloat16.
  if (proto.data_type() == onnx::TensorProto::UINT16)
    proto.set_data_type(onnx::TensorProto::BFLOAT16);
  auto attr = mlir::mpc::importer::readTensor(proto, &ctx, "", error);
  if (mlir::failed(attr))
    return false;
  tensor = mlir::mpc::toTensor(*attr);
  return true;
}

/// "loss  f32[]  min -0.1 max 2.3 mean 1.1"
static void printSummary(const std::string &name, const rt::Tensor &t) {
  double lo = 0, hi = 0, sum = 0;
  for (int64_t i = 0; i < t.size(); ++i) {
    double v = rt::isFloat(t.dtype()) ? t.getFloat(i) : (double)t.getInt(i);
    lo = i ? std::min(lo, v) : v;
    hi = i ? std::max(hi, v) : v;
    sum += v;
  }
  outs() << format("%-24s %-5s %-16s", name.c_str(), rt::dtypeName(t.dtype()),
                   rt::shapeString(t.shape()).c_str());
  if (t.size())
    outs() << format(" min %-12.6g max %-12.6g mean %.6g", lo, hi,
                     sum / t.size());
  outs() << "\n";
}

static bool hasDynamicType(mlir::ModuleOp module) {
  bool dynamic = false;
  module.walk([&](mlir::Operation *op) {
    for (mlir::Type t : op->getResultTypes())
      if (auto s = llvm::dyn_cast<mlir::ShapedType>(t); s && !s.hasStaticShape())
        dynamic = true;
  });
  return dynamic;
}

static std::string fileName(std::string name) {
  for (char &c : name)
    if (c == '/' || c == '\\' || c == ':')
      c = '_';
  return name + ".npy";
}

int runRun() {
  mlir::MLIRContext ctx;
  ctx.loadDialect<mlir::mpc::MpcDialect, mlir::func::FuncDialect>();
  if (threads > 0)
    rt::setNumThreads(threads);
  std::map<std::string, rt::Tensor> feeds;
  mlir::mpc::ImportOptions options;
  options.modelPath = modelPath;
  if (batch > 0)
    options.batch = batch;
  for (const std::string &spec : inputs) {
    auto [name, file] = StringRef(spec).split('=');
    if (name.empty() || file.empty())
      return reportError("--input expects NAME=FILE, got '" + spec + "'");
    std::string error;
    rt::Tensor t;
    if (!readInput(file.str(), ctx, t, error))
      return reportError("input '" + name + "': " + error);
    options.inputShapes[name.str()] = t.shape();
    feeds[name.str()] = std::move(t);
  }

  std::string error;
  if (!parseFreezeSpecs(freeze, options.frozenInputs, error))
    return reportError(error);
  auto module = mlir::mpc::importModelFile(ctx, options, error);
  if (!module)
    return reportError(error);
  // Shapes computed from input *values* (a Reshape target, Slice bounds, a
  // Range limit fed as graph inputs) need those values at compile time: a
  // single run may bake its small and integer inputs in as constants.
  if (hasDynamicType(*module)) {
    for (const auto &[name, t] : feeds)
      if (!rt::isFloat(t.dtype()) || t.size() <= 1)
        options.frozenValues[name] = mlir::mpc::toAttr(t, &ctx);
    module = mlir::mpc::importModelFile(ctx, options, error);
    if (!module)
      return reportError(error);
    for (const auto &[name, value] : options.frozenValues)
      feeds.erase(name);
  }
  auto func = mlir::mpc::entryFunction(*module);
  // Every fed name must be a graph input (or a parameter to override).
  std::set<std::string> known;
  std::string listed;
  for (unsigned i = 0; i < func.getNumArguments(); ++i)
    if (auto n = func.getArgAttrOfType<mlir::StringAttr>(i, "mpc.input")) {
      known.insert(n.str());
      listed += (listed.empty() ? "" : ", ") + n.str();
    } else if (auto p = func.getArgAttrOfType<mlir::FlatSymbolRefAttr>(
                   i, "mpc.param")) {
      known.insert(p.getValue().str());
    }
  for (const auto &[name, t] : feeds)
    if (!known.count(name))
      return reportError("input '" + name + "' is not a graph input of " +
                         modelPath + " (inputs: " + listed + ")");
  for (unsigned i = 0; i < func.getNumArguments(); ++i)
    if (auto n = func.getArgAttrOfType<mlir::StringAttr>(i, "mpc.input"))
      if (!feeds.count(n.str()))
        return reportError(modelPath + ": missing input '" + n.str() +
                           "' of type " +
                           llvm::formatv("{0}", func.getArgumentTypes()[i])
                               .str() +
                           "; give it with --input " + n.str() + "=FILE");

  rt::Plan plan;
  if (!mlir::mpc::buildPlan(func, plan, error))
    return reportError(modelPath + ": " + error);
  if (std::string op = rt::firstUnsupportedOp(plan); !op.empty())
    return reportError(modelPath + ": op mpc." + op +
                       " has no CPU kernel yet");
  std::vector<rt::Tensor> results;
  if (!rt::runPlan(plan, feeds, results, error))
    return reportError(modelPath + ": " + error);
  if (repeat > 0) {
    std::vector<double> ms;
    for (int i = 0; i < repeat; ++i) {
      auto start = std::chrono::steady_clock::now();
      rt::runPlan(plan, feeds, results, error);
      ms.push_back(std::chrono::duration<double, std::milli>(
                       std::chrono::steady_clock::now() - start)
                       .count());
    }
    std::sort(ms.begin(), ms.end());
    outs() << format("time: median %.3f ms, min %.3f ms over %d runs, %d "
                     "threads\n",
                     ms[ms.size() / 2], ms[0], (int)repeat, rt::numThreads());
  }

  if (!outputDir.empty())
    if (std::error_code ec = sys::fs::create_directories(outputDir))
      return reportError("cannot create " + outputDir + ": " + ec.message());
  for (size_t i = 0; i < results.size(); ++i) {
    const std::string &name = plan.outputs[i].name;
    printSummary(name, results[i]);
    if (!outputDir.empty() &&
        !rt::writeNpy(outputDir + "/" + fileName(name), results[i], error))
      return reportError(error);
  }
  return 0;
}

} // namespace mpc
