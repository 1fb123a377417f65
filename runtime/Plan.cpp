//===- Plan.cpp - step attribute access -----------------------------------===//

#include "runtime/Plan.h"

namespace mpc::rt {

int64_t Step::getInt(const std::string &key, int64_t dflt) const {
  auto it = attrs.find(key);
  if (it == attrs.end())
    return dflt;
  if (auto *i = std::get_if<int64_t>(&it->second))
    return *i;
  if (auto *d = std::get_if<double>(&it->second))
    return (int64_t)*d;
  return dflt;
}

double Step::getFloat(const std::string &key, double dflt) const {
  auto it = attrs.find(key);
  if (it == attrs.end())
    return dflt;
  if (auto *d = std::get_if<double>(&it->second))
    return *d;
  if (auto *i = std::get_if<int64_t>(&it->second))
    return (double)*i;
  return dflt;
}

std::string Step::getString(const std::string &key,
                            const std::string &dflt) const {
  auto it = attrs.find(key);
  if (it == attrs.end())
    return dflt;
  auto *s = std::get_if<std::string>(&it->second);
  return s ? *s : dflt;
}

std::optional<std::vector<int64_t>>
Step::getInts(const std::string &key) const {
  auto it = attrs.find(key);
  if (it == attrs.end())
    return std::nullopt;
  if (auto *v = std::get_if<std::vector<int64_t>>(&it->second))
    return *v;
  return std::nullopt;
}

const Tensor *Step::getTensor(const std::string &key) const {
  auto it = attrs.find(key);
  return it == attrs.end() ? nullptr : std::get_if<Tensor>(&it->second);
}

} // namespace mpc::rt
