// RUN: mpc-opt %s -mpc-ema=decay=0.75 -split-input-file | FileCheck %s
// RUN: mpc-opt %s -mpc-ema=decay=0.75 -split-input-file -mlir-print-debuginfo | FileCheck %s --check-prefix=LOC
// RUN: not mpc-opt %s -mpc-ema=decay=1 -split-input-file 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: mpc-opt %s "-mpc-ema=decay=0.75 warmup-power=0.75 warmup-gamma=2" -split-input-file | FileCheck %s --check-prefix=WARM
// RUN: not mpc-opt %s "-mpc-ema=decay=0.75 warmup-power=0.75 warmup-gamma=0" -split-input-file 2>&1 | FileCheck %s --check-prefix=BADWARM
// RUN: mpc-opt %s "-mpc-ema=decay=0.75 warmup-num-updates=true" -split-input-file | FileCheck %s --check-prefix=TF
// RUN: not mpc-opt %s "-mpc-ema=decay=0.75 warmup-power=0.75 warmup-num-updates=true" -split-input-file 2>&1 | FileCheck %s --check-prefix=BOTH

// An updated weight and a batch norm statistic each get an average, state
// mpc.ema.<p> of the parameter's type and stored layout, moved toward the
// value the step keeps: the guarded weight as updated, the statistic's old
// value when the step's flag is up (the runtime does not feed it back).
// e + 0.25 (kept - e), in FP32.
// CHECK-LABEL: func.func @adam_train_step
// CHECK-SAME: %[[W:[a-z0-9]+]]: tensor<2x3xf32> {mpc.param = @w, mpc.stored_perm = array<i64: 1, 0>}
// CHECK-SAME: %[[M:[a-z0-9]+]]: tensor<3xf32> {mpc.param = @mean}
// CHECK-SAME: %[[EW:[a-z0-9]+]]: tensor<2x3xf32> {mpc.input = "mpc.ema.w", mpc.stored_perm = array<i64: 1, 0>}
// CHECK-SAME: %[[EM:[a-z0-9]+]]: tensor<3xf32> {mpc.input = "mpc.ema.mean"}
// CHECK-SAME: tensor<2x3xf32> {mpc.output = "mpc.ema.w"}, tensor<3xf32> {mpc.output = "mpc.ema.mean"})
// CHECK-SAME: mpc.ema = 7.500000e-01 : f32
// CHECK: %[[R:.*]] = mpc.constant dense<2.500000e-01> : tensor<f32>
// CHECK: %[[D:.*]] = mpc.sub %[[NW:.*]], %[[EW]]
// CHECK: %[[S:.*]] = mpc.mul %[[D]], %[[R]]
// CHECK: %[[AW:.*]] = mpc.add %[[EW]], %[[S]]
// CHECK: %[[KEPT:.*]] = mpc.where %[[INF:.*]], %[[M]], %[[NM:.*]] :
// CHECK: %[[DM:.*]] = mpc.sub %[[KEPT]], %[[EM]]
// CHECK: %[[AM:.*]] = mpc.add %[[EM]], %{{.*}}
// CHECK: return %{{.*}}, %[[AW]], %[[AM]] :
// With a warmup the rate is the step's input mpc.ema_rate (one, FP32, for
// every average; the host computes it each update from the recipe the
// function records: decay, power, gamma).
// WARM-LABEL: func.func @adam_train_step
// WARM-SAME: %[[RATE:[a-z0-9]+]]: tensor<f32> {mpc.input = "mpc.ema_rate"}
// WARM-SAME: %[[EW:[a-z0-9]+]]: tensor<2x3xf32> {mpc.input = "mpc.ema.w"
// WARM-SAME: mpc.ema_warmup = array<f64: 7.500000e-01, 7.500000e-01, 2.000000e+00>
// WARM-NOT: mpc.constant dense<2.500000e-01>
// WARM: %[[D:.*]] = mpc.sub %{{.*}}, %[[EW]]
// WARM-NEXT: mpc.mul %[[D]], %[[RATE]]
// WARM: mpc.mul %{{.*}}, %[[RATE]]
// WARM-LABEL: func.func @accumulating_train_step
// WARM-SAME: {mpc.input = "mpc.ema_rate"}
// TensorFlow's num_updates form records the decay alone.
// TF-LABEL: func.func @adam_train_step
// TF-SAME: %[[RATE:[a-z0-9]+]]: tensor<f32> {mpc.input = "mpc.ema_rate"}
// TF-SAME: mpc.ema_warmup = array<f64: 7.500000e-01>
// TF: mpc.mul %{{.*}}, %[[RATE]]
// The average's ops take the step's return location.
// LOC: mpc.add %arg5, {{.*}} loc(#[[L:loc[0-9]+]])
// LOC: #[[L]] = loc({{.*}}"step_return"
mpc.param @w trainable : tensor<2x3xf32> = dense<1.0> : tensor<2x3xf32>
mpc.param @mean : tensor<3xf32> = dense<0.0> : tensor<3xf32>
func.func @adam_train_step(%w: tensor<2x3xf32> {mpc.param = @w, mpc.stored_perm = array<i64: 1, 0>}, %mean: tensor<3xf32> {mpc.param = @mean}, %g: tensor<2x3xf32> {mpc.input = "g"}, %inf: tensor<i1> {mpc.input = "inf"}, %bm: tensor<3xf32> {mpc.input = "batch_mean"})
    -> (tensor<2x3xf32> {mpc.gradient = @w}, tensor<i1> {mpc.output = "mpc.found_inf"}, tensor<2x3xf32> {mpc.output = "mpc.new.w"}, tensor<3xf32> {mpc.output = "mpc.new.mean"})
    attributes {mpc.train_step, mpc.optimizer = "sgd"} {
  %nw0 = mpc.sub %w, %g : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %nw = mpc.where %inf, %w, %nw0 : (tensor<i1>, tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %nm = mpc.add %mean, %bm : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  return %g, %inf, %nw, %nm : tensor<2x3xf32>, tensor<i1>, tensor<2x3xf32>, tensor<3xf32> loc("step_return")
}

// -----

// Under gradient accumulation the average moves on a group's last
// micro-batch alone.
// CHECK-LABEL: func.func @accumulating_train_step
// CHECK-SAME: %[[APPLY:[a-z0-9]+]]: tensor<i1> {mpc.input = "mpc.accum.apply"}
// CHECK-SAME: %[[E:[a-z0-9]+]]: tensor<3xf32> {mpc.input = "mpc.ema.w"}
// CHECK: %[[A:.*]] = mpc.add %[[E]], %{{.*}}
// CHECK: %[[H:.*]] = mpc.where %[[APPLY]], %[[A]], %[[E]]
// CHECK: return %{{.*}}, %[[H]] :
mpc.param @w trainable : tensor<3xf32> = dense<1.0> : tensor<3xf32>
func.func @accumulating_train_step(%w: tensor<3xf32> {mpc.param = @w}, %apply: tensor<i1> {mpc.input = "mpc.accum.apply"}, %g: tensor<3xf32> {mpc.input = "g"})
    -> (tensor<3xf32> {mpc.output = "mpc.new.w"}) attributes {mpc.train_step, mpc.optimizer = "sgd"} {
  %nw0 = mpc.sub %w, %g : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %nw = mpc.where %apply, %nw0, %w : (tensor<i1>, tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  return %nw : tensor<3xf32>
}

// BAD: error: ema: decay must be in [0, 1), got 1
// BADWARM: error: ema: the warmup's power must be >= 0 and its gamma > 0, got 7.500000e-01 and 0.000000e+00
// BOTH: error: ema: one warmup: warmup-power or warmup-num-updates
