//===- CublasLt.cpp - dlopen cuBLASLt -------------------------------------===//

#include "runtime/cuda/CublasLt.h"

#include "runtime/cuda/LibraryLoader.h"

#include <dlfcn.h>
#include <type_traits>

namespace mpc::rt::lt {

std::string Library::load() {
  if (lib)
    return "";
  std::string why;
  if (!(lib = openNvidiaLibrary("libcublasLt.so.13", "MPC_CUBLASLT", path, why)))
    return why;
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
