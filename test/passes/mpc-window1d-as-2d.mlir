// RUN: mpc-opt %s -mpc-window1d-as-2d | FileCheck %s
// RUN: mpc-opt %s -mpc-window1d-as-2d --mlir-print-debuginfo --mlir-print-local-scope | FileCheck %s --check-prefix=LOC

// Whisper's feature encoder: Conv1d with padding, stride 2, a bias. X and
// W gain a height of 1, the window its height-1 row, the result loses it.
// CHECK-LABEL: func.func @whisper
// CHECK-DAG: %[[X:.*]] = mpc.unsqueeze %arg0 {axes = array<i64: 2>} : (tensor<2x8x32xf32>) -> tensor<2x8x1x32xf32>
// CHECK-DAG: %[[W:.*]] = mpc.unsqueeze %arg1 {axes = array<i64: 2>} : (tensor<16x8x3xf32>) -> tensor<16x8x1x3xf32>
// CHECK: %[[Y:.*]] = mpc.conv %[[X]], %[[W]], %arg2 {dilations = array<i64: 1, 1>, kernel_shape = array<i64: 1, 3>, pads = array<i64: 0, 1, 0, 1>, strides = array<i64: 1, 2>} : (tensor<2x8x1x32xf32>, tensor<16x8x1x3xf32>, tensor<16xf32>) -> tensor<2x16x1x16xf32>
// CHECK: %[[S:.*]] = mpc.squeeze %[[Y]] {axes = array<i64: 2>} : (tensor<2x16x1x16xf32>) -> tensor<2x16x16xf32>
// CHECK: return %[[S]]
// LOC-LABEL: func.func @whisper
// LOC: mpc.conv {{.*}} loc("/encoder/conv2/Conv")
func.func @whisper(%x: tensor<2x8x32xf32>, %w: tensor<16x8x3xf32>, %b: tensor<16xf32>) -> tensor<2x16x16xf32> {
  %y = mpc.conv %x, %w, %b {dilations = array<i64: 1>, kernel_shape = array<i64: 3>, pads = array<i64: 1, 1>, strides = array<i64: 2>} : (tensor<2x8x32xf32>, tensor<16x8x3xf32>, tensor<16xf32>) -> tensor<2x16x16xf32> loc("/encoder/conv2/Conv")
  return %y : tensor<2x16x16xf32>
}

// Grouped and dilated, no bias, no explicit window attributes but the
// dilation; auto_pad carries over.
// CHECK-LABEL: func.func @grouped
// CHECK: mpc.conv %{{.*}}, %{{.*}} {auto_pad = "SAME_UPPER", dilations = array<i64: 1, 2>, group = 2 : i64} : (tensor<1x4x1x10xf32>, tensor<6x2x1x3xf32>) -> tensor<1x6x1x10xf32>
func.func @grouped(%x: tensor<1x4x10xf32>, %w: tensor<6x2x3xf32>) -> tensor<1x6x10xf32> {
  %y = mpc.conv %x, %w {auto_pad = "SAME_UPPER", dilations = array<i64: 2>, group = 2 : i64} : (tensor<1x4x10xf32>, tensor<6x2x3xf32>) -> tensor<1x6x10xf32>
  return %y : tensor<1x6x10xf32>
}

// ConvTranspose1d (HiFi-GAN's upsampling): W [C, M/g, k] gains the
// height too; output_padding 0 in height.
// CHECK-LABEL: func.func @upsample
// CHECK: %[[Y:.*]] = mpc.conv_transpose %{{.*}}, %{{.*}}, %arg2 {group = 2 : i64, kernel_shape = array<i64: 1, 4>, output_padding = array<i64: 0, 1>, pads = array<i64: 0, 1, 0, 1>, strides = array<i64: 1, 2>} : (tensor<2x8x1x10xf32>, tensor<8x3x1x4xf32>, tensor<6xf32>) -> tensor<2x6x1x21xf32>
// CHECK: mpc.squeeze %[[Y]] {axes = array<i64: 2>} : (tensor<2x6x1x21xf32>) -> tensor<2x6x21xf32>
func.func @upsample(%x: tensor<2x8x10xf32>, %w: tensor<8x3x4xf32>, %b: tensor<6xf32>) -> tensor<2x6x21xf32> {
  %y = mpc.conv_transpose %x, %w, %b {group = 2 : i64, kernel_shape = array<i64: 4>, output_padding = array<i64: 1>, pads = array<i64: 1, 1>, strides = array<i64: 2>} : (tensor<2x8x10xf32>, tensor<8x3x4xf32>, tensor<6xf32>) -> tensor<2x6x21xf32>
  return %y : tensor<2x6x21xf32>
}

// Left as written: 2-D convolutions.
// CHECK-LABEL: func.func @two_d
// CHECK-NOT: mpc.unsqueeze
// CHECK: mpc.conv %arg0, %arg1
func.func @two_d(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32> {
  %y = mpc.conv %x, %w : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
  return %y : tensor<1x4x6x6xf32>
}

// Pools over sequences: AvgPool1d padded and strided (count_include_pad
// carries over), MaxPool1d with both results (values and flat indices)
// squeezed; the window gains its height-1 row.
// CHECK-LABEL: func.func @pools
// CHECK: %[[X:.*]] = mpc.unsqueeze %arg0 {axes = array<i64: 2>} : (tensor<2x4x9xf32>) -> tensor<2x4x1x9xf32>
// CHECK: %[[A:.*]] = mpc.average_pool %[[X]] {count_include_pad = true, kernel_shape = array<i64: 1, 3>, pads = array<i64: 0, 1, 0, 1>, strides = array<i64: 1, 2>} : (tensor<2x4x1x9xf32>) -> tensor<2x4x1x5xf32>
// CHECK: %[[AS:.*]] = mpc.squeeze %[[A]] {axes = array<i64: 2>} : (tensor<2x4x1x5xf32>) -> tensor<2x4x5xf32>
// CHECK: %[[M:.*]], %[[I:.*]] = mpc.max_pool %{{.*}} {kernel_shape = array<i64: 1, 2>, strides = array<i64: 1, 2>} : (tensor<2x4x1x9xf32>) -> (tensor<2x4x1x4xf32>, tensor<2x4x1x4xi64>)
// CHECK-DAG: %[[MS:.*]] = mpc.squeeze %[[M]] {axes = array<i64: 2>} : (tensor<2x4x1x4xf32>) -> tensor<2x4x4xf32>
// CHECK-DAG: %[[IS:.*]] = mpc.squeeze %[[I]] {axes = array<i64: 2>} : (tensor<2x4x1x4xi64>) -> tensor<2x4x4xi64>
// CHECK: return %[[AS]], %[[MS]], %[[IS]]
// LOC-LABEL: func.func @pools
// LOC: mpc.max_pool {{.*}} loc("/pool/MaxPool")
func.func @pools(%x: tensor<2x4x9xf32>) -> (tensor<2x4x5xf32>, tensor<2x4x4xf32>, tensor<2x4x4xi64>) {
  %a = mpc.average_pool %x {count_include_pad = true, kernel_shape = array<i64: 3>, pads = array<i64: 1, 1>, strides = array<i64: 2>} : (tensor<2x4x9xf32>) -> tensor<2x4x5xf32>
  %m, %i = mpc.max_pool %x {kernel_shape = array<i64: 2>, strides = array<i64: 2>} : (tensor<2x4x9xf32>) -> (tensor<2x4x4xf32>, tensor<2x4x4xi64>) loc("/pool/MaxPool")
  return %a, %m, %i : tensor<2x4x5xf32>, tensor<2x4x4xf32>, tensor<2x4x4xi64>
}

// Left as written: 3-D pools.
// CHECK-LABEL: func.func @pool_3d
// CHECK-NOT: mpc.unsqueeze
// CHECK: mpc.average_pool %arg0
func.func @pool_3d(%x: tensor<1x2x4x4x4xf32>) -> tensor<1x2x2x2x2xf32> {
  %y = mpc.average_pool %x {kernel_shape = array<i64: 2, 2, 2>, strides = array<i64: 2, 2, 2>} : (tensor<1x2x4x4x4xf32>) -> tensor<1x2x2x2x2xf32>
  return %y : tensor<1x2x2x2x2xf32>
}
