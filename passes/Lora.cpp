//===- Lora.cpp - low-rank adapters on a model's linear weights -----------===//
//
// LoRA as PEFT trains it: the frozen weight W of each targeted linear
// layer is read as before and the layer's result gains s * (x A) B, with
// A [in, r] drawn uniform in +-1/sqrt(in) and B [r, out] zero, so the
// first step computes the model as given. Only the adapters (and what
// `train` names) stay trainable: the backward computes their small
// gradients and the frozen weights' none, and the optimizer keeps state
// for the adapters alone. Run first in the train pipeline, on the graph as
// imported, so the precision passes type the adapters' products as any
// other matmul's.
//
//===----------------------------------------------------------------------===//

#include "ir/MpcOps.h"
#include "passes/Passes.h"
#include "runtime/SeededWeights.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/Support/Regex.h"

#include <cmath>
#include <tuple>

namespace mlir::mpc {
#define GEN_PASS_DEF_LORA
#include "passes/Passes.h.inc"
} // namespace mlir::mpc

using namespace mlir;
using namespace mlir::mpc;

namespace {

/// A linear layer reading a parameter as its weight: `transposed` when it
/// reads the stored matrix as [out, in].
struct Reader {
  Operation *op;
  bool transposed;
};

/// The linear layers reading `v` (the parameter, through casts and 2-D
/// transposes) as their weight; false with `bad` the first other reader.
bool linearReaders(Value v, bool transposed, SmallVectorImpl<Reader> &out,
                   Operation *&bad) {
  for (OpOperand &use : v.getUses()) {
    Operation *op = use.getOwner();
    if (auto c = dyn_cast<CastOp>(op)) {
      if (!linearReaders(c.getY(), transposed, out, bad))
        return false;
    } else if (auto t = dyn_cast<TransposeOp>(op);
               t && transposedMatrix(t.getY()) == v) {
      if (!linearReaders(t.getY(), !transposed, out, bad))
        return false;
    } else if (isa<MatMulOp>(op) && use.getOperandNumber() == 1) {
      out.push_back({op, transposed});
    } else if (auto g = dyn_cast<GemmOp>(op);
               g && use.getOperandNumber() == 1 && !g.getTransA()) {
      out.push_back({op, transposed != g.getTransB()});
    } else {
      bad = op;
      return false;
    }
  }
  return true;
}

struct Lora : public mlir::mpc::impl::LoraBase<Lora> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (rank < 1) {
      module.emitError("lora: the rank must be at least 1, got ")
          << (int64_t)rank;
      return signalPassFailure();
    }
    std::string regexError;
    llvm::Regex target("^(" + targets + ")$"), keep("^(" + train + ")$");
    if (!target.isValid(regexError) || !keep.isValid(regexError)) {
      module.emitError("lora: not a regular expression: ") << regexError;
      return signalPassFailure();
    }
    const double scale = (alpha > 0 ? alpha : (double)rank) / (double)rank;
    llvm::DenseSet<Attribute> adapters;
    llvm::DenseMap<Attribute, std::pair<ParamOp, ParamOp>> made;
    for (auto f : llvm::to_vector(module.getOps<func::FuncOp>())) {
      if (f.isExternal())
        continue;
      for (unsigned i = 0, n = f.getNumArguments(); i < n; ++i) {
        auto sym = f.getArgAttrOfType<FlatSymbolRefAttr>(i, "mpc.param");
        auto param = sym ? module.lookupSymbol<ParamOp>(sym) : ParamOp();
        auto type = param ? dyn_cast<RankedTensorType>(param.getType())
                          : RankedTensorType();
        if (!param || !param.getTrainable() || !type || type.getRank() != 2 ||
            !isa<FloatType>(type.getElementType()) || adapters.contains(sym) ||
            (!targets.empty() && !target.match(sym.getValue())))
          continue;
        SmallVector<Reader> readers;
        Operation *bad = nullptr;
        if (!linearReaders(f.getArgument(i), false, readers, bad) ||
            readers.empty() || llvm::any_of(readers, [&](const Reader &r) {
              return r.transposed != readers.front().transposed;
            })) {
          if (targets.empty())
            continue; // every linear weight: this one is not only that
          if (bad)
            bad->emitError("lora: parameter ")
                << sym << " is read here by " << bad->getName()
                << ", not as a linear layer's weight (LoRA adapts the "
                   "weights only linear layers read)";
          else
            f.emitError("lora: parameter ")
                << sym
                << (readers.empty() ? " is read by no linear layer"
                                    : " is read both as [in, out] and "
                                      "[out, in]");
          return signalPassFailure();
        }
        auto &[a, b] = made[sym]; // once per weight, whichever functions
        if (!a)
          std::tie(a, b) =
              adaptersOf(module, param, readers.front().transposed, scale);
        if (!a)
          return signalPassFailure();
        adapters.insert(FlatSymbolRefAttr::get(a.getSymNameAttr()));
        adapters.insert(FlatSymbolRefAttr::get(b.getSymNameAttr()));
        Value aArg = addArgument(f, a), bArg = addArgument(f, b);
        for (const Reader &r : readers)
          adapt(r.op, aArg, bArg, scale);
      }
    }
    if (adapters.empty()) {
      module.emitError("lora: ")
          << (targets.empty() ? std::string("no parameter")
                              : "targets '" + targets + "' match no parameter")
          << " read only by linear layers as their weight";
      return signalPassFailure();
    }
    for (auto param : module.getOps<ParamOp>())
      if (param.getTrainable() &&
          !adapters.contains(FlatSymbolRefAttr::get(param.getSymNameAttr())) &&
          (train.empty() || !keep.match(param.getSymName())))
        param.setTrainable(false);
  }

  /// `<p>.lora_A` [in, r] and `<p>.lora_B` [r, out] (FP32), placed after
  /// `param`; null after an error.
  std::pair<ParamOp, ParamOp> adaptersOf(ModuleOp module, ParamOp param,
                                         bool transposed, double scale) {
    auto type = cast<RankedTensorType>(param.getType());
    int64_t in = type.getDimSize(transposed ? 1 : 0),
            out = type.getDimSize(transposed ? 0 : 1);
    std::string name = param.getSymName().str();
    for (const char *suffix : {".lora_A", ".lora_B"})
      if (module.lookupSymbol(name + suffix)) {
        param.emitError("lora: the model already has a parameter ")
            << name << suffix;
        return {};
      }
    OpBuilder b(param->getContext());
    b.setInsertionPointAfter(param);
    Type f32 = b.getF32Type();
    auto aType = RankedTensorType::get({in, rank}, f32);
    auto bType = RankedTensorType::get({rank, out}, f32);
    ::mpc::rt::Tensor drawn(::mpc::rt::DType::F32, {in, rank});
    // Uniform in +-1/sqrt(in): the standard deviation times sqrt(3).
    ::mpc::rt::drawSeeded(drawn, name + ".lora_A",
                          {0, 0.0, 1.0 / std::sqrt(3.0 * (double)in)});
    auto aValue = DenseElementsAttr::get(
        aType, ArrayRef<float>(drawn.data<float>(), drawn.size()));
    auto a =
        b.create<ParamOp>(param.getLoc(), b.getStringAttr(name + ".lora_A"),
                          b.getUnitAttr(), TypeAttr::get(aType), aValue);
    auto bp = b.create<ParamOp>(
        param.getLoc(), b.getStringAttr(name + ".lora_B"), b.getUnitAttr(),
        TypeAttr::get(bType),
        DenseElementsAttr::get(bType, b.getFloatAttr(f32, 0.0)));
    a->setAttr("mpc.lora_base", FlatSymbolRefAttr::get(param.getSymNameAttr()));
    a->setAttr("mpc.lora_b", FlatSymbolRefAttr::get(bp.getSymNameAttr()));
    a->setAttr("mpc.lora_scale", b.getF64FloatAttr(scale));
    a->setAttr("mpc.lora_transposed", b.getBoolAttr(transposed));
    return {a, bp};
  }

  Value addArgument(func::FuncOp f, ParamOp param) {
    Builder b(f.getContext());
    f.insertArgument(
        f.getNumArguments(), param.getType(),
        b.getDictionaryAttr(b.getNamedAttr(
            "mpc.param", FlatSymbolRefAttr::get(param.getSymNameAttr()))),
        param.getLoc());
    return f.getArguments().back();
  }

  /// `linear`'s result plus s * ((x A) B), in x's element type, at the
  /// layer's location: the second product one Gemm with the scale as its
  /// alpha and the layer's result as its C (beta 1), on the rows viewed
  /// 2-D, so the sum costs no kernel of its own; an elementwise scale and
  /// add where shapes are dynamic.
  void adapt(Operation *linear, Value a, Value bArg, double scale) {
    OpBuilder b(linear->getContext());
    b.setInsertionPointAfter(linear);
    Location loc = linear->getLoc();
    Value x = linear->getOperand(0), y = linear->getResult(0);
    Type element = cast<RankedTensorType>(x.getType()).getElementType();
    auto as = [&](Value v) -> Value {
      auto t = cast<RankedTensorType>(v.getType());
      return t.getElementType() == element
                 ? v
                 : Value(b.create<CastOp>(loc, t.clone(element), v));
    };
    auto build = [&](StringRef name, ValueRange operands,
                     ArrayRef<NamedAttribute> attrs = {}) {
      return (*createInferred(b, loc, name, operands, attrs))->getResult(0);
    };
    if (auto g = dyn_cast<GemmOp>(linear))
      scale *= g.getAlphaAttr().getValueAsDouble();
    Value xa = build(MatMulOp::getOperationName(), {x, as(a)});
    auto yt = cast<RankedTensorType>(y.getType());
    auto xat = cast<RankedTensorType>(xa.getType());
    Operation *keep = nullptr; // the op reading y that the sum replaces
    Value sum;
    if (yt.hasStaticShape() && xat.hasStaticShape()) {
      int64_t out = yt.getShape().back(), rows = yt.getNumElements() / out;
      Value xa2 = reshapeTo(b, loc, xa, {rows, rank});
      Value y2 = reshapeTo(b, loc, y, {rows, out});
      keep = y2 == y ? nullptr : y2.getDefiningOp();
      Value g = build(GemmOp::getOperationName(), {xa2, as(bArg), y2},
                      {b.getNamedAttr("alpha", b.getF32FloatAttr(scale))});
      keep = keep ? keep : g.getDefiningOp();
      sum = reshapeTo(b, loc, g, yt.getShape());
    } else {
      Value xab = build(MatMulOp::getOperationName(), {xa, as(bArg)});
      auto scalar = RankedTensorType::get({}, element);
      Value s = b.create<ConstantOp>(
          loc, DenseElementsAttr::get(scalar, b.getFloatAttr(element, scale)));
      sum = build(AddOp::getOperationName(),
                  {y, build(MulOp::getOperationName(), {xab, s})});
      keep = sum.getDefiningOp();
    }
    y.replaceAllUsesExcept(sum, keep);
  }
};

} // namespace
