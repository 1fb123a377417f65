//===- MpcOps.h - mpc op declarations -----------------------------*- C++ -*-===//

#ifndef MPC_IR_MPCOPS_H
#define MPC_IR_MPCOPS_H

#include "ir/MpcDialect.h"
#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace mlir::mpc {
/// Types are compatible when element types agree and each dimension agrees or
/// is dynamic on one side (declared types may be more static than inferred).
bool areCompatibleTypes(TypeRange lhs, TypeRange rhs);

/// Creates op `name` with result types inferred from its operands and
/// attributes (inherent ones become properties). Unlike ODS's generic
/// builder this works for ops with properties, and it does not crash on a
/// shape error: it returns failure and, when given, the diagnostic text.
FailureOr<Operation *> createInferred(OpBuilder &b, Location loc,
                                      StringRef name, ValueRange operands,
                                      ArrayRef<NamedAttribute> attrs = {},
                                      std::string *diagnostic = nullptr);

/// Folds `op` (not a constant) when its operands allow: returns the values
/// replacing its results, constants being materialized at `b`'s insertion
/// point. `op` itself is left for the caller to replace and erase.
std::optional<SmallVector<Value>> foldToValues(OpBuilder &b, Operation *op);

/// A new 1-D i64 mpc.constant holding `values` (shapes, axes, bounds).
Value i64Constant(OpBuilder &b, Location loc, ArrayRef<int64_t> values);

/// `v` reshaped to `shape` by an mpc.reshape (its shape a new constant), or
/// `v` itself when it has that shape.
Value reshapeTo(OpBuilder &b, Location loc, Value v, ArrayRef<int64_t> shape);

/// Channel layouts: the permutation taking N x C x D1..Dn to
/// N x D1..Dn x C (channelsLastPerm) and back (channelsFirstPerm).
SmallVector<int64_t> channelsLastPerm(int64_t rank);
SmallVector<int64_t> channelsFirstPerm(int64_t rank);
/// `t`'s dims reordered: dim i of the result is dim perm[i] of `t`.
RankedTensorType permutedType(RankedTensorType t, ArrayRef<int64_t> perm);
/// The matrix `v` is the transpose of (an mpc.transpose of a 2-D value,
/// its perm [1, 0] or absent), or null.
Value transposedMatrix(Value v);

/// A ranked tensor of f32, f16 or bf16.
bool isFloatTensor(Type t);

/// The ONNX node name a location carries (the importer's NameLoc), or "".
std::string nodeNameOf(Location loc);
/// An op's node name, or its op name when it has none (for messages).
std::string displayNameOf(Operation *op);

/// The precision classes of ODS's Mpc_Amp traits (ir/MpcDialect.td); what
/// they mean for an op is in passes/AmpLists.h.
template <typename ConcreteOp>
class AmpAllow : public OpTrait::TraitBase<ConcreteOp, AmpAllow> {};
template <typename ConcreteOp>
class AmpInfer : public OpTrait::TraitBase<ConcreteOp, AmpInfer> {};
template <typename ConcreteOp>
class AmpClear : public OpTrait::TraitBase<ConcreteOp, AmpClear> {};
template <typename ConcreteOp>
class AmpDeny : public OpTrait::TraitBase<ConcreteOp, AmpDeny> {};
/// Operands after the first stay FP32 in mixed precision (ODS
/// Mpc_Fp32Parameters).
template <typename ConcreteOp>
class Fp32Parameters : public OpTrait::TraitBase<ConcreteOp, Fp32Parameters> {};
} // namespace mlir::mpc

#include "ir/MpcInterfaces.h.inc"

#define GET_OP_CLASSES
#include "ir/MpcOps.h.inc"

namespace mlir::mpc {
/// The ratio dropout `d` applies, when its operands say it at compile
/// time: 0 in inference (no training flag, ONNX's default, or a constant
/// false), the constant ratio (0.5 when absent) in training mode; none
/// when the flag, or in training mode the ratio, is a run-time value.
std::optional<double> constantDropoutRatio(DropoutOp d);
} // namespace mlir::mpc

#endif // MPC_IR_MPCOPS_H
