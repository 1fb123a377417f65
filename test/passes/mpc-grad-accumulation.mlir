// RUN: mpc-opt %s -mpc-grad-accumulation=steps=4 -split-input-file -mlir-print-debuginfo | FileCheck %s
// RUN: mpc-opt %s -mpc-grad-accumulation=steps=4 -mpc-unscale-in-optimizer -split-input-file | FileCheck %s --check-prefix=FUSED
// RUN: mpc-opt %s -mpc-grad-accumulation=steps=1 -split-input-file | FileCheck %s --check-prefix=OFF
// RUN: not mpc-opt %s -mpc-grad-accumulation=steps=0 -split-input-file 2>&1 | FileCheck %s --check-prefix=BAD

// A dynamically scaled SGD step: each gradient is read as acc + g / 4,
// the accumulator read as zero on the group's first micro-batch
// (mpc.accum.first) and returned as that sum, the overflow guards select
// the old weights unless it is the group's last (mpc.accum.apply) and no
// micro-batch overflowed (the flag sticky over the group), and the loss
// scale's update reads `apply`. The step still returns the micro-batch's
// own gradients.
// (-mlir-print-debuginfo prints the locations first.)
// CHECK: #[[$RET:loc[0-9]*]] = loc("step_return")
// CHECK-LABEL: func.func @sgd_train_step
// CHECK-SAME: %[[W:[a-z0-9]+]]: tensor<3x4xf32> {mpc.param = @w}
// CHECK-SAME: %[[APPLY:[a-z0-9]+]]: tensor<i1> {mpc.input = "mpc.accum.apply"}
// CHECK-SAME: %[[FIRST:[a-z0-9]+]]: tensor<i1> {mpc.input = "mpc.accum.first"}
// CHECK-SAME: %[[ACCW:[a-z0-9]+]]: tensor<3x4xf32> {mpc.input = "mpc.accum.w"}
// CHECK-SAME: %[[ACCB:[a-z0-9]+]]: tensor<3xf32> {mpc.input = "mpc.accum.b"}
// CHECK-SAME: %[[STICKY:[a-z0-9]+]]: tensor<i1> {mpc.input = "mpc.accum.found_inf"}
// CHECK-SAME: tensor<3x4xf32> {mpc.output = "mpc.accum.w"}, tensor<3xf32> {mpc.output = "mpc.accum.b"}, tensor<i1> {mpc.output = "mpc.accum.found_inf"})
// CHECK-SAME: mpc.grad_accumulation = 4 : i64
// CHECK: %[[NOT:.*]] = mpc.not %[[APPLY]] : (tensor<i1>) -> tensor<i1> loc(#[[$RET]])
// CHECK: %[[U:.*]]:2, %[[INF:.*]] = mpc.unscale_grads
// CHECK: %[[EFF:.*]] = mpc.or %[[STICKY]], %[[INF]]
// CHECK: %[[SKIP:.*]] = mpc.or %[[EFF]], %[[NOT]]
// CHECK: %[[NEXT:.*]] = mpc.and %[[EFF]], %[[NOT]]
// CHECK: mpc.update_loss_scale %{{.*}}, %{{.*}}, %[[EFF]], %[[APPLY]]
// The accumulations together, before the first update.
// CHECK: %[[QW:.*]] = mpc.constant dense<2.500000e-01> : tensor<f32>
// CHECK: %[[PW:.*]] = mpc.mul %[[U]]#0, %[[QW]] : (tensor<3x4xf32>, tensor<f32>) -> tensor<3x4xf32> loc(#[[$RET]])
// CHECK: %[[ZW:.*]] = mpc.constant dense<0.000000e+00> : tensor<f32>
// CHECK: %[[SW0:.*]] = mpc.where %[[FIRST]], %[[ZW]], %[[ACCW]]
// CHECK: %[[TW:.*]] = mpc.add %[[SW0]], %[[PW]]
// CHECK: %[[PB:.*]] = mpc.mul %[[U]]#1, %{{.*}} : (tensor<3xf32>, tensor<f32>) -> tensor<3xf32>
// CHECK: %[[SB0:.*]] = mpc.where %[[FIRST]], %{{.*}}, %[[ACCB]]
// CHECK: %[[TB:.*]] = mpc.add %[[SB0]], %[[PB]]
// CHECK: %[[SW:.*]] = mpc.mul %{{.*}}, %[[TW]]
// CHECK: %[[NW:.*]] = mpc.sub %[[W]], %[[SW]]
// CHECK: %[[GW:.*]] = mpc.where %[[SKIP]], %[[W]], %[[NW]]
// CHECK: %[[SB:.*]] = mpc.mul %{{.*}}, %[[TB]]
// CHECK: return %{{.*}}, %[[U]]#0, %[[U]]#1, %[[EFF]], %{{.*}}, %{{.*}}, %[[GW]], %{{.*}}, %[[TW]], %[[TB]], %[[NEXT]] :
// Each accumulation reads the fp16 gradient times 1/scale, computed where
// it is read (fused into the accumulation's kernel): no FP32 copy.
// FUSED-LABEL: func.func @sgd_train_step
// FUSED: %[[INV:.*]], %{{.*}} = mpc.check_grads %[[DW:[a-z0-9]+]], %[[DB:[a-z0-9]+]]
// FUSED: %[[W:.*]] = mpc.cast %[[DW]] : (tensor<3x4xf16>) -> tensor<3x4xf32>
// FUSED: %[[UW:.*]] = mpc.mul %[[W]], %[[INV]]
// FUSED: mpc.mul %[[UW]], %{{.*}} : (tensor<3x4xf32>, tensor<f32>) -> tensor<3x4xf32>
// FUSED: %[[UB:.*]] = mpc.mul %[[DB]], %[[INV]]
// FUSED: mpc.mul %[[UB]], %{{.*}} : (tensor<3xf32>, tensor<f32>) -> tensor<3xf32>
// FUSED: return %{{.*}}, %[[DW]], %[[DB]],
// OFF-LABEL: func.func @sgd_train_step
// OFF-NOT: mpc.accum
// OFF: return
// BAD: error: grad-accumulation: steps must be at least 1, got 0
mpc.param @w trainable : tensor<3x4xf32> = dense<1.0> : tensor<3x4xf32>
mpc.param @b trainable : tensor<3xf32> = dense<0.0> : tensor<3xf32>
func.func @sgd_train_step(%w: tensor<3x4xf32> {mpc.param = @w}, %b: tensor<3xf32> {mpc.param = @b},
                          %dw: tensor<3x4xf16> {mpc.input = "dw"}, %db: tensor<3xf32> {mpc.input = "db"},
                          %s: tensor<f32> {mpc.input = "mpc.loss_scale"}, %n: tensor<i64> {mpc.input = "mpc.loss_scale_good_steps"},
                          %loss: tensor<f32> {mpc.input = "l"})
    -> (tensor<f32> {mpc.output = "loss"}, tensor<3x4xf32> {mpc.gradient = @w}, tensor<3xf32> {mpc.gradient = @b}, tensor<i1> {mpc.output = "mpc.found_inf"}, tensor<f32> {mpc.output = "mpc.loss_scale"}, tensor<i64> {mpc.output = "mpc.loss_scale_good_steps"}, tensor<3x4xf32> {mpc.output = "mpc.new.w"}, tensor<3xf32> {mpc.output = "mpc.new.b"})
    attributes {mpc.train_step, mpc.optimizer = "sgd"} {
  %u:2, %inf = mpc.unscale_grads %dw, %db, %s : (tensor<3x4xf16>, tensor<3xf32>, tensor<f32>) -> (tensor<3x4xf32>, tensor<3xf32>, tensor<i1>) loc("unscale")
  %s1, %n1 = mpc.update_loss_scale %s, %n, %inf {backoff = 5.000000e-01 : f64, growth = 2.000000e+00 : f64, interval = 2000 : i64, max_scale = 16777216.0 : f64, min_scale = 1.0 : f64} : (tensor<f32>, tensor<i64>, tensor<i1>) -> (tensor<f32>, tensor<i64>)
  %lr = mpc.constant dense<0.1> : tensor<f32>
  %sw = mpc.mul %lr, %u#0 : (tensor<f32>, tensor<3x4xf32>) -> tensor<3x4xf32>
  %nw = mpc.sub %w, %sw : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
  %gw = mpc.where %inf, %w, %nw : (tensor<i1>, tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
  %sb = mpc.mul %lr, %u#1 : (tensor<f32>, tensor<3xf32>) -> tensor<3xf32>
  %nb = mpc.sub %b, %sb : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %gb = mpc.where %inf, %b, %nb : (tensor<i1>, tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  return %loss, %u#0, %u#1, %inf, %s1, %n1, %gw, %gb : tensor<f32>, tensor<3x4xf32>, tensor<3xf32>, tensor<i1>, tensor<f32>, tensor<i64>, tensor<3x4xf32>, tensor<3xf32> loc("step_return")
}

// -----

// Unscaled (fp32, no finite check): the updates and the optimizer state
// keep their old values unless the micro-batch is the group's last; batch
// norm's running statistics (no gradient) move every micro-batch.
// CHECK-LABEL: func.func @momentum_train_step
// CHECK-SAME: %[[W:[a-z0-9]+]]: tensor<2xf32> {mpc.param = @w}
// CHECK-SAME: %[[M:[a-z0-9]+]]: tensor<2xf32> {mpc.input = "mpc.opt.m.w"}
// CHECK-SAME: %[[APPLY:[a-z0-9]+]]: tensor<i1> {mpc.input = "mpc.accum.apply"}
// CHECK-NOT: mpc.accum.found_inf
// CHECK: %[[NOT:.*]] = mpc.not %[[APPLY]]
// CHECK: %[[T:.*]] = mpc.add %{{.*}}, %{{.*}} : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
// CHECK: %[[NM:.*]] = mpc.add %{{.*}}, %[[T]]
// CHECK: %[[GM:.*]] = mpc.where %[[NOT]], %[[M]], %[[NM]] :
// CHECK: %[[GW:.*]] = mpc.where %[[NOT]], %[[W]], %{{.*}} :
// CHECK: return %{{.*}}, %[[GM]], %[[GW]], %[[RM:[a-z0-9]+]], %{{.*}} :
mpc.param @w trainable : tensor<2xf32> = dense<1.0> : tensor<2xf32>
mpc.param @rm : tensor<2xf32> = dense<0.0> : tensor<2xf32>
func.func @momentum_train_step(%w: tensor<2xf32> {mpc.param = @w}, %m: tensor<2xf32> {mpc.input = "mpc.opt.m.w"},
                               %g: tensor<2xf32> {mpc.input = "g"}, %rm: tensor<2xf32> {mpc.input = "rm1"})
    -> (tensor<2xf32> {mpc.gradient = @w}, tensor<2xf32> {mpc.output = "mpc.opt.m.w"}, tensor<2xf32> {mpc.output = "mpc.new.w"}, tensor<2xf32> {mpc.output = "mpc.new.rm"})
    attributes {mpc.train_step, mpc.optimizer = "momentum"} {
  %mu = mpc.constant dense<0.9> : tensor<f32>
  %a = mpc.mul %mu, %m : (tensor<f32>, tensor<2xf32>) -> tensor<2xf32>
  %nm = mpc.add %a, %g : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %lr = mpc.constant dense<0.1> : tensor<f32>
  %s = mpc.mul %lr, %nm : (tensor<f32>, tensor<2xf32>) -> tensor<2xf32>
  %nw = mpc.sub %w, %s : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  return %g, %nm, %nw, %rm : tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>
}
