//===- Commands.h - the subcommands of the mpc driver ------------*- C++ -*-===//

#ifndef MPC_TOOLS_MPC_COMMANDS_H
#define MPC_TOOLS_MPC_COMMANDS_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "mlir/IR/OperationSupport.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/JSON.h"

#include <map>
#include <string>
#include <vector>

namespace mpc {

/// --attention-dq of compile and train (rt::Plan::cudaAttentionDq).
inline constexpr const char *kAttentionDqHelp =
    "How the attention backward's tensor-core kernel gets dQ: accumulate "
    "(key blocks add their part into FP32 partial sums, five products a "
    "tile, as FlashAttention-2's deterministic mode; accumulate:N: at most "
    "N splits of the key tiles) | atomic (key blocks add their part into "
    "one FP32 dQ by atomic adds, as FlashAttention-2's default: five "
    "products, dQ's last bits may change run to run) | recompute (query "
    "blocks recompute the scores: seven products) | auto (recompute, the "
    "fastest on an H200; default). Head sizes past 128 always recompute "
    "(the key blocks' registers hold dK or dV alone)";
inline constexpr const char *kAttentionDqError =
    "--attention-dq must be auto, accumulate, accumulate:N (N >= 1), "
    "atomic or recompute, got '";

/// --attention-rows of compile and train (rt::Plan::cudaAttentionRows).
inline constexpr const char *kAttentionRowsHelp =
    "Rows a block of the tensor-core attention kernels: 128 (the forward's "
    "queries and the backward's keys up to head size 64, 32 a warp; "
    "default) | 64 (16 a warp: twice the blocks, each with half the work, "
    "for grids too short to fill the GPU)";
inline constexpr const char *kAttentionRowsError =
    "--attention-rows must be 64 or 128, got ";

extern llvm::cl::SubCommand importCommand;
int runImport();
extern llvm::cl::SubCommand opsCommand;
int runOps();
extern llvm::cl::SubCommand runCommand;
int runRun();
extern llvm::cl::SubCommand gradCommand;
int runGrad();
extern llvm::cl::SubCommand trainCommand;
int runTrain();
extern llvm::cl::SubCommand explainCommand;
int runExplain();
extern llvm::cl::SubCommand convertCommand;
int runConvert();
extern llvm::cl::SubCommand compileCommand;
int runCompile();
extern llvm::cl::SubCommand doctorCommand;
int runDoctor();
extern llvm::cl::SubCommand launchCommand;
int runLaunch();

/// nvcc, cuobjdump...: on PATH, in $CUDA_HOME/bin or /usr/local/cuda/bin;
/// "" when absent.
std::string findCudaTool(llvm::StringRef name);

/// Adds --freeze NAME=FILE specs to `frozen`; false (with `error`) on a
/// malformed one.
bool parseFreezeSpecs(const std::vector<std::string> &specs,
                      std::map<std::string, std::string> &frozen,
                      std::string &error);

/// Parses --dim NAME=SIZE specs (a symbolic dimension's ONNX dim_param and
/// the size it takes); false with `error` naming a malformed one.
bool parseDimSpecs(const std::vector<std::string> &specs,
                   std::map<std::string, int64_t> &dims, std::string &error);

/// Imports `model` into `ctx` (the mpc dialect loaded) with a batch of
/// `batch` bound (0: symbolic), the --freeze and --dim specs given; null
/// with a one-line `error`.
mlir::OwningOpRef<mlir::ModuleOp>
importWithBatch(mlir::MLIRContext &ctx, const std::string &model,
                int64_t batch, std::string &error,
                const std::vector<std::string> &freezeSpecs = {},
                const std::vector<std::string> &dimSpecs = {});

/// The first graph input dimension the import left without a size, as a
/// sentence saying how to bind it ("" when every input is static): what
/// `mpc compile` needs before any pass, which would otherwise fail on the
/// first op that needs the size.
std::string unboundInputDim(mlir::ModuleOp module);

/// --weights seed:N: every float mpc.param of rt::kSeededMinElements or
/// more elements takes the runtime's draws (runtime/SeededWeights.h) with
/// its own exported mean and std, and records them (`mpc.seeded`), so an
/// artifact carries three numbers instead of its bytes. An empty `spec`
/// changes nothing; false with `error` for one that is not seed:N.
bool seedWeights(mlir::ModuleOp module, const std::string &spec,
                 std::string &error);

/// Writes `module` as MLIR text to `path` (atomically; "-": stdout).
bool writeModule(mlir::ModuleOp module, const std::string &path,
                 std::string &error,
                 mlir::OpPrintingFlags flags = mlir::OpPrintingFlags());

/// Writes `value` as indented JSON to `path` atomically (temp + rename).
bool writeJsonFile(const std::string &path, llvm::json::Value value,
                   std::string &error);

/// Prints "mpc: error: <message>" and returns the exit code 1.
int reportError(const llvm::Twine &message);

} // namespace mpc

#endif // MPC_TOOLS_MPC_COMMANDS_H
