//===- MpcDialect.cpp - mpc dialect registration and op definitions -------===//

#include "ir/MpcOps.h"
#include "ir/ShapeRules.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"

using namespace mlir;
using namespace mlir::mpc;

#include "ir/MpcDialect.cpp.inc"
#include "ir/MpcInterfaces.cpp.inc"

void MpcDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "ir/MpcOps.cpp.inc"
      >();
}

Operation *MpcDialect::materializeConstant(OpBuilder &builder, Attribute value,
                                           Type type, Location loc) {
  auto elements = llvm::dyn_cast<ElementsAttr>(value);
  if (!elements || elements.getType() != type)
    return nullptr;
  return builder.create<ConstantOp>(loc, elements);
}

bool mpc::areCompatibleTypes(TypeRange lhs, TypeRange rhs) {
  if (lhs.size() != rhs.size())
    return false;
  for (auto [l, r] : llvm::zip(lhs, rhs)) {
    auto lt = llvm::dyn_cast<RankedTensorType>(l);
    auto rt = llvm::dyn_cast<RankedTensorType>(r);
    if (!lt || !rt) {
      if (l != r)
        return false;
      continue;
    }
    if (lt.getElementType() != rt.getElementType() ||
        lt.getRank() != rt.getRank())
      return false;
    for (auto [a, b] : llvm::zip(lt.getShape(), rt.getShape()))
      if (a != b && a != kDyn && b != kDyn)
        return false;
  }
  return true;
}

LogicalResult CastOp::verify() {
  auto in = rankedOf(getX()), out = rankedOf(getY());
  if (!areCompatibleTypes(in.clone(out.getElementType()), out))
    return emitOpError("cast must keep the shape, got ")
           << in << " -> " << out;
  return success();
}

LogicalResult ParamOp::verify() {
  auto value = llvm::cast<TypedAttr>(getValue());
  if (value.getType() != getType())
    return emitOpError("initial value of type ")
           << value.getType() << " does not match the parameter type "
           << getType();
  if (!llvm::cast<RankedTensorType>(getType()).hasStaticShape())
    return emitOpError("parameter type must be static, got ") << getType();
  if (getTrainable() && !isFloatTensor(getType()))
    return emitOpError("a trainable parameter must be a float tensor, got ")
           << getType();
  return success();
}

#define GET_OP_CLASSES
#include "ir/MpcOps.cpp.inc"

SmallVector<int64_t> mlir::mpc::channelsLastPerm(int64_t rank) {
  SmallVector<int64_t> perm{0};
  for (int64_t i = 2; i < rank; ++i)
    perm.push_back(i);
  perm.push_back(1);
  return perm;
}

SmallVector<int64_t> mlir::mpc::channelsFirstPerm(int64_t rank) {
  SmallVector<int64_t> perm{0, rank - 1};
  for (int64_t i = 1; i + 1 < rank; ++i)
    perm.push_back(i);
  return perm;
}

RankedTensorType mlir::mpc::permutedType(RankedTensorType t,
                                         ArrayRef<int64_t> perm) {
  SmallVector<int64_t> shape;
  for (int64_t p : perm)
    shape.push_back(t.getDimSize(p));
  return t.clone(shape);
}

Value mlir::mpc::transposedMatrix(Value v) {
  auto t = v.getDefiningOp<TransposeOp>();
  auto in = t ? llvm::dyn_cast<RankedTensorType>(t.getX().getType())
              : RankedTensorType();
  if (!in || in.getRank() != 2 ||
      (t.getPerm() && *t.getPerm() != ArrayRef<int64_t>{1, 0}))
    return {};
  return t.getX();
}

std::optional<double> mlir::mpc::constantDropoutRatio(DropoutOp d) {
  std::optional<double> training =
      d.getTrainingMode() ? getConstantScalar(d.getTrainingMode()) : 0.0;
  if (!training || *training == 0.0)
    return training;
  return d.getRatio() ? getConstantScalar(d.getRatio()) : 0.5;
}

Value mlir::mpc::i64Constant(OpBuilder &b, Location loc,
                            ArrayRef<int64_t> values) {
  auto t = RankedTensorType::get({(int64_t)values.size()}, b.getI64Type());
  return b.create<ConstantOp>(loc, DenseElementsAttr::get(t, values));
}

Value mlir::mpc::reshapeTo(OpBuilder &b, Location loc, Value v,
                          ArrayRef<int64_t> shape) {
  auto t = llvm::cast<RankedTensorType>(v.getType());
  if (t.getShape() == shape)
    return v;
  return b.create<ReshapeOp>(loc, t.clone(shape), v, i64Constant(b, loc, shape),
                             b.getBoolAttr(false));
}

bool mlir::mpc::isFloatTensor(Type t) {
  auto r = llvm::dyn_cast<RankedTensorType>(t);
  return r && llvm::isa<FloatType>(r.getElementType());
}

std::string mlir::mpc::nodeNameOf(Location loc) {
  if (auto name = llvm::dyn_cast<NameLoc>(loc))
    return name.getName().str();
  // An op folded from several nodes (mpc-fold-linear-bias): all of them.
  std::string names;
  if (auto fused = llvm::dyn_cast<FusedLoc>(loc))
    for (Location part : fused.getLocations())
      if (std::string n = nodeNameOf(part); !n.empty())
        names += (names.empty() ? "" : "+") + n;
  return names;
}

std::string mlir::mpc::displayNameOf(Operation *op) {
  std::string name = nodeNameOf(op->getLoc());
  return name.empty() ? op->getName().getStringRef().str() : name;
}
