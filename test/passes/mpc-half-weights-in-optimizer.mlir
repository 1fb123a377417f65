// RUN: mpc-opt %s -mpc-half-weights-in-optimizer -split-input-file -mlir-print-debuginfo | FileCheck %s

// The master copy of @w becomes input mpc.half.w; the step returns the
// cast of the guarded new master under the same name, right after the
// update (where chain fusion puts it in the update's kernel), at the
// copy's location. @b has no low-precision copy: its update is untouched.
// CHECK: #[[$LOC:loc[0-9]*]] = loc("w_copy")
// CHECK-LABEL: func.func @sgd_train_step
// CHECK-SAME: %[[W:[a-z0-9]+]]: tensor<3x4xf32> {mpc.param = @w}
// CHECK-SAME: %[[H:[a-z0-9]+]]: tensor<3x4xf16> {mpc.input = "mpc.half.w"} loc("w_copy")
// CHECK-SAME: -> (tensor<2x4xf16> {mpc.output = "y"}, tensor<i1> {mpc.output = "mpc.found_inf"}, tensor<3x4xf32> {mpc.output = "mpc.new.w"}, tensor<3xf32> {mpc.output = "mpc.new.b"}, tensor<3x4xf16> {mpc.output = "mpc.half.w"})
// CHECK-NOT: mpc.master_copy
// CHECK: %[[Y:.*]] = mpc.matmul %{{.*}}, %[[H]]
// CHECK: %[[NW:.*]] = mpc.where %{{.*}}, %[[W]], %{{.*}}
// CHECK-NEXT: %[[NH:.*]] = mpc.cast %[[NW]] : (tensor<3x4xf32>) -> tensor<3x4xf16> loc(#[[$LOC]])
// CHECK: %[[NB:.*]] = mpc.where
// CHECK: return %[[Y]], %{{.*}}, %[[NW]], %[[NB]], %[[NH]] :
mpc.param @w trainable : tensor<3x4xf32> = dense<1.0> : tensor<3x4xf32>
mpc.param @b trainable : tensor<3xf32> = dense<0.0> : tensor<3xf32>
func.func @sgd_train_step(%w: tensor<3x4xf32> {mpc.param = @w}, %b: tensor<3xf32> {mpc.param = @b},
                          %x: tensor<2x3xf16> {mpc.input = "x"}, %dw: tensor<3x4xf32> {mpc.input = "dw"},
                          %db: tensor<3xf32> {mpc.input = "db"}, %inf: tensor<i1> {mpc.input = "inf"})
    -> (tensor<2x4xf16> {mpc.output = "y"}, tensor<i1> {mpc.output = "mpc.found_inf"}, tensor<3x4xf32> {mpc.output = "mpc.new.w"}, tensor<3xf32> {mpc.output = "mpc.new.b"})
    attributes {mpc.train_step, mpc.optimizer = "sgd"} {
  %h = mpc.cast %w {mpc.master_copy = @w} : (tensor<3x4xf32>) -> tensor<3x4xf16> loc("w_copy")
  %y = mpc.matmul %x, %h : (tensor<2x3xf16>, tensor<3x4xf16>) -> tensor<2x4xf16>
  %lr = mpc.constant dense<0.1> : tensor<f32>
  %sw = mpc.mul %lr, %dw : (tensor<f32>, tensor<3x4xf32>) -> tensor<3x4xf32>
  %nw = mpc.sub %w, %sw : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
  %gw = mpc.where %inf, %w, %nw : (tensor<i1>, tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
  %sb = mpc.mul %lr, %db : (tensor<f32>, tensor<3xf32>) -> tensor<3xf32>
  %nb = mpc.sub %b, %sb : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %gb = mpc.where %inf, %b, %nb : (tensor<i1>, tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  return %y, %inf, %gw, %gb : tensor<2x4xf16>, tensor<i1>, tensor<3x4xf32>, tensor<3xf32>
}

// -----

// A master with a copy per low type keeps its casts; so does a step the
// optimizer did not update (mpc grad), and a parameter it does not update.
// CHECK-LABEL: func.func @two_types_train_step
// CHECK-NOT: mpc.half
// CHECK: mpc.cast %{{.*}} {mpc.master_copy = @u} : (tensor<3xf32>) -> tensor<3xf16>
// CHECK: mpc.cast %{{.*}} {mpc.master_copy = @u} : (tensor<3xf32>) -> tensor<3xbf16>
// CHECK: mpc.cast %{{.*}} {mpc.master_copy = @frozen}
// CHECK-LABEL: func.func @grad_step
// CHECK-NOT: mpc.half
// CHECK: mpc.cast %{{.*}} {mpc.master_copy = @v}
mpc.param @u trainable : tensor<3xf32> = dense<1.0> : tensor<3xf32>
mpc.param @frozen : tensor<3xf32> = dense<1.0> : tensor<3xf32>
func.func @two_types_train_step(%u: tensor<3xf32> {mpc.param = @u}, %f: tensor<3xf32> {mpc.param = @frozen})
    -> (tensor<3xf16> {mpc.output = "a"}, tensor<3xbf16> {mpc.output = "b"}, tensor<3xf16> {mpc.output = "c"}, tensor<3xf32> {mpc.output = "mpc.new.u"})
    attributes {mpc.train_step, mpc.optimizer = "sgd"} {
  %a = mpc.cast %u {mpc.master_copy = @u} : (tensor<3xf32>) -> tensor<3xf16>
  %b = mpc.cast %u {mpc.master_copy = @u} : (tensor<3xf32>) -> tensor<3xbf16>
  %c = mpc.cast %f {mpc.master_copy = @frozen} : (tensor<3xf32>) -> tensor<3xf16>
  return %a, %b, %c, %u : tensor<3xf16>, tensor<3xbf16>, tensor<3xf16>, tensor<3xf32>
}
mpc.param @v trainable : tensor<3xf32> = dense<0.0> : tensor<3xf32>
func.func @grad_step(%v: tensor<3xf32> {mpc.param = @v})
    -> (tensor<3xf16> {mpc.output = "a"}, tensor<3xf32> {mpc.output = "mpc.new.v"})
    attributes {mpc.train_step} {
  %a = mpc.cast %v {mpc.master_copy = @v} : (tensor<3xf32>) -> tensor<3xf16>
  return %a, %v : tensor<3xf16>, tensor<3xf32>
}
