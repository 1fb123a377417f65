//===- ImportCommand.cpp - `mpc import` and `mpc ops` ---------------------===//

#include "Commands.h"

#include "codegen/CudaEmitter.h"
#include "codegen/PlanBuilder.h"
#include "frontend/OnnxImporter.h"
#include "ir/MpcOps.h"
#include "passes/AmpLists.h"
#include "passes/GradientRules.h"
#include "runtime/OpId.h"
#include "runtime/SeededWeights.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

using namespace llvm;
namespace rt = ::mpc::rt;

namespace mpc {

cl::SubCommand importCommand("import",
                             "Import an ONNX model (binary or text) and print "
                             "its mpc IR");

static cl::opt<std::string> modelPath(cl::Positional, cl::Required,
                                      cl::desc("<model.onnx>"),
                                      cl::sub(importCommand));
static cl::opt<int64_t> batch("batch",
                              cl::desc("Bind the leading (batch) dimension "
                                       "of every graph input"),
                              cl::init(0), cl::sub(importCommand));
static cl::list<std::string>
    dims("dim", cl::desc("Bind a symbolic dimension: --dim NAME=SIZE"),
         cl::sub(importCommand));
static cl::list<std::string> freeze(
    "freeze",
    cl::desc("Replace graph input NAME by the constant in FILE.pb (for "
             "inputs that must be constant, such as axes): --freeze NAME=FILE"),
    cl::sub(importCommand));
static cl::opt<std::string> outputPath("o", cl::desc("Write the IR to a file "
                                                     "(atomically)"),
                                       cl::value_desc("file"), cl::init("-"),
                                       cl::sub(importCommand));
static cl::opt<bool> requireStatic(
    "require-static",
    cl::desc("Fail unless every tensor type is static after import"),
    cl::sub(importCommand));
static cl::opt<int64_t> elideWeights(
    "elide-weights",
    cl::desc("On stdout, print constants with more elements than this "
             "elided (0: print all)"),
    cl::init(32), cl::sub(importCommand));
static cl::opt<bool> printLocations("print-locations",
                                    cl::desc("Print node-name locations"),
                                    cl::sub(importCommand));

/// First op whose result type is not static, for --require-static.
static mlir::Operation *firstDynamic(mlir::ModuleOp module) {
  mlir::Operation *found = nullptr;
  module.walk([&](mlir::Operation *op) {
    for (mlir::Type t : op->getResultTypes())
      if (auto shaped = llvm::dyn_cast<mlir::ShapedType>(t);
          shaped && !shaped.hasStaticShape()) {
        found = op;
        return mlir::WalkResult::interrupt();
      }
    return mlir::WalkResult::advance();
  });
  return found;
}

static std::string locationName(mlir::Location loc) {
  if (auto name = llvm::dyn_cast<mlir::NameLoc>(loc))
    return name.getName().str();
  return "";
}

bool parseFreezeSpecs(const std::vector<std::string> &specs,
                      std::map<std::string, std::string> &frozen,
                      std::string &error) {
  for (const std::string &f : specs) {
    auto [name, file] = StringRef(f).split('=');
    if (name.empty() || file.empty()) {
      error = "--freeze expects NAME=FILE, got '" + f + "'";
      return false;
    }
    frozen[name.str()] = file.str();
  }
  return true;
}

int runImport() {
  mlir::MLIRContext ctx;
  mlir::mpc::ImportOptions options;
  options.modelPath = modelPath;
  if (batch < 0)
    return reportError("--batch must be positive");
  if (batch > 0)
    options.batch = batch;
  std::string error;
  if (!parseDimSpecs(dims, options.dims, error) ||
      !parseFreezeSpecs(freeze, options.frozenInputs, error))
    return reportError(error);

  auto module = mlir::mpc::importModelFile(ctx, options, error);
  if (!module)
    return reportError(error);

  // Verification problems are importer bugs or inconsistent models; report
  // them against the node like import errors.
  std::string diag;
  {
    mlir::ScopedDiagnosticHandler handler(&ctx, [&](mlir::Diagnostic &d) {
      if (diag.empty())
        diag = "node '" + locationName(d.getLocation()) + "': " + d.str();
      return mlir::success();
    });
    if (mlir::failed(mlir::verify(*module)))
      return reportError(modelPath + ": " + diag);
  }
  if (requireStatic)
    if (mlir::Operation *op = firstDynamic(*module))
      return reportError(modelPath + ": node '" + locationName(op->getLoc()) +
                         "' (" + op->getName().getStringRef() +
                         ") has a dynamic result type; bind dimensions with "
                         "--batch or --dim");

  mlir::OpPrintingFlags flags;
  if (printLocations)
    flags.enableDebugInfo();
  if (outputPath == "-") {
    if (elideWeights > 0)
      flags.elideLargeElementsAttrs(elideWeights);
    module->print(llvm::outs(), flags);
    llvm::outs() << "\n";
    return 0;
  }
  return writeModule(*module, outputPath, error, flags) ? 0
                                                       : reportError(error);
}

bool parseDimSpecs(const std::vector<std::string> &specs,
                   std::map<std::string, int64_t> &dims, std::string &error) {
  for (const std::string &d : specs) {
    auto [name, value] = StringRef(d).split('=');
    int64_t size;
    if (name.empty() || value.getAsInteger(10, size) || size <= 0) {
      error = "--dim expects NAME=SIZE with a positive size, got '" + d + "'";
      return false;
    }
    dims[name.str()] = size;
  }
  return true;
}

mlir::OwningOpRef<mlir::ModuleOp>
importWithBatch(mlir::MLIRContext &ctx, const std::string &model,
                int64_t batch, std::string &error,
                const std::vector<std::string> &freezeSpecs,
                const std::vector<std::string> &dimSpecs) {
  ctx.loadDialect<mlir::mpc::MpcDialect, mlir::func::FuncDialect>();
  mlir::mpc::ImportOptions options;
  options.modelPath = model;
  if (batch > 0)
    options.batch = batch;
  if (!parseDimSpecs(dimSpecs, options.dims, error) ||
      !parseFreezeSpecs(freezeSpecs, options.frozenInputs, error))
    return nullptr;
  return mlir::mpc::importModelFile(ctx, options, error);
}

std::string unboundInputDim(mlir::ModuleOp module) {
  mlir::func::FuncOp f = mlir::mpc::entryFunction(module);
  if (!f || f.isExternal())
    return "";
  for (mlir::BlockArgument arg : f.getArguments()) {
    unsigned n = arg.getArgNumber();
    auto input = f.getArgAttrOfType<mlir::StringAttr>(n, "mpc.input");
    auto t = llvm::dyn_cast<mlir::RankedTensorType>(arg.getType());
    if (!input || !t)
      continue;
    auto names = f.getArgAttrOfType<mlir::ArrayAttr>(n, "mpc.dim_params");
    for (int64_t i = 0; i < t.getRank(); ++i) {
      if (!t.isDynamicDim(i))
        continue;
      auto name = names && i < (int64_t)names.size()
                      ? llvm::dyn_cast<mlir::StringAttr>(names[i])
                      : mlir::StringAttr();
      std::string where = "input '" + input.str() + "' dimension " +
                          std::to_string(i);
      if (name && !name.getValue().empty())
        return where + " ('" + name.str() + "') has no size; bind it with --dim " +
               name.str() + "=SIZE";
      return where + " has no size and no name to bind; export it with a "
                     "fixed size or a named (dim_param) dimension";
    }
  }
  return "";
}

bool seedWeights(mlir::ModuleOp module, const std::string &spec,
                 std::string &error) {
  if (spec.empty())
    return true;
  StringRef digits(spec);
  uint64_t seed = 0;
  if (!digits.consume_front("seed:") || digits.getAsInteger(10, seed) ||
      seed >= (1ull << 63)) {
    error = "--weights must be seed:N (N an integer below 2^63), got '" +
            spec + "'";
    return false;
  }
  mlir::Builder b(module.getContext());
  for (auto param : module.getOps<mlir::mpc::ParamOp>()) {
    auto type = llvm::dyn_cast<mlir::RankedTensorType>(param.getType());
    auto values = llvm::dyn_cast<mlir::DenseElementsAttr>(param.getValue());
    mlir::Type element = type ? type.getElementType() : mlir::Type();
    if (!type || !values ||
        !(element.isF32() || element.isF16() || element.isBF16()) ||
        type.getNumElements() < mpc::rt::kSeededMinElements)
      continue;
    // FP16/BF16 parameters (a converted model) draw as FP32 ones do, then
    // round to their type; the record names it, so an FP32 master of one
    // draws the same values (runtime/SeededWeights.h).
    mpc::rt::Tensor t = mlir::mpc::toTensor(values);
    mpc::rt::SeededInit s = mpc::rt::seededStats(t, seed);
    s.rounding = t.dtype();
    std::string name = param.getSymName().str();
    mpc::rt::drawSeeded(t, name, s);
    param.setValueAttr(mlir::mpc::toAttr(t, module.getContext()));
    llvm::SmallVector<mlir::Attribute, 4> record = {
        b.getI64IntegerAttr((int64_t)seed), b.getF64FloatAttr(s.mean),
        b.getF64FloatAttr(s.std)};
    if (!element.isF32())
      record.push_back(b.getStringAttr(mpc::rt::dtypeName(t.dtype())));
    param->setAttr("mpc.seeded", b.getArrayAttr(record));
  }
  return true;
}

bool writeModule(mlir::ModuleOp module, const std::string &path,
                 std::string &error, mlir::OpPrintingFlags flags) {
  if (Error err = writeToOutput(path, [&](raw_ostream &os) {
        module->print(os, flags);
        os << "\n";
        return Error::success();
      })) {
    error = "cannot write " + path + ": " + toString(std::move(err));
    return false;
  }
  return true;
}

} // namespace mpc

namespace mpc {

cl::SubCommand opsCommand("ops", "List the ONNX ops mpc imports (domain op)");

static cl::opt<bool> opsDetails(
    "details",
    cl::desc("One line per mpc op instead: its ONNX op, precision class, "
             "whether it has a gradient rule, and how CUDA runs it (every "
             "op has a CPU kernel)"),
    cl::sub(opsCommand));

/// The facts each layer registered about every op that runs, as tables.
static int printOpDetails() {
  mlir::DialectRegistry registry;
  registry.insert<mlir::mpc::MpcDialect>();
  mlir::mpc::registerGradientInterfaces(registry);
  mlir::MLIRContext ctx(registry);
  ctx.loadDialect<mlir::mpc::MpcDialect>();
  outs() << "mpc op                           ONNX                       "
            "precision gradient  CUDA\n";
  for (size_t i = 0; i < rt::kNumOps; ++i) {
    auto op = static_cast<rt::OpId>(i);
    if (!rt::inPlans(op))
      continue;
    std::string name = rt::opName(op);
    const mlir::mpc::AmpOpInfo *facts = mlir::mpc::opFacts(name);
    auto registered =
        mlir::RegisteredOperationName::lookup("mpc." + name, &ctx);
    bool grad = registered &&
                registered->hasInterface<mlir::mpc::GradientOpInterface>();
    outs() << format("%-32s %-26s %-9s %-9s %s\n", name.c_str(),
                     facts && !facts->onnx.empty() ? facts->onnx.str().c_str()
                                                   : "-",
                     facts ? mlir::mpc::className(facts->cls).str().c_str()
                           : "none",
                     grad ? "yes" : "-",
                     mlir::mpc::cudaSupport(op).c_str());
  }
  return 0;
}

int runOps() {
  mlir::MLIRContext ctx;
  auto unknown = mlir::mpc::unknownImporterTargets(ctx);
  if (!unknown.empty())
    return reportError("importer rows name ops the mpc dialect lacks: " +
                       llvm::join(unknown, ", "));
  if (opsDetails)
    return printOpDetails();
  for (const auto &[domain, op] : mlir::mpc::supportedOnnxOps())
    llvm::outs() << domain << " " << op << "\n";
  return 0;
}

} // namespace mpc
