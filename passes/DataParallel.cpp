//===- DataParallel.cpp - gradient buckets averaged over the ranks
//---------===//
//
// PyTorch DDP fills buckets in the order gradients become ready and
// all-reduces a bucket as soon as it is full. Here the order is known at
// compile time: the position of each gradient's defining op in the
// straight-line train step.
//
// Under gradient accumulation (a step mpc-grad-accumulation rewrote: run
// after it) the ranks average the group's sums once, as DDP under
// `no_sync()` averages only the last micro-batch's: the buckets take the
// accumulators' next values where the updates read them, so they are
// applied-only (runtime/AppliedOnly.h) and a micro-batch that does not end
// its group sends no gradient. Each micro-batch still averages its
// all-finite flag (and the loss) in one small collective, so every rank
// skips the same groups and moves the loss scale alike.
//
//===----------------------------------------------------------------------===//

#include "ir/MpcOps.h"
#include "passes/Passes.h"
#include "passes/StepResults.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/TypeUtilities.h"

namespace mlir::mpc {
#define GEN_PASS_DEF_DATAPARALLEL
#include "passes/Passes.h.inc"
} // namespace mlir::mpc

using namespace mlir;
using namespace mlir::mpc;

namespace {

struct DataParallel : public mpc::impl::DataParallelBase<DataParallel> {
  using DataParallelBase::DataParallelBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (wire != "f32" && wire != "f16" && wire != "bf16") {
      module.emitError("mpc-data-parallel: wire must be f32, f16 or bf16, "
                       "got '")
          << wire << "'";
      return signalPassFailure();
    }
    if (!(bucketMb > 0)) {
      module.emitError("mpc-data-parallel: bucket-mb must be positive");
      return signalPassFailure();
    }
    for (auto f : module.getOps<func::FuncOp>())
      run(f);
  }

  void run(func::FuncOp f) {
    Block &body = f.getBody().front();
    Operation *ret = body.getTerminator();
    // Each distinct gradient value, with the results that return it; under
    // accumulation each group sum, whose readers (not the return: the
    // accumulator stays the rank's own) get the average.
    const bool groups = f->hasAttr("mpc.grad_accumulation");
    llvm::MapVector<Value, SmallVector<unsigned>> grads;
    Value flag;
    for (unsigned i = 0; i < f.getNumResults(); ++i) {
      auto name = f.getResultAttrOfType<StringAttr>(i, "mpc.output");
      if (groups && name && name.getValue() == "mpc.found_inf")
        flag = ret->getOperand(i);
      else if (groups && name && name.getValue().starts_with("mpc.accum.") &&
               name.getValue() != "mpc.accum.found_inf")
        grads[ret->getOperand(i)];
      else if (!groups && f.getResultAttr(i, "mpc.gradient"))
        grads[ret->getOperand(i)].push_back(i);
    }
    if (grads.empty())
      return;
    if (groups && !flag) {
      f.emitError("mpc-data-parallel: a step accumulating gradients needs "
                  "its all-finite flag (mpc.found_inf, mpc-loss-scaling) so "
                  "that every rank skips the same groups");
      return signalPassFailure();
    }
    // Ready order: where each gradient is computed (arguments first).
    llvm::DenseMap<Operation *, int64_t> position;
    int64_t n = 0;
    for (Operation &op : body)
      position[&op] = n++;
    auto ready = [&](Value v) -> int64_t {
      Operation *def = v.getDefiningOp();
      return def ? position.lookup(def) : -1;
    };
    SmallVector<Value> order;
    for (auto &entry : grads)
      order.push_back(entry.first);
    llvm::stable_sort(order,
                      [&](Value a, Value c) { return ready(a) < ready(c); });

    const double limit = bucketMb * 1024 * 1024;
    SmallVector<SmallVector<Value>> buckets(1);
    double bytes = 0;
    for (Value g : order) {
      auto type = cast<RankedTensorType>(g.getType());
      double size = (double)type.getNumElements() * 4;
      if (!buckets.back().empty() && bytes + size > limit) {
        buckets.emplace_back();
        bytes = 0;
      }
      buckets.back().push_back(g);
      bytes += size;
    }

    // The loss rides in the last bucket: the loss each rank reports is the
    // job's mean, with no collective of its own. (Not on a 16-bit wire: the
    // loss would be rounded. Under accumulation: with the flag.)
    Value loss;
    auto lossIndex = f->getAttrOfType<IntegerAttr>("mpc.loss_index");
    if ((wire == "f32" || groups) && lossIndex &&
        lossIndex.getInt() < (int64_t)ret->getNumOperands()) {
      loss = ret->getOperand(lossIndex.getInt());
      if (grads.count(loss) || !getElementTypeOrSelf(loss).isF32())
        loss = Value();
      else if (!groups)
        buckets.back().push_back(loss);
    }

    OpBuilder b(f.getContext());
    if (groups)
      averageFlag(b, ret, flag, loss, lossIndex, buckets.size());
    // Under accumulation all buckets go before the first reader of a sum.
    Operation *firstReader =
        mpc::firstReader(body, llvm::make_first_range(grads));
    if (groups && !firstReader)
      return; // nothing reads the sums: no optimizer
    // A 16-bit wire is a cast before the all-reduce and one back after it,
    // in the IR: the collective sends the narrow type (half the bytes) and
    // the optimizer still gets FP32 gradients.
    Type wireType = wire == "f16"    ? Type(b.getF16Type())
                    : wire == "bf16" ? Type(b.getBF16Type())
                                     : Type(b.getF32Type());
    auto onWire = [&](Value v) {
      auto t = cast<RankedTensorType>(v.getType());
      return t.clone(wireType);
    };
    for (auto [k, bucket] : llvm::enumerate(buckets)) {
      Value last = bucket.front(); // the latest computed
      for (Value g : bucket)
        if (ready(g) >= ready(last))
          last = g;
      if (groups)
        b.setInsertionPoint(firstReader);
      else if (Operation *def = last.getDefiningOp())
        b.setInsertionPointAfter(def);
      else
        b.setInsertionPointToStart(&body);
      SmallVector<Value> sent;
      for (Value g : bucket)
        sent.push_back(g.getType() == onWire(g)
                           ? g
                           : Value(b.create<CastOp>(g.getLoc(), onWire(g), g)));
      SmallVector<Type> types(ValueRange(sent).getTypes());
      auto reduce = b.create<AllReduceOp>(last.getLoc(), types, sent,
                                          b.getI64IntegerAttr(k),
                                          b.getStringAttr(wire));
      for (auto [g, s, r] : llvm::zip(bucket, sent, reduce.getReduced())) {
        Value back = r.getType() == g.getType()
                         ? Value(r)
                         : Value(b.create<CastOp>(g.getLoc(), g.getType(), r));
        if (g == loss)
          ret->setOperand(lossIndex.getInt(), back);
        for (unsigned i : grads.lookup(g))
          ret->setOperand(i, back);
        if (groups)
          g.replaceUsesWithIf(back, [&](OpOperand &use) {
            Operation *user = use.getOwner();
            return user != ret && user != reduce.getOperation() &&
                   user != s.getDefiningOp();
          });
      }
    }
  }

  /// Replaces the all-finite flag's readers with the ranks' verdict: the
  /// mean of the flags (and of the loss, the job's loss for each rank)
  /// averaged right where the flag is known, every micro-batch.
  void averageFlag(OpBuilder &b, Operation *ret, Value flag, Value loss,
                   IntegerAttr lossIndex, int64_t bucket) {
    Location loc = flag.getLoc();
    if (Operation *def = flag.getDefiningOp())
      b.setInsertionPointAfter(def);
    else
      b.setInsertionPointToStart(ret->getBlock());
    if (loss && loss.getDefiningOp() && flag.getDefiningOp() &&
        flag.getDefiningOp()->isBeforeInBlock(loss.getDefiningOp()))
      b.setInsertionPointAfter(loss.getDefiningOp());
    auto scalar = RankedTensorType::get({}, b.getF32Type());
    Value sent = b.create<CastOp>(loc, scalar, flag);
    SmallVector<Value> operands{sent};
    if (loss)
      operands.push_back(loss);
    SmallVector<Type> types(ValueRange(operands).getTypes());
    auto reduce =
        b.create<AllReduceOp>(loc, types, operands, b.getI64IntegerAttr(bucket),
                              b.getStringAttr("f32"));
    Value zero = b.create<ConstantOp>(
        loc, DenseElementsAttr::get(scalar, b.getF32FloatAttr(0.0f)));
    Value any = (*createInferred(b, loc, GreaterOp::getOperationName(),
                                 {reduce.getReduced()[0], zero}))
                    ->getResult(0);
    flag.replaceUsesWithIf(any, [&](OpOperand &use) {
      return use.getOwner() != sent.getDefiningOp();
    });
    if (loss)
      ret->setOperand(lossIndex.getInt(), reduce.getReduced()[1]);
  }
};

} // namespace
