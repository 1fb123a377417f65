// RUN: mpc-opt %s -mpc-data-parallel -mlir-print-debuginfo -mlir-print-local-scope | FileCheck %s
// RUN: mpc-opt %s -mpc-data-parallel="bucket-mb=0.00003 wire=bf16" | FileCheck %s --check-prefix=SMALL
// RUN: mpc-opt %s -mpc-data-parallel -mpc-loss-scaling | FileCheck %s --check-prefix=SCALED
// RUN: mpc-opt %s -mpc-data-parallel -mpc-loss-scaling -mpc-optimizer | FileCheck %s --check-prefix=OPT
// RUN: mpc-opt %s -mpc-loss-scaling -mpc-optimizer -mpc-grad-accumulation=steps=2 -mpc-data-parallel | FileCheck %s --check-prefix=GROUP
// RUN: not mpc-opt %s -mpc-optimizer -mpc-grad-accumulation=steps=2 -mpc-data-parallel 2>&1 | FileCheck %s --check-prefix=NOFLAG
// RUN: not mpc-opt %s -mpc-data-parallel=wire=f64 2>&1 | FileCheck %s --check-prefix=WIRE
// RUN: not mpc-opt %s -mpc-data-parallel=bucket-mb=0 2>&1 | FileCheck %s --check-prefix=SIZE

// One bucket (25 MiB by default), placed right after the last gradient the
// backward pass computes (db after dw here), in ready order, with the loss
// riding along (each rank reports the job's mean loss); the results
// replace the returned values and keep the reduce_sum's location.
// CHECK-LABEL: func.func @f_train_step
// CHECK: %[[LOSS:[a-z0-9]+]], %{{.*}} = mpc.softmax_cross_entropy_loss
// CHECK: %[[DW:.*]] = mpc.gemm %{{.*}}, %{{.*}} {transA = true}
// CHECK-NEXT: %[[DB:.*]] = mpc.reduce_sum
// CHECK-NEXT: %[[R:.*]]:3 = mpc.all_reduce %[[DW]], %[[DB]], %[[LOSS]] {bucket = 0 : i64, wire = "f32"} : (tensor<3x4xf32>, tensor<3xf32>, tensor<f32>) -> (tensor<3x4xf32>, tensor<3xf32>, tensor<f32>) loc("db")
// CHECK: return %[[R]]#2, %[[R]]#0, %[[R]]#1

// 32 bytes a bucket: dw (48 bytes) fills one by itself, right after the
// gemm, so its reduction can start while db is still being computed. On a
// bf16 wire each gradient is cast to bf16 for the collective and back to
// FP32 for the optimizer, and the loss stays out (it would be rounded).
// SMALL: %[[DW:.*]] = mpc.gemm %{{.*}}, %{{.*}} {transA = true}
// SMALL-NEXT: %[[S0:.*]] = mpc.cast %[[DW]] : (tensor<3x4xf32>) -> tensor<3x4xbf16>
// SMALL-NEXT: %[[R0:.*]] = mpc.all_reduce %[[S0]] {bucket = 0 : i64, wire = "bf16"} : (tensor<3x4xbf16>) -> tensor<3x4xbf16>
// SMALL-NEXT: %[[B0:.*]] = mpc.cast %[[R0]] : (tensor<3x4xbf16>) -> tensor<3x4xf32>
// SMALL-NEXT: %[[DB:.*]] = mpc.reduce_sum
// SMALL-NEXT: %[[S1:.*]] = mpc.cast %[[DB]]
// SMALL-NEXT: %[[R1:.*]] = mpc.all_reduce %[[S1]] {bucket = 1 : i64, wire = "bf16"}
// SMALL-NEXT: %[[B1:.*]] = mpc.cast %[[R1]]
// SMALL: return %loss, %[[B0]], %[[B1]]

// The unscale and its all-finite check see the averaged gradients, so
// every rank skips the same steps.
// SCALED: %[[R:.*]]:3 = mpc.all_reduce
// SCALED: mpc.unscale_grads %[[R]]#0, %[[R]]#1,

// The optimizer updates from the averaged gradients.
// OPT: %[[R:.*]]:3 = mpc.all_reduce
// OPT: mpc.unscale_grads %[[R]]#0, %[[R]]#1,

// After mpc-grad-accumulation (DDP's no_sync()): each micro-batch averages
// only its all-finite flag, the sticky one (so every rank skips the same
// groups and moves the loss scale alike), with the loss; the group's sums
// are averaged once, where the updates read them (applied-only steps,
// skipped before a group's last micro-batch), while the accumulators and
// the returned gradients stay the rank's own.
// GROUP-LABEL: func.func @f_train_step
// GROUP: %[[LOSS:[a-z0-9]+]], %{{.*}} = mpc.softmax_cross_entropy_loss
// GROUP: %[[U:.*]]:2, %[[INF:.*]] = mpc.unscale_grads
// GROUP-NEXT: %[[EFF:.*]] = mpc.or %{{.*}}, %[[INF]]
// GROUP-NEXT: %[[F:.*]] = mpc.cast %[[EFF]] : (tensor<i1>) -> tensor<f32>
// GROUP-NEXT: %[[FR:.*]]:2 = mpc.all_reduce %[[F]], %[[LOSS]] {bucket = 1 : i64, wire = "f32"}
// GROUP: %[[ANY:.*]] = mpc.greater %[[FR]]#0, %{{.*}} : (tensor<f32>, tensor<f32>) -> tensor<i1>
// GROUP-NEXT: %[[SKIP:.*]] = mpc.or %[[ANY]], %{{.*}}
// GROUP-NEXT: %[[NEXT:.*]] = mpc.and %[[ANY]], %{{.*}}
// GROUP-NEXT: mpc.update_loss_scale %{{.*}}, %{{.*}}, %[[ANY]], %{{.*}}
// GROUP-NOT: mpc.all_reduce
// GROUP: %[[TW:.*]] = mpc.add %{{.*}}, %{{.*}} : (tensor<3x4xf32>, tensor<3x4xf32>)
// GROUP: %[[TB:.*]] = mpc.add %{{.*}}, %{{.*}} : (tensor<3xf32>, tensor<3xf32>)
// GROUP-NEXT: %[[G:.*]]:2 = mpc.all_reduce %[[TW]], %[[TB]] {bucket = 0 : i64, wire = "f32"}
// GROUP-NEXT: mpc.mul %{{.*}}, %[[G]]#0
// GROUP: mpc.where %[[SKIP]]
// GROUP: mpc.mul %{{.*}}, %[[G]]#1
// GROUP: return %[[FR]]#1, %[[U]]#0, %[[U]]#1, %[[ANY]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[TW]], %[[TB]], %[[NEXT]] :
// NOFLAG: error: mpc-data-parallel: a step accumulating gradients needs its all-finite flag (mpc.found_inf, mpc-loss-scaling) so that every rank skips the same groups

// WIRE: mpc-data-parallel: wire must be f32, f16 or bf16, got 'f64'
// SIZE: mpc-data-parallel: bucket-mb must be positive
mpc.param @w trainable : tensor<3x4xf32> = dense<1.0> : tensor<3x4xf32>
mpc.param @b trainable : tensor<3xf32> = dense<0.0> : tensor<3xf32>
func.func @f_train_step(%x: tensor<2x4xf32> {mpc.input = "x"}, %labels: tensor<2xi64> {mpc.input = "labels"},
                        %w: tensor<3x4xf32> {mpc.param = @w}, %b: tensor<3xf32> {mpc.param = @b})
    -> (tensor<f32> {mpc.output = "loss"}, tensor<3x4xf32> {mpc.gradient = @w}, tensor<3xf32> {mpc.gradient = @b})
    attributes {mpc.loss_index = 0 : i64, mpc.train_step} {
  %y = mpc.gemm %x, %w, %b {transB = true} : (tensor<2x4xf32>, tensor<3x4xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %loss, %logp = mpc.softmax_cross_entropy_loss %y, %labels : (tensor<2x3xf32>, tensor<2xi64>) -> (tensor<f32>, tensor<2x3xf32>)
  %one = mpc.constant {mpc.grad_seed} dense<1.0> : tensor<f32>
  %dy = mpc.softmax_cross_entropy_loss_grad %one, %logp, %labels : (tensor<f32>, tensor<2x3xf32>, tensor<2xi64>) -> tensor<2x3xf32>
  %dw = mpc.gemm %dy, %x {transA = true} : (tensor<2x3xf32>, tensor<2x4xf32>) -> tensor<3x4xf32> loc("dw")
  %db = mpc.reduce_sum %dy {axes = array<i64: 0>, keepdims = false} : (tensor<2x3xf32>) -> tensor<3xf32> loc("db")
  return %loss, %dw, %db : tensor<f32>, tensor<3x4xf32>, tensor<3xf32>
}
