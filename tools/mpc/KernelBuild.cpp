//===- KernelBuild.cpp - device code for an artifact: cache, parallel units -===//
//
// Cache layout (version 1), all written as a temporary file renamed into
// place, so concurrent compiles and crashes never leave a half entry:
//   <cache>/kernels-v2/modules/<sha256 of the fatbin>.fatbin
//   <cache>/kernels-v2/index/<key>   the module holding the kernel <key>
// A module whose content does not match its name is a corrupt entry: the
// kernel counts as missing and is compiled (and stored) again.
//
//===----------------------------------------------------------------------===//

#include "KernelBuild.h"
#include "Commands.h"
#include "Nvrtc.h"
#include "codegen/CudaEmitter.h"
#include "runtime/PlanIO.h"
#include "runtime/cuda/CudaDevice.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/SHA256.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <set>
#include <thread>

using namespace llvm;

namespace mpc {
namespace {

// -fmad=false: no contraction of a * b + c into one FMA, as the CPU backend
// (-ffp-contract=off) and the host emulation compute, so elementwise code
// rounds the same on the GPU; the GEMMs' explicit fmaf and tensor-core MMAs
// are unaffected, and the rest is memory-bound.
constexpr const char *kFlags = "-fatbin -O3 -std=c++17 -fmad=false";

std::string sha256(StringRef text) {
  return toHex(SHA256::hash(arrayRefFromStringRef(text)), true);
}

std::optional<std::string> readFile(const std::string &path) {
  auto buf = MemoryBuffer::getFile(path, /*IsText=*/false,
                                   /*RequiresNullTerminator=*/false);
  if (!buf)
    return std::nullopt;
  return (*buf)->getBuffer().str();
}

/// Writes through a temporary file and a rename: readers see all or none.
bool writeAtomically(const std::string &path, StringRef data) {
  SmallString<256> tmp;
  int fd;
  if (sys::fs::createUniqueFile(path + ".tmp-%%%%%%%%", fd, tmp))
    return false;
  {
    raw_fd_ostream out(fd, /*shouldClose=*/true);
    out << data;
    out.close();
    if (out.has_error()) {
      out.clear_error();
      sys::fs::remove(tmp);
      return false;
    }
  }
  if (sys::fs::rename(tmp, path)) {
    sys::fs::remove(tmp);
    return false;
  }
  return true;
}

/// Runs `args` and returns its standard output ("" on failure).
std::string capture(const std::vector<std::string> &args) {
  SmallString<128> out;
  if (sys::fs::createTemporaryFile("mpc-nvcc", "txt", out))
    return "";
  std::vector<StringRef> argv(args.begin(), args.end());
  std::optional<StringRef> redirects[] = {std::nullopt, StringRef(out),
                                          StringRef("")}; // stderr: dropped
  int rc = sys::ExecuteAndWait(args[0], argv, std::nullopt, redirects);
  std::string text = rc == 0 ? readFile(out.str().str()).value_or("") : "";
  sys::fs::remove(out);
  return text;
}

/// nvcc's version line ("Build cuda_13.0.r13.0/compiler..."): part of
/// every cache key, so a toolkit update misses the cache.
const std::string &nvccVersion(const std::string &nvcc) {
  static std::map<std::string, std::string> versions;
  auto [it, fresh] = versions.try_emplace(nvcc);
  if (fresh)
    it->second = capture({nvcc, "--version"});
  return it->second;
}

/// -gencode flags: SASS for every architecture, PTX for the newest so a
/// newer GPU can JIT it.
std::vector<std::string> gencodes(const std::vector<std::string> &arch) {
  std::vector<std::string> flags;
  std::string newest;
  auto number = [](const std::string &a) { return std::atoi(a.c_str() + 3); };
  for (const std::string &a : arch) {
    flags.push_back("-gencode=arch=compute_" + a.substr(3) + ",code=" + a);
    if (newest.empty() || number(a) > number(newest))
      newest = a;
  }
  if (!newest.empty())
    flags.push_back("-gencode=arch=compute_" + newest.substr(3) +
                    ",code=compute_" + newest.substr(3));
  return flags;
}

/// The kernels' entries in the cache (when usable).
class KernelCache {
public:
  KernelCache(const std::string &dir, KernelBuildResult &result)
      : root(dir.empty() ? "" : dir + "/kernels-v2"), result(result) {
    if (root.empty())
      return;
    if (sys::fs::create_directories(root + "/index") ||
        sys::fs::create_directories(root + "/modules"))
      disable("cannot create " + root);
  }

  bool enabled() const { return !root.empty(); }

  /// The module holding the kernel `key`, verified, or "".
  std::string lookup(const std::string &key) {
    if (!enabled())
      return "";
    std::string index = root + "/index/" + key;
    std::optional<std::string> module = readFile(index);
    if (!module)
      return "";
    std::string hash = StringRef(*module).trim().str();
    std::string path = modulePath(hash);
    std::optional<std::string> data = readFile(path);
    if (hash.size() != 64 || !data || sha256(*data) != hash) {
      sys::fs::remove(index); // corrupt: compiled and stored again
      return "";
    }
    return path;
  }

  /// Stores a compiled module and the index entries of its kernels.
  void store(const std::string &moduleData,
             const std::vector<std::string> &keys) {
    if (!enabled())
      return;
    std::string hash = sha256(moduleData);
    if (!writeAtomically(modulePath(hash), moduleData))
      return disable("cannot write to " + root);
    for (const std::string &key : keys)
      if (!writeAtomically(root + "/index/" + key, hash + "\n"))
        return disable("cannot write to " + root);
  }

private:
  std::string root;
  KernelBuildResult &result;

  std::string modulePath(const std::string &hash) const {
    return root + "/modules/" + hash + ".fatbin";
  }
  void disable(const std::string &why) {
    result.warnings.push_back(why + "; compiling without the kernel cache");
    root.clear();
  }
};

/// The entry points a kernel's code defines: the kernel and any helper
/// kernels launched beside it (a prologue that clears a counter...).
std::vector<std::string> entryPoints(const mlir::mpc::CudaKernel &k) {
  std::vector<std::string> names;
  StringRef code = k.code;
  for (size_t at = code.find("__global__"); at != StringRef::npos;
       at = code.find("__global__", at + 1)) {
    StringRef rest = code.substr(at);
    size_t paren = rest.find('(');
    if (rest.starts_with("__global__ void __launch_bounds__"))
      paren = rest.find('(', rest.find(')') + 1);
    StringRef head = rest.substr(0, paren).rtrim();
    names.push_back(head.substr(head.find_last_of(" \n") + 1).str());
  }
  return names;
}

/// Splits `kernels` into translation units balanced by code size. nvcc:
/// at most `jobs`, of at least 32 kernels each (its start-up is worth ~40
/// kernels). NVRTC (`inProcess`): a unit costs only the prelude (~0.1 s),
/// so at least one per job and up to 4 per job of 8+ kernels, so a thread
/// that draws large kernels does not hold up the rest.
std::vector<std::vector<const mlir::mpc::CudaKernel *>>
splitUnits(const std::vector<const mlir::mpc::CudaKernel *> &kernels,
           unsigned jobs, bool inProcess) {
  size_t k = kernels.size();
  size_t n = inProcess ? std::clamp<size_t>((k + 7) / 8, jobs, 4 * jobs)
                       : std::min<size_t>(jobs, (k + 31) / 32);
  n = std::max<size_t>(1, std::min(n, k));
  std::vector<std::vector<const mlir::mpc::CudaKernel *>> units(n);
  std::vector<size_t> size(n, 0);
  std::vector<const mlir::mpc::CudaKernel *> bySize(kernels);
  std::stable_sort(bySize.begin(), bySize.end(), [](auto *a, auto *b) {
    return a->code.size() > b->code.size();
  });
  for (const mlir::mpc::CudaKernel *k : bySize) {
    size_t u = std::min_element(size.begin(), size.end()) - size.begin();
    units[u].push_back(k);
    size[u] += k->code.size();
  }
  return units;
}

} // namespace

std::string defaultKernelCacheDir() {
  if (auto xdg = sys::Process::GetEnv("XDG_CACHE_HOME"); xdg && !xdg->empty())
    return *xdg + "/mpc";
  if (auto home = sys::Process::GetEnv("HOME"); home && !home->empty())
    return *home + "/.cache/mpc";
  return "";
}

std::vector<std::string> supportedArchs() {
  std::string nvcc = findCudaTool("nvcc");
  std::vector<std::string> archs;
  if (nvcc.empty()) {
    std::string why;
    const Nvrtc *nvrtc = Nvrtc::open(why);
    return nvrtc ? nvrtc->supportedArchs() : archs;
  }
  std::string list = capture({nvcc, "--list-gpu-code"});
  SmallVector<StringRef> tokens;
  StringRef(list).split(tokens, '\n', -1, false);
  for (StringRef t : tokens)
    if (t.trim().starts_with("sm_")) {
      archs.push_back(t.trim().str());
      // The architecture-specific variant (sm_90a...) from Hopper on.
      if (std::atoi(t.trim().data() + 3) >= 90)
        archs.push_back(t.trim().str() + "a");
    }
  return archs;
}

/// The device compiler `options` ask for: NVRTC in process when "auto"
/// finds it, else nvcc; `result.compiler` stays empty when there is
/// neither. False with `error` when the one asked for is missing.
static bool chooseCompiler(const KernelBuildOptions &options,
                           KernelBuildResult &result, const Nvrtc *&nvrtc,
                           std::string &error) {
  std::string why;
  nvrtc = options.compiler == "nvcc" ? nullptr : Nvrtc::open(why);
  if (options.compiler == "nvrtc" && !nvrtc)
    return (error = "--device-compiler nvrtc: " + why, false);
  if (nvrtc) {
    result.compiler = "nvrtc";
    result.compilerVersion = nvrtc->version();
    return true;
  }
  std::string nvcc = findCudaTool("nvcc");
  if (nvcc.empty())
    return options.compiler != "nvcc" ||
           (error = "--device-compiler nvcc: nvcc not found", false);
  result.compiler = "nvcc";
  result.compilerVersion = nvccVersion(nvcc);
  result.nvcc = nvcc;
  return true;
}

/// Compiles each unit's source to a fatbin (empty on failure, `failure`
/// the first error): NVRTC on `jobs` threads, or nvcc processes at once.
static std::vector<std::string>
compileUnits(const std::vector<std::string> &sources, const Nvrtc *nvrtc,
             const std::string &nvcc, const std::vector<std::string> &arch,
             const std::string &dir, unsigned jobs, std::string &failure) {
  std::vector<std::string> fatbins(sources.size());
  std::vector<std::string> errors(sources.size());
  if (nvrtc) {
    std::atomic<size_t> next{0};
    auto work = [&] {
      for (size_t u; (u = next++) < sources.size();)
        if (!nvrtc->compile(sources[u], arch, fatbins[u], errors[u]))
          fatbins[u].clear();
    };
    std::vector<std::thread> threads;
    for (unsigned t = 1; t < std::min<size_t>(jobs, sources.size()); ++t)
      threads.emplace_back(work);
    work();
    for (std::thread &t : threads)
      t.join();
  } else {
    std::vector<std::string> flags = gencodes(arch);
    std::vector<sys::ProcessInfo> running;
    for (size_t u = 0; u < sources.size(); ++u) {
      std::string base = dir + "/unit." + std::to_string(u);
      if (!writeAtomically(base + ".cu", sources[u])) {
        errors[u] = "cannot write " + base + ".cu";
        running.emplace_back();
        continue;
      }
      std::vector<std::string> args = {nvcc};
      for (StringRef f : split(kFlags, ' '))
        args.push_back(f.str());
      args.insert(args.end(), {"-o", base + ".fatbin"});
      args.insert(args.end(), flags.begin(), flags.end());
      args.push_back(base + ".cu");
      std::vector<StringRef> argv(args.begin(), args.end());
      std::string log = base + ".log";
      std::optional<StringRef> redirects[] = {std::nullopt, StringRef(log),
                                              StringRef(log)};
      running.push_back(sys::ExecuteNoWait(nvcc, argv, std::nullopt, redirects,
                                           0, &errors[u]));
      if (!running.back().Pid)
        errors[u] = "cannot run nvcc: " + errors[u];
    }
    for (size_t u = 0; u < running.size(); ++u) {
      std::string base = dir + "/unit." + std::to_string(u);
      if (!running[u].Pid)
        continue;
      sys::ProcessInfo done = sys::Wait(running[u], std::nullopt, &errors[u]);
      std::optional<std::string> data = readFile(base + ".fatbin");
      if (done.ReturnCode == 0 && data) {
        fatbins[u] = std::move(*data);
      } else {
        errors[u] =
            firstErrorLine(readFile(base + ".log").value_or(""), errors[u]);
      }
      for (const char *ext : {".cu", ".fatbin", ".log"})
        sys::fs::remove(base + ext);
    }
  }
  for (size_t u = 0; u < sources.size() && failure.empty(); ++u)
    if (fatbins[u].empty())
      failure = errors[u].empty() ? "no output" : errors[u];
  return fatbins;
}

bool buildKernels(const mlir::mpc::CudaModule &module, const std::string &dir,
                  const KernelBuildOptions &options, KernelBuildResult &result,
                  std::string &error) {
  const Nvrtc *nvrtc = nullptr;
  if (!chooseCompiler(options, result, nvrtc, error))
    return false;
  if (result.compiler.empty())
    return true; // kernels.cu stays uncompiled
  auto start = std::chrono::steady_clock::now();
  // What every kernel's device code depends on besides its own code.
  std::string context =
      sha256(result.compilerVersion + (nvrtc ? Nvrtc::flags() : kFlags) +
             join(gencodes(options.arch), " ") + module.prelude);
  KernelCache cache(options.cacheDir, result);
  // DIR gets the modules as kernels.<i>.fatbin: cached ones copied from
  // these paths, new ones ("" here) written there as they compile.
  std::vector<std::string> modules;
  std::set<std::string> seen;
  std::vector<const mlir::mpc::CudaKernel *> missing;
  std::map<const mlir::mpc::CudaKernel *, std::string> keys;
  std::map<std::string, size_t> moduleOf; // kernel name -> index in modules
  for (const mlir::mpc::CudaKernel &k : module.kernels) {
    keys[&k] = sha256(context + k.name + "\n" + k.code);
    std::string path = cache.lookup(keys[&k]);
    if (path.empty()) {
      missing.push_back(&k);
      continue;
    }
    ++result.cached;
    if (seen.insert(path).second)
      modules.push_back(path);
    for (const std::string &entry : entryPoints(k))
      moduleOf[entry] =
          std::find(modules.begin(), modules.end(), path) - modules.begin();
  }

  // The missing kernels: translation units compiled in parallel.
  unsigned jobs = std::max(1u, options.jobs);
  auto units = splitUnits(missing, jobs, nvrtc != nullptr);
  if (missing.empty())
    units.clear();
  std::vector<std::string> sources;
  for (const auto &unit : units) {
    sources.push_back(module.prelude);
    for (const mlir::mpc::CudaKernel *k : unit)
      sources.back() += k->code;
  }
  std::string failure;
  std::vector<std::string> fatbins = compileUnits(
      sources, nvrtc, result.nvcc, options.arch, dir, jobs, failure);
  if (!failure.empty())
    return (error = result.compiler + " failed on the emitted kernels (" +
                    failure + ")",
            false);
  for (size_t u = 0; u < units.size(); ++u) {
    std::vector<std::string> unitKeys;
    for (const mlir::mpc::CudaKernel *k : units[u])
      unitKeys.push_back(keys[k]);
    cache.store(fatbins[u], unitKeys);
    std::string path = dir + "/kernels." + std::to_string(modules.size()) + ".fatbin";
    if (!writeAtomically(path, fatbins[u]))
      return (error = "cannot write " + path, false);
    for (const mlir::mpc::CudaKernel *k : units[u])
      for (const std::string &entry : entryPoints(*k))
        moduleOf[entry] = modules.size();
    modules.push_back("");
    result.compiled += units[u].size();
  }
  result.units = units.size();
  for (size_t i = 0; i < modules.size(); ++i) {
    std::string to = dir + "/kernels." + std::to_string(i) + ".fatbin";
    if (!modules[i].empty() && sys::fs::copy_file(modules[i], to))
      return (error = "cannot write " + to, false);
  }
  // kernels.index: the module of each kernel, so the runtime asks only
  // that module for it (a cached module may hold other models' kernels).
  std::string index;
  for (const auto &[name, i] : moduleOf)
    index += name + " " + std::to_string(i) + "\n";
  if (!writeAtomically(dir + "/kernels.index", index))
    return (error = "cannot write " + dir + "/kernels.index", false);
  result.modules = modules.size();
  result.seconds = std::chrono::duration<double>(
                       std::chrono::steady_clock::now() - start)
                       .count();
  return true;
}

bool buildDeviceCode(rt::Plan &plan, const rt::CudaInfo &gpu, std::string &dir,
                     std::string &error, bool evaluation) {
  mlir::mpc::CudaModule cuda;
  plan.cudaArch = {rt::deviceArch(gpu.devices[0])}; // (tiles sized for it)
  if (!mlir::mpc::emitCuda(plan, cuda, error))
    return false;
  SmallString<128> path;
  if (sys::fs::createUniqueDirectory("mpc-train-cuda", path))
    return (error = "cannot create a directory for the CUDA kernels", false);
  dir = path.str().str();
  KernelBuildOptions build;
  build.arch = {rt::deviceArch(gpu.devices[0])};
  build.cacheDir = defaultKernelCacheDir();
  build.jobs = std::max(1u, std::thread::hardware_concurrency());
  KernelBuildResult built;
  if (!rt::writeFileAtomically(dir + "/kernels.cu", cuda.source, error))
    return false;
  if (gpu.runsKernelSource) { // (the host emulation: an empty kernels.fatbin)
    if (!rt::writeFileAtomically(dir + "/kernels.fatbin", "", error))
      return false;
  } else if (!buildKernels(cuda, dir, build, built, error)) {
    return false;
  }
  for (const std::string &w : built.warnings)
    errs() << "mpc: warning: " << w << "\n";
  if (built.compiler.empty() && !gpu.runsKernelSource)
    return (error = "--device cuda needs NVRTC or nvcc to build the kernels",
            false);
  outs() << (evaluation ? "evaluating on " : "training on ") << gpu.devices[0]
         << " (" << cuda.launches.size() << " kernel launches a "
         << (evaluation ? "batch, " : "step, ");
  if (cuda.microLaunches != cuda.launches.size())
    outs() << cuda.microLaunches
           << " on a micro-batch that does not end its group, ";
  outs() << cuda.kernels.size() << " distinct CUDA kernels in " << dir << ")\n";
  return true;
}

} // namespace mpc
