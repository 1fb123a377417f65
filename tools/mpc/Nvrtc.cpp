//===- Nvrtc.cpp - kernels compiled in process: NVRTC and nvFatbin -------===//

#include "Nvrtc.h"

#include "runtime/cuda/LibraryLoader.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"

#include <algorithm>
#include <cstdlib>
#include <dlfcn.h>
#include <mutex>

namespace mpc {
namespace {

// The few entry points mpc calls, as nvrtc.h and nvFatbin.h declare them
// (both return 0 on success).
using Program = struct _nvrtcProgram *;
using Fatbin = struct _nvFatbinHandle *;

// -fmad=false: as kernels.cu is compiled by nvcc (KernelBuild.cpp).
constexpr const char *kFlags = "-std=c++17 -fmad=false -default-device -w";

/// Headers the emitted code includes (cuda_fp16.h, mma.h): next to the
/// library (toolkit lib64/ or a wheel's lib/), else the toolkit's.
std::string headerDir(const std::string &library) {
  std::vector<std::string> dirs;
  llvm::SmallString<256> real;
  if (!llvm::sys::fs::real_path(library, real))
    dirs.push_back(llvm::sys::path::parent_path(llvm::sys::path::parent_path(real)).str() +
                   "/include");
  if (auto home = llvm::sys::Process::GetEnv("CUDA_HOME"); home && !home->empty())
    dirs.push_back(*home + "/include");
  dirs.push_back("/usr/local/cuda/include");
  for (const std::string &d : dirs)
    if (llvm::sys::fs::exists(d + "/mma.h") &&
        llvm::sys::fs::exists(d + "/cuda_fp16.h"))
      return d;
  return "";
}

} // namespace

struct Nvrtc::Api {
  int (*version)(int *, int *);
  int (*create)(Program *, const char *, const char *, int, const char *const *,
                const char *const *);
  int (*compileProgram)(Program, int, const char *const *);
  int (*logSize)(Program, size_t *);
  int (*log)(Program, char *);
  int (*cubinSize)(Program, size_t *);
  int (*cubin)(Program, char *);
  int (*ptxSize)(Program, size_t *);
  int (*ptx)(Program, char *);
  int (*destroy)(Program *);
  int (*numArchs)(int *);
  int (*archs)(int *);
  int (*fbCreate)(Fatbin *, const char **, size_t);
  int (*fbAddCubin)(Fatbin, const void *, size_t, const char *, const char *);
  int (*fbAddPtx)(Fatbin, const char *, size_t, const char *, const char *,
                  const char *);
  int (*fbSize)(Fatbin, size_t *);
  int (*fbGet)(Fatbin, void *);
  int (*fbDestroy)(Fatbin *);
  int (*fbVersion)(unsigned *, unsigned *);
};

std::string firstErrorLine(const std::string &log,
                           const std::string &otherwise) {
  for (llvm::StringRef line : llvm::split(log, '\n'))
    if (line.contains("error"))
      return line.trim().str();
  return otherwise;
}

const char *Nvrtc::flags() { return kFlags; }

const Nvrtc *Nvrtc::open(std::string &why) {
  static Nvrtc instance;
  static std::string failure;
  static std::once_flag once;
  std::call_once(once, [] {
    std::string fbPath;
    void *rtc = rt::openNvidiaLibrary("libnvrtc.so.13", "MPC_NVRTC",
                                      instance.path_, failure);
    void *fb = rtc ? rt::openNvidiaLibrary("libnvfatbin.so.13", "MPC_NVFATBIN",
                                           fbPath, failure)
                   : nullptr;
    if (!rtc || !fb)
      return;
    static Api api;
    bool found = true;
    auto get = [&](void *lib, auto &fn, const char *name) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(
          dlsym(lib, name));
      found = found && fn;
    };
    get(rtc, api.version, "nvrtcVersion");
    get(rtc, api.create, "nvrtcCreateProgram");
    get(rtc, api.compileProgram, "nvrtcCompileProgram");
    get(rtc, api.logSize, "nvrtcGetProgramLogSize");
    get(rtc, api.log, "nvrtcGetProgramLog");
    get(rtc, api.cubinSize, "nvrtcGetCUBINSize");
    get(rtc, api.cubin, "nvrtcGetCUBIN");
    get(rtc, api.ptxSize, "nvrtcGetPTXSize");
    get(rtc, api.ptx, "nvrtcGetPTX");
    get(rtc, api.destroy, "nvrtcDestroyProgram");
    get(rtc, api.numArchs, "nvrtcGetNumSupportedArchs");
    get(rtc, api.archs, "nvrtcGetSupportedArchs");
    get(fb, api.fbCreate, "nvFatbinCreate");
    get(fb, api.fbAddCubin, "nvFatbinAddCubin");
    get(fb, api.fbAddPtx, "nvFatbinAddPTX");
    get(fb, api.fbSize, "nvFatbinSize");
    get(fb, api.fbGet, "nvFatbinGet");
    get(fb, api.fbDestroy, "nvFatbinDestroy");
    get(fb, api.fbVersion, "nvFatbinVersion");
    if (!found) {
      failure = "NVRTC or nvFatbin lacks an entry point mpc uses";
      return;
    }
    // The file the loader chose (a bare soname found on its search path).
    Dl_info where;
    if (dladdr(reinterpret_cast<void *>(api.version), &where) && where.dli_fname)
      instance.path_ = where.dli_fname;
    instance.include_ = headerDir(instance.path_);
    if (instance.include_.empty()) {
      failure = "no CUDA headers (mma.h) next to " + instance.path_;
      return;
    }
    int major = 0, minor = 0;
    unsigned fbMajor = 0, fbMinor = 0;
    api.version(&major, &minor);
    api.fbVersion(&fbMajor, &fbMinor);
    instance.version_ = "nvrtc " + std::to_string(major) + "." +
                        std::to_string(minor) + " + nvfatbin " +
                        std::to_string(fbMajor) + "." + std::to_string(fbMinor);
    instance.api_ = &api;
  });
  why = failure;
  return instance.api_ ? &instance : nullptr;
}

std::vector<std::string> Nvrtc::supportedArchs() const {
  int n = 0;
  std::vector<std::string> names;
  if (api_->numArchs(&n) || n <= 0)
    return names;
  std::vector<int> archs(n);
  api_->archs(archs.data());
  for (int a : archs) {
    names.push_back("sm_" + std::to_string(a));
    if (a >= 90) // the architecture-specific variant (sm_90a...)
      names.push_back("sm_" + std::to_string(a) + "a");
  }
  return names;
}

bool Nvrtc::compile(const std::string &source,
                    const std::vector<std::string> &arch, std::string &fatbin,
                    std::string &error) const {
  auto number = [](const std::string &a) { return std::atoi(a.c_str() + 3); };
  std::string newest = *std::max_element(
      arch.begin(), arch.end(),
      [&](const std::string &a, const std::string &b) { return number(a) < number(b); });
  Fatbin fb = nullptr;
  const char *fbOptions[] = {"-64", "-compress=true"};
  if (api_->fbCreate(&fb, fbOptions, 2))
    return (error = "nvFatbin could not start", false);
  bool ok = true;
  for (const std::string &a : arch) {
    Program p = nullptr;
    if (api_->create(&p, source.c_str(), "kernels.cu", 0, nullptr, nullptr))
      ok = (error = "NVRTC could not create a program", false);
    std::vector<std::string> options = {"-arch=" + a, "-I" + include_};
    for (llvm::StringRef f : llvm::split(kFlags, ' '))
      options.push_back(f.str());
    std::vector<const char *> argv;
    for (const std::string &o : options)
      argv.push_back(o.c_str());
    if (ok && api_->compileProgram(p, (int)argv.size(), argv.data())) {
      size_t n = 0;
      api_->logSize(p, &n);
      std::string log(n, '\0');
      api_->log(p, log.data());
      error = firstErrorLine(log, "NVRTC failed for " + a);
      ok = false;
    }
    std::string target = a.substr(3); // "90a"
    if (ok) {
      size_t n = 0;
      api_->cubinSize(p, &n);
      std::string cubin(n, '\0');
      api_->cubin(p, cubin.data());
      ok = !api_->fbAddCubin(fb, cubin.data(), n, target.c_str(), "kernels") ||
           (error = "nvFatbin refused the " + a + " code", false);
    }
    if (ok && a == newest) { // PTX, so a newer GPU can JIT it
      size_t n = 0;
      api_->ptxSize(p, &n); // with its terminating NUL
      std::string ptx(n, '\0');
      api_->ptx(p, ptx.data());
      ok = !api_->fbAddPtx(fb, ptx.c_str(), n, target.c_str(), "kernels",
                           "-fmad=false") ||
           (error = "nvFatbin refused the " + a + " PTX", false);
    }
    if (p)
      api_->destroy(&p);
    if (!ok)
      break;
  }
  if (ok) {
    size_t n = 0;
    api_->fbSize(fb, &n);
    fatbin.assign(n, '\0');
    api_->fbGet(fb, fatbin.data());
  }
  api_->fbDestroy(&fb);
  return ok;
}

} // namespace mpc
