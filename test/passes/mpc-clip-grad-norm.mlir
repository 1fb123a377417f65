// RUN: mpc-opt %s -mpc-clip-grad-norm=max-norm=0.5 -split-input-file -mlir-print-debuginfo | FileCheck %s
// RUN: mpc-opt %s -mpc-clip-grad-norm -mpc-unscale-in-optimizer -split-input-file | FileCheck %s --check-prefix=FUSED
// RUN: not mpc-opt %s -mpc-clip-grad-norm=max-norm=0 -split-input-file 2>&1 | FileCheck %s --check-prefix=BAD

// After the updates: the norm of the unscaled gradients' norms (one
// mpc.global_norm, factor 1), min(0.5 / (norm + 1e-6), 1), and each
// update reads its gradient times it; the step still returns the
// gradients as computed, and the norm before clipping as mpc.grad_norm,
// at the return's location.
// CHECK-LABEL: func.func @sgd_train_step
// CHECK-SAME: tensor<3xf32> {mpc.output = "mpc.new.b"}, tensor<f32> {mpc.output = "mpc.grad_norm"})
// CHECK: %[[U:.*]]:2, %[[INF:.*]] = mpc.unscale_grads
// CHECK: %[[F:.*]] = mpc.constant dense<1.000000e+00> : tensor<f32> loc(#[[RET:.*]])
// CHECK: %[[N:.*]] = mpc.global_norm %[[F]], %[[U]]#0, %[[U]]#1 : (tensor<f32>, tensor<3x4xf32>, tensor<3xf32>) -> tensor<f32> loc(#[[RET]])
// CHECK: %[[MAX:.*]] = mpc.constant dense<5.000000e-01> : tensor<f32>
// CHECK: %[[EPS:.*]] = mpc.constant dense<9.99999997E-7> : tensor<f32>
// CHECK: %[[SUM:.*]] = mpc.add %[[N]], %[[EPS]]
// CHECK: %[[Q:.*]] = mpc.div %[[MAX]], %[[SUM]]
// CHECK: %[[ONE:.*]] = mpc.constant dense<1.000000e+00> : tensor<f32>
// CHECK: %[[C:.*]] = mpc.min %[[Q]], %[[ONE]]
// CHECK: %[[CW:.*]] = mpc.mul %[[U]]#0, %[[C]] : (tensor<3x4xf32>, tensor<f32>) -> tensor<3x4xf32>
// CHECK: %[[CB:.*]] = mpc.mul %[[U]]#1, %[[C]] : (tensor<3xf32>, tensor<f32>) -> tensor<3xf32>
// CHECK: mpc.mul %{{.*}}, %[[CW]]
// CHECK: mpc.mul %{{.*}}, %[[CB]]
// CHECK: return %{{.*}}, %[[U]]#0, %[[U]]#1, %[[INF]], %{{.*}}, %{{.*}}, %[[N]] :
// CHECK: #[[RET]] = loc("step_return")
// FUSED-LABEL: func.func @sgd_train_step
// The norm reads the fp16 gradients themselves, 1/scale its factor: its
// kernel unscales as it reads, no FP32 copy, and gives the flag the
// updates and the step read (no check reads the gradients again).
// FUSED-NOT: mpc.check_grads
// FUSED: %[[INV:.*]] = mpc.div
// FUSED: %{{.*}}, %[[INF:.*]] = mpc.global_norm %[[INV]], %[[DW:[a-z0-9]+]], %[[DB:[a-z0-9]+]] : (tensor<f32>, tensor<3x4xf16>, tensor<3xf32>) -> (tensor<f32>, tensor<i1>)
// FUSED: %[[C:.*]] = mpc.min
// FUSED: %[[W2:.*]] = mpc.cast %[[DW]] : (tensor<3x4xf16>) -> tensor<3x4xf32>
// FUSED: %[[UW2:.*]] = mpc.mul %[[W2]], %[[INV]]
// FUSED: mpc.mul %[[UW2]], %[[C]]
// FUSED: mpc.where %[[INF]],
// FUSED: return %{{.*}}, %[[DW]], %[[DB]], %[[INF]],
// BAD: error: clip-grad-norm: the largest norm must be a positive finite number, got 0
mpc.param @w trainable : tensor<3x4xf32> = dense<1.0> : tensor<3x4xf32>
mpc.param @b trainable : tensor<3xf32> = dense<0.0> : tensor<3xf32>
func.func @sgd_train_step(%w: tensor<3x4xf32> {mpc.param = @w}, %b: tensor<3xf32> {mpc.param = @b},
                          %dw: tensor<3x4xf16> {mpc.input = "dw"}, %db: tensor<3xf32> {mpc.input = "db"},
                          %s: tensor<f32> {mpc.input = "mpc.loss_scale"}, %loss: tensor<f32> {mpc.input = "l"})
    -> (tensor<f32> {mpc.output = "loss"}, tensor<3x4xf32> {mpc.gradient = @w}, tensor<3xf32> {mpc.gradient = @b}, tensor<i1> {mpc.output = "mpc.found_inf"}, tensor<3x4xf32> {mpc.output = "mpc.new.w"}, tensor<3xf32> {mpc.output = "mpc.new.b"})
    attributes {mpc.train_step, mpc.optimizer = "sgd"} {
  %u:2, %inf = mpc.unscale_grads %dw, %db, %s : (tensor<3x4xf16>, tensor<3xf32>, tensor<f32>) -> (tensor<3x4xf32>, tensor<3xf32>, tensor<i1>) loc("unscale")
  %lr = mpc.constant dense<0.1> : tensor<f32>
  %sw = mpc.mul %lr, %u#0 : (tensor<f32>, tensor<3x4xf32>) -> tensor<3x4xf32>
  %nw = mpc.sub %w, %sw : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
  %gw = mpc.where %inf, %w, %nw : (tensor<i1>, tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
  %sb = mpc.mul %lr, %u#1 : (tensor<f32>, tensor<3xf32>) -> tensor<3xf32>
  %nb = mpc.sub %b, %sb : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %gb = mpc.where %inf, %b, %nb : (tensor<i1>, tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  return %loss, %u#0, %u#1, %inf, %gw, %gb : tensor<f32>, tensor<3x4xf32>, tensor<3xf32>, tensor<i1>, tensor<3x4xf32>, tensor<3xf32> loc("step_return")
}

// -----

// Without an optimizer (mpc grad) the step returns the gradients clipped;
// one gradient is its own global norm.
// CHECK-LABEL: func.func @grad_step
// CHECK-SAME: -> (tensor<3xf32> {mpc.gradient = @v}, tensor<f32> {mpc.output = "mpc.grad_norm"})
// CHECK: %[[N:.*]] = mpc.global_norm %{{.*}}, %[[DV:[a-z0-9]+]] : (tensor<f32>, tensor<3xf32>) -> tensor<f32>
// CHECK: %[[C:.*]] = mpc.min
// CHECK: %[[G:.*]] = mpc.mul %[[DV]], %[[C]]
// CHECK: return %[[G]], %[[N]] :
mpc.param @v trainable : tensor<3xf32> = dense<0.0> : tensor<3xf32>
func.func @grad_step(%v: tensor<3xf32> {mpc.param = @v}, %dv: tensor<3xf32> {mpc.input = "dv"})
    -> (tensor<3xf32> {mpc.gradient = @v}) attributes {mpc.train_step} {
  return %dv : tensor<3xf32>
}
