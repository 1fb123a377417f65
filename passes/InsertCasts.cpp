//===- InsertCasts.cpp - retype painted ops, cast at precision boundaries -===//

#include "ir/MpcOps.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/TypeUtilities.h"
#include "mlir/IR/Verifier.h"

namespace mlir::mpc {
#define GEN_PASS_DEF_INSERTCASTS
#include "passes/Passes.h.inc"
} // namespace mlir::mpc

using namespace mlir;
using namespace mlir::mpc;

namespace {

/// Every value of `from` is exactly a value of `to`.
bool isExactWidening(Type from, Type to) {
  return from == to || (to.isF32() && (from.isF16() || from.isBF16()));
}

class CastBuilder {
public:
  explicit CastBuilder(MLIRContext *ctx) : b(ctx) {}

  /// `v` as element type `elem`: v itself, a shared cast, or a folded
  /// constant.
  Value castTo(Value v, Type elem) {
    if (getElementTypeOrSelf(v) == elem)
      return v;
    auto key = std::make_pair(v, elem);
    if (Value cached = cache.lookup(key))
      return cached;
    Value src = v;
    // cast(cast(x)) where the inner cast is exact: cast x directly.
    if (auto inner = v.getDefiningOp<CastOp>()) {
      Type x = getElementTypeOrSelf(inner.getX());
      if (llvm::isa<FloatType>(x) &&
          isExactWidening(x, getElementTypeOrSelf(v))) {
        if (x == elem)
          return cache[key] = inner.getX();
        src = inner.getX();
      }
    }
    auto type = llvm::cast<RankedTensorType>(src.getType()).clone(elem);
    if (auto cst = src.getDefiningOp<ConstantOp>())
      return cache[key] = foldConstant(cst, type);
    if (Operation *def = src.getDefiningOp())
      b.setInsertionPointAfter(def);
    else
      b.setInsertionPointToStart(llvm::cast<BlockArgument>(src).getOwner());
    Location loc = src.getDefiningOp() ? src.getDefiningOp()->getLoc()
                                       : src.getLoc();
    return cache[key] = b.create<CastOp>(loc, type, src);
  }

private:
  /// The constant converted at compile time; finite values beyond the
  /// target's range saturate to its largest finite value.
  Value foldConstant(ConstantOp cst, RankedTensorType type) {
    auto sem = &llvm::cast<FloatType>(type.getElementType()).getFloatSemantics();
    auto dense = llvm::cast<DenseElementsAttr>(cst.getValue());
    SmallVector<APFloat> values;
    int64_t saturated = 0;
    for (APFloat v : dense.getValues<APFloat>()) {
      APFloat x = v;
      bool lost;
      x.convert(*sem, APFloat::rmNearestTiesToEven, &lost);
      if (x.isInfinity() && !v.isInfinity()) {
        x = APFloat::getLargest(*sem, v.isNegative());
        ++saturated;
      }
      values.push_back(x);
    }
    b.setInsertionPointAfter(cst);
    auto folded = b.create<ConstantOp>(cst.getLoc(),
                                       DenseElementsAttr::get(type, values));
    if (saturated)
      folded->setAttr("mpc.amp", b.getStringAttr(
                                     std::to_string(saturated) +
                                     " values beyond the range saturated"));
    return folded;
  }

  OpBuilder b;
  llvm::DenseMap<std::pair<Value, Type>, Value> cache;
};

struct InsertCasts : public mpc::impl::InsertCastsBase<InsertCasts> {
  void runOnOperation() override {
    for (auto f : getOperation().getOps<func::FuncOp>())
      if (failed(retype(f)))
        return signalPassFailure();
  }

  LogicalResult retype(func::FuncOp f) {
    CastBuilder casts(f.getContext());
    Block &body = f.getBody().front();
    SmallVector<Operation *> painted;
    for (Operation &op : body)
      if (op.hasAttr("mpc.precision"))
        painted.push_back(&op);
    for (Operation *op : painted) {
      Type t = op->getAttrOfType<TypeAttr>("mpc.precision").getValue();
      // Ops with FP32 parameters take `t` on their data operand alone.
      bool fp32Params = op->hasTrait<Fp32Parameters>();
      Type f32 = Float32Type::get(op->getContext());
      for (OpOperand &use : op->getOpOperands()) {
        // Dropout's ratio has a type of its own (ONNX's T1): the user's
        // ratio, not its fp16 rounding, sets the threshold and the scale.
        if (isa<DropoutOp>(op) && use.getOperandNumber() == 1)
          continue;
        if (isFloatTensor(use.get().getType()))
          use.set(casts.castTo(use.get(), fp32Params && use.getOperandNumber()
                                              ? f32
                                              : t));
      }
      // Results take `t`, except those the op defines in another type
      // whatever its operands' (attention's FP32 log-sum-exp).
      SmallVector<Type> inferred;
      auto infer = dyn_cast<InferTypeOpInterface>(op);
      if (!infer ||
          failed(infer.inferReturnTypes(
              op->getContext(), op->getLoc(), op->getOperands(),
              op->getRawDictionaryAttrs(), op->getPropertiesStorage(),
              op->getRegions(), inferred)))
        inferred.clear();
      for (OpResult r : op->getResults()) {
        if (!isFloatTensor(r.getType()))
          continue;
        Type elem = t;
        if (r.getResultNumber() < inferred.size() &&
            isFloatTensor(inferred[r.getResultNumber()]))
          elem = getElementTypeOrSelf(inferred[r.getResultNumber()]);
        r.setType(llvm::cast<RankedTensorType>(r.getType()).clone(elem));
      }
      if (failed(verify(op)))
        return failure();
    }
    // Function results keep their declared types.
    Operation *ret = body.getTerminator();
    for (auto [use, declared] :
         llvm::zip(ret->getOpOperands(), f.getResultTypes()))
      if (use.get().getType() != declared)
        use.set(casts.castTo(use.get(), getElementTypeOrSelf(declared)));
    // Casts the retyping made identities, and constants and casts whose
    // users all took a folded or shortened copy.
    for (Operation &op : llvm::make_early_inc_range(llvm::reverse(body))) {
      if (auto c = dyn_cast<CastOp>(op);
          c && c.getX().getType() == c.getY().getType())
        c.getY().replaceAllUsesWith(c.getX());
      if (isa<ConstantOp, CastOp>(op) && op.use_empty())
        op.erase();
    }
    return success();
  }
};

} // namespace
