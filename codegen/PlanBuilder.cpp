//===- PlanBuilder.cpp - mpc IR -> runtime execution plan -----------------===//

#include "codegen/PlanBuilder.h"
#include "ir/MpcOps.h"
#include "runtime/AppliedOnly.h"
#include "runtime/PlanText.h"
#include "runtime/TensorLimit.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/Support/FormatVariadic.h"

#include <cstring>

namespace mlir::mpc {

std::optional<rt::DType> dtypeOf(Type t) {
  if (t.isF32())
    return rt::DType::F32;
  if (t.isF16())
    return rt::DType::F16;
  if (t.isBF16())
    return rt::DType::BF16;
  if (t.isInteger(64))
    return rt::DType::I64;
  if (t.isInteger(32))
    return rt::DType::I32;
  if (t.isInteger(1))
    return rt::DType::I1;
  return std::nullopt;
}

namespace {

/// Converts an op attribute to a plan attribute; false when it has no
/// runtime meaning (types, segment sizes).
bool toAttrValue(Attribute a, rt::AttrValue &out) {
  if (auto i = llvm::dyn_cast<IntegerAttr>(a)) {
    out = i.getType().isInteger(1) ? (int64_t)i.getValue().getBoolValue()
                                   : i.getValue().getSExtValue();
    return true;
  }
  if (auto b = llvm::dyn_cast<BoolAttr>(a)) {
    out = (int64_t)b.getValue();
    return true;
  }
  if (llvm::isa<UnitAttr>(a)) { // a flag such as mpc.count_underflow
    out = (int64_t)1;
    return true;
  }
  if (auto f = llvm::dyn_cast<FloatAttr>(a)) {
    out = f.getValueAsDouble();
    return true;
  }
  if (auto s = llvm::dyn_cast<StringAttr>(a)) {
    out = s.str();
    return true;
  }
  if (auto v = llvm::dyn_cast<DenseI64ArrayAttr>(a)) {
    out = std::vector<int64_t>(v.asArrayRef().begin(), v.asArrayRef().end());
    return true;
  }
  if (auto v = llvm::dyn_cast<DenseF32ArrayAttr>(a)) { // a rank-1 f32 tensor
    rt::Tensor t(rt::DType::F32, {(int64_t)v.size()});
    std::copy(v.asArrayRef().begin(), v.asArrayRef().end(), t.data<float>());
    out = std::move(t);
    return true;
  }
  if (auto e = llvm::dyn_cast<ElementsAttr>(a)) {
    out = toTensor(e);
    return true;
  }
  if (auto arr = llvm::dyn_cast<ArrayAttr>(a)) {
    std::vector<std::string> strs;
    for (Attribute x : arr)
      if (auto s = llvm::dyn_cast<StringAttr>(x))
        strs.push_back(s.str());
    out = strs;
    return true;
  }
  return false;
}

/// What the train step's attributes (mpc-autodiff, mpc-loss-scaling,
/// mpc-optimizer) tell the loop that drives it.
rt::TrainInfo trainInfo(func::FuncOp func) {
  rt::TrainInfo info;
  if (auto i = func->getAttrOfType<IntegerAttr>("mpc.loss_index"))
    info.loss = i.getInt();
  if (auto s = func->getAttrOfType<FloatAttr>("mpc.loss_scale_init"))
    info.lossScaleInit = s.getValueAsDouble();
  if (auto lr = func->getAttrOfType<FloatAttr>("mpc.lr"))
    info.lr = (float)lr.getValueAsDouble();
  if (auto spec = func->getAttrOfType<StringAttr>("mpc.lr_schedule")) {
    rt::LrSchedule s;
    std::string error; // mpc-optimizer takes validated specs only
    if (rt::parseLrSchedule(spec.str(), s, error))
      info.lrSchedule = s;
  }
  if (auto n = func->getAttrOfType<IntegerAttr>("mpc.grad_accumulation"))
    info.accumulate = n.getInt();
  if (auto betas = func->getAttrOfType<DenseF32ArrayAttr>("mpc.adam_betas")) {
    info.adamBeta1 = betas[0];
    info.adamBeta2 = betas[1];
  }
  if (auto w = func->getAttrOfType<DenseF64ArrayAttr>("mpc.ema_warmup")) {
    if (w.size() == 3)
      info.emaWarmup = rt::TrainInfo::EmaWarmup{w[0], w[1], w[2], false};
    else if (w.size() == 1) // num_updates' form
      info.emaWarmup = rt::TrainInfo::EmaWarmup{w[0], 0, 1, true};
  }
  for (unsigned i = 0; i < func.getNumResults(); ++i)
    if (auto p = func.getResultAttrOfType<FlatSymbolRefAttr>(i, "mpc.gradient"))
      info.gradients.emplace_back(i, p.getValue().str());
  return info;
}

} // namespace

rt::Tensor toTensor(ElementsAttr attr) {
  auto type = llvm::cast<RankedTensorType>(attr.getType());
  rt::Tensor t(*dtypeOf(type.getElementType()),
               rt::Shape(type.getShape().begin(), type.getShape().end()));
  auto dense = llvm::dyn_cast<DenseElementsAttr>(attr);
  Type elem = type.getElementType();
  if (dense && !elem.isInteger(1)) {
    ArrayRef<char> raw = dense.getRawData();
    size_t width = rt::dtypeSize(t.dtype());
    if (dense.isSplat()) {
      for (int64_t i = 0; i < t.size(); ++i)
        std::memcpy(static_cast<char *>(t.raw()) + i * width, raw.data(),
                    width);
    } else {
      std::memcpy(t.raw(), raw.data(), t.bytes());
    }
    return t;
  }
  int64_t i = 0;
  if (llvm::isa<FloatType>(elem))
    for (APFloat v : attr.getValues<APFloat>())
      t.setFloat(i++, v.convertToFloat());
  else
    for (APInt v : attr.getValues<APInt>())
      t.setInt(i++, elem.isInteger(1) ? (int64_t)v.getBoolValue()
                                      : v.getSExtValue());
  return t;
}

DenseElementsAttr toAttr(const rt::Tensor &t, MLIRContext *ctx) {
  Builder b(ctx);
  static Type (*types[])(Builder &) = {
      [](Builder &b) -> Type { return b.getF32Type(); },
      [](Builder &b) -> Type { return b.getF16Type(); },
      [](Builder &b) -> Type { return b.getBF16Type(); },
      [](Builder &b) -> Type { return b.getI64Type(); },
      [](Builder &b) -> Type { return b.getI32Type(); },
      [](Builder &b) -> Type { return b.getI1Type(); }};
  auto type = RankedTensorType::get(t.shape(),
                                    types[static_cast<int>(t.dtype())](b));
  if (t.dtype() == rt::DType::I1) {
    SmallVector<bool> v(t.data<uint8_t>(), t.data<uint8_t>() + t.size());
    return DenseElementsAttr::get(type, ArrayRef<bool>(v));
  }
  return DenseElementsAttr::getFromRawBuffer(
      type, ArrayRef<char>(static_cast<const char *>(t.raw()), t.bytes()));
}

namespace {

/// Lowers one function: a value id per SSA value, then a step per op.
class Builder {
public:
  Builder(rt::Plan &plan, std::string &error) : plan(plan), error(error) {}

  bool build(func::FuncOp func) {
    Block &body = func.getBody().front();
    if (!bindArguments(func))
      return false;
    if (func->hasAttr("mpc.train_step"))
      plan.train = trainInfo(func);
    for (Operation &op : body) {
      if (auto ret = llvm::dyn_cast<func::ReturnOp>(op)) {
        for (auto [i, v] : llvm::enumerate(ret.getOperands())) {
          auto name = func.getResultAttrOfType<StringAttr>(i, "mpc.output");
          plan.outputs.push_back(
              {name ? name.str() : "output" + std::to_string(i),
               ids.lookup(v)});
        }
      } else if (auto cst = llvm::dyn_cast<ConstantOp>(op)) {
        int id = define(cst.getResult(), &op);
        if (id < 0)
          return false;
        plan.constants[id] = toTensor(cst.getValue());
      } else if (!addStep(op)) {
        return false;
      }
    }
    return true;
  }

private:
  rt::Plan &plan;
  std::string &error;
  llvm::DenseMap<Value, int> ids;

  /// A new value id for `v` (defined by `where`, or an argument); -1 with
  /// `error` when its type is not static.
  int define(Value v, Operation *where) {
    auto t = llvm::dyn_cast<RankedTensorType>(v.getType());
    auto dtype = t ? dtypeOf(t.getElementType()) : std::nullopt;
    auto refuse = [&](const std::string &why) {
      error = "node '" + (where ? nodeNameOf(where->getLoc()) : "") + "' (" +
              (where ? where->getName().getStringRef().str() : "argument") +
              "): value of type " + llvm::formatv("{0}", v.getType()).str() +
              " " + why;
      return -1;
    };
    if (!t || !dtype || !t.hasStaticShape())
      return refuse("is not static; bind the batch or input shapes");
    // What the import let through (attention's scores, which a fused
    // step never holds) is bounded here, before anything allocates it.
    uint64_t bytes = (uint64_t)rt::dtypeSize(*dtype);
    for (int64_t d : t.getShape())
      bytes = d > 0 && bytes > UINT64_MAX / (uint64_t)d ? UINT64_MAX
                                                        : bytes * (uint64_t)d;
    if (bytes > rt::maxTensorBytes())
      return refuse("is " + std::to_string(bytes) + " bytes, over the limit of " +
                    std::to_string(rt::maxTensorBytes()) +
                    " (raise it with --max-tensor-bytes)");
    int id = plan.values.size();
    plan.values.push_back(
        {*dtype, rt::Shape(t.getShape().begin(), t.getShape().end())});
    ids[v] = id;
    return id;
  }

  /// Arguments become parameters (with their mpc.param's initial value) or
  /// named inputs.
  bool bindArguments(func::FuncOp func) {
    auto module = func->getParentOfType<ModuleOp>();
    for (BlockArgument arg : func.getBody().front().getArguments()) {
      int id = define(arg, nullptr);
      if (id < 0)
        return false;
      unsigned n = arg.getArgNumber();
      // Held in another layout than ONNX's (mpc-channels-last's KRSC
      // filters): the initial value is permuted here, the rest at the
      // runtime's edges (runtime/StoredLayouts.h).
      std::vector<int64_t> perm;
      if (auto p = func.getArgAttrOfType<DenseI64ArrayAttr>(n, "mpc.stored_perm"))
        perm.assign(p.asArrayRef().begin(), p.asArrayRef().end());
      if (auto sym = func.getArgAttrOfType<FlatSymbolRefAttr>(n, "mpc.param")) {
        auto param = module.lookupSymbol<ParamOp>(sym);
        rt::Tensor init = toTensor(param.getValue());
        if (!perm.empty()) {
          plan.layouts[sym.getValue().str()] = perm;
          init = rt::permuted(init, perm);
        }
        plan.params.push_back({sym.getValue().str(), id, param.getTrainable(),
                               std::move(init)});
        // --weights seed:N drew it: [seed, mean, std] and, for a parameter
        // stored in FP16/BF16, that type's name (tools/mpc).
        if (auto s = param->getAttrOfType<ArrayAttr>("mpc.seeded");
            s && (s.size() == 3 || s.size() == 4)) {
          rt::SeededInit init{(uint64_t)llvm::cast<IntegerAttr>(s[0]).getInt(),
                              llvm::cast<FloatAttr>(s[1]).getValueAsDouble(),
                              llvm::cast<FloatAttr>(s[2]).getValueAsDouble()};
          if (s.size() == 4)
            rt::plantext::parseDType(llvm::cast<StringAttr>(s[3]).str(),
                                     init.rounding);
          plan.params.back().seeded = init;
        }
      } else {
        auto name = func.getArgAttrOfType<StringAttr>(n, "mpc.input");
        plan.inputs.push_back(
            {name ? name.str() : "arg" + std::to_string(n), id});
        if (!perm.empty())
          plan.layouts[plan.inputs.back().name] = perm;
      }
    }
    return true;
  }

  bool addStep(Operation &op) {
    rt::Step step;
    std::optional<rt::OpId> id =
        op.getDialect() && op.getDialect()->getNamespace() == "mpc"
            ? rt::opFromName(op.getName().stripDialect().str())
            : std::nullopt;
    if (!id || !rt::inPlans(*id)) {
      error = "node '" + nodeNameOf(op.getLoc()) + "' (" +
              op.getName().getStringRef().str() +
              "): this op cannot run; it must be lowered first";
      return false;
    }
    step.op = *id;
    step.name = nodeNameOf(op.getLoc());
    // Attribute-sized operand groups: absent optional operands become -1 so
    // kernels find the others at fixed positions.
    DictionaryAttr props = llvm::dyn_cast_or_null<DictionaryAttr>(
        op.getPropertiesAsAttribute());
    auto segments = props ? props.getAs<DenseI32ArrayAttr>("operandSegmentSizes")
                          : DenseI32ArrayAttr();
    if (segments) {
      unsigned next = 0;
      for (int32_t n : segments.asArrayRef()) {
        if (n == 0)
          step.inputs.push_back(-1);
        for (int32_t k = 0; k < n; ++k)
          step.inputs.push_back(ids.lookup(op.getOperand(next++)));
      }
    } else {
      for (Value v : op.getOperands())
        step.inputs.push_back(ids.lookup(v));
    }
    for (Value r : op.getResults()) {
      int id = define(r, &op);
      if (id < 0)
        return false;
      step.outputs.push_back(id);
    }
    if (props)
      for (NamedAttribute a : props) {
        rt::AttrValue v;
        if (a.getName() != "operandSegmentSizes" && toAttrValue(a.getValue(), v))
          step.attrs[a.getName().str()] = std::move(v);
      }
    // Of the passes' annotations, the runtime needs these two.
    if (auto why = op.getAttrOfType<StringAttr>("mpc.amp"))
      step.amp = why.str();
    step.countUnderflow = op.hasAttr("mpc.count_underflow");
    plan.steps.push_back(std::move(step));
    return true;
  }
};

} // namespace

bool buildPlan(func::FuncOp func, rt::Plan &plan, std::string &error) {
  if (!Builder(plan, error).build(func))
    return false;
  rt::markAppliedOnlySteps(plan);
  return true;
}

} // namespace mlir::mpc
