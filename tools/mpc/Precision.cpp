//===- Precision.cpp - --precision and the mixed-precision flags ----------===//

#include "Precision.h"

#include "passes/Passes.h"

#include "llvm/ADT/StringExtras.h"

using namespace llvm;

namespace mpc {

PrecisionFlags::PrecisionFlags(cl::SubCommand &sub, bool training)
    : precision("precision",
                cl::desc("fp32 | fp16 | bf16: low-precision compute with FP32 "
                         "accumulation and FP32 master weights"),
                cl::init("fp32"), cl::sub(sub)),
      ampAllow("amp-allow", cl::CommaSeparated,
               cl::desc("ONNX op types to run in low precision"),
               cl::value_desc("Op,.."), cl::sub(sub)),
      ampDeny("amp-deny", cl::CommaSeparated,
              cl::desc("ONNX op types to keep in FP32"),
              cl::value_desc("Op,.."), cl::sub(sub)),
      ampKeepFp32("amp-keep-fp32", cl::CommaSeparated,
                  cl::desc("Node names to keep in FP32"),
                  cl::value_desc("node,.."), cl::sub(sub)),
      ampConfig("amp-config",
                cl::desc("File of 'allow = Op,..', 'deny = Op,..', "
                         "'keep-fp32 = node,..' lines"),
                cl::value_desc("file"), cl::sub(sub)) {
  if (training)
    lossScale = std::make_unique<cl::opt<std::string>>(
        "loss-scale",
        cl::desc("none | static:S | dynamic[:init=65536,growth=2,backoff=0.5,"
                 "interval=2000,min=1,max=16777216] (default: dynamic for "
                 "fp16, none otherwise)"),
        cl::sub(sub));
}

namespace {

struct LossScaleSpec {
  std::string mode;
  mlir::mpc::LossScalingOptions options;
};

bool parseLossScale(StringRef spec, StringRef precision, LossScaleSpec &out,
                    std::string &error) {
  if (spec.empty())
    spec = precision == "fp16" ? "dynamic" : "none";
  auto [mode, rest] = spec.split(':');
  out.mode = mode.str();
  out.options.mode = mode.str();
  if (mode == "none")
    return rest.empty() ||
           (error = "--loss-scale none takes no value", false);
  if (mode == "static") {
    double s;
    if (rest.getAsDouble(s) || !(s > 0)) {
      error = "--loss-scale static:S needs a positive scale, got '" +
              spec.str() + "'";
      return false;
    }
    out.options.scale = s;
    return true;
  }
  if (mode != "dynamic") {
    error = "--loss-scale must be none, static:S or dynamic[:k=v,...], got '" +
            spec.str() + "'";
    return false;
  }
  SmallVector<StringRef> items;
  rest.split(items, ',', -1, false);
  for (StringRef item : items) {
    auto [key, value] = item.split('=');
    double v;
    if (value.getAsDouble(v)) {
      error = "--loss-scale dynamic: '" + item.str() + "' is not key=number";
      return false;
    }
    if (key == "init")
      out.options.scale = v;
    else if (key == "growth")
      out.options.growth = v;
    else if (key == "backoff")
      out.options.backoff = v;
    else if (key == "interval")
      out.options.interval = (int64_t)v;
    else if (key == "min")
      out.options.minScale = v;
    else if (key == "max")
      out.options.maxScale = v;
    else {
      error = "--loss-scale dynamic: unknown setting '" + key.str() +
              "' (init, growth, backoff, interval, min, max)";
      return false;
    }
  }
  auto &o = out.options;
  if (!(o.scale > 0) || !(o.minScale > 0) || o.minScale > o.maxScale ||
      !(o.growth >= 1) || !(o.backoff > 0 && o.backoff < 1) ||
      o.interval < 1) {
    error = "--loss-scale dynamic: need init > 0, 0 < min <= max, growth >= "
            "1, 0 < backoff < 1, interval >= 1";
    return false;
  }
  return true;
}

} // namespace

bool PrecisionFlags::validate(std::string &error) const {
  if (precision != "fp32" && precision != "fp16" && precision != "bf16") {
    error = "--precision must be fp32, fp16 or bf16, got '" + precision + "'";
    return false;
  }
  if (!isLow() && (!ampAllow.empty() || !ampDeny.empty() ||
                   !ampKeepFp32.empty() || !ampConfig.empty())) {
    error = "--amp-* flags need --precision fp16 or bf16";
    return false;
  }
  LossScaleSpec spec;
  return !lossScale || parseLossScale(*lossScale, precision, spec, error);
}

std::string PrecisionFlags::lossScaleMode() const {
  LossScaleSpec spec;
  std::string error;
  if (!lossScale || !parseLossScale(*lossScale, precision, spec, error))
    return "none";
  return spec.mode;
}

void PrecisionFlags::addForwardPasses(mlir::OpPassManager &pm) const {
  if (!isLow())
    return;
  addClassifyPass(pm);
  pm.addPass(mlir::mpc::createInsertCasts());
}

void PrecisionFlags::addClassifyPass(mlir::OpPassManager &pm) const {
  mlir::mpc::AmpClassifyOptions options;
  options.precision = precision == "fp16" ? "f16" : "bf16";
  // The options hold ArrayRefs; the pass copies them when created.
  std::vector<std::string> allow(ampAllow.begin(), ampAllow.end()),
      deny(ampDeny.begin(), ampDeny.end()),
      keep(ampKeepFp32.begin(), ampKeepFp32.end());
  options.allow = allow;
  options.deny = deny;
  options.keepFp32 = keep;
  options.config = ampConfig;
  pm.addPass(mlir::mpc::createAmpClassify(options));
}

void PrecisionFlags::addTrainStepPasses(mlir::OpPassManager &pm) const {
  if (isLow())
    pm.addPass(mlir::mpc::createMasterWeights());
  LossScaleSpec spec;
  std::string error;
  if (!lossScale || !parseLossScale(*lossScale, precision, spec, error))
    return;
  if (spec.mode == "none" && finiteCheck) {
    spec.options.mode = "static";
    spec.options.scale = 1.0;
  }
  if (spec.options.mode != "none")
    pm.addPass(mlir::mpc::createLossScaling(spec.options));
}

} // namespace mpc
