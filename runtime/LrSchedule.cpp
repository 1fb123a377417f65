//===- LrSchedule.cpp - learning-rate schedules over optimizer steps ------===//

#include "runtime/LrSchedule.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <sstream>

namespace mpc::rt {

double LrSchedule::factor(int64_t t, int64_t runSteps) const {
  const double s = (double)(t - 1); // the scheduler's step count
  if (s < (double)warmup)
    return s / (double)std::max<int64_t>(1, warmup);
  const double span =
      (double)std::max<int64_t>(1, (total > 0 ? total : runSteps) - warmup);
  if (kind == "linear") // get_linear_schedule_with_warmup
    return std::max(0.0, ((double)(total > 0 ? total : runSteps) - s) / span);
  if (kind == "cosine") { // get_cosine_schedule_with_warmup (half a cycle)
    const double progress = (s - (double)warmup) / span;
    const double pi = std::acos(-1.0);
    const double f = std::max(0.0, 0.5 * (1.0 + std::cos(pi * progress)));
    return f * (1.0 - minFactor) + minFactor;
  }
  if (kind == "step") // StepLR after the warmup
    return std::pow(gamma, std::floor((s - (double)warmup) / (double)every));
  return 1.0;
}

bool parseLrSchedule(const std::string &spec, LrSchedule &out,
                     std::string &error) {
  const std::string form = "--lr-schedule takes constant, linear or cosine "
                           "[,warmup=N][,total=N][,min=F], or step,every=N"
                           "[,gamma=G][,warmup=N]; got '" +
                           spec + "'";
  LrSchedule s;
  std::stringstream fields(spec);
  std::string field;
  bool first = true;
  while (std::getline(fields, field, ',')) {
    if (first) {
      first = false;
      if (field != "constant" && field != "linear" && field != "cosine" &&
          field != "step")
        return (error = form, false);
      s.kind = field;
      continue;
    }
    size_t eq = field.find('=');
    std::string key = field.substr(0, eq),
                value = eq == std::string::npos ? "" : field.substr(eq + 1);
    char *end = nullptr;
    double v = std::strtod(value.c_str(), &end);
    bool number = !value.empty() && *end == '\0' && std::isfinite(v);
    bool count = number && v >= 0 && v == std::floor(v);
    if (key == "warmup" && count)
      s.warmup = (int64_t)v;
    else if (key == "total" && count && v > 0 && s.kind != "step")
      s.total = (int64_t)v;
    else if (key == "min" && number && v >= 0 && v <= 1 && s.kind == "cosine")
      s.minFactor = v;
    else if (key == "every" && count && v > 0 && s.kind == "step")
      s.every = (int64_t)v;
    else if (key == "gamma" && number && v > 0 && s.kind == "step")
      s.gamma = v;
    else
      return (error = form, false);
  }
  if (first || (s.kind == "step" && s.every == 0))
    return (error = form, false);
  s.spec = spec;
  out = s;
  return true;
}

} // namespace mpc::rt
