//===- ChannelsLast.cpp - convolution regions in NHWC ---------------------===//
//
// cuDNN's tensor-core convolutions read and write NHWC (filters KRSC);
// given NCHW they transpose on the way in and out. PyTorch users get NHWC
// with `model.to(memory_format=torch.channels_last)`; here the compiler
// decides, per region of convolutions and what runs between them.
//
// Each convolution becomes a `channels_last` one between two transposes:
// x and its filter to channels last before it, the result back after it.
// Walking the function in order, a channels-first transpose then moves
// past what reads it when that op works per channel in either layout:
// batch norm and max pooling (their `channels_last` forms; the pool's
// where nothing reads its indices yet), elementwise ops of one operand
// and binary ones whose other operands are channels last already (a
// residual from before the region that a convolution reads too) or the
// same for every position (a per-channel bias). A convolution reading
// such a transpose takes its input directly. What is left are transposes
// at the region's edges (global pooling, a flatten, a softmax over the
// channels) and the filters' (small, once a step; with stored-filters, a
// train step's filter parameters are kept KRSC instead: mpc.stored_perm,
// undone only where weights leave the runtime). The values are the same:
// the ops compute each element as before.
//
//===----------------------------------------------------------------------===//

#include "ir/MpcOps.h"
#include "ir/ShapeRules.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

namespace mlir::mpc {
#define GEN_PASS_DEF_CHANNELSLAST
#include "passes/Passes.h.inc"
} // namespace mlir::mpc

using namespace mlir;
using namespace mlir::mpc;

namespace {

/// `v` transposed by `perm` (an mpc.transpose at `b`'s insertion point).
Value transposed(OpBuilder &b, Location loc, Value v, ArrayRef<int64_t> perm) {
  auto t = llvm::cast<RankedTensorType>(v.getType());
  return b.create<TransposeOp>(loc, permutedType(t, perm), v,
                               b.getDenseI64ArrayAttr(perm));
}

/// The channels-last value `v` is a channels-first transpose of, if any.
Value channelsLastSource(Value v) {
  auto t = v.getDefiningOp<TransposeOp>();
  auto type = llvm::dyn_cast<RankedTensorType>(v.getType());
  if (!t || !type || type.getRank() < 3 || !t.getPerm() ||
      ArrayRef<int64_t>(*t.getPerm()) !=
          ArrayRef<int64_t>(channelsFirstPerm(type.getRank())))
    return {};
  return t.getX();
}

/// `v` channels last: the value it was transposed from, or a transpose
/// (one per value: `made` keeps them for the ops that read it later).
Value toChannelsLast(OpBuilder &b, Location loc, Value v,
                     DenseMap<Value, Value> &made) {
  if (Value src = channelsLastSource(v))
    return src;
  Value &t = made[v];
  if (!t)
    t = transposed(b, loc, v, channelsLastPerm(rankedOf(v).getRank()));
  return t;
}

/// Ops computing each element from the same element of their one tensor
/// operand (Clip's bounds are scalars), so any layout will do.
bool isElementwiseUnary(Operation *op) {
  return isa<ReluOp, LeakyReluOp, SigmoidOp, TanhOp, GeluOp, HardSwishOp,
             HardSigmoidOp, EluOp, SeluOp, CeluOp, MishOp, SoftplusOp,
             IdentityOp, ClipOp, NegOp, AbsOp>(op);
}

bool isElementwiseBinary(Operation *op) {
  return isa<AddOp, SubOp, MulOp, DivOp, MaxOp, MinOp, SumOp>(op);
}

/// How operand type `t` broadcasts to the rank-4 channels-first `out`
/// when it is the same in every image and position: true, one value a
/// channel ([C, 1, 1], [1, C, 1, 1]); false, one value; none otherwise.
std::optional<bool> broadcastForm(RankedTensorType t, RankedTensorType out) {
  if (!t.hasStaticShape() || t.getRank() > out.getRank())
    return std::nullopt;
  SmallVector<int64_t> dims(out.getRank() - t.getRank(), 1);
  llvm::append_range(dims, t.getShape());
  for (int64_t i = 0; i < out.getRank(); ++i)
    if (i != 1 && dims[i] != 1)
      return std::nullopt;
  if (dims[1] != 1 && dims[1] != out.getDimSize(1))
    return std::nullopt;
  return dims[1] != 1;
}

/// Rewrites `op` as the same op on channels-last `operands` (with `extra`
/// attributes): its first result goes back to channels first through a
/// transpose for its readers; the others (batch norm's running
/// statistics, the pool's indices, read by nothing yet) are used as they
/// are. False, leaving `op`, when the types do not infer.
bool runChannelsLast(OpBuilder &b, Operation *op, ValueRange operands,
                     ArrayRef<NamedAttribute> extra = {}) {
  NamedAttrList attrs(op->getAttrDictionary());
  for (const NamedAttribute &a : extra)
    attrs.set(a.getName(), a.getValue());
  auto built = createInferred(b, op->getLoc(), op->getName().getStringRef(),
                              operands, attrs.getAttrs());
  if (failed(built))
    return false;
  Operation *made = *built;
  for (unsigned i = 0; i < op->getNumResults(); ++i) {
    Value v = made->getResult(i);
    if (i == 0)
      v = transposed(b, op->getLoc(), v,
                     channelsFirstPerm(rankedOf(v).getRank()));
    op->getResult(i).replaceAllUsesWith(v);
  }
  op->erase();
  return true;
}

/// Rewrites one op when it can run channels last; true when it did.
bool rewrite(OpBuilder &b, Operation *op, DenseMap<Value, Value> &made) {
  b.setInsertionPoint(op);
  Location loc = op->getLoc();
  NamedAttribute last = b.getNamedAttr("channels_last", b.getBoolAttr(true));
  if (auto conv = dyn_cast<ConvOp>(op)) {
    if (conv.getChannelsLast() || rankedOf(conv.getX()).getRank() != 4)
      return false;
    SmallVector<Value> operands{toChannelsLast(b, loc, conv.getX(), made),
                                toChannelsLast(b, loc, conv.getW(), made)};
    if (conv.getBias())
      operands.push_back(conv.getBias());
    return runChannelsLast(b, op, operands, {last});
  }
  if (isa<BatchNormOp, BatchNormTrainOp>(op)) {
    Value src = channelsLastSource(op->getOperand(0));
    auto already = op->getAttrOfType<BoolAttr>("channels_last");
    if (!src || (already && already.getValue()))
      return false;
    SmallVector<Value> operands(op->getOperands());
    operands[0] = src;
    return runChannelsLast(b, op, operands, {last});
  }
  if (auto pool = dyn_cast<MaxPoolOp>(op)) {
    // Channels-last indices would mean other elements to a reader of
    // ONNX's Indices: only where nothing reads them yet (the gradient,
    // made later, reads them in this layout).
    Value src = channelsLastSource(pool.getX());
    if (!src || pool.getChannelsLast() || !pool.getIndices().use_empty() ||
        pool.getStorageOrder() != 0 || rankedOf(src).getRank() != 4)
      return false;
    return runChannelsLast(b, op, {src}, {last});
  }
  if (isElementwiseUnary(op)) {
    Value src = channelsLastSource(op->getOperand(0));
    if (!src)
      return false;
    SmallVector<Value> operands(op->getOperands());
    operands[0] = src;
    return runChannelsLast(b, op, operands);
  }
  if (isElementwiseBinary(op)) {
    // Each operand channels last: from a channels-last transpose, already
    // transposed for a convolution (a residual from before the region, as
    // ResNet's first block adds its input), or a broadcast of one value a
    // channel ([C, 1, 1]: reshaped to [C]) or of one value (as it is). At
    // least one comes from channels last, so no transpose is added.
    auto out = rankedOf(op->getResult(0));
    if (out.getRank() != 4) // a loss's scalars, a 1-D or 3-D map
      return false;
    enum Form { Source, Made, PerChannel, Uniform };
    SmallVector<Form> forms;
    for (Value v : op->getOperands()) {
      auto t = rankedOf(v);
      bool whole = t.getShape() == out.getShape();
      if (whole && channelsLastSource(v))
        forms.push_back(Source);
      else if (whole && made.count(v))
        forms.push_back(Made);
      else if (auto f = broadcastForm(t, out))
        forms.push_back(*f ? PerChannel : Uniform);
      else
        return false;
    }
    if (!llvm::is_contained(forms, Source))
      return false;
    SmallVector<Value> operands;
    for (auto [v, form] : llvm::zip(op->getOperands(), forms))
      operands.push_back(form == Source  ? channelsLastSource(v)
                         : form == Made ? made[v]
                         : form == PerChannel
                             ? reshapeTo(b, loc, v, {out.getDimSize(1)})
                             : v);
    return runChannelsLast(b, op, operands);
  }
  return false;
}

/// How many functions take parameter `sym` as an argument.
int takers(ModuleOp module, Attribute sym) {
  int n = 0;
  for (auto f : module.getOps<func::FuncOp>())
    for (unsigned i = 0; i < f.getNumArguments(); ++i)
      n += f.getArgAttr(i, "mpc.param") == sym;
  return n;
}

/// Keeps filter parameter `arg` KRSC (stored-filters): its type becomes
/// the channels-last one, `mpc.stored_perm` says so, and one transpose
/// back stands for it, which the convolutions' rewrites then see through.
/// Only a parameter of one function that nothing but 2-D convolutions
/// read as their filter.
void storeChannelsLast(OpBuilder &b, func::FuncOp f, BlockArgument arg) {
  Attribute sym = f.getArgAttr(arg.getArgNumber(), "mpc.param");
  auto t = llvm::dyn_cast<RankedTensorType>(arg.getType());
  if (!sym || !t || t.getRank() != 4 || arg.use_empty() ||
      takers(f->getParentOfType<ModuleOp>(), sym) != 1)
    return;
  for (OpOperand &use : arg.getUses()) {
    auto conv = dyn_cast<ConvOp>(use.getOwner());
    if (!conv || use.getOperandNumber() != 1 || conv.getChannelsLast() ||
        rankedOf(conv.getX()).getRank() != 4)
      return;
  }
  SmallVector<int64_t> perm = channelsLastPerm(4);
  arg.setType(permutedType(t, perm));
  b.setInsertionPointToStart(&f.getBody().front());
  Value back = transposed(b, arg.getLoc(), arg, channelsFirstPerm(4));
  arg.replaceAllUsesExcept(back, back.getDefiningOp());
  f.setArgAttr(arg.getArgNumber(), "mpc.stored_perm",
               b.getDenseI64ArrayAttr(perm));
  f.setType(b.getFunctionType(f.getBody().front().getArgumentTypes(),
                              f.getResultTypes()));
}

struct ChannelsLast : public mpc::impl::ChannelsLastBase<ChannelsLast> {
  using Base::Base;
  void runOnOperation() override {
    OpBuilder b(&getContext());
    for (auto f : getOperation().getOps<func::FuncOp>()) {
      if (storedFilters)
        for (BlockArgument arg : f.getBody().front().getArguments())
          storeChannelsLast(b, f, arg);
      SmallVector<Operation *> ops;
      f.walk([&](Operation *op) { ops.push_back(op); });
      DenseMap<Value, Value> made;
      for (Operation *op : ops)
        rewrite(b, op, made);
      // Transposes that moved on leave their unread originals behind.
      bool erased = true;
      while (erased) {
        erased = false;
        for (TransposeOp t : llvm::to_vector(f.getOps<TransposeOp>()))
          if (t->use_empty())
            t.erase(), erased = true;
      }
    }
  }
};

} // namespace
