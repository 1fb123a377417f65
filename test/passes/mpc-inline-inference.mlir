// RUN: mpc-opt %s -mpc-inline-inference -split-input-file -verify-diagnostics | FileCheck %s
// RUN: mpc-opt %s -mpc-inline-inference -split-input-file -verify-diagnostics --mlir-print-debuginfo --mlir-print-local-scope | FileCheck %s --check-prefix=LOC

// The inference graph is cloned in front of the algorithm; W is shared, X
// becomes an argument; the Gradient of Loss gets it as its target; Loss is
// returned too.
mpc.param @W trainable : tensor<4x2xf32> = dense<1.0> : tensor<4x2xf32>
func.func @inference(%x: tensor<3x4xf32> {mpc.input = "X"}, %w: tensor<4x2xf32> {mpc.param = @W}) -> (tensor<f32> {mpc.output = "Loss"}) attributes {mpc.entry} {
  %y = mpc.matmul %x, %w : (tensor<3x4xf32>, tensor<4x2xf32>) -> tensor<3x2xf32> loc("fc")
  %l = mpc.reduce_sum %y {keepdims = false} : (tensor<3x2xf32>) -> tensor<f32> loc("loss")
  return %l : tensor<f32>
}
// CHECK-LABEL: func.func @algo(
// CHECK-SAME: %[[W:[a-z0-9]+]]: tensor<4x2xf32> {mpc.param = @W}, %[[X:[a-z0-9]+]]: tensor<3x4xf32> {mpc.input = "X"})
// CHECK-SAME: -> (tensor<4x2xf32> {mpc.output = "W_new"}, tensor<f32> {mpc.output = "Loss"})
// CHECK-SAME: mpc.inference_outputs = 1 : i64
// CHECK-NEXT: %[[Y:.*]] = mpc.matmul %[[X]], %[[W]]
// CHECK-NEXT: %[[L:.*]] = mpc.reduce_sum %[[Y]]
// CHECK: %[[G:.*]] = mpc.gradient %[[W]] target %[[L]] {xs = ["W"], y = "Loss", zs = []}
// CHECK: return %{{.*}}, %[[L]]
// LOC: mpc.matmul {{.*}} loc("fc")
func.func @algo(%w: tensor<4x2xf32> {mpc.param = @W}) -> (tensor<4x2xf32> {mpc.output = "W_new"})
    attributes {mpc.inference_graph = @inference, mpc.update_binding = {W = "W_new"}} {
  %g = mpc.gradient %w {xs = ["W"], y = "Loss", zs = []} : (tensor<4x2xf32>) -> tensor<4x2xf32>
  %c = mpc.constant dense<0.1> : tensor<f32>
  %s = mpc.mul %g, %c : (tensor<4x2xf32>, tensor<f32>) -> tensor<4x2xf32>
  %n = mpc.sub %w, %s : (tensor<4x2xf32>, tensor<4x2xf32>) -> tensor<4x2xf32>
  return %n : tensor<4x2xf32>
}

// -----

// Only inference outputs can be differentiated.
func.func @inference(%x: tensor<3xf32> {mpc.input = "X"}) -> (tensor<3xf32> {mpc.output = "Y"}) attributes {mpc.entry} {
  %y = mpc.relu %x : (tensor<3xf32>) -> tensor<3xf32>
  return %y : tensor<3xf32>
}
func.func @algo(%x: tensor<3xf32> {mpc.input = "X"}) -> (tensor<3xf32>) attributes {mpc.inference_graph = @inference} {
  // expected-error @+1 {{Gradient of 'Hidden', which is not an output of the inference graph (only outputs can be differentiated yet)}}
  %g = mpc.gradient %x {xs = ["X"], y = "Hidden", zs = []} : (tensor<3xf32>) -> tensor<3xf32>
  return %g : tensor<3xf32>
}
