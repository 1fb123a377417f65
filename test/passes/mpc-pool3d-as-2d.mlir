// RUN: mpc-opt %s -mpc-pool3d-as-2d | FileCheck %s
// RUN: mpc-opt %s -mpc-pool3d-as-2d --mlir-print-debuginfo --mlir-print-local-scope | FileCheck %s --check-prefix=LOC

// MaxPool3d 2x3x3, stride 2, padded: a 2-D pool over (H, W) of X viewed
// [N, C D, H, W], then one over D of that viewed [N, C, D, H' W'], viewed
// back; each axis keeps its window.
// CHECK-LABEL: func.func @max3d
// CHECK: %[[P:.*]], %{{.*}} = mpc.max_pool %{{.*}} {kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<2x12x8x8xf32>) -> (tensor<2x12x4x4xf32>, tensor<2x12x4x4xi64>)
// CHECK: %[[V:.*]] = mpc.reshape %[[P]], %{{.*}} : (tensor<2x12x4x4xf32>, tensor<4xi64>) -> tensor<2x3x4x16xf32>
// CHECK: %[[D:.*]], %{{.*}} = mpc.max_pool %[[V]] {kernel_shape = array<i64: 2, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 1>} : (tensor<2x3x4x16xf32>) -> (tensor<2x3x2x16xf32>, tensor<2x3x2x16xi64>)
// CHECK: %[[Y:.*]] = mpc.reshape %[[D]], %{{.*}} : (tensor<2x3x2x16xf32>, tensor<5xi64>) -> tensor<2x3x2x4x4xf32>
// CHECK: return %[[Y]]
// LOC-LABEL: func.func @max3d
// LOC: mpc.max_pool {{.*}} loc("/pool3/MaxPool")
func.func @max3d(%x: tensor<2x3x4x8x8xf32>) -> tensor<2x3x2x4x4xf32> {
  %y, %i = mpc.max_pool %x {kernel_shape = array<i64: 2, 3, 3>, pads = array<i64: 0, 1, 1, 0, 1, 1>, strides = array<i64: 2, 2, 2>} : (tensor<2x3x4x8x8xf32>) -> (tensor<2x3x2x4x4xf32>, tensor<2x3x2x4x4xi64>) loc("/pool3/MaxPool")
  return %y : tensor<2x3x2x4x4xf32>
}

// AvgPool3d without the padding counted: separable too.
// CHECK-LABEL: func.func @avg3d
// CHECK: mpc.average_pool %{{.*}} {kernel_shape = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>} : (tensor<1x6x4x4xf32>) -> tensor<1x6x5x5xf32>
// CHECK: mpc.average_pool %{{.*}} {kernel_shape = array<i64: 2, 1>, pads = array<i64: 1, 0, 1, 0>} : (tensor<1x2x3x25xf32>) -> tensor<1x2x4x25xf32>
func.func @avg3d(%x: tensor<1x2x3x4x4xf32>) -> tensor<1x2x4x5x5xf32> {
  %y = mpc.average_pool %x {kernel_shape = array<i64: 2, 2, 2>, pads = array<i64: 1, 1, 1, 1, 1, 1>} : (tensor<1x2x3x4x4xf32>) -> tensor<1x2x4x5x5xf32>
  return %y : tensor<1x2x4x5x5xf32>
}

// Left as written: a max pool whose indices are read, 2-D pools.
// CHECK-LABEL: func.func @indices_read
// CHECK-NOT: mpc.reshape
// CHECK: mpc.max_pool %arg0
func.func @indices_read(%x: tensor<1x1x2x4x4xf32>) -> tensor<1x1x1x2x2xi64> {
  %y, %i = mpc.max_pool %x {kernel_shape = array<i64: 2, 2, 2>, strides = array<i64: 2, 2, 2>} : (tensor<1x1x2x4x4xf32>) -> (tensor<1x1x1x2x2xf32>, tensor<1x1x1x2x2xi64>)
  return %i : tensor<1x1x1x2x2xi64>
}
// CHECK-LABEL: func.func @two_d
// CHECK-NOT: mpc.reshape
func.func @two_d(%x: tensor<1x3x8x8xf32>) -> tensor<1x3x4x4xf32> {
  %y = mpc.average_pool %x {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x3x8x8xf32>) -> tensor<1x3x4x4xf32>
  return %y : tensor<1x3x4x4xf32>
}
