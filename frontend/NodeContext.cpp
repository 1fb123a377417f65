//===- NodeContext.cpp - per-node helpers of the ONNX importer ------------===//

#include "frontend/ImporterImpl.h"
#include "frontend/ModelValidator.h"
#include "ir/MpcOps.h"
#include "ir/ShapeRules.h"

#include "mlir/IR/Diagnostics.h"

using namespace mlir;

namespace mlir::mpc::importer {

LogicalResult NodeContext::fail(const llvm::Twine &message) {
  if (error.empty())
    error = message.str();
  return failure();
}

const onnx::AttributeProto *NodeContext::attr(llvm::StringRef name) const {
  for (const auto &a : node.attribute())
    if (a.name() == name)
      return &a;
  return nullptr;
}

LogicalResult NodeContext::checkAttrs(ArrayRef<StringRef> known) {
  for (const auto &a : node.attribute())
    if (!llvm::is_contained(known, a.name()))
      return fail("attribute '" + a.name() + "' is not supported");
  return success();
}

static const char *attrTypeName(int type) {
  return onnx::AttributeProto::AttributeType_IsValid(type)
             ? onnx::AttributeProto::AttributeType_Name(
                   static_cast<onnx::AttributeProto::AttributeType>(type))
                   .c_str()
             : "UNKNOWN";
}

/// Records a type error unless `a` has type `want`.
static bool hasType(NodeContext &c, const onnx::AttributeProto *a,
                    onnx::AttributeProto::AttributeType want) {
  if (a->type() == want)
    return true;
  (void)c.fail("attribute '" + a->name() + "' must be " + attrTypeName(want) +
         ", got " + attrTypeName(a->type()));
  return false;
}

int64_t NodeContext::getInt(StringRef name, int64_t dflt) {
  auto *a = attr(name);
  return a && hasType(*this, a, onnx::AttributeProto::INT) ? a->i() : dflt;
}

float NodeContext::getFloat(StringRef name, float dflt) {
  auto *a = attr(name);
  return a && hasType(*this, a, onnx::AttributeProto::FLOAT) ? a->f() : dflt;
}

std::string NodeContext::getString(StringRef name, StringRef dflt) {
  auto *a = attr(name);
  return a && hasType(*this, a, onnx::AttributeProto::STRING) ? a->s()
                                                              : dflt.str();
}

std::optional<SmallVector<int64_t>> NodeContext::getInts(StringRef name) {
  auto *a = attr(name);
  if (!a || !hasType(*this, a, onnx::AttributeProto::INTS))
    return std::nullopt;
  return SmallVector<int64_t>(a->ints().begin(), a->ints().end());
}

std::optional<SmallVector<std::string>>
NodeContext::getStrings(StringRef name) {
  auto *a = attr(name);
  if (!a || !hasType(*this, a, onnx::AttributeProto::STRINGS))
    return std::nullopt;
  return SmallVector<std::string>(a->strings().begin(), a->strings().end());
}

std::optional<DenseElementsAttr> NodeContext::getTensor(StringRef name) {
  auto *a = attr(name);
  if (!a || !hasType(*this, a, onnx::AttributeProto::TENSOR))
    return std::nullopt;
  std::string err;
  auto value = readTensor(a->t(), b.getContext(), modelDir, err);
  if (mlir::failed(value)) {
    (void)fail("attribute '" + name + "' tensor " + err);
    return std::nullopt;
  }
  return *value;
}

FailureOr<SmallVector<int64_t>> NodeContext::constantInts(unsigned i,
                                                          StringRef what) {
  SmallVector<int64_t> values;
  if (!mpc::getConstantInts(input(i), values)) {
    (void)fail(what + " (input " + llvm::Twine(i) +
         ") must be a constant or computable from static shapes");
    return failure();
  }
  return values;
}

FailureOr<std::optional<SmallVector<int64_t>>>
NodeContext::intsFromAttrOrInput(StringRef name, unsigned i) {
  if (attr(name)) {
    auto v = getInts(name);
    if (failed())
      return failure();
    return v;
  }
  if (!input(i))
    return std::optional<SmallVector<int64_t>>();
  auto v = constantInts(i, name);
  if (mlir::failed(v))
    return failure();
  return std::optional<SmallVector<int64_t>>(*v);
}

/// Replaces `op` by its folded values when its operands are constants.
static std::optional<SmallVector<Value>> tryFold(NodeContext &c, Operation *op) {
  auto values = mpc::foldToValues(c.b, op);
  if (values)
    op->erase();
  return values;
}

/// [min, max] operand count of an mpc op, from its ODS traits.
static std::pair<unsigned, unsigned> operandArity(RegisteredOperationName n) {
  constexpr unsigned kAny = ~0u;
  if (n.hasTrait<OpTrait::ZeroOperands>())
    return {0, 0};
  if (n.hasTrait<OpTrait::OneOperand>())
    return {1, 1};
  std::pair<unsigned, unsigned> arity{0, kAny};
  if (n.hasTrait<OpTrait::AtLeastNOperands<1>::Impl>())
    arity = {1, kAny};
  auto probe = [&](auto count) {
    constexpr unsigned k = decltype(count)::value;
    if (n.hasTrait<OpTrait::NOperands<k>::template Impl>())
      arity = {k, k};
    else if (n.hasTrait<OpTrait::AtLeastNOperands<k>::template Impl>())
      arity = {k, kAny};
  };
  probe(std::integral_constant<unsigned, 2>());
  probe(std::integral_constant<unsigned, 3>());
  probe(std::integral_constant<unsigned, 4>());
  probe(std::integral_constant<unsigned, 5>());
  return arity;
}

LogicalResult NodeContext::requireInputs(unsigned n) {
  for (unsigned i = 0; i < n; ++i)
    if (!input(i))
      return fail("input " + Twine(i) + " is required");
  return success();
}

FailureOr<SmallVector<Value>> NodeContext::build(StringRef opName,
                                                 ValueRange operands,
                                                 ArrayRef<NamedAttribute> attrs,
                                                 ArrayRef<int32_t> segments) {
  auto name = RegisteredOperationName::lookup(opName, b.getContext());
  if (!name) // an importer naming an op the dialect lacks: a bug, said plainly
    return fail("internal error: the importer builds '" + opName +
                "', which the mpc dialect does not define");
  auto [minOperands, maxOperands] = operandArity(*name);
  for (auto [i, v] : llvm::enumerate(operands))
    if (!v)
      return fail("input " + Twine(i) + " is required");
  if (operands.size() < minOperands || operands.size() > maxOperands)
    return fail("expected " +
                (minOperands == maxOperands
                     ? Twine(minOperands)
                     : "at least " + Twine(minOperands)) +
                " inputs, got " + Twine(operands.size()));
  NamedAttrList list(attrs);
  if (!segments.empty())
    list.set("operandSegmentSizes", b.getDenseI32ArrayAttr(segments));
  std::string diag;
  auto created = mpc::createInferred(b, loc, opName, operands, list.getAttrs(),
                                     &diag);
  if (mlir::failed(created)) {
    (void)fail(diag);
    return failure();
  }
  Operation *op = *created;
  // Shapes computed from the model's constants bound what folding and the
  // runtime allocate: refuse them here, before either does.
  for (Type type : op->getResultTypes()) {
    auto shaped = llvm::dyn_cast<RankedTensorType>(type);
    if (!shaped || !shaped.hasStaticShape())
      continue;
    unsigned bits = shaped.getElementType().isIntOrFloat()
                        ? shaped.getElementType().getIntOrFloatBitWidth()
                        : 8;
    uint64_t numel = 1;
    bool overflow = false;
    for (int64_t d : shaped.getShape()) {
      if (d > 0 && numel > UINT64_MAX / 16 / (uint64_t)d)
        overflow = true;
      else
        numel *= (uint64_t)d;
    }
    uint64_t bytes = (numel * bits + 7) / 8;
    if (overflow || (bytes > maxTensorBytes() && !largeResults)) {
      std::string shape;
      llvm::raw_string_ostream os(shape);
      os << type;
      op->erase();
      return fail("result of type " + shape + " is " +
                  (overflow ? std::string("too large") :
                              std::to_string(bytes) + " bytes") +
                  ", over the limit of " + Twine(maxTensorBytes()) +
                  " (raise it with --max-tensor-bytes)");
    }
  }
  if (auto folded = tryFold(*this, op))
    return *folded;
  return SmallVector<Value>(op->getResults());
}

Value NodeContext::buildCast(Value x, Type elementType) {
  auto t = llvm::cast<RankedTensorType>(x.getType());
  auto cast = b.create<mpc::CastOp>(loc, t.clone(elementType), x);
  if (auto folded = tryFold(*this, cast))
    return folded->front();
  return cast;
}

Value NodeContext::constant(DenseElementsAttr value) {
  return b.create<mpc::ConstantOp>(loc, value);
}

LogicalResult NodeContext::setOutputs(ValueRange results) {
  if (numOutputs() > results.size())
    for (unsigned i = results.size(); i < numOutputs(); ++i)
      if (!node.output(i).empty())
        return fail("output " + llvm::Twine(i) + " ('" + node.output(i) +
                    "') is not supported");
  outputs.assign(results.begin(), results.end());
  return success();
}

LogicalResult NodeContext::emit(StringRef opName, ValueRange operands,
                                ArrayRef<NamedAttribute> attrs,
                                ArrayRef<int32_t> segments) {
  if (failed())
    return failure();
  auto results = build(opName, operands, attrs, segments);
  if (mlir::failed(results))
    return failure();
  return setOutputs(*results);
}

} // namespace mlir::mpc::importer
