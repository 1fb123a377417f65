// RUN: mpc-opt %s -mpc-promote-half-params | FileCheck %s
// RUN: mpc-opt %s -mpc-promote-half-params --mlir-print-debuginfo --mlir-print-local-scope | FileCheck %s --check-prefix=LOC

// A model stored in half precision: its trainable FP16 and BF16 weights
// become FP32 masters holding the same values (0.33325195 is FP16's
// nearest to 1/3, 0.333984375 BF16's), each function reading one casts it
// back first in its body, so every user sees the bits it saw before. The
// frozen FP16 statistics and the FP32 bias stay as they are.
// CHECK-DAG: mpc.param @w trainable : tensor<2xf32> = dense<[1.000000e+00, 0.333251953]> : tensor<2xf32>
// CHECK-DAG: mpc.param @v trainable : tensor<2xf32> = dense<0.333984375> : tensor<2xf32>
// CHECK-DAG: mpc.param @b trainable : tensor<2xf32> = dense<5.000000e-01> : tensor<2xf32>
// CHECK-DAG: mpc.param @mean : tensor<2xf16> = dense<2.500000e-01> : tensor<2xf16>
mpc.param @w trainable : tensor<2xf16> = dense<[1.0, 0.33325195]> : tensor<2xf16>
mpc.param @v trainable : tensor<2xbf16> = dense<0.333984375> : tensor<2xbf16>
mpc.param @b trainable : tensor<2xf32> = dense<0.5> : tensor<2xf32>
mpc.param @mean : tensor<2xf16> = dense<0.25> : tensor<2xf16>

// CHECK-LABEL: func.func @f
// CHECK-SAME: (%[[X:.*]]: tensor<2xf16>, %[[W:.*]]: tensor<2xf32> {mpc.param = @w}, %[[V:.*]]: tensor<2xf32> {mpc.param = @v}, %[[B:.*]]: tensor<2xf32> {mpc.param = @b}, %[[M:.*]]: tensor<2xf16> {mpc.param = @mean}) -> tensor<2xf16>
// CHECK-NEXT: %[[W16:.*]] = mpc.cast %[[W]] : (tensor<2xf32>) -> tensor<2xf16>
// CHECK-NEXT: %[[V16:.*]] = mpc.cast %[[V]] : (tensor<2xf32>) -> tensor<2xbf16>
// CHECK-NEXT: %[[Y:.*]] = mpc.mul %[[X]], %[[W16]]
// CHECK-NEXT: mpc.add %[[Y]], %[[W16]]
// CHECK-NEXT: mpc.cast %[[V16]] : (tensor<2xbf16>) -> tensor<2xf16>
// CHECK-NEXT: mpc.cast %[[B]]
// CHECK-NEXT: mpc.sub %{{.*}}, %[[M]]
// The cast carries the parameter's location.
// LOC: mpc.cast %{{.*}} : (tensor<2xf32>) -> tensor<2xf16> loc("model.w")
func.func @f(%x: tensor<2xf16>, %w: tensor<2xf16> {mpc.param = @w} loc("model.w"),
             %v: tensor<2xbf16> {mpc.param = @v}, %b: tensor<2xf32> {mpc.param = @b},
             %m: tensor<2xf16> {mpc.param = @mean}) -> tensor<2xf16> {
  %y = mpc.mul %x, %w : (tensor<2xf16>, tensor<2xf16>) -> tensor<2xf16>
  %z = mpc.add %y, %w : (tensor<2xf16>, tensor<2xf16>) -> tensor<2xf16>
  %vh = mpc.cast %v : (tensor<2xbf16>) -> tensor<2xf16>
  %bh = mpc.cast %b : (tensor<2xf32>) -> tensor<2xf16>
  %s = mpc.sub %z, %m : (tensor<2xf16>, tensor<2xf16>) -> tensor<2xf16>
  %t = mpc.add %s, %vh : (tensor<2xf16>, tensor<2xf16>) -> tensor<2xf16>
  %u = mpc.add %t, %bh : (tensor<2xf16>, tensor<2xf16>) -> tensor<2xf16>
  return %u : tensor<2xf16>
}

// A second function reading @w gets its own cast.
// CHECK-LABEL: func.func @g
// CHECK-SAME: (%[[W2:.*]]: tensor<2xf32> {mpc.param = @w}) -> tensor<2xf16>
// CHECK-NEXT: %[[C:.*]] = mpc.cast %[[W2]] : (tensor<2xf32>) -> tensor<2xf16>
// CHECK-NEXT: return %[[C]]
func.func @g(%w: tensor<2xf16> {mpc.param = @w}) -> tensor<2xf16> {
  return %w : tensor<2xf16>
}
