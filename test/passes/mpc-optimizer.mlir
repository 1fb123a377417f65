// RUN: mpc-opt %s -mpc-optimizer="kind=sgd lr=0.5 weight-decay=0.25" -split-input-file -verify-diagnostics | FileCheck %s --check-prefix=SGD
// RUN: mpc-opt %s -mpc-optimizer="kind=momentum lr=0.5 momentum=0.75" -split-input-file -verify-diagnostics | FileCheck %s --check-prefix=MOM
// RUN: mpc-opt %s -mpc-optimizer="kind=adam lr=0.5" -split-input-file -verify-diagnostics | FileCheck %s --check-prefix=ADAM
// RUN: mpc-opt %s -mpc-optimizer=kind=sgd -split-input-file -verify-diagnostics --mlir-print-debuginfo --mlir-print-local-scope | FileCheck %s --check-prefix=LOC
// RUN: not mpc-opt %s -mpc-optimizer=kind=lbfgs -split-input-file 2>&1 | FileCheck %s --check-prefix=KIND
// RUN: mpc-opt %s -mpc-optimizer="kind=adamw lr=0.5 weight-decay=0.25 lr-schedule=cosine,warmup=10" -split-input-file -verify-diagnostics | FileCheck %s --check-prefix=SCHED
// KIND: unknown optimizer 'lbfgs' (sgd, momentum, nesterov, adam, adamw, adagrad)

// SGD with L2 weight decay: d = g + wd * w; w' = w - lr * d, as a new
// output; the gradient stays an output.
// SGD-LABEL: func.func @f_train_step
// SGD-SAME: -> (tensor<f32> {mpc.output = "loss"}, tensor<3xf32> {mpc.gradient = @w}, tensor<3xf32> {mpc.output = "mpc.new.w"})
// SGD-SAME: mpc.optimizer = "sgd"
// SGD: %[[WD:.*]] = mpc.constant dense<2.500000e-01> : tensor<f32>
// SGD: %[[T:.*]] = mpc.mul %[[WD]], %[[W:.*]] :
// SGD: %[[D:.*]] = mpc.add %[[G:.*]], %[[T]] :
// SGD: %[[LR:.*]] = mpc.constant dense<5.000000e-01> : tensor<f32>
// SGD: %[[S:.*]] = mpc.mul %[[LR]], %[[D]] :
// SGD: %[[NEW:.*]] = mpc.sub %[[W]], %[[S]] :
// SGD: return %{{.*}}, %[[G]], %[[NEW]]
// Momentum: the buffer is state (input and output under one name), the
// first step takes the gradient itself.
// MOM-LABEL: func.func @f_train_step
// MOM-SAME: %[[FIRST:[a-z0-9]+]]: tensor<i1> {mpc.input = "mpc.opt.first"}, %[[BUF:[a-z0-9]+]]: tensor<3xf32> {mpc.input = "mpc.opt.m.w"}
// MOM-SAME: tensor<3xf32> {mpc.output = "mpc.opt.m.w"}, tensor<3xf32> {mpc.output = "mpc.new.w"}
// MOM: %[[MU:.*]] = mpc.constant dense<7.500000e-01> : tensor<f32>
// MOM: %[[DECAY:.*]] = mpc.mul %[[MU]], %[[BUF]]
// MOM: %[[ACC:.*]] = mpc.add %[[DECAY]], %[[G:.*]] :
// MOM: %{{.*}} = mpc.where %[[FIRST]], %[[G]], %[[ACC]] : (tensor<i1>, tensor<3xf32>, tensor<3xf32>)
// Adam: two state tensors; the step size and bias correction are inputs.
// ADAM-LABEL: func.func @f_train_step
// ADAM-SAME: {mpc.input = "mpc.opt.step_size"}, %{{.*}}: tensor<f32> {mpc.input = "mpc.opt.bc2_sqrt"}, %{{.*}}: tensor<3xf32> {mpc.input = "mpc.opt.m.w"}, %{{.*}}: tensor<3xf32> {mpc.input = "mpc.opt.v.w"}
// ADAM-SAME: tensor<3xf32> {mpc.output = "mpc.opt.m.w"}, tensor<3xf32> {mpc.output = "mpc.opt.v.w"}, tensor<3xf32> {mpc.output = "mpc.new.w"}
// ADAM: mpc.sqrt
// LOC: mpc.sub {{.*}} loc("step")
// Under a schedule the rate is a step input, read where the constant was
// (AdamW: its decay 1 - lr * wd), and the spec an attribute for the host.
// SCHED-LABEL: func.func @f_train_step
// SCHED-SAME: %[[LR:[a-z0-9]+]]: tensor<f32> {mpc.input = "mpc.opt.lr"}
// SCHED-SAME: mpc.lr_schedule = "cosine,warmup=10"
// SCHED: %[[WD:.*]] = mpc.constant dense<2.500000e-01> : tensor<f32>
// SCHED: %[[LW:.*]] = mpc.mul %[[LR]], %[[WD]]
// SCHED: %[[ONE:.*]] = mpc.constant dense<1.000000e+00> : tensor<f32>
// SCHED: %[[DECAY:.*]] = mpc.sub %[[ONE]], %[[LW]]
// SCHED: mpc.mul %[[W:[a-z0-9]+]], %[[DECAY]]
mpc.param @w trainable : tensor<3xf32> = dense<1.0> : tensor<3xf32>
func.func @f_train_step(%x: tensor<3xf32> {mpc.input = "x"}, %w: tensor<3xf32> {mpc.param = @w})
    -> (tensor<f32> {mpc.output = "loss"}, tensor<3xf32> {mpc.gradient = @w})
    attributes {mpc.loss_index = 0 : i64, mpc.train_step} {
  %y = mpc.mul %x, %w : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %l = mpc.reduce_sum %y {keepdims = false} : (tensor<3xf32>) -> tensor<f32>
  return %l, %x : tensor<f32>, tensor<3xf32> loc("step")
}

// -----

// With loss scaling, an overflowing step keeps the old parameter.
mpc.param @w trainable : tensor<3xf32> = dense<1.0> : tensor<3xf32>
// SGD-LABEL: func.func @scaled_train_step
// SGD: %[[NEW:.*]] = mpc.sub %[[W:.*]], %{{.*}} :
// SGD: %[[KEPT:.*]] = mpc.where %[[INF:.*]], %[[W]], %[[NEW]] : (tensor<i1>, tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
// SGD: return %{{.*}}, %{{.*}}, %[[INF]], %[[KEPT]]
func.func @scaled_train_step(%x: tensor<3xf32> {mpc.input = "x"}, %w: tensor<3xf32> {mpc.param = @w}, %inf: tensor<i1> {mpc.input = "inf"})
    -> (tensor<f32> {mpc.output = "loss"}, tensor<3xf32> {mpc.gradient = @w}, tensor<i1> {mpc.output = "mpc.found_inf"})
    attributes {mpc.loss_index = 0 : i64, mpc.train_step} {
  %y = mpc.mul %x, %w : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %l = mpc.reduce_sum %y {keepdims = false} : (tensor<3xf32>) -> tensor<f32>
  return %l, %x, %inf : tensor<f32>, tensor<3xf32>, tensor<i1>
}

// -----

// Batch norm's running statistics are state the forward updates: the
// step returns them as the new values of their parameters, whatever the
// optimizer (one output per parameter, however many batch norms read it).
mpc.param @s trainable : tensor<2xf32> = dense<1.0> : tensor<2xf32>
mpc.param @b trainable : tensor<2xf32> = dense<0.0> : tensor<2xf32>
mpc.param @rm : tensor<2xf32> = dense<0.0> : tensor<2xf32>
mpc.param @rv : tensor<2xf32> = dense<1.0> : tensor<2xf32>
// SGD-LABEL: func.func @bn_train_step
// SGD-SAME: tensor<2xf32> {mpc.output = "mpc.new.b"}, tensor<2xf32> {mpc.output = "mpc.new.rm"}, tensor<2xf32> {mpc.output = "mpc.new.rv"})
// SGD: %[[Y:.*]], %[[RM:.*]], %[[RV:.*]] = mpc.batch_norm_train
// SGD: return {{.*}}, %[[RM]], %[[RV]] :
func.func @bn_train_step(%x: tensor<4x2x3xf32> {mpc.input = "x"}, %s: tensor<2xf32> {mpc.param = @s}, %b: tensor<2xf32> {mpc.param = @b},
                         %rm: tensor<2xf32> {mpc.param = @rm}, %rv: tensor<2xf32> {mpc.param = @rv})
    -> (tensor<f32> {mpc.output = "loss"}, tensor<2xf32> {mpc.gradient = @s}, tensor<2xf32> {mpc.gradient = @b})
    attributes {mpc.loss_index = 0 : i64, mpc.train_step} {
  %y, %m, %v = mpc.batch_norm_train %x, %s, %b, %rm, %rv {epsilon = 1.0e-05 : f32, momentum = 0.9 : f32} : (tensor<4x2x3xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> (tensor<4x2x3xf32>, tensor<2xf32>, tensor<2xf32>)
  %y2, %m2, %v2 = mpc.batch_norm_train %y, %s, %b, %rm, %rv {epsilon = 1.0e-05 : f32, momentum = 0.9 : f32} : (tensor<4x2x3xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> (tensor<4x2x3xf32>, tensor<2xf32>, tensor<2xf32>)
  %l = mpc.reduce_sum %y2 {keepdims = false} : (tensor<4x2x3xf32>) -> tensor<f32>
  return %l, %s, %b : tensor<f32>, tensor<2xf32>, tensor<2xf32>
}

// -----

// expected-error @+1 {{no train step to optimize (run mpc-autodiff first)}}
module {
  func.func @forward(%a: tensor<4xf32>) -> tensor<4xf32> {
    return %a : tensor<4xf32>
  }
}

// -----

// A half-precision parameter is refused: the update and its state are
// FP32 (mpc train promotes a half model's parameters before this pass).
mpc.param @h trainable : tensor<2xf16> = dense<1.0> : tensor<2xf16>
// expected-error @+1 {{parameter @h is 'tensor<2xf16>'; the optimizer updates FP32 parameters (mpc-promote-half-params makes them)}}
func.func @half_step(%x: tensor<2xf16> {mpc.input = "x"}, %h: tensor<2xf16> {mpc.param = @h})
    -> (tensor<f16> {mpc.output = "loss"}, tensor<2xf16> {mpc.gradient = @h})
    attributes {mpc.loss_index = 0 : i64, mpc.train_step} {
  %y = mpc.mul %x, %h : (tensor<2xf16>, tensor<2xf16>) -> tensor<2xf16>
  %l = mpc.reduce_sum %y {keepdims = false} : (tensor<2xf16>) -> tensor<f16>
  return %l, %x : tensor<f16>, tensor<2xf16>
}
