//===- FakeCudaHostBuild.cpp - an artifact's kernels.cu built for the host -===//

#include "FakeCudaHostBuild.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace mpc::fake {
namespace {

/// One kernel of kernels.cu: its code, its launcher and the launchers'
/// names (a kernel may bring helper kernels: attention's key-block pass).
struct Block {
  std::string code, launcher;
  std::vector<std::string> entries; // emu_NAME
  std::string key;                  // its name in the cache
};

bool writeFile(const std::string &path, const std::string &text) {
  FILE *f = std::fopen(path.c_str(), "wb");
  if (!f)
    return false;
  bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
  return std::fclose(f) == 0 && ok;
}

/// 64-bit FNV-1a, as 16 hex digits.
std::string hash(const std::string &bytes) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : bytes)
    h = (h ^ c) * 1099511628211ull;
  char out[17];
  std::snprintf(out, sizeof out, "%016llx", (unsigned long long)h);
  return out;
}

/// The lines of `text` after each line `marker NAME` up to the next such
/// line, by NAME; the lines before the first in `head`.
std::vector<std::pair<std::string, std::string>>
splitAt(const std::string &text, const std::string &marker, std::string &head) {
  std::vector<std::pair<std::string, std::string>> parts;
  head.clear();
  for (size_t line = 0; line < text.size();) {
    size_t eol = text.find('\n', line);
    size_t end = eol == std::string::npos ? text.size() : eol + 1;
    if (eol != std::string::npos &&
        text.compare(line, marker.size(), marker) == 0)
      parts.push_back({text.substr(line + marker.size(),
                                   eol - line - marker.size()), ""});
    else
      (parts.empty() ? head : parts.back().second)
          .append(text, line, end - line);
    line = end;
  }
  return parts;
}

/// kernels.cu as prelude and kernels, by the emitter's marker lines; false
/// when it has none (a hand-written kernels.cu) or they do not pair up.
bool splitKernels(const std::string &text, std::string &prelude,
                  std::vector<Block> &blocks) {
  const std::string open = "#ifdef MPC_HOST_EMULATION\n";
  size_t split = text.rfind(open);
  size_t close = text.rfind("#endif");
  if (split == std::string::npos || close == std::string::npos || close < split)
    return false;
  auto kernels = splitAt(text.substr(0, split), "// kernel ", prelude);
  std::string none;
  auto launchers = splitAt(
      text.substr(split + open.size(), close - split - open.size()),
      "// launcher ", none);
  if (kernels.empty() || kernels.size() != launchers.size())
    return false;
  for (size_t i = 0; i < kernels.size(); ++i) {
    if (kernels[i].first != launchers[i].first)
      return false;
    Block b{kernels[i].second, launchers[i].second, {}, {}};
    const std::string def = "extern \"C\" void ";
    for (size_t at = b.launcher.find(def); at != std::string::npos;
         at = b.launcher.find(def, at + 1)) {
      size_t name = at + def.size();
      b.entries.push_back(
          b.launcher.substr(name, b.launcher.find('(', name) - name));
    }
    blocks.push_back(std::move(b));
  }
  return true;
}

// MPC_FAKE_CUDA_MMA_GEMM=1: the GEMMs run tc_gemm_mma's tiles, with
// mma.sync, ldmatrix and cp.async emulated, instead of the shim's plain
// product (slower: their threads run as fibers). Kernels neither throw
// nor unwind: without exception handling and unwind tables g++ builds
// them ~10% faster. No FMA contraction, as the CPU backend and nvcc
// (-fmad=false) compute (the flags of Inputs/host_emulation.py's builds).
std::string flags(const std::string &src, bool tsan) {
  return "g++ -O1 -std=c++17 -ffp-contract=off -fPIC -fno-exceptions "
         "-fno-asynchronous-unwind-tables " +
         std::string(tsan ? "-fsanitize=thread " : "") +
         std::string(envFlag("MPC_FAKE_CUDA_MMA_GEMM")
                         ? "-DMPC_EMULATE_MMA_GEMM "
                         : "") +
         "-DMPC_HOST_EMULATION -I" + src + " ";
}

std::string shimPath(const std::string &src) {
  return src + "/test/codegen/Inputs/cuda_host_shim.h";
}

/// The compiler with `header` (the shim, or a header that includes it)
/// included first.
std::string compiler(const std::string &src, bool tsan, const std::string &header) {
  return flags(src, tsan) + "-include " + header + " -x c++ ";
}

bool run(const std::string &command);

/// A header that includes the shim, precompiled beside it with the
/// kernels' flags, in the cache under `key` (the preprocessed prelude's:
/// the shim's text and what the flags define), built once a test run:
/// the shim's parse is ~0.4 s of every host build. Empty when it cannot
/// be built; g++ also reads the header itself wherever the precompiled
/// one does not fit, so it is a speed-up only.
std::string precompiledShim(const std::string &src, bool tsan,
                            const std::string &cache, const std::string &key) {
  std::string dir = cache + "/pch-" + key, header = dir + "/shim.h";
  struct stat st;
  if (stat((header + ".gch").c_str(), &st) == 0)
    return header;
  std::string tmp = dir + ".tmp." + std::to_string(getpid());
  mkdir(tmp.c_str(), 0755);
  bool ok = writeFile(tmp + "/shim.h", "#include \"" + shimPath(src) + "\"\n") &&
            run(flags(src, tsan) + "-x c++-header " + tmp + "/shim.h -o " + tmp +
                "/shim.h.gch");
  // Another process may have put one there first: as good as ours.
  if (ok && rename(tmp.c_str(), dir.c_str()) == 0)
    return header;
  unlink((tmp + "/shim.h.gch").c_str());
  unlink((tmp + "/shim.h").c_str());
  rmdir(tmp.c_str());
  return stat((header + ".gch").c_str(), &st) == 0 ? header : "";
}

bool run(const std::string &command) {
  if (std::system(command.c_str()) == 0)
    return true;
  std::fprintf(stderr, "fake CUDA: failed: %s\n", command.c_str());
  return false;
}

/// Compiles `units` (each a list of blocks) side by side, each into a
/// library that `cache` then holds under every one of its blocks' keys.
bool compileUnits(const std::string &cxx, const std::string &work,
                  const std::string &cache, const std::string &prelude,
                  const std::vector<std::vector<Block *>> &units) {
  std::vector<std::string> cus(units.size()), libs(units.size());
  for (size_t u = 0; u < units.size(); ++u) {
    std::string tu = prelude;
    for (const Block *b : units[u])
      tu += b->code;
    tu += "#ifdef MPC_HOST_EMULATION\n";
    for (const Block *b : units[u])
      tu += b->launcher;
    tu += "#endif\n";
    cus[u] = work + "unit" + std::to_string(u) + ".cu";
    libs[u] = work + "unit" + std::to_string(u) + ".so";
    if (!writeFile(cus[u], tu))
      return false;
  }
  std::vector<char> ok(units.size(), 0);
  std::vector<std::thread> threads;
  for (size_t u = 0; u < units.size(); ++u)
    threads.emplace_back([&, u] {
      ok[u] = run(cxx + cus[u] + " -shared -o " + libs[u] + " -lpthread");
    });
  for (std::thread &t : threads)
    t.join();
  bool all = true;
  for (size_t u = 0; u < units.size(); ++u) {
    for (const Block *b : units[u]) {
      std::string entry = cache + "/" + b->key + ".so";
      // Another process may have stored the same kernel meanwhile: its
      // library is as good as ours.
      if (ok[u] && link(libs[u].c_str(), entry.c_str()) != 0 && errno != EEXIST)
        ok[u] = false;
    }
    unlink(libs[u].c_str());
    unlink(cus[u].c_str());
    all = all && ok[u];
  }
  return all;
}

/// Up to two units of similar code size, compiled side by side (both
/// cores, when the test run's other worker is not building too); one
/// below 24 kernels, where a second parse of the prelude and the shim
/// costs more than it saves.
std::vector<std::vector<Block *>> splitUnits(std::vector<Block *> missing) {
  size_t n = missing.size() < 24 ? 1 : 2;
  std::vector<std::vector<Block *>> units(n);
  std::vector<size_t> size(n, 0);
  std::stable_sort(missing.begin(), missing.end(), [](Block *a, Block *b) {
    return a->code.size() > b->code.size();
  });
  for (Block *b : missing) {
    size_t u = size[0] <= size[n - 1] ? 0 : n - 1;
    units[u].push_back(b);
    size[u] += b->code.size();
  }
  return units;
}

void *load(const std::string &lib) {
  void *handle = dlopen(lib.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle)
    std::fprintf(stderr, "fake CUDA: %s\n", dlerror());
  return handle;
}

} // namespace

bool readFile(const std::string &path, std::string &text) {
  FILE *f = std::fopen(path.c_str(), "rb");
  if (!f)
    return false;
  char buf[65536];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;)
    text.append(buf, n);
  std::fclose(f);
  return true;
}

void *HostBuild::libraryOf(const std::string &launcher) const {
  auto it = launchers.find(launcher);
  return it != launchers.end() ? it->second : whole;
}

bool envFlag(const char *name) {
  const char *v = std::getenv(name);
  return v && *v && std::string(v) != "0";
}

bool buildHost(const std::string &src, const std::string &dir, bool tsan,
               HostBuild &out) {
  // The compiler does not run with ThreadSanitizer preloaded (it crashes).
  if (tsan)
    unsetenv("LD_PRELOAD");
  std::string cxx = compiler(src, tsan, shimPath(src)), text, prelude;
  std::vector<Block> blocks;
  const char *cacheEnv = std::getenv("MPC_FAKE_CUDA_CACHE");
  std::string cache = cacheEnv ? cacheEnv : "";
  if (!readFile(dir + "/kernels.cu", text))
    return std::fprintf(stderr, "fake CUDA: no %s/kernels.cu\n", dir.c_str()),
           false;
  if (!splitKernels(text, prelude, blocks)) {
    // One block of the whole file, its launchers found by dlsym.
    prelude.clear();
    blocks = {Block{text, "", {}, {}}};
  }
  if (cache.empty()) {
    std::string lib = dir + (tsan ? "/kernels.host-tsan.so" : "/kernels.host.so");
    if (!run(cxx + dir + "/kernels.cu -shared -o " + lib + " -lpthread"))
      return false;
    return (out.whole = load(lib)) != nullptr;
  }
  // The prelude as the compiler sees it: the shim, its headers and the
  // emitted helpers, all part of every kernel's key. Scratch files go to
  // the cache under this process's name (ranks may load one artifact at
  // once), and are removed.
  mkdir(cache.c_str(), 0755);
  std::string work = cache + "/build." + std::to_string(getpid()) + ".";
  std::string preprocessed;
  bool preOk = writeFile(work + "prelude.cu", prelude) &&
               run(cxx + "-E -P " + work + "prelude.cu -o " + work +
                   "prelude.ii") &&
               readFile(work + "prelude.ii", preprocessed);
  unlink((work + "prelude.cu").c_str());
  unlink((work + "prelude.ii").c_str());
  if (!preOk)
    return false;
  // (ThreadSanitizer's builds preprocess otherwise: __SANITIZE_THREAD__;
  // their entries are also named apart.)
  std::string preludeKey = hash(preprocessed);
  auto missingOnes = [&] {
    std::vector<Block *> missing;
    for (Block &b : blocks) {
      struct stat st;
      if (stat((cache + "/" + b.key + ".so").c_str(), &st) != 0)
        missing.push_back(&b);
    }
    return missing;
  };
  std::string all;
  for (Block &b : blocks) {
    b.key = hash(preludeKey + '\0' + b.code + '\0' + b.launcher) +
            (tsan ? "-tsan" : "");
    all += b.key;
  }
  auto start = std::chrono::steady_clock::now();
  std::vector<Block *> missing = missingOnes();
  if (!missing.empty()) {
    // Processes loading one artifact at once (a job's ranks) build it
    // once: a lock per kernel set; who waited finds the kernels built.
    mkdir((cache + "/locks").c_str(), 0755);
    int lock = open((cache + "/locks/" + hash(all)).c_str(),
                    O_CREAT | O_RDWR, 0644);
    if (lock >= 0)
      flock(lock, LOCK_EX);
    missing = missingOnes();
    std::string pch = missing.empty() ? "" : precompiledShim(src, tsan, cache, preludeKey + (tsan ? "-tsan" : ""));
    bool ok = missing.empty() ||
              compileUnits(pch.empty() ? cxx : compiler(src, tsan, pch), work,
                           cache, prelude, splitUnits(missing));
    if (lock >= 0)
      close(lock); // (releases the lock)
    if (!ok)
      return false;
  }
  if (const char *log = std::getenv("MPC_FAKE_CUDA_BUILD_LOG"))
    if (FILE *f = std::fopen(log, "a")) {
      std::chrono::duration<double> s = std::chrono::steady_clock::now() - start;
      std::fprintf(f, "%s: %zu kernels compiled in %.2f s, %zu from the cache\n",
                   dir.c_str(), missing.size(), s.count(),
                   blocks.size() - missing.size());
      std::fclose(f);
    }
  for (const Block &b : blocks) {
    // The kernels compiled together share one file: dlopen maps it once.
    void *handle = load(cache + "/" + b.key + ".so");
    if (!handle)
      return false;
    if (b.entries.empty())
      out.whole = handle;
    for (const std::string &e : b.entries)
      out.launchers[e] = handle;
  }
  return true;
}

} // namespace mpc::fake
