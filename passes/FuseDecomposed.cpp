//===- FuseDecomposed.cpp - decomposed norms and GELU to their ops --------===//
//
// Exports below opset 17 (LayerNormalization), 20 (Gelu) and 23
// (RMSNormalization) spell these ops out; this pass puts the ops back, so
// each runs as one kernel with FP32 statistics and the precision passes see
// a normalization (deny) rather than its pieces:
//
//   d = x - reduce_mean(x, axes)              layer_norm(x, gamma, beta)
//   v = reduce_mean(pow(d, 2) | d * d, axes)    {axis, epsilon}
//   n = d / sqrt(v + eps)                   axes = [axis, rank), kept
//   y = n * gamma + beta  (both optional)
//
//   x / sqrt(mean(x^2) + eps), or            rms_norm(x, w) {axis, epsilon}
//   x * reciprocal(sqrt(...)) | x * (1 / sqrt(...)), then * w
//
//   x * (erf(x / sqrt(2) | x * (1/sqrt(2))) + 1) * 0.5   gelu(x)
//   x * (tanh(sqrt(2/pi) * (x + 0.044715 * (pow(x, 3) | x * x * x))) + 1)
//     * 0.5                                  gelu(x) {approximate = "tanh"}
//   (either product order, 0.5 applied first or last)
//
//   x * cos + cat(-x2, x1) * sin             rotary(x, cos1, sin1)
//   (rotate_half; the tables' halves equal)   (DecomposedRotary.cpp)
//   x * cos + stack(-x2, x1).flatten * sin   rotary(x, ...) {interleaved}
//   (rotate_every_two; the tables' pairs equal)
//   cat(rotary(x[..., :r]), x[..., r:])       rotary(x) {rotary_dim = r}
//
// Every intermediate must be used only inside the pattern; anything else
// is left as written.
//
//===----------------------------------------------------------------------===//

#include "ir/MpcOps.h"
#include "passes/DeadOps.h"
#include "passes/DecomposedRotary.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Matchers.h"

#include <cmath>

namespace mlir::mpc {
#define GEN_PASS_DEF_FUSEDECOMPOSED
#include "passes/Passes.h.inc"
} // namespace mlir::mpc

using namespace mlir;
using namespace mlir::mpc;

namespace {

RankedTensorType typeOf(Value v) {
  return llvm::cast<RankedTensorType>(v.getType());
}

std::optional<double> splat(Value v) {
  DenseElementsAttr attr;
  if (!v || !matchPattern(v, m_Constant(&attr)) || !attr.isSplat() ||
      !llvm::isa<FloatType>(attr.getElementType()))
    return std::nullopt;
  return attr.getSplatValue<APFloat>().convertToDouble();
}

bool near(std::optional<double> v, double want) {
  return v && std::abs(*v - want) <= 1e-6 * std::abs(want);
}

/// The other operand of a commutative binary op when one is `v`.
template <typename OpTy> Value other(OpTy op, Value v) {
  return op.getA() == v ? op.getB() : op.getB() == v ? op.getA() : Value();
}

/// A keepdims mean over trailing axes: their first one.
std::optional<int64_t> trailingMeanAxis(ReduceMeanOp mean) {
  if (!mean.getKeepdims() || !mean.getAxes())
    return std::nullopt;
  int64_t rank = typeOf(mean.getX()).getRank();
  ArrayRef<int64_t> given = *mean.getAxes(); // a copy: the optional is a temporary
  SmallVector<int64_t> axes;
  for (int64_t a : given)
    axes.push_back(a < 0 ? a + rank : a);
  llvm::sort(axes);
  for (size_t i = 0; i < axes.size(); ++i)
    if (axes[i] != rank - (int64_t)axes.size() + (int64_t)i)
      return std::nullopt;
  return axes.empty() ? std::nullopt : std::optional<int64_t>(axes.front());
}

/// A per-feature parameter of the normalized shape (leading 1s allowed).
bool isFeatureVector(Value p, RankedTensorType x, int64_t axis) {
  auto t = typeOf(p);
  ArrayRef<int64_t> feat = x.getShape().drop_front(axis);
  ArrayRef<int64_t> shape = t.getShape();
  while (shape.size() > feat.size() && shape.front() == 1)
    shape = shape.drop_front();
  return shape == feat && t.getElementType() == x.getElementType();
}

/// When `y`'s one user is an `OpTy` (Mul, Add) with a per-feature vector
/// as its other operand: that vector, with `y` moved to the op's result and
/// the op recorded as dead-to-be; null otherwise.
template <typename OpTy>
Value takeFeatureOperand(Value &y, RankedTensorType x, int64_t axis,
                         SmallVectorImpl<Operation *> &dead) {
  if (!y.hasOneUse())
    return {};
  auto op = dyn_cast<OpTy>(*y.getUsers().begin());
  Value p = op ? other(op, y) : Value();
  if (!p || !isFeatureVector(p, x, axis) || typeOf(op) != x)
    return {};
  dead.insert(dead.begin(), op);
  y = op.getResult();
  return p;
}

/// sqrt(mean(v^2) + eps), each piece used once: the pieces and eps.
struct RootMeanSquare {
  SqrtOp sqrt;
  AddOp addEps;
  ReduceMeanOp mean;
  Operation *square; // pow(v, 2) or v * v
  double eps;
};

std::optional<RootMeanSquare> rootMeanSquareOf(Value root, Value v) {
  auto sqrt = root ? root.getDefiningOp<SqrtOp>() : SqrtOp();
  if (!sqrt || !sqrt->hasOneUse())
    return std::nullopt;
  auto addEps = sqrt.getX().getDefiningOp<AddOp>();
  if (!addEps || !addEps->hasOneUse())
    return std::nullopt;
  ReduceMeanOp mean = addEps.getA().getDefiningOp<ReduceMeanOp>();
  std::optional<double> eps = splat(addEps.getB());
  if (!mean) {
    mean = addEps.getB().getDefiningOp<ReduceMeanOp>();
    eps = splat(addEps.getA());
  }
  if (!mean || !eps || !mean->hasOneUse())
    return std::nullopt;
  Operation *square = mean.getX().getDefiningOp();
  if (!square || !square->hasOneUse())
    return std::nullopt;
  if (auto pow = dyn_cast<PowOp>(square)) {
    if (pow.getBase() != v || !near(splat(pow.getExponent()), 2.0))
      return std::nullopt;
  } else if (auto mul = dyn_cast<MulOp>(square)) {
    if (mul.getA() != v || mul.getB() != v)
      return std::nullopt;
  } else {
    return std::nullopt;
  }
  return RootMeanSquare{sqrt, addEps, mean, square, *eps};
}

class Fuser {
public:
  explicit Fuser(MLIRContext *ctx) : b(ctx) {}

  /// div(d, sqrt(mean(d^2) + eps)) with d = x - mean(x), then * gamma and
  /// + beta where present.
  bool layerNorm(DivOp div) {
    Value d = div.getA();
    auto sub = d.getDefiningOp<SubOp>();
    auto rms = sub ? rootMeanSquareOf(div.getB(), d) : std::nullopt;
    if (!rms)
      return false;
    ReduceMeanOp var = rms->mean;
    Operation *square = rms->square;
    std::optional<double> eps = rms->eps;
    auto mean = sub.getB().getDefiningOp<ReduceMeanOp>();
    Value x = sub.getA();
    if (!mean || mean.getX() != x || !mean->hasOneUse())
      return false;
    auto axis = trailingMeanAxis(mean), varAxis = trailingMeanAxis(var);
    auto xt = typeOf(x);
    if (!axis || axis != varAxis || typeOf(d) != xt || typeOf(div) != xt)
      return false;
    // d feeds the square and the division only.
    for (Operation *user : d.getUsers())
      if (user != square && user != div.getOperation())
        return false;
    // The affine part.
    SmallVector<Operation *> dead{div, rms->sqrt, rms->addEps, var, square,
                                  sub, mean};
    Value y = div.getResult();
    Value gamma = takeFeatureOperand<MulOp>(y, xt, *axis, dead);
    Value beta = gamma ? takeFeatureOperand<AddOp>(y, xt, *axis, dead) : Value();
    b.setInsertionPointAfter(y.getDefiningOp());
    Location loc = y.getDefiningOp()->getLoc();
    RankedTensorType feat = xt.clone(xt.getShape().drop_front(*axis));
    auto flat = [&](Value p) {
      return typeOf(p) == feat
                 ? p
                 : b.create<ReshapeOp>(
                       loc, feat, p,
                       b.create<ConstantOp>(
                           loc, DenseElementsAttr::get(
                                    RankedTensorType::get(
                                        {feat.getRank()}, b.getI64Type()),
                                    feat.getShape())))
                       .getResult();
    };
    SmallVector<Value> operands{x};
    operands.push_back(gamma ? flat(gamma) : ones(loc, feat));
    if (beta)
      operands.push_back(flat(beta));
    std::string diag;
    auto ln = createInferred(
        b, loc, LayerNormOp::getOperationName(), operands,
        {b.getNamedAttr("axis", b.getI64IntegerAttr(*axis)),
         b.getNamedAttr("epsilon", b.getF32FloatAttr((float)*eps))},
        &diag);
    if (failed(ln))
      return false;
    y.replaceAllUsesWith((*ln)->getResult(0));
    for (Operation *op : dead)
      if (op->use_empty())
        op->erase();
    return true;
  }

  /// x / sqrt(mean(x^2) + eps), or x * reciprocal(sqrt(...)) or x * (1 /
  /// sqrt(...)) (torch's rsqrt, as its exporters write it), then * weight
  /// where present: RMS normalization at `root` (the Div or Mul by the
  /// inverse RMS).
  bool rmsNorm(Operation *root) {
    Value x, sqrtV;
    SmallVector<Operation *> dead{root};
    if (auto div = dyn_cast<DivOp>(root)) {
      x = div.getA();
      sqrtV = div.getB();
    } else if (auto mul = dyn_cast<MulOp>(root)) {
      for (int side = 0; side < 2 && !sqrtV; ++side) {
        Value inv = side ? mul.getA() : mul.getB();
        Operation *op = inv.getDefiningOp();
        if (!op || !op->hasOneUse())
          continue;
        if (auto rec = dyn_cast<ReciprocalOp>(op))
          sqrtV = rec.getX();
        else if (auto one = dyn_cast<DivOp>(op); one && near(splat(one.getA()), 1.0))
          sqrtV = one.getB(); // torch's TorchScript exporter: Div(1, Sqrt)
        if (sqrtV) {
          x = side ? mul.getB() : mul.getA();
          dead.push_back(op);
        }
      }
    }
    auto rms = rootMeanSquareOf(sqrtV, x);
    if (!rms)
      return false;
    ReduceMeanOp ms = rms->mean;
    std::optional<double> eps = rms->eps;
    auto axis = trailingMeanAxis(ms);
    auto xt = typeOf(x);
    if (!axis || typeOf(root->getResult(0)) != xt)
      return false;
    dead.append({rms->sqrt, rms->addEps, ms, rms->square});
    Value y = root->getResult(0);
    Value weight = takeFeatureOperand<MulOp>(y, xt, *axis, dead);
    b.setInsertionPointAfter(y.getDefiningOp());
    Location loc = y.getDefiningOp()->getLoc();
    RankedTensorType feat = xt.clone(xt.getShape().drop_front(*axis));
    std::string diag;
    auto rn = createInferred(
        b, loc, RmsNormOp::getOperationName(),
        {x, weight ? weight : ones(loc, feat)},
        {b.getNamedAttr("axis", b.getI64IntegerAttr(*axis)),
         b.getNamedAttr("epsilon", b.getF32FloatAttr((float)*eps))},
        &diag);
    if (failed(rn))
      return false;
    y.replaceAllUsesWith((*rn)->getResult(0));
    for (Operation *op : dead)
      if (op->use_empty())
        op->erase();
    return true;
  }

  /// x * (1 + erf(x / sqrt 2)) * 0.5 or, GPT-2's gelu_new,
  /// x * (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) * 0.5, ending at `last`
  /// (the final Mul).
  bool gelu(MulOp last) {
    // One of the two products carries 0.5; the other is x * (1 + erf).
    auto halfOf = [](MulOp m) -> Value {
      if (near(splat(m.getB()), 0.5))
        return m.getA();
      if (near(splat(m.getA()), 0.5))
        return m.getB();
      return {};
    };
    Value inner = halfOf(last);
    SmallVector<Operation *> dead{last}; // users before what they use
    Value x;
    std::optional<StringRef> form;
    if (inner) { // (x * (1 + erf)) * 0.5
      auto prod = inner.getDefiningOp<MulOp>();
      if (!prod || !prod->hasOneUse())
        return false;
      dead.push_back(prod);
      x = prod.getA();
      if (!(form = formOf(prod.getB(), x, dead)))
        form = formOf(prod.getA(), x = prod.getB(), dead);
    } else { // (x * 0.5) * (1 + erf)
      for (int side = 0; side < 2 && !form; ++side) {
        Value h = side ? last.getB() : last.getA();
        Value rest = side ? last.getA() : last.getB();
        auto half = h.getDefiningOp<MulOp>();
        if (half && half->hasOneUse())
          if (Value xv = halfOf(half); xv && (form = formOf(rest, xv, dead))) {
            x = xv;
            dead.push_back(half);
          }
      }
    }
    if (!form || typeOf(x) != typeOf(last))
      return false;
    b.setInsertionPoint(last);
    SmallVector<NamedAttribute> attrs;
    if (*form == "tanh")
      attrs.push_back(b.getNamedAttr("approximate", b.getStringAttr("tanh")));
    std::string diag;
    auto g = createInferred(b, last.getLoc(), GeluOp::getOperationName(), {x},
                            attrs, &diag);
    if (failed(g))
      return false;
    last.getResult().replaceAllUsesWith((*g)->getResult(0));
    for (Operation *op : dead)
      if (op->use_empty())
        op->erase();
    return true;
  }

private:
  /// Which GELU `v` is the `1 + ...` of: "none" for 1 + erf(x / sqrt 2) (or
  /// x * 1/sqrt 2), "tanh" for 1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)),
  /// products and sums in either order, the cube as pow(x, 3) or x * x * x.
  /// Each piece used once; on a match they are appended to `ops`.
  std::optional<StringRef> formOf(Value v, Value x,
                                  SmallVectorImpl<Operation *> &ops) {
    SmallVector<Operation *> found;
    auto add = v.getDefiningOp<AddOp>();
    if (!add || !add->hasOneUse())
      return std::nullopt;
    found.push_back(add);
    Value e = scaledBy(add, 1.0);
    Operation *act = e ? e.getDefiningOp() : nullptr;
    if (!act || !isa<ErfOp, TanhOp>(act) || !act->hasOneUse())
      return std::nullopt;
    found.push_back(act);
    Operation *arg = act->getOperand(0).getDefiningOp();
    if (!arg || !arg->hasOneUse())
      return std::nullopt;
    found.push_back(arg);
    bool erf = isa<ErfOp>(act);
    bool ok = false;
    if (auto div = dyn_cast<DivOp>(arg))
      ok = erf && div.getA() == x && near(splat(div.getB()), std::sqrt(2.0));
    else if (auto mul = dyn_cast<MulOp>(arg))
      ok = erf ? other(mul, x) && near(splat(other(mul, x)), std::sqrt(0.5))
               : cubicOf(scaledBy(mul, std::sqrt(2.0 / M_PI)), x, found);
    if (!ok)
      return std::nullopt;
    ops.append(found);
    return erf ? StringRef("none") : StringRef("tanh");
  }

  /// Whether `v` is x + 0.044715 x^3 (the tanh GELU's inner polynomial).
  bool cubicOf(Value v, Value x, SmallVectorImpl<Operation *> &found) {
    auto add = v ? v.getDefiningOp<AddOp>() : AddOp();
    if (!add || !add->hasOneUse())
      return false;
    found.push_back(add);
    auto term = other(add, x) ? other(add, x).getDefiningOp<MulOp>() : MulOp();
    if (!term || !term->hasOneUse())
      return false;
    found.push_back(term);
    Value cube = scaledBy(term, 0.044715);
    Operation *op = cube ? cube.getDefiningOp() : nullptr;
    if (!op || !op->hasOneUse())
      return false;
    found.push_back(op);
    if (auto pw = dyn_cast<PowOp>(op))
      return pw.getBase() == x && near(splat(pw.getExponent()), 3.0);
    auto mul = dyn_cast<MulOp>(op); // x * (x * x), either order
    auto square = mul && other(mul, x) ? other(mul, x).getDefiningOp<MulOp>()
                                       : MulOp();
    if (!square || !square->hasOneUse() || square.getA() != x ||
        square.getB() != x)
      return false;
    found.push_back(square);
    return true;
  }

  /// The other operand of `op` when one is a splat constant near `c`.
  template <typename OpTy> static Value scaledBy(OpTy op, double c) {
    return near(splat(op.getB()), c)   ? op.getA()
           : near(splat(op.getA()), c) ? op.getB()
                                       : Value();
  }

  Value ones(Location loc, RankedTensorType t) {
    APFloat one(1.0);
    bool lost;
    one.convert(llvm::cast<FloatType>(t.getElementType()).getFloatSemantics(),
                APFloat::rmNearestTiesToEven, &lost);
    return b.create<ConstantOp>(loc, DenseElementsAttr::get(t, one));
  }

  OpBuilder b;
};

struct FuseDecomposed : public mpc::impl::FuseDecomposedBase<FuseDecomposed> {
  void runOnOperation() override {
    for (auto f : getOperation().getOps<func::FuncOp>()) {
      Fuser fuser(&getContext());
      bool changed = false;
      for (DivOp div : llvm::to_vector(f.getOps<DivOp>()))
        changed |= fuser.layerNorm(div);
      // RMS norms: a Div or Mul at their root; a match erases other Muls.
      for (bool found = true; found;) {
        found = false;
        for (Operation &op : f.getBody().front())
          if (isa<DivOp, MulOp>(op) && fuser.rmsNorm(&op)) {
            found = changed = true;
            break;
          }
      }
      // Rotary embeddings: an Add at their root (a match erases only ops
      // the Add uses, none an Add).
      {
        OpBuilder b(&getContext());
        RotaryTables tables;
        for (AddOp add : llvm::to_vector(f.getOps<AddOp>()))
          changed |= fuseDecomposedRotary(b, add, tables);
        for (ConcatOp cat : llvm::to_vector(f.getOps<ConcatOp>()))
          changed |= fusePartialRotary(b, cat);
      }
      // A match erases other Muls: rescan after each.
      for (bool found = true; found;) {
        found = false;
        for (MulOp mul : f.getOps<MulOp>())
          if (fuser.gelu(mul)) {
            found = changed = true;
            break;
          }
      }
      if (!changed)
        continue;
      eraseDeadOps(f.getBody().front());
    }
  }
};

} // namespace
