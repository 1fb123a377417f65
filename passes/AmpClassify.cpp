//===- AmpClassify.cpp - paint ops low precision or FP32 ------------------===//
//
// Forward in program order: allow -> low, deny -> FP32, infer/clear follow
// their float inputs (any FP32-computed input -> FP32; else any low input
// -> low; else FP32). Then backward: a clear op left FP32 only for lack of a
// low input, whose users are all low, turns low (it is exact, so the cast
// moves above it without changing a value and its data moves in half the
// bytes). Every decision is written on the op as `mpc.amp`.
//
//===----------------------------------------------------------------------===//

#include "ir/MpcOps.h"
#include "passes/AmpLists.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/MemoryBuffer.h"

namespace mlir::mpc {
#define GEN_PASS_DEF_AMPCLASSIFY
#include "passes/Passes.h.inc"
} // namespace mlir::mpc

using namespace mlir;
using namespace mlir::mpc;

namespace {

constexpr llvm::StringLiteral kNoLowInput = "no input is computed in low precision";

/// The precision an op was painted, or null (unpainted: arguments,
/// constants, casts, shape ops).
Type paintedOf(Value v) {
  Operation *def = v.getDefiningOp();
  if (!def)
    return {};
  auto t = def->getAttrOfType<TypeAttr>("mpc.precision");
  return t ? t.getValue() : Type();
}

struct AmpClassify : public mpc::impl::AmpClassifyBase<AmpClassify> {
  using Base::Base;

  llvm::StringMap<AmpClass> overrides; // by mnemonic
  llvm::StringMap<std::string> overrideFlag;
  llvm::StringSet<> keep;

  LogicalResult addOverride(StringRef onnx, AmpClass cls, StringRef flag) {
    onnx = onnx.trim();
    if (onnx.empty())
      return success();
    auto rows = ampInfoForOnnx(onnx);
    if (rows.empty())
      return getOperation().emitError("unknown op '")
             << onnx << "' in " << flag
             << " (ONNX op types with an AMP class, e.g. MatMul, Softmax)";
    for (const AmpOpInfo *row : rows) {
      overrides[row->mnemonic] = cls;
      overrideFlag[row->mnemonic] = flag.str();
    }
    return success();
  }

  /// `allow = A, B` / `deny = ...` / `keep-fp32 = ...` lines; # comments.
  LogicalResult readConfig() {
    auto buf = llvm::MemoryBuffer::getFile(config);
    if (!buf)
      return getOperation().emitError("cannot read AMP config '")
             << config << "': " << buf.getError().message();
    SmallVector<StringRef> lines;
    (*buf)->getBuffer().split(lines, '\n');
    for (auto [n, raw] : llvm::enumerate(lines)) {
      StringRef line = raw.split('#').first.trim();
      if (line.empty())
        continue;
      auto [key, value] = line.split('=');
      key = key.trim();
      SmallVector<StringRef> items;
      value.split(items, ',', -1, false);
      std::string where = config + ":" + std::to_string(n + 1);
      if (key == "allow" || key == "deny") {
        for (StringRef item : items)
          if (failed(addOverride(item, key == "allow" ? AmpClass::Allow
                                                      : AmpClass::Deny,
                                 where)))
            return failure();
      } else if (key == "keep-fp32") {
        for (StringRef item : items)
          keep.insert(item.trim());
      } else {
        return getOperation().emitError(where)
               << ": expected 'allow = ...', 'deny = ...' or "
                  "'keep-fp32 = ...', got '"
               << line << "'";
      }
    }
    return success();
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = &getContext();
    Type low;
    if (precision == "f16")
      low = Float16Type::get(ctx);
    else if (precision == "bf16")
      low = BFloat16Type::get(ctx);
    else {
      module.emitError("precision must be f16 or bf16, got '")
          << precision << "'";
      return signalPassFailure();
    }
    for (const std::string &a : allow)
      if (failed(addOverride(a, AmpClass::Allow, "--amp-allow")))
        return signalPassFailure();
    for (const std::string &d : deny)
      if (failed(addOverride(d, AmpClass::Deny, "--amp-deny")))
        return signalPassFailure();
    if (!config.empty() && failed(readConfig()))
      return signalPassFailure();
    for (const std::string &k : keepFp32)
      keep.insert(k);

    llvm::StringSet<> seen;
    module.walk([&](func::FuncOp f) { paint(f, low, seen); });
    for (const auto &k : keep)
      if (!seen.contains(k.getKey())) {
        module.emitError("--amp-keep-fp32: no node named '")
            << k.getKey() << "'";
        return signalPassFailure();
      }
  }

  void paint(func::FuncOp f, Type low, llvm::StringSet<> &seen) {
    Builder b(f.getContext());
    Type f32 = b.getF32Type();
    auto set = [&](Operation *op, Type t, const Twine &why) {
      op->setAttr("mpc.precision", TypeAttr::get(t));
      op->setAttr("mpc.amp", b.getStringAttr(why));
    };
    auto lowName = [&] { return low.isF16() ? "fp16" : "bf16"; };
    SmallVector<Operation *> cleared; // clear ops FP32 for lack of a low input
    // Clear ops of parameters and constants alone (concatenated Q, K, V
    // biases: mpc-merge-sibling-linears): their readers follow other
    // inputs, as they do a parameter's. Not an embedding lookup: its
    // indices are data.
    llvm::SmallPtrSet<Operation *, 8> ofWeights;
    auto isWeight = [&](Value v) {
      if (auto arg = llvm::dyn_cast<BlockArgument>(v))
        return (bool)f.getArgAttr(arg.getArgNumber(), "mpc.param");
      Operation *def = v.getDefiningOp();
      return isa<ConstantOp>(def) || ofWeights.contains(def);
    };
    for (Operation &op : f.getBody().front().without_terminator()) {
      bool floats = llvm::any_of(op.getOperandTypes(), isFloatTensor) ||
                    llvm::any_of(op.getResultTypes(), isFloatTensor);
      StringRef mnemonic = op.getName().stripDialect();
      const AmpOpInfo *info = ampInfo(mnemonic);
      // Ops that only read shapes or convert types compute nothing.
      if (!floats || isa<ConstantOp, CastOp, ShapeOp, SizeOp>(op) ||
          (!info && op.getNumOperands() == 0))
        continue;
      std::string name = displayNameOf(&op);
      seen.insert(name);
      if (keep.contains(name)) {
        set(&op, f32, "kept fp32 by --amp-keep-fp32");
        continue;
      }
      if (auto why = op.getAttrOfType<StringAttr>("mpc.amp_fp32")) {
        set(&op, f32, "kept fp32: " + why.getValue());
        continue;
      }
      if (!info) {
        set(&op, f32, "not on the AMP lists, so kept fp32 (the safe default)");
        continue;
      }
      AmpClass cls = info->cls;
      std::string prefix =
          (className(cls) + " (" + info->onnx + "): ").str();
      if (auto it = overrides.find(mnemonic); it != overrides.end()) {
        cls = it->second;
        prefix = (className(cls) + " (" + info->onnx + ", by " +
                  overrideFlag[mnemonic] + "): ")
                     .str();
      }
      if (cls == AmpClass::Allow) {
        set(&op, low, prefix + (info->cls == cls ? info->why : "forced to low precision"));
        continue;
      }
      if (cls == AmpClass::Deny) {
        set(&op, f32, prefix + (info->cls == cls ? info->why : "forced to fp32"));
        continue;
      }
      // (ONNX's RotaryEmbedding takes its caches in X's type: converted,
      // they are stored low too.)
      if (op.hasTrait<Fp32Parameters>() && !mixedTypeOps &&
          !isa<RotaryOp>(op)) {
        set(&op, f32, prefix + "kept fp32 by mixed-type-ops=false (its "
                               "parameters are FP32)");
        continue;
      }
      // Infer / clear: follow the float inputs (an op with FP32 parameters:
      // its data input alone).
      Operation *fp32From = nullptr, *lowFrom = nullptr;
      auto followed = op.hasTrait<Fp32Parameters>()
                          ? op.getOperands().take_front(1)
                          : op.getOperands();
      for (Value v : followed) {
        Type p = paintedOf(v);
        if (!p || !isFloatTensor(v.getType()))
          continue;
        if (ofWeights.contains(v.getDefiningOp()))
          continue;
        if (p.isF32() && !fp32From)
          fp32From = v.getDefiningOp();
        if (!p.isF32() && !lowFrom)
          lowFrom = v.getDefiningOp();
      }
      // An op with FP32 parameters says what stays FP32 in low precision.
      std::string params = op.hasTrait<Fp32Parameters>()
                               ? " (statistics and parameters in fp32)"
                               : "";
      if (fp32From)
        set(&op, f32, prefix + "follows its input from '" +
                          displayNameOf(fp32From) + "', computed in fp32");
      else if (lowFrom)
        set(&op, low, prefix + "follows its input from '" +
                          displayNameOf(lowFrom) + "', computed in " +
                          lowName() + params);
      else {
        set(&op, f32, prefix + kNoLowInput);
        if (cls == AmpClass::Clear)
          cleared.push_back(&op);
        if (cls == AmpClass::Clear && llvm::all_of(op.getOperands(), isWeight))
          ofWeights.insert(&op);
      }
    }
    // Backward: exact ops feeding only low-precision users.
    for (Operation *op : llvm::reverse(cleared)) {
      bool anyUser = false, allLow = true;
      for (Value r : op->getResults())
        for (Operation *user : r.getUsers()) {
          if (!isFloatTensor(r.getType()))
            continue;
          anyUser = true;
          auto p = user->getAttrOfType<TypeAttr>("mpc.precision");
          allLow &= p && !p.getValue().isF32();
        }
      if (anyUser && allLow)
        set(op, low,
            Twine(op->getAttrOfType<StringAttr>("mpc.amp").getValue()
                      .drop_back(kNoLowInput.size())) +
                "exact, and all its users run in " + lowName());
    }
  }
};

} // namespace
