// RUN: mpc-opt %s -mpc-loss-scaling -split-input-file -verify-diagnostics | FileCheck %s --check-prefix=DYN
// RUN: mpc-opt %s -mpc-loss-scaling="mode=dynamic scale=1024 growth=4 backoff=0.25 interval=10 min=2 max=4096" -split-input-file -verify-diagnostics | FileCheck %s --check-prefix=OPTS
// RUN: mpc-opt %s -mpc-loss-scaling="mode=static scale=128" -split-input-file -verify-diagnostics | FileCheck %s --check-prefix=STATIC
// RUN: mpc-opt %s -mpc-loss-scaling=mode=none -split-input-file | FileCheck %s --check-prefix=NONE
// RUN: not mpc-opt %s -mpc-loss-scaling="mode=dynamic backoff=2" -split-input-file 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: not mpc-opt %s -mpc-loss-scaling=mode=sometimes -split-input-file 2>&1 | FileCheck %s --check-prefix=MODE

// The seed of the backward sweep becomes the scale; both gradients go
// through one unscale + all-finite check; the dynamic state is an input
// and an output, updated with GradScaler's rule.
// DYN-LABEL: func.func @f_train_step
// DYN-SAME: %[[SCALE:[a-z0-9]+]]: tensor<f32> {mpc.input = "mpc.loss_scale"}, %[[N:[a-z0-9]+]]: tensor<i64> {mpc.input = "mpc.loss_scale_good_steps"})
// DYN-SAME: -> (tensor<f32> {mpc.output = "loss"}, tensor<3x4xf32> {mpc.gradient = @w}, tensor<3xf32> {mpc.gradient = @b}, tensor<i1> {mpc.output = "mpc.found_inf"}, tensor<f32> {mpc.output = "mpc.loss_scale"}, tensor<i64> {mpc.output = "mpc.loss_scale_good_steps"})
// DYN-SAME: mpc.loss_scale_init = 6.553600e+04 : f64, mpc.loss_scale_mode = "dynamic"
// DYN-NOT: mpc.grad_seed
// DYN: mpc.softmax_cross_entropy_loss_grad %[[SCALE]],
// DYN: %[[G:.*]]:2, %[[INF:.*]] = mpc.unscale_grads %{{.*}}, %{{.*}}, %[[SCALE]] : (tensor<3x4xf32>, tensor<3xf32>, tensor<f32>) -> (tensor<3x4xf32>, tensor<3xf32>, tensor<i1>)
// DYN: %[[S1:.*]], %[[N1:.*]] = mpc.update_loss_scale %[[SCALE]], %[[N]], %[[INF]] {backoff = 5.000000e-01 : f64, growth = 2.000000e+00 : f64, interval = 2000 : i64, max_scale = 0x4170000000000000 : f64, min_scale = 1.000000e+00 : f64}
// DYN: return %{{.*}}, %[[G]]#0, %[[G]]#1, %[[INF]], %[[S1]], %[[N1]]
// OPTS: mpc.loss_scale_init = 1.024000e+03
// OPTS: mpc.update_loss_scale {{.*}} {backoff = 2.500000e-01 : f64, growth = 4.000000e+00 : f64, interval = 10 : i64, max_scale = 4.096000e+03 : f64, min_scale = 2.000000e+00 : f64}
// STATIC-LABEL: func.func @f_train_step
// STATIC-NOT: mpc.loss_scale_good_steps
// STATIC: %[[C:.*]] = mpc.constant dense<1.280000e+02> : tensor<f32>
// STATIC: mpc.softmax_cross_entropy_loss_grad %[[C]],
// STATIC: mpc.unscale_grads %{{.*}}, %{{.*}}, %[[C]]
// STATIC-NOT: mpc.update_loss_scale
// NONE: mpc.grad_seed
// NONE-NOT: mpc.unscale_grads
// BAD: invalid loss-scale settings: need scale > 0, 0 < min <= max, growth >= 1, 0 < backoff < 1, interval >= 1
// MODE: loss-scaling mode must be none, static or dynamic, got 'sometimes'
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
  %dw = mpc.gemm %dy, %x {transA = true} : (tensor<2x3xf32>, tensor<2x4xf32>) -> tensor<3x4xf32>
  %db = mpc.reduce_sum %dy {axes = array<i64: 0>, keepdims = false} : (tensor<2x3xf32>) -> tensor<3xf32>
  return %loss, %dw, %db : tensor<f32>, tensor<3x4xf32>, tensor<3xf32>
}

// -----

// A fp16 gradient widened to its FP32 master by a cast read nowhere else
// is unscaled from fp16 directly (the cast goes; the result is FP32); a
// widening cast read elsewhere too stays.
// DYN-LABEL: func.func @widened_train_step
// DYN: %[[DW:.*]] = mpc.gemm
// DYN: %[[DB:.*]] = mpc.cast %{{.*}} : (tensor<3xf16>) -> tensor<3xf32>
// DYN-NOT: mpc.cast
// DYN: mpc.unscale_grads %[[DW]], %[[DB]], %{{.*}} : (tensor<3x4xf16>, tensor<3xf32>, tensor<f32>) -> (tensor<3x4xf32>, tensor<3xf32>, tensor<i1>)
mpc.param @w2 trainable : tensor<3x4xf32> = dense<1.0> : tensor<3x4xf32>
mpc.param @b2 trainable : tensor<3xf32> = dense<0.0> : tensor<3xf32>
func.func @widened_train_step(%x: tensor<2x4xf16> {mpc.input = "x"}, %l: tensor<f32> {mpc.input = "l"},
                              %w: tensor<3x4xf32> {mpc.param = @w2}, %b: tensor<3xf32> {mpc.param = @b2})
    -> (tensor<f32> {mpc.output = "loss"}, tensor<3x4xf32> {mpc.gradient = @w2}, tensor<3xf32> {mpc.gradient = @b2}, tensor<3xf32> {mpc.output = "db"})
    attributes {mpc.loss_index = 0 : i64, mpc.train_step} {
  %shape = mpc.constant dense<[2, 3]> : tensor<2xi64>
  %one = mpc.constant {mpc.grad_seed} dense<1.0> : tensor<f32>
  %seed = mpc.cast %one : (tensor<f32>) -> tensor<f16>
  %dy = mpc.expand %seed, %shape : (tensor<f16>, tensor<2xi64>) -> tensor<2x3xf16>
  %dw16 = mpc.gemm %dy, %x {transA = true} : (tensor<2x3xf16>, tensor<2x4xf16>) -> tensor<3x4xf16>
  %db16 = mpc.reduce_sum %dy {axes = array<i64: 0>, keepdims = false} : (tensor<2x3xf16>) -> tensor<3xf16>
  %dw = mpc.cast %dw16 : (tensor<3x4xf16>) -> tensor<3x4xf32>
  %db = mpc.cast %db16 : (tensor<3xf16>) -> tensor<3xf32>
  return %l, %dw, %db, %db : tensor<f32>, tensor<3x4xf32>, tensor<3xf32>, tensor<3xf32>
}

// -----

// expected-error @+1 {{no train step to scale (run mpc-autodiff first)}}
module {
  func.func @forward(%a: tensor<4xf32>) -> tensor<4xf32> {
    return %a : tensor<4xf32>
  }
}
