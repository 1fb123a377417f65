//===- PhaseSpecs.cpp - --phase values and recipe files -------------------===//

#include "PhaseSpecs.h"

#include <map>

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"

namespace mpc {

/// loss=OUTPUT,params=REGEX[,optimizer=K][,lr=X][,momentum=X]
/// [,weight-decay=X][,betas=B1/B2][,ema=DECAY][,ema-warmup=W]. A comma not
/// followed by a known key belongs to the value before it (regular
/// expressions and ema-warmup's POWER,GAMMA may hold commas).
bool parsePhase(const std::string &spec, PhaseSpec &out, std::string &error) {
  static const char *keys[] = {"loss",  "params",   "optimizer",
                               "lr",    "momentum", "weight-decay",
                               "betas", "ema",      "ema-warmup"};
  llvm::SmallVector<std::pair<std::string, std::string>> items;
  llvm::SmallVector<llvm::StringRef> parts;
  llvm::StringRef(spec).split(parts, ',');
  for (llvm::StringRef part : parts) {
    auto [key, value] = part.split('=');
    if (part.contains('=') && llvm::is_contained(keys, key))
      items.emplace_back(key.str(), value.str());
    else if (!items.empty())
      items.back().second += "," + part.str();
    else
      return (error = "--phase '" + spec +
                      "': expected loss=OUTPUT,"
                      "params=REGEX[,optimizer=K,lr=X,momentum=X,"
                      "weight-decay=X,betas=B1/B2,ema=DECAY,ema-warmup=W]",
              false);
  }
  auto number = [&](const std::string &key, const std::string &v,
                    std::optional<double> &to) {
    double d;
    if (llvm::StringRef(v).getAsDouble(d))
      return (error = "--phase '" + spec + "': " + key + " must be a number",
              false);
    return to = d, true;
  };
  for (auto &[key, value] : items) {
    bool ok = true;
    if (key == "loss")
      out.loss = value;
    else if (key == "params")
      out.params = value;
    else if (key == "optimizer")
      out.optimizer = value;
    else if (key == "lr")
      ok = number(key, value, out.lr);
    else if (key == "momentum")
      ok = number(key, value, out.momentum);
    else if (key == "weight-decay")
      ok = number(key, value, out.weightDecay);
    else if (key == "ema")
      ok = number(key, value, out.ema);
    else if (key == "ema-warmup")
      out.emaWarmup = value;
    else if (key == "betas") {
      auto [b1, b2] = llvm::StringRef(value).split('/');
      std::optional<double> x, y;
      ok = number(key, b1.str(), x) && number(key, b2.str(), y);
      if (ok)
        out.betas = {*x, *y};
    }
    if (!ok)
      return false;
  }
  if (out.loss.empty() || out.params.empty())
    return (error = "--phase '" + spec + "' needs both loss= and params=",
            false);
  return true;
}


bool readRecipe(const std::string &path, std::vector<PhaseSpec> &phases,
                std::string &lossScaler, std::string &error) {
  auto file = llvm::MemoryBuffer::getFile(path, /*IsText=*/true);
  if (!file)
    return (error = path + ": " + file.getError().message(), false);
  llvm::Expected<llvm::json::Value> parsed =
      llvm::json::parse((*file)->getBuffer());
  if (!parsed)
    return (error = path + ": not JSON: " + llvm::toString(parsed.takeError()),
            false);
  auto bad = [&](const std::string &where, const std::string &what) {
    return (error = path + ": " + where + " " + what, false);
  };
  const llvm::json::Object *root = parsed->getAsObject();
  if (!root)
    return bad("the recipe", "must be an object with \"phases\"");
  for (const auto &[key, value] : *root)
    if (key != "phases" && key != "loss_scaler")
      return bad("\"" + key.str() + "\"",
                 "is not a recipe field (phases, loss_scaler)");
  if (const llvm::json::Value *v = root->get("loss_scaler")) {
    std::optional<llvm::StringRef> s = v->getAsString();
    if (!s || (*s != "shared" && *s != "per-phase"))
      return bad("loss_scaler", "must be \"shared\" or \"per-phase\"");
    lossScaler = s->str();
  }
  const llvm::json::Array *list = root->getArray("phases");
  if (!list || list->empty())
    return bad("phases", "must be a non-empty array");
  for (size_t k = 0; k < list->size(); ++k) {
    std::string at = "phases[" + std::to_string(k) + "]";
    const llvm::json::Object *o = (*list)[k].getAsObject();
    if (!o)
      return bad(at, "must be an object");
    PhaseSpec spec;
    for (const auto &[key, value] : *o) {
      std::string field = at + "." + key.str();
      auto text = [&](std::string &to) {
        std::optional<llvm::StringRef> s = value.getAsString();
        return s ? (to = s->str(), true) : bad(field, "must be a string");
      };
      auto number = [&](std::optional<double> &to) {
        std::optional<double> d = value.getAsNumber();
        return d ? (to = *d, true) : bad(field, "must be a number");
      };
      bool ok;
      if (key == "loss")
        ok = text(spec.loss);
      else if (key == "params")
        ok = text(spec.params);
      else if (key == "optimizer")
        ok = text(spec.optimizer);
      else if (key == "lr")
        ok = number(spec.lr);
      else if (key == "momentum")
        ok = number(spec.momentum);
      else if (key == "weight_decay")
        ok = number(spec.weightDecay);
      else if (key == "ema")
        ok = number(spec.ema);
      else if (key == "ema_warmup")
        ok = text(spec.emaWarmup);
      else if (key == "betas") {
        const llvm::json::Array *b = value.getAsArray();
        std::optional<double> b1, b2;
        if (!b || b->size() != 2 || !(b1 = (*b)[0].getAsNumber()) ||
            !(b2 = (*b)[1].getAsNumber()))
          return bad(field, "must be [beta1, beta2]");
        spec.betas = {*b1, *b2};
        ok = true;
      } else {
        return bad("\"" + field + "\"",
                   "is not a phase field (loss, params, optimizer, lr, "
                   "momentum, weight_decay, betas, ema, ema_warmup)");
      }
      if (!ok)
        return false;
    }
    if (spec.loss.empty() || spec.params.empty())
      return bad(at, "needs both \"loss\" and \"params\"");
    phases.push_back(std::move(spec));
  }
  return true;
}

bool readPhaseList(const std::vector<std::string> &flags,
                   const std::string &recipe, const std::string &scaler,
                   bool scalerGiven, PhaseList &out, std::string &error) {
  out.specs.resize(flags.size());
  for (size_t k = 0; k < flags.size(); ++k) {
    if (!parsePhase(flags[k], out.specs[k], error))
      return false;
    out.spelled.push_back("--phase '" + flags[k] + "'");
  }
  if (!recipe.empty()) {
    if (!flags.empty())
      return (error = "give the phases with --phase or in --recipe, not both",
              false);
    std::string fromFile;
    if (!readRecipe(recipe, out.specs, fromFile, error))
      return false;
    for (size_t k = 0; k < out.specs.size(); ++k)
      out.spelled.push_back(recipe + ": phases[" + std::to_string(k) + "]");
    if (!fromFile.empty())
      out.scaler = fromFile;
  }
  if (scalerGiven)
    out.scaler = scaler;
  if (out.scaler != "per-phase" && out.scaler != "shared")
    return (error = "--loss-scaler must be per-phase or shared, got '" +
                    out.scaler + "'",
            false);
  return true;
}

bool checkPhaseOwners(const PhaseList &phases,
                      const std::vector<std::vector<std::string>> &gradients,
                      std::string &error) {
  std::map<std::string, std::string> owner;
  for (size_t k = 0; k < gradients.size(); ++k)
    for (const std::string &param : gradients[k])
      if (!owner.emplace(param, phases.specs[k].loss).second)
        return (error = "parameter '" + param + "' is trained by phases " +
                        owner[param] + " and " + phases.specs[k].loss +
                        "; give each phase its own parameters",
                false);
  return true;
}

bool checkPhaseEmaWarmup(const PhaseList &phases, const std::string &warmup,
                         std::string &error) {
  if (warmup.empty() || phases.specs.empty() ||
      llvm::any_of(phases.specs,
                   [](const PhaseSpec &s) { return s.ema && *s.ema != 0; }))
    return true;
  return (error = "--ema-warmup warms up a moving average's decay: with "
                  "phases it needs a phase's ema=DECAY",
          false);
}

} // namespace mpc
