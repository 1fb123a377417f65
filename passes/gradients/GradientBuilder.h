//===- GradientBuilder.h - what every gradient rule builds with --*- C++ -*-===//
//
// Private to passes/gradients/: the state a rule sees (the op, its result
// gradients, the operand gradients it fills), the helpers rules share, and
// the template that turns a rule function into an external model of
// GradientOpInterface. A family file attaches its rules with
//   attachRule<TanhOp, tanhGrad>(ctx);
//
//===----------------------------------------------------------------------===//

#ifndef MPC_PASSES_GRADIENTS_GRADIENTBUILDER_H
#define MPC_PASSES_GRADIENTS_GRADIENTBUILDER_H

#include "ir/MpcOps.h"
#include "passes/GradientRules.h"

namespace mlir::mpc::grad {

RankedTensorType typeOf(Value v);

/// A scalar constant of `elem`.
Value scalar(OpBuilder &b, Location loc, Type elem, double value);

/// A 1-D i64 constant.
Value ints(OpBuilder &b, Location loc, ArrayRef<int64_t> values);

/// Builds `name` with inferred result types. Rules build ops from
/// well-typed forward ops, so inference failing is an internal error.
Operation *makeOp(OpBuilder &b, Location loc, StringRef name,
                  ValueRange operands, ArrayRef<NamedAttribute> attrs = {});

template <typename OpTy>
Value make(OpBuilder &b, Location loc, ValueRange operands,
           ArrayRef<NamedAttribute> attrs = {}) {
  return makeOp(b, loc, OpTy::getOperationName(), operands, attrs)
      ->getResult(0);
}

Value reshapeTo(OpBuilder &b, Location loc, Value v, RankedTensorType type);

/// The keepdims result type of reducing `in` over `axes` (absent or empty:
/// all axes).
RankedTensorType keptType(RankedTensorType in,
                          std::optional<ArrayRef<int64_t>> axes);

/// What a rule works with. `g` is the first result's gradient (never null
/// for single-result ops: rules run only when some result has one).
struct Context {
  Context(OpBuilder &b, Operation *op, ArrayRef<Value> resultGrads,
          ArrayRef<bool> wanted, SmallVectorImpl<Value> &grads);

  OpBuilder &b;
  Operation *op;
  Location loc;
  ArrayRef<Value> resultGrads;
  ArrayRef<bool> wanted; // per operand: whether its gradient is needed
  SmallVectorImpl<Value> &grads; // one per operand, null where none
  Value g;                       // gradient of result 0
  Value y;                       // result 0
  Type elem;                     // element type of result 0

  Value x(unsigned i) const { return op->getOperand(i); }
  /// `v` summed back to operand i's (broadcast) shape.
  Value un(Value v, unsigned i) const {
    return unbroadcast(b, loc, v, x(i).getType());
  }
  Value scalar(double value) const { return grad::scalar(b, loc, elem, value); }
  template <typename OpTy>
  Value make(ValueRange operands, ArrayRef<NamedAttribute> attrs = {}) const {
    return grad::make<OpTy>(b, loc, operands, attrs);
  }
  /// g * d, the chain rule of a unary elementwise op.
  Value times(Value d) const { return make<MulOp>({g, d}); }
};

template <typename OpTy>
using Rule = LogicalResult (*)(Context &c, OpTy op);

/// GradientOpInterface's external model for one op and its rule.
template <typename OpTy, Rule<OpTy> rule>
struct RuleModel
    : GradientOpInterface::ExternalModel<RuleModel<OpTy, rule>, OpTy> {
  LogicalResult buildGradients(Operation *op, OpBuilder &b,
                               ArrayRef<Value> resultGrads, ArrayRef<bool> wanted,
                               SmallVectorImpl<Value> &grads) const {
    Context c(b, op, resultGrads, wanted, grads);
    return rule(c, llvm::cast<OpTy>(op));
  }
};

template <typename OpTy, Rule<OpTy> rule> void attachRule(MLIRContext *ctx) {
  OpTy::template attachInterface<RuleModel<OpTy, rule>>(*ctx);
}

// One registration per family file, called by registerGradientInterfaces.
void attachElementwiseRules(MLIRContext *ctx); // ElementwiseGradients.cpp
void attachActivationRules(MLIRContext *ctx);  // ActivationGradients.cpp
void attachLinalgRules(MLIRContext *ctx);      // LinalgGradients.cpp
void attachNnRules(MLIRContext *ctx);          // NnGradients.cpp
void attachShapeRules(MLIRContext *ctx);       // ShapeGradients.cpp

} // namespace mlir::mpc::grad

#endif // MPC_PASSES_GRADIENTS_GRADIENTBUILDER_H
