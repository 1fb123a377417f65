//===- TrainedModel.cpp - the model mpc train writes (-o) -----------------===//

#include "TrainedModel.h"

#include "frontend/ModelLoader.h"
#include "ir/MpcOps.h"

#include <cstring>

namespace mpc {

void addInitialParams(const rt::Plan &plan,
                      std::map<std::string, rt::Tensor> &params) {
  for (const rt::Parameter &p : plan.params)
    if (!params.count(p.name)) {
      rt::Tensor copy(p.init.dtype(), p.init.shape());
      std::memcpy(copy.raw(), p.init.raw(), p.init.bytes());
      params[p.name] = std::move(copy);
    }
}

std::vector<LoraPair> loraPairs(mlir::ModuleOp module) {
  std::vector<LoraPair> pairs;
  for (auto param : module.getOps<mlir::mpc::ParamOp>()) {
    auto base = param->getAttrOfType<mlir::FlatSymbolRefAttr>("mpc.lora_base");
    auto b = param->getAttrOfType<mlir::FlatSymbolRefAttr>("mpc.lora_b");
    auto scale = param->getAttrOfType<mlir::FloatAttr>("mpc.lora_scale");
    auto transposed =
        param->getAttrOfType<mlir::BoolAttr>("mpc.lora_transposed");
    if (base && b && scale && transposed)
      pairs.push_back({base.getValue().str(), param.getSymName().str(),
                       b.getValue().str(), scale.getValueAsDouble(),
                       transposed.getValue()});
  }
  return pairs;
}

bool mergeAdapters(const std::vector<LoraPair> &pairs,
                   std::map<std::string, rt::Tensor> &held,
                   const std::map<std::string, rt::Tensor> &bases,
                   std::string &error) {
  for (const LoraPair &p : pairs) {
    auto find = [](const std::map<std::string, rt::Tensor> &m,
                   const std::string &name) {
      auto it = m.find(name);
      return it == m.end() ? nullptr : &it->second;
    };
    const rt::Tensor *w = find(held, p.base), *a = find(held, p.a),
                     *b = find(held, p.b);
    if (!w)
      w = find(bases, p.base);
    if (!w || !a || !b || a->shape().size() != 2 || b->shape().size() != 2 ||
        w->size() != a->shape()[0] * b->shape()[1])
      return (error = "cannot merge the adapters of '" + p.base +
                      "': a tensor is missing or misshapen",
              false);
    const rt::Tensor &wt = *w, &at = *a, &bt = *b;
    const int64_t in = at.shape()[0], r = at.shape()[1], out = bt.shape()[1];
    rt::Tensor merged(rt::DType::F32, wt.shape());
    for (int64_t i = 0; i < in; ++i)
      for (int64_t o = 0; o < out; ++o) {
        double delta = 0;
        for (int64_t k = 0; k < r; ++k)
          delta += (double)at.getFloat(i * r + k) * bt.getFloat(k * out + o);
        int64_t at_w = p.transposed ? o * in + i : i * out + o;
        merged.setFloat(at_w, (float)(wt.getFloat(at_w) + p.scale * delta));
      }
    held.erase(p.a);
    held.erase(p.b);
    held[p.base] = std::move(merged);
  }
  return true;
}

bool writeTrainedModel(const std::string &model, const std::string &path,
                       std::map<std::string, rt::Tensor> held,
                       const rt::StoredLayouts &stored,
                       const std::vector<LoraPair> &lora,
                       const std::map<std::string, rt::Tensor> &bases,
                       std::string &error) {
  if (!mergeAdapters(lora, held, bases, error))
    return false;
  std::map<std::string, std::string> weights;
  for (const auto &[name, value] : held) {
    rt::Tensor t = rt::toOnnxLayout(stored, name, value);
    weights[name].assign(static_cast<const char *>(t.raw()), t.bytes());
  }
  return mlir::mpc::writeModelWithWeights(model, path, weights, error);
}

} // namespace mpc
