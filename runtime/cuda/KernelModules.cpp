//===- KernelModules.cpp - an artifact's device code, loaded --------------===//

#include "runtime/cuda/KernelModules.h"

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
      return (error = dir + "/kernels.index names module " +
                      std::to_string(i) + ", which the artifact lacks",
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
  return (error = "kernel " + name + " is in none of the artifact's "
                                     "modules (kernels*.fatbin)",
          false);
}

} // namespace mpc::rt::cu
