// RUN: mpc-opt %s -mpc-eval-mode | FileCheck %s
// RUN: mpc-opt %s -mpc-eval-mode -mlir-print-debuginfo | FileCheck %s --check-prefix=LOC

// Dropout is the identity (a mask read becomes all true), batch norm in
// training mode normalizes with the running statistics it reads and
// returns them unchanged (the channels-last form stays channels last).
// CHECK-LABEL: func.func @forward
// CHECK-NOT: mpc.dropout
// CHECK: %[[T:.*]] = mpc.constant dense<true> : tensor<4x3x2x2xi1>
// CHECK: %[[Y:.*]] = mpc.batch_norm %arg0, %arg1, %arg2, %arg3, %arg4 {channels_last = true, epsilon = 1.000000e-03 : f32}
// CHECK-NOT: mpc.batch_norm_train
// CHECK: return %[[Y]], %[[T]], %arg3, %arg4
// LOC: mpc.batch_norm {{.*}} loc(#[[L:loc[0-9]*]])
// LOC: #[[L]] = loc("bn")
func.func @forward(%x: tensor<4x3x2x2xf32>, %s: tensor<2xf32>, %b: tensor<2xf32>, %m: tensor<2xf32>, %v: tensor<2xf32>, %r: tensor<f32>, %t: tensor<i1>) -> (tensor<4x3x2x2xf32>, tensor<4x3x2x2xi1>, tensor<2xf32>, tensor<2xf32>) {
  %d, %mask = mpc.dropout %x ratio %r training %t {stream = 7 : i64} : (tensor<4x3x2x2xf32>, tensor<f32>, tensor<i1>) -> (tensor<4x3x2x2xf32>, tensor<4x3x2x2xi1>)
  %y, %rm, %rv = mpc.batch_norm_train %d, %s, %b, %m, %v {epsilon = 1.0e-3 : f32, momentum = 0.9 : f32, channels_last = true} : (tensor<4x3x2x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> (tensor<4x3x2x2xf32>, tensor<2xf32>, tensor<2xf32>) loc("bn")
  return %y, %mask, %rm, %rv : tensor<4x3x2x2xf32>, tensor<4x3x2x2xi1>, tensor<2xf32>, tensor<2xf32>
}

// Fused attention loses its dropout and the step it drew at; one without
// dropout, and inference batch norm, are left as they are.
// CHECK-LABEL: func.func @attention
// CHECK: mpc.attention %arg0, %arg0, %arg0 {scale = 1.000000e+00 : f32} :
// CHECK: mpc.batch_norm %arg2, %arg3, %arg3, %arg3, %arg3 :
func.func @attention(%x: tensor<2x4x8xf16>, %s: tensor<2xi64>, %c: tensor<1x2x3x3xf32>, %p: tensor<2xf32>) -> (tensor<2x4x8xf16>, tensor<1x2x3x3xf32>) {
  %y, %lse = mpc.attention %x, %x, %x step %s {scale = 1.0 : f32, dropout = 0.1 : f32, stream = 5 : i64} : (tensor<2x4x8xf16>, tensor<2x4x8xf16>, tensor<2x4x8xf16>, tensor<2xi64>) -> (tensor<2x4x8xf16>, tensor<2x4xf32>)
  %n = mpc.batch_norm %c, %p, %p, %p, %p : (tensor<1x2x3x3xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x3x3xf32>
  return %y, %n : tensor<2x4x8xf16>, tensor<1x2x3x3xf32>
}
