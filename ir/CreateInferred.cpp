//===- CreateInferred.cpp - build mpc ops with inferred result types -----===//
//
// Passes and the importer build ops from a name, operands and attributes,
// the result types inferred (createInferred), and fold ops into values
// (foldToValues); both declared in ir/MpcOps.h.
//
//===----------------------------------------------------------------------===//

#include "ir/MpcOps.h"

#include "mlir/IR/Verifier.h"
#include "llvm/ADT/StringMap.h"

using namespace mlir;
using namespace mlir::mpc;

std::optional<SmallVector<Value>> mpc::foldToValues(OpBuilder &b,
                                                   Operation *op) {
  if (op->hasTrait<OpTrait::ConstantLike>())
    return std::nullopt;
  SmallVector<OpFoldResult> folded;
  if (failed(op->fold(folded)) || folded.empty())
    return std::nullopt;
  SmallVector<Value> values;
  for (auto [i, r] : llvm::enumerate(folded)) {
    if (auto v = llvm::dyn_cast_if_present<Value>(r)) {
      values.push_back(v);
      continue;
    }
    Operation *cst = op->getDialect()->materializeConstant(
        b, r.get<Attribute>(), op->getResult(i).getType(), op->getLoc());
    if (!cst)
      return std::nullopt;
    values.push_back(cst->getResult(0));
  }
  return values;
}

/// The attributes each op needs to be built (ir/MpcOpFacts.h.inc).
static const llvm::StringMap<SmallVector<StringRef>> &requiredAttrs() {
  static const llvm::StringMap<SmallVector<StringRef>> table = [] {
    llvm::StringMap<SmallVector<StringRef>> t;
#define MPC_OP_REQUIRED_ATTRS(Mnemonic, Names)                                 \
  StringRef(Names).split(t[std::string("mpc.") + Mnemonic], ' ');
#include "ir/MpcOpFacts.h.inc"
    return t;
  }();
  return table;
}

FailureOr<Operation *> mpc::createInferred(OpBuilder &b, Location loc,
                                           StringRef opName,
                                           ValueRange operands,
                                           ArrayRef<NamedAttribute> attrs,
                                           std::string *diagnostic) {
  MLIRContext *ctx = b.getContext();
  auto name = RegisteredOperationName::lookup(opName, ctx);
  if (!name) {
    if (diagnostic)
      *diagnostic = "internal error: '" + opName.str() +
                    "' is not an op of the mpc dialect";
    return failure();
  }
  DictionaryAttr dict = DictionaryAttr::get(ctx, attrs);
  if (auto it = requiredAttrs().find(opName); it != requiredAttrs().end())
    for (StringRef attr : it->second)
      if (!dict.get(attr)) {
        if (diagnostic)
          *diagnostic = "requires attribute '" + attr.str() + "'";
        return failure();
      }
  std::string diag;
  SmallVector<Type> types;
  {
    ScopedDiagnosticHandler handler(ctx, [&](Diagnostic &d) {
      if (diag.empty())
        diag = d.str();
      return success();
    });
    SmallVector<uint64_t> storage((name->getOpPropertyByteSize() + 7) / 8 + 1);
    OpaqueProperties props(storage.data());
    name->initOpProperties(props, nullptr);
    LogicalResult result = success();
    if (name->getOpPropertyByteSize())
      result = name->setOpPropertiesFromAttribute(
          *name, props, dict, [&] { return emitError(loc); });
    if (succeeded(result))
      if (auto *iface = name->getInterface<InferTypeOpInterface>())
        result = iface->inferReturnTypes(ctx, loc, operands, dict, props,
                                         RegionRange(), types);
    name->destroyOpProperties(props);
    if (failed(result)) {
      if (diagnostic)
        *diagnostic = diag.empty() ? "cannot infer the result type" : diag;
      return failure();
    }
  }
  OperationState state(loc, *name);
  state.addOperands(operands);
  state.addTypes(types);
  if (name->getOpPropertyByteSize())
    state.propertiesAttr = dict;
  Operation *op = b.create(state);
  // Inference checks shapes; the op's own verifier checks operand types and
  // attributes (an i32 Reshape target...): an op that fails it is an error
  // of the model, reported here, never IR that breaks a later pass.
  ScopedDiagnosticHandler handler(ctx, [&](Diagnostic &d) {
    if (diag.empty())
      diag = d.str();
    return success();
  });
  if (failed(verify(op, /*verifyRecursively=*/false))) {
    op->erase();
    if (diagnostic)
      *diagnostic = diag.empty() ? "invalid operands" : diag;
    return failure();
  }
  return op;
}
