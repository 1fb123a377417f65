//===- Nccl.cpp - dlopen NCCL ---------------------------------------------===//

#include "runtime/cuda/Nccl.h"
#include "runtime/cuda/LibraryLoader.h"

#include <dlfcn.h>
#include <type_traits>

namespace mpc::rt::nccl {

std::string Library::load() {
  if (lib)
    return "";
  std::string why;
  if (!(lib = openNvidiaLibrary("libnccl.so.2", "MPC_NCCL", path, why)))
    return why;
  auto sym = [&](auto &fn, const char *name) {
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(
        dlsym(lib, name));
    return fn != nullptr;
  };
  bool ok = sym(getVersion, "ncclGetVersion") &&
            sym(errorString, "ncclGetErrorString") &&
            sym(getUniqueId, "ncclGetUniqueId") &&
            sym(commInitRank, "ncclCommInitRank") &&
            sym(commDestroy, "ncclCommDestroy") &&
            sym(commAbort, "ncclCommAbort") &&
            sym(allReduce, "ncclAllReduce") &&
            sym(groupStart, "ncclGroupStart") && sym(groupEnd, "ncclGroupEnd");
  if (!ok) {
    dlclose(lib);
    lib = nullptr;
    return path + " lacks an NCCL entry point";
  }
  return "";
}

std::string Library::describe() const {
  int v = 0; // major * 10000 + minor * 100 + patch since 2.9
  getVersion(&v);
  return "NCCL " + std::to_string(v / 10000) + "." +
         std::to_string(v / 100 % 100) + "." + std::to_string(v % 100) +
         " (" + path + ")";
}

Library &library() {
  static Library l;
  return l;
}

} // namespace mpc::rt::nccl
