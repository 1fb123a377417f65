// RUN: mpc-opt %s -mpc-dropout-steps | FileCheck %s
// RUN: mpc-opt %s -mpc-dropout-steps -mlir-print-debuginfo | FileCheck %s --check-prefix=LOC

// Each dropout that may train reads one new input, the step's number; a
// constant-false flag (inference), no flag, or a step already given are
// left alone.
// CHECK-LABEL: func.func @step
// CHECK-SAME: %arg3: tensor<2xi64> {mpc.input = "mpc.rng.step"}
// CHECK-NEXT: %{{.*}}, %{{.*}} = mpc.dropout %arg0 ratio %arg1 training %arg2 step %arg3 {stream = 7 : i64}
// CHECK-NEXT: %{{.*}}, %{{.*}} = mpc.dropout %arg0 ratio %arg1 training %arg2 step %arg3 {stream = 8 : i64}
// CHECK: mpc.dropout %arg0 ratio %arg1 training %{{.*}} {stream = 9 : i64}
// CHECK-NEXT: mpc.dropout %arg0 ratio %arg1 {stream = 10 : i64}
// LOC: mpc.dropout {{.*}} loc(#[[L:loc[0-9]*]])
// LOC: #[[L]] = loc("drop1")
func.func @step(%x: tensor<4x8xf32>, %r: tensor<f32>, %t: tensor<i1>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) {
  %y, %m = mpc.dropout %x ratio %r training %t {stream = 7 : i64} : (tensor<4x8xf32>, tensor<f32>, tensor<i1>) -> (tensor<4x8xf32>, tensor<4x8xi1>) loc("drop1")
  %y1, %m1 = mpc.dropout %x ratio %r training %t {stream = 8 : i64} : (tensor<4x8xf32>, tensor<f32>, tensor<i1>) -> (tensor<4x8xf32>, tensor<4x8xi1>)
  %f = mpc.constant dense<false> : tensor<i1>
  %y2, %m2 = mpc.dropout %x ratio %r training %f {stream = 9 : i64} : (tensor<4x8xf32>, tensor<f32>, tensor<i1>) -> (tensor<4x8xf32>, tensor<4x8xi1>)
  %y3, %m3 = mpc.dropout %x ratio %r {stream = 10 : i64} : (tensor<4x8xf32>, tensor<f32>) -> (tensor<4x8xf32>, tensor<4x8xi1>)
  return %y, %y1, %y2, %y3 : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}

// A function without one that may train gains no input.
// CHECK-LABEL: func.func @inference(%arg0: tensor<4x8xf32>) -> tensor<4x8xf32>
func.func @inference(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %y, %m = mpc.dropout %x : (tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xi1>)
  return %y : tensor<4x8xf32>
}

// Fused attention with dropout, and its gradient (which redraws the
// forward's mask), read the step too; attention without dropout does not.
// CHECK-LABEL: func.func @attention
// CHECK-SAME: %arg2: tensor<2xi64> {mpc.input = "mpc.rng.step"}
// CHECK: mpc.attention %arg0, %arg0, %arg0 step %arg2 {dropout = 1.000000e-01 : f32, scale = 1.000000e+00 : f32, stream = 5 : i64}
// CHECK: mpc.attention_grad %arg1, %arg0, %arg0, %arg0, %{{.*}}, %{{.*}} step %arg2 {dropout = 1.000000e-01 : f32, scale = 1.000000e+00 : f32, stream = 5 : i64}
// CHECK: mpc.attention %arg0, %arg0, %arg0 {scale = 1.000000e+00 : f32}
func.func @attention(%x: tensor<2x4x8xf16>, %dy: tensor<2x4x8xf16>) -> (tensor<2x4x8xf16>, tensor<2x4x8xf16>) {
  %y, %lse = mpc.attention %x, %x, %x {scale = 1.0 : f32, dropout = 0.1 : f32, stream = 5 : i64} : (tensor<2x4x8xf16>, tensor<2x4x8xf16>, tensor<2x4x8xf16>) -> (tensor<2x4x8xf16>, tensor<2x4xf32>)
  %dq, %dk, %dv = mpc.attention_grad %dy, %x, %x, %x, %y, %lse {scale = 1.0 : f32, dropout = 0.1 : f32, stream = 5 : i64} : (tensor<2x4x8xf16>, tensor<2x4x8xf16>, tensor<2x4x8xf16>, tensor<2x4x8xf16>, tensor<2x4x8xf16>, tensor<2x4xf32>) -> (tensor<2x4x8xf16>, tensor<2x4x8xf16>, tensor<2x4x8xf16>)
  %y2, %lse2 = mpc.attention %x, %x, %x {scale = 1.0 : f32} : (tensor<2x4x8xf16>, tensor<2x4x8xf16>, tensor<2x4x8xf16>) -> (tensor<2x4x8xf16>, tensor<2x4xf32>)
  return %dq, %y2 : tensor<2x4x8xf16>, tensor<2x4x8xf16>
}

// mpc.random (stochastic depth's draws) reads the step too, with or
// without a tensor to take its shape from.
// CHECK-LABEL: func.func @random
// CHECK-SAME: %arg1: tensor<2xi64> {mpc.input = "mpc.rng.step"}
// CHECK-NEXT: mpc.random like %arg0 step %arg1 {{{.*}}distribution = "uniform"{{.*}}} : (tensor<4x1xf32>, tensor<2xi64>) -> tensor<4x1xf32>
// CHECK-NEXT: mpc.random step %arg1 {{{.*}}distribution = "normal"{{.*}}} : (tensor<2xi64>) -> tensor<8xf16>
func.func @random(%x: tensor<4x1xf32>) -> (tensor<4x1xf32>, tensor<8xf16>) {
  %u = mpc.random like %x {a = 0.0 : f32, b = 1.0 : f32, distribution = "uniform", dtype = f32, stream = 3 : i64} : (tensor<4x1xf32>) -> tensor<4x1xf32>
  %n = mpc.random {a = 0.0 : f32, b = 1.0 : f32, distribution = "normal", dtype = f16, shape = array<i64: 8>, stream = 4 : i64} : () -> tensor<8xf16>
  return %u, %n : tensor<4x1xf32>, tensor<8xf16>
}
