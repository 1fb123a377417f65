// RUN: mpc-opt %s -mpc-master-weights -split-input-file -verify-diagnostics | FileCheck %s

// Two fp16 casts of the trainable @w (one late in the body) become one
// master copy, first in the body and tagged; the frozen @s keeps its casts.
// The gradient of @w leaves the step in FP32 (a cast is added); @b's
// gradient already is FP32.
mpc.param @w trainable : tensor<2x2xf32> = dense<1.0> : tensor<2x2xf32>
mpc.param @b trainable : tensor<2xf32> = dense<0.0> : tensor<2xf32>
mpc.param @s : tensor<2xf32> = dense<1.0> : tensor<2xf32>
// CHECK-LABEL: func.func @step
// CHECK-SAME: (%[[X:.*]]: tensor<2x2xf16>, %[[W:.*]]: tensor<2x2xf32> {mpc.param = @w}, %[[B:.*]]: tensor<2xf32> {mpc.param = @b}, %[[S:.*]]: tensor<2xf32> {mpc.param = @s})
// CHECK-SAME: -> (tensor<2x2xf16>, tensor<2x2xf32> {mpc.gradient = @w}, tensor<2xf32> {mpc.gradient = @b})
// CHECK-NEXT: %[[W16:.*]] = mpc.cast %[[W]] {mpc.master_copy = @w} : (tensor<2x2xf32>) -> tensor<2x2xf16>
// CHECK-NEXT: %[[B16:.*]] = mpc.cast %[[B]] {mpc.master_copy = @b} : (tensor<2xf32>) -> tensor<2xf16>
// CHECK-NEXT: %[[Y:.*]] = mpc.matmul %[[X]], %[[W16]]
// CHECK-NEXT: %[[S16:.*]] = mpc.cast %[[S]] : (tensor<2xf32>) -> tensor<2xf16>
// CHECK-NEXT: mpc.add %[[Y]], %[[B16]]
// CHECK-NEXT: %[[Z:.*]] = mpc.matmul %{{.*}}, %[[W16]]
// CHECK-NEXT: %[[DW:.*]] = mpc.cast %[[Z]] : (tensor<2x2xf16>) -> tensor<2x2xf32>
// CHECK-NEXT: return %{{.*}}, %[[DW]], %[[B]]
func.func @step(%x: tensor<2x2xf16>, %w: tensor<2x2xf32> {mpc.param = @w},
                %b: tensor<2xf32> {mpc.param = @b}, %s: tensor<2xf32> {mpc.param = @s})
    -> (tensor<2x2xf16>, tensor<2x2xf16> {mpc.gradient = @w}, tensor<2xf32> {mpc.gradient = @b})
    attributes {mpc.train_step} {
  %w16 = mpc.cast %w : (tensor<2x2xf32>) -> tensor<2x2xf16>
  %y = mpc.matmul %x, %w16 : (tensor<2x2xf16>, tensor<2x2xf16>) -> tensor<2x2xf16>
  %s16 = mpc.cast %s : (tensor<2xf32>) -> tensor<2xf16>
  %b16 = mpc.cast %b : (tensor<2xf32>) -> tensor<2xf16>
  %t = mpc.add %y, %b16 : (tensor<2x2xf16>, tensor<2xf16>) -> tensor<2x2xf16>
  %w16b = mpc.cast %w : (tensor<2x2xf32>) -> tensor<2x2xf16>
  %z = mpc.matmul %t, %w16b : (tensor<2x2xf16>, tensor<2x2xf16>) -> tensor<2x2xf16>
  return %t, %z, %b : tensor<2x2xf16>, tensor<2x2xf16>, tensor<2xf32>
}

// -----

// A trainable parameter must be FP32: it is the master copy.
mpc.param @h trainable : tensor<2xf16> = dense<1.0> : tensor<2xf16>
// expected-error @+1 {{parameter @h is 'tensor<2xf16>'; master weights need FP32 parameters (mpc-promote-half-params makes them)}}
func.func @half(%h: tensor<2xf16> {mpc.param = @h}) -> tensor<2xf16> {
  return %h : tensor<2xf16>
}
