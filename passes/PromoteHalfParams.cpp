//===- PromoteHalfParams.cpp - FP32 masters for a half-precision model ----===//
//
// A model whose trainable weights are stored in FP16/BF16 trains with FP32
// masters: the parameter is widened (exactly) and every reader sees it
// through one cast back, so the forward is unchanged while the optimizer's
// small updates accumulate in FP32 instead of rounding away.
//
//===----------------------------------------------------------------------===//

#include "ir/MpcOps.h"
#include "passes/Passes.h"
#include "runtime/Half.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"

#include <cstring>
#include <vector>

namespace mlir::mpc {
#define GEN_PASS_DEF_PROMOTEHALFPARAMS
#include "passes/Passes.h.inc"
} // namespace mlir::mpc

using namespace mlir;
using namespace mlir::mpc;

namespace {

/// `values` (FP16 or BF16) widened to FP32; every 16-bit value is exact.
DenseElementsAttr widened(DenseElementsAttr values, RankedTensorType to) {
  if (values.isSplat())
    return DenseElementsAttr::get(
        to, values.getSplatValue<APFloat>().convertToFloat());
  // The raw 16-bit patterns (a large model's weights: no APFloat each).
  const bool bf16 = values.getElementType().isBF16();
  ArrayRef<char> raw = values.getRawData();
  std::vector<float> wide(values.getNumElements());
  for (size_t i = 0; i < wide.size(); ++i) {
    uint16_t bits;
    std::memcpy(&bits, raw.data() + 2 * i, 2);
    wide[i] = ::mpc::rt::widen16(bits, bf16);
  }
  return DenseElementsAttr::get(to, llvm::ArrayRef<float>(wide));
}

struct PromoteHalfParams
    : public mlir::mpc::impl::PromoteHalfParamsBase<PromoteHalfParams> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    llvm::DenseMap<Attribute, Type> promoted; // symbol -> stored type
    for (auto param : module.getOps<ParamOp>()) {
      auto type = llvm::dyn_cast<RankedTensorType>(param.getType());
      auto values = llvm::dyn_cast<DenseElementsAttr>(param.getValue());
      if (!param.getTrainable() || !type || !values ||
          !(type.getElementType().isF16() || type.getElementType().isBF16()))
        continue;
      auto wide = type.clone(Float32Type::get(&getContext()));
      param.setTypeAttr(TypeAttr::get(wide));
      param.setValueAttr(widened(values, wide));
      promoted[FlatSymbolRefAttr::get(param.getSymNameAttr())] = type;
    }
    if (promoted.empty())
      return;
    for (auto f : module.getOps<func::FuncOp>()) {
      if (f.isExternal())
        continue;
      Block &body = f.getBody().front();
      OpBuilder b(&body, body.begin());
      for (BlockArgument arg : body.getArguments()) {
        Type stored =
            promoted.lookup(f.getArgAttr(arg.getArgNumber(), "mpc.param"));
        if (!stored || arg.getType() != stored)
          continue;
        auto type = llvm::cast<RankedTensorType>(stored);
        arg.setType(type.clone(Float32Type::get(&getContext())));
        auto narrow = b.create<CastOp>(arg.getLoc(), type, arg);
        arg.replaceAllUsesExcept(narrow.getY(), narrow);
      }
      f.setFunctionType(FunctionType::get(
          &getContext(), body.getArgumentTypes(), f.getResultTypes()));
    }
  }
};

} // namespace
