//===- KernelModules.cpp - an artifact's device code, loaded --------------===//

#include "runtime/cuda/KernelModules.h"
#include "runtime/cuda/KernelConfig.h"

#include <algorithm>
#include <filesystem>
#include <fstream>

namespace mpc::rt::cu {

KernelModules::~KernelModules() {
  for (Handle m : modules)
    d.moduleUnload(m);
}

bool KernelModules::load(const std::string &dir, std::string &error) {
  std::vector<std::string> images;
  std::error_code ec;
  for (const auto &e : std::filesystem::directory_iterator(dir, ec)) {
    std::string name = e.path().filename().string();
    if (name.rfind("kernels", 0) == 0 && e.path().extension() == ".fatbin")
      images.push_back(name);
  }
  std::sort(images.begin(), images.end());
  if (images.empty())
    return (error = dir + " has no device code (kernels*.fatbin): compile "
                          "it where nvcc is installed",
            false);
  for (const std::string &image : images) {
    Handle m = nullptr;
    std::string path = dir + "/" + image;
    if (Result r = d.moduleLoad(&m, path.c_str()))
      return (error = "loading " + path + ": " + d.describe(r), false);
    modules.push_back(m);
    moduleByFile[image] = m;
  }
  std::ifstream index(dir + "/kernels.index");
  std::string kernel;
  size_t i;
  while (index >> kernel >> i) {
    auto it = moduleByFile.find("kernels." + std::to_string(i) + ".fatbin");
    if (it == moduleByFile.end())
      return (error = dir + "/kernels.index names module " + std::to_string(i) +
                      ", which the artifact lacks",
              false);
    moduleOf[kernel] = it->second;
  }
  return true;
}

bool KernelModules::function(const std::string &name, Handle &fn,
                             std::string &error) {
  if (auto it = moduleOf.find(name); it != moduleOf.end()) {
    if (d.moduleGetFunction(&fn, it->second, name.c_str()) == 0)
      return true;
  } else if (moduleOf.empty()) {
    for (Handle m : modules)
      if (d.moduleGetFunction(&fn, m, name.c_str()) == 0)
        return true;
  }
  return (error = "kernel " + name +
                  " is in none of the artifact's "
                  "modules (kernels*.fatbin)",
          false);
}

bool optInSharedMemory(Driver &d, Device dev, const Plan &plan, const Step &s,
                       const std::string &kernel, Handle fn, int64_t bytes,
                       std::string &error) {
  if (bytes <= cuda::kDefaultSharedBytes)
    return true;
  int most = 0; // CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN
  if (!d.check(d.deviceAttribute(&most, 97, dev), "cuDeviceGetAttribute",
               error))
    return false;
  if (bytes > most) {
    // Tiles are sized for the artifact's --arch (sm_80's code runs on
    // sm_86/89, whose SMs have 100 KiB): name the one to build for.
    int major = 0, minor = 0; // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_*
    d.deviceAttribute(&major, 75, dev);
    d.deviceAttribute(&minor, 76, dev);
    std::string built;
    for (const std::string &a : plan.cudaArch)
      built += (built.empty() ? "" : ",") + a;
    return (error =
                "node '" + s.name + "' (" + opName(s.op) + "): kernel " +
                kernel + " needs " + std::to_string(bytes) +
                " bytes of shared memory; this GPU gives a block at most " +
                std::to_string(most) +
                (built.empty() ? std::string() : " (built for " + built + ")") +
                "; compile it again with --arch sm_" +
                std::to_string(major * 10 + minor) + " (or native)",
            false);
  }
  // CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
  return d.check(d.funcSetAttribute(fn, 8, (int)bytes),
                 "cuFuncSetAttribute(" + kernel + ")", error);
}

} // namespace mpc::rt::cu
