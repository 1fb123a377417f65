// RUN: mpc-opt %s -mpc-chain-algorithms -split-input-file -verify-diagnostics --mlir-print-debuginfo --mlir-print-local-scope | FileCheck %s

// Two algorithms become one step: the second reads the W and T the first
// bound (not the step's inputs); results are the last value bound to each
// initializer (in order of first binding), then the first algorithm's
// inference outputs; ops keep
// their locations.
// CHECK-NOT: func.func @training_algorithm_
// CHECK-LABEL: func.func @training_algorithms(
// CHECK-SAME: %[[W:[a-z0-9]+]]: tensor<2xf32> {mpc.param = @W}
// CHECK-SAME: %[[T:[a-z0-9]+]]: tensor<i64> {mpc.param = @T}
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<2xf32> {mpc.input = "X"}
// CHECK-SAME: %[[C:[a-z0-9]+]]: tensor<i64> {mpc.param = @C}
// CHECK-SAME: -> (tensor<i64> {mpc.output = "mpc.updated.T"}, tensor<2xf32> {mpc.output = "mpc.updated.W"}, tensor<i64> {mpc.output = "mpc.updated.C"}, tensor<f32> {mpc.output = "Loss"})
// CHECK-SAME: mpc.inference_outputs = 1 : i64, mpc.update_binding = {C = "mpc.updated.C", T = "mpc.updated.T", W = "mpc.updated.W"}
// CHECK: %[[LOSS:.*]] = mpc.reduce_sum %[[X]] {{.*}} loc("loss")
// CHECK: %[[W1:.*]] = mpc.sub %[[W]], %[[X]] {{.*}} loc("step")
// CHECK: %[[T1:.*]] = mpc.add %[[T]], %{{.*}} {{.*}} loc("count")
// CHECK: %[[W2:.*]] = mpc.mul %[[W1]], %{{.*}} {{.*}} loc("decay")
// CHECK: %[[C1:.*]] = mpc.add %[[C]], %[[T1]] {{.*}} loc("sum")
// CHECK: return %[[T1]], %[[W2]], %[[C1]], %[[LOSS]]
func.func @training_algorithm_0(%w: tensor<2xf32> {mpc.param = @W}, %t: tensor<i64> {mpc.param = @T}, %x: tensor<2xf32> {mpc.input = "X"}) -> (tensor<2xf32> {mpc.output = "W_new"}, tensor<i64> {mpc.output = "T_new"}, tensor<f32> {mpc.output = "Loss"}) attributes {mpc.inference_outputs = 1 : i64, mpc.update_binding = {T = "T_new", W = "W_new"}} {
  %loss = mpc.reduce_sum %x {keepdims = false} : (tensor<2xf32>) -> tensor<f32> loc("loss")
  %w1 = mpc.sub %w, %x : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32> loc("step")
  %one = mpc.constant dense<1> : tensor<i64>
  %t1 = mpc.add %t, %one : (tensor<i64>, tensor<i64>) -> tensor<i64> loc("count")
  return %w1, %t1, %loss : tensor<2xf32>, tensor<i64>, tensor<f32>
}
func.func @training_algorithm_1(%w: tensor<2xf32> {mpc.param = @W}, %c: tensor<i64> {mpc.param = @C}, %t: tensor<i64> {mpc.param = @T}) -> (tensor<2xf32> {mpc.output = "W_decayed"}, tensor<i64> {mpc.output = "C_new"}) attributes {mpc.inference_outputs = 0 : i64, mpc.update_binding = {C = "C_new", W = "W_decayed"}} {
  %d = mpc.constant dense<0.99> : tensor<f32>
  %w2 = mpc.mul %w, %d : (tensor<2xf32>, tensor<f32>) -> tensor<2xf32> loc("decay")
  %c1 = mpc.add %c, %t : (tensor<i64>, tensor<i64>) -> tensor<i64> loc("sum")
  return %w2, %c1 : tensor<2xf32>, tensor<i64>
}

// -----

// One algorithm: unchanged.
// CHECK-LABEL: func.func @training_algorithm_0(
// CHECK-NOT: training_algorithms
func.func @training_algorithm_0(%w: tensor<2xf32> {mpc.param = @W}) -> (tensor<2xf32> {mpc.output = "W_new"}) attributes {mpc.update_binding = {W = "W_new"}} {
  return %w : tensor<2xf32>
}

// -----

// A binding that names no output of its algorithm.
func.func @training_algorithm_0(%w: tensor<2xf32> {mpc.param = @W}) -> (tensor<2xf32> {mpc.output = "W_new"}) attributes {mpc.update_binding = {W = "W_new"}} {
  return %w : tensor<2xf32>
}
// expected-error @+1 {{binding of 'W' names 'W_gone', which the algorithm does not output}}
func.func @training_algorithm_1(%w: tensor<2xf32> {mpc.param = @W}) -> (tensor<2xf32> {mpc.output = "W_new"}) attributes {mpc.update_binding = {W = "W_gone"}} {
  return %w : tensor<2xf32>
}
