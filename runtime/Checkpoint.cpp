//===- Checkpoint.cpp - train state to and from a directory ---------------===//

#include "runtime/Checkpoint.h"
#include "runtime/Npy.h"

#include <filesystem>

namespace mpc::rt {

bool saveCheckpoint(const std::string &dir, int64_t step,
                    const std::map<std::string, Tensor> &params,
                    const std::map<std::string, Tensor> &state,
                    const StoredLayouts &layouts, std::string &error) {
  namespace fs = std::filesystem;
  std::string tmp = dir + ".tmp";
  std::error_code ec;
  fs::remove_all(tmp, ec);
  fs::create_directories(tmp, ec);
  if (ec) {
    error = "cannot create " + tmp + ": " + ec.message();
    return false;
  }
  Tensor s(DType::I64, {});
  s.data<int64_t>()[0] = step;
  if (!writeNpy(tmp + "/step.npy", s, error))
    return false;
  for (const auto &[name, t] : params)
    if (!writeNpy(tmp + "/param." + name + ".npy",
                  toOnnxLayout(layouts, name, t), error))
      return false;
  for (const auto &[name, t] : state)
    if (!writeNpy(tmp + "/state." + name + ".npy",
                  toOnnxLayout(layouts, name, t), error))
      return false;
  std::string old = dir + ".old";
  fs::remove_all(old, ec);
  if (fs::exists(dir))
    fs::rename(dir, old, ec);
  fs::rename(tmp, dir, ec);
  if (ec) {
    error = "cannot write checkpoint " + dir + ": " + ec.message();
    return false;
  }
  fs::remove_all(old, ec);
  return true;
}

bool loadCheckpoint(const std::string &dir, int64_t &step,
                    std::map<std::string, Tensor> &params,
                    std::map<std::string, Tensor> &state,
                    const StoredLayouts &layouts, std::string &error) {
  Tensor s;
  if (!readNpy(dir + "/step.npy", s, error))
    return false;
  step = s.getInt(0);
  for (auto &[name, t] : params) {
    Tensor saved;
    if (!readNpy(dir + "/param." + name + ".npy", saved, error))
      return false;
    if (layouts.count(name) &&
        layouts.at(name).size() == saved.shape().size())
      saved = toStoredLayout(layouts, name, saved);
    if (saved.shape() != t.shape() || saved.dtype() != t.dtype()) {
      error = "checkpoint parameter '" + name + "' does not match the model";
      return false;
    }
    t = std::move(saved);
  }
  for (auto &[name, t] : state) {
    Tensor saved;
    if (!readNpy(dir + "/state." + name + ".npy", saved, error))
      return false;
    if (layouts.count(name)) {
      if (layouts.at(name).size() == saved.shape().size())
        saved = toStoredLayout(layouts, name, saved);
      if (saved.shape() != t.shape() || saved.dtype() != t.dtype()) {
        error = "checkpoint state '" + name + "' does not match the model";
        return false;
      }
    }
    t = std::move(saved);
  }
  return true;
}

} // namespace mpc::rt
