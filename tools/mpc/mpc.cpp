//===- mpc.cpp - the mpc driver -------------------------------------------===//
//
// `mpc <command> ...`: one subcommand per stage a user runs (import today;
// run, train, grad, explain, compile, convert as they land).
//
//===----------------------------------------------------------------------===//

#include "Commands.h"

#include "frontend/ModelLoader.h"
#include "frontend/ModelValidator.h"
#include "runtime/PlanIO.h"

#include "llvm/Support/FormatVariadic.h"

#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

bool mpc::writeJsonFile(const std::string &path, llvm::json::Value value,
                        std::string &error) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << llvm::formatv("{0:2}", value) << "\n";
  return mpc::rt::writeFileAtomically(path, os.str(), error);
}

int mpc::reportError(const llvm::Twine &message) {
  // One line, whatever bytes the message quotes from a model or file, and
  // one write: ranks under `mpc launch` share the launcher's stderr, and
  // errs() is unbuffered, so a line built piecewise interleaves with theirs.
  llvm::errs() << ("mpc: error: " + mlir::mpc::oneLine(message.str()) + "\n");
  return 1;
}

static llvm::cl::opt<uint64_t> maxTensorBytes(
    "max-tensor-bytes",
    llvm::cl::desc("Largest tensor a model may declare or compute at import, "
                   "in bytes (default 17179869184, 16 GiB); checked before "
                   "anything is allocated"),
    llvm::cl::init(mlir::mpc::maxTensorBytes()),
    llvm::cl::sub(llvm::cl::SubCommand::getAll()));

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  llvm::cl::SetVersionPrinter([](llvm::raw_ostream &os) {
    os << "mpc " << MPC_VERSION << " (MLIR/LLVM " << LLVM_VERSION_STRING
       << ")\n";
  });
  if (!llvm::cl::ParseCommandLineOptions(
          argc, argv,
          "mpc - compile FP32 ONNX models into mixed-precision training "
          "programs\n\n"
          "Run `mpc <command> --help` for the options of one command.\n",
          &llvm::errs()))
    return 1;
  mlir::mpc::setMaxTensorBytes(maxTensorBytes);
  if (mpc::importCommand)
    return mpc::runImport();
  if (mpc::opsCommand)
    return mpc::runOps();
  if (mpc::runCommand)
    return mpc::runRun();
  if (mpc::gradCommand)
    return mpc::runGrad();
  if (mpc::trainCommand)
    return mpc::runTrain();
  if (mpc::explainCommand)
    return mpc::runExplain();
  if (mpc::convertCommand)
    return mpc::runConvert();
  if (mpc::compileCommand)
    return mpc::runCompile();
  if (mpc::doctorCommand)
    return mpc::runDoctor();
  if (mpc::launchCommand)
    return mpc::runLaunch();
  llvm::errs() << "mpc: no command given; see `mpc --help`\n";
  return 1;
}
