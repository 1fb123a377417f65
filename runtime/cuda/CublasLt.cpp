//===- CublasLt.cpp - dlopen cuBLASLt -------------------------------------===//

#include "runtime/cuda/CublasLt.h"

#include <cstdlib>
#include <dlfcn.h>
#include <glob.h>
#include <type_traits>
#include <vector>

namespace mpc::rt::lt {
namespace {

constexpr const char *kSoname = "libcublasLt.so.13";

/// Where to look, in order: the loader's search path, the toolkit, then
/// NVIDIA's pip wheels (nvidia-cublas) under any Python's site-packages.
std::vector<std::string> candidates() {
  std::vector<std::string> paths = {kSoname};
  if (const char *home = std::getenv("CUDA_HOME"); home && *home)
    paths.push_back(std::string(home) + "/lib64/" + kSoname);
  paths.push_back(std::string("/usr/local/cuda/lib64/") + kSoname);
  paths.push_back(std::string("/usr/local/cuda/targets/x86_64-linux/lib/") +
                  kSoname);
  for (const char *pattern :
       {"/usr/local/lib/python3*/dist-packages/nvidia/cu13/lib/",
        "/usr/lib/python3*/dist-packages/nvidia/cu13/lib/",
        "/opt/*/.venv/lib/python3*/site-packages/nvidia/cu13/lib/",
        "/usr/local/lib/python3*/site-packages/nvidia/cu13/lib/",
        "/root/.pyenv/versions/*/lib/python3*/site-packages/nvidia/cu13/lib/"}) {
    glob_t g;
    std::string full = std::string(pattern) + kSoname;
    if (glob(full.c_str(), 0, nullptr, &g) == 0)
      for (size_t i = 0; i < g.gl_pathc; ++i)
        paths.push_back(g.gl_pathv[i]);
    globfree(&g);
  }
  return paths;
}

} // namespace

std::string Library::load() {
  if (lib)
    return "";
  std::vector<std::string> paths;
  const char *override = std::getenv("MPC_CUBLASLT");
  if (override && *override)
    paths = {override}; // named: that one or none
  else
    paths = candidates();
  for (const std::string &p : paths)
    if ((lib = dlopen(p.c_str(), RTLD_NOW | RTLD_LOCAL))) {
      path = p;
      break;
    }
  if (!lib)
    return std::string(kSoname) + " not found" +
           (override && *override ? std::string(" (MPC_CUBLASLT=") + override + ")"
                                  : std::string());
  auto sym = [&](auto &fn, const char *name) {
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(
        dlsym(lib, name));
    return fn != nullptr;
  };
  bool ok = sym(getVersion, "cublasLtGetVersion") &&
            sym(statusString, "cublasLtGetStatusString") &&
            sym(create, "cublasLtCreate") && sym(destroy, "cublasLtDestroy") &&
            sym(descCreate, "cublasLtMatmulDescCreate") &&
            sym(descSetAttribute, "cublasLtMatmulDescSetAttribute") &&
            sym(descDestroy, "cublasLtMatmulDescDestroy") &&
            sym(layoutCreate, "cublasLtMatrixLayoutCreate") &&
            sym(layoutSetAttribute, "cublasLtMatrixLayoutSetAttribute") &&
            sym(layoutDestroy, "cublasLtMatrixLayoutDestroy") &&
            sym(prefCreate, "cublasLtMatmulPreferenceCreate") &&
            sym(prefSetAttribute, "cublasLtMatmulPreferenceSetAttribute") &&
            sym(prefDestroy, "cublasLtMatmulPreferenceDestroy") &&
            sym(heuristic, "cublasLtMatmulAlgoGetHeuristic") &&
            sym(matmul, "cublasLtMatmul");
  if (!ok) {
    dlclose(lib);
    lib = nullptr;
    return path + " lacks a cuBLASLt entry point";
  }
  return "";
}

std::string Library::describe() const {
  size_t v = getVersion(); // major * 10000 + minor * 100 + patch
  return "cuBLASLt " + std::to_string(v / 10000) + "." +
         std::to_string(v / 100 % 100) + "." + std::to_string(v % 100) +
         " (" + path + ")";
}

std::string Library::statusName(Status s) const {
  const char *text = statusString ? statusString(s) : nullptr;
  return text ? text : "cuBLAS status " + std::to_string(s);
}

Library &library() {
  static Library l;
  return l;
}

} // namespace mpc::rt::lt
