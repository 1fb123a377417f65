//===- LibraryLoader.cpp - find and dlopen an NVIDIA library ----------------===//

#include "runtime/cuda/LibraryLoader.h"

#include <cstdlib>
#include <dlfcn.h>
#include <glob.h>
#include <vector>

namespace mpc::rt {
namespace {

std::vector<std::string> candidates(const std::string &soname) {
  std::vector<std::string> paths = {soname};
  if (const char *home = std::getenv("CUDA_HOME"); home && *home)
    paths.push_back(std::string(home) + "/lib64/" + soname);
  paths.push_back("/usr/local/cuda/lib64/" + soname);
  paths.push_back("/usr/local/cuda/targets/x86_64-linux/lib/" + soname);
  // The wheels: nvidia-cublas (CUDA 13) under nvidia/cu13/lib, cuDNN's
  // under nvidia/cudnn/lib, NCCL's under nvidia/nccl/lib.
  for (const char *site :
       {"/usr/local/lib/python3*/dist-packages", "/usr/lib/python3*/dist-packages",
        "/usr/local/lib/python3*/site-packages",
        "/opt/*/.venv/lib/python3*/site-packages",
        "/root/.pyenv/versions/*/lib/python3*/site-packages"})
    for (const char *sub :
         {"/nvidia/cu13/lib/", "/nvidia/cudnn/lib/", "/nvidia/nccl/lib/"}) {
      glob_t g;
      std::string pattern = std::string(site) + sub + soname;
      if (glob(pattern.c_str(), 0, nullptr, &g) == 0)
        for (size_t i = 0; i < g.gl_pathc; ++i)
          paths.push_back(g.gl_pathv[i]);
      globfree(&g);
    }
  return paths;
}

} // namespace

void *openNvidiaLibrary(const char *soname, const char *envVar,
                        std::string &path, std::string &why) {
  const char *named = std::getenv(envVar);
  std::vector<std::string> paths =
      named && *named ? std::vector<std::string>{named} : candidates(soname);
  for (const std::string &p : paths)
    if (void *lib = dlopen(p.c_str(), RTLD_NOW | RTLD_LOCAL)) {
      path = p;
      return lib;
    }
  why = std::string(soname) + " not found" +
        (named && *named ? " (" + std::string(envVar) + "=" + named + ")"
                         : std::string());
  return nullptr;
}

} // namespace mpc::rt
