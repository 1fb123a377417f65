// RUN: mpc-opt %s -mpc-conv3d-as-2d | FileCheck %s
// RUN: mpc-opt %s -mpc-conv3d-as-2d --mlir-print-debuginfo --mlir-print-local-scope | FileCheck %s --check-prefix=LOC

// Conv3d 3x3x3, 2 groups, stride 2, padded: X viewed [N, D, C, H, W],
// padded in depth, three strided depth slices stacked after the channels
// (each group's channels together)
// ([N, OD, C, 3, H, W] = columns [N OD, C 3, H, W]), one 2-D conv over
// (H, W) by W viewed [M, C/g 3, kh, kw] with the bias, viewed back.
// CHECK-LABEL: func.func @conv3d
// CHECK: %[[T:.*]] = mpc.transpose %arg0 {perm = array<i64: 0, 2, 1, 3, 4>} : (tensor<2x4x6x8x8xf32>) -> tensor<2x6x4x8x8xf32>
// CHECK: %[[P:.*]] = mpc.pad %[[T]], %{{.*}} {pads = array<i64: 0, 1, 0, 0, 0, 0, 1, 0, 0, 0>} : {{.*}} -> tensor<2x8x4x8x8xf32>
// CHECK: %[[S0:.*]] = mpc.slice %[[P]], {{.*}} -> tensor<2x3x4x8x8xf32>
// CHECK: %[[S1:.*]] = mpc.slice %[[P]], {{.*}} -> tensor<2x3x4x8x8xf32>
// CHECK: %[[S2:.*]] = mpc.slice %[[P]], {{.*}} -> tensor<2x3x4x8x8xf32>
// CHECK: %[[C:.*]] = mpc.concat {{.*}} {axis = 3 : i64} : {{.*}} -> tensor<2x3x4x3x8x8xf32>
// CHECK: %[[X2:.*]] = mpc.reshape %[[C]], {{.*}} -> tensor<6x12x8x8xf32>
// CHECK: %[[W2:.*]] = mpc.reshape %arg1, {{.*}} -> tensor<6x6x3x3xf32>
// CHECK: %[[Y2:.*]] = mpc.conv %[[X2]], %[[W2]], %arg2 {dilations = array<i64: 1, 1>, group = 2 : i64, kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<6x12x8x8xf32>, tensor<6x6x3x3xf32>, tensor<6xf32>) -> tensor<6x6x4x4xf32>
// CHECK: %[[V:.*]] = mpc.reshape %[[Y2]], {{.*}} -> tensor<2x3x6x4x4xf32>
// CHECK: %[[Y:.*]] = mpc.transpose %[[V]] {perm = array<i64: 0, 2, 1, 3, 4>} : (tensor<2x3x6x4x4xf32>) -> tensor<2x6x3x4x4xf32>
// CHECK: return %[[Y]]
// LOC-LABEL: func.func @conv3d
// LOC: mpc.conv {{.*}} loc("/c3/Conv")
func.func @conv3d(%x: tensor<2x4x6x8x8xf32>, %w: tensor<6x2x3x3x3xf32>, %b: tensor<6xf32>) -> tensor<2x6x3x4x4xf32> {
  %y = mpc.conv %x, %w, %b {group = 2 : i64, kernel_shape = array<i64: 3, 3, 3>, pads = array<i64: 1, 1, 1, 1, 1, 1>, strides = array<i64: 2, 2, 2>} : (tensor<2x4x6x8x8xf32>, tensor<6x2x3x3x3xf32>, tensor<6xf32>) -> tensor<2x6x3x4x4xf32> loc("/c3/Conv")
  return %y : tensor<2x6x3x4x4xf32>
}

// Ungrouped, auto_pad SAME_UPPER (resolved to explicit pads per axis:
// depth 1 total, after; H 2 total, 1 each side): one gather of the padded
// depth rows (od + kz) as [N, OD, kd, C, H, W], tap-major columns, and W's
// taps moved before its channels to match.
// CHECK-LABEL: func.func @same_upper
// CHECK: %[[P:.*]] = mpc.pad %{{.*}} {pads = array<i64: 0, 0, 0, 0, 0, 0, 1, 0, 0, 0>}
// CHECK: %[[AT:.*]] = mpc.constant dense<{{\[\[0, 1\], \[1, 2\], \[2, 3\], \[3, 4\]\]}}> : tensor<4x2xi64>
// CHECK: %[[G:.*]] = mpc.gather %[[P]], %[[AT]] {axis = 1 : i64} : (tensor<1x5x2x5x6xf32>, tensor<4x2xi64>) -> tensor<1x4x2x2x5x6xf32>
// CHECK: %[[COLS:.*]] = mpc.reshape %[[G]], {{.*}} -> tensor<4x4x5x6xf32>
// CHECK: %[[WT:.*]] = mpc.transpose %arg1 {perm = array<i64: 0, 2, 1, 3, 4>} : (tensor<3x2x2x3x1xf32>) -> tensor<3x2x2x3x1xf32>
// CHECK: %[[W2:.*]] = mpc.reshape %[[WT]], {{.*}} -> tensor<3x4x3x1xf32>
// CHECK: mpc.conv %[[COLS]], %[[W2]] {dilations = array<i64: 1, 1>, kernel_shape = array<i64: 3, 1>, pads = array<i64: 1, 0, 1, 0>, strides = array<i64: 1, 1>} : (tensor<4x4x5x6xf32>, tensor<3x4x3x1xf32>) -> tensor<4x3x5x6xf32>
func.func @same_upper(%x: tensor<1x2x4x5x6xf32>, %w: tensor<3x2x2x3x1xf32>) -> tensor<1x3x4x5x6xf32> {
  %y = mpc.conv %x, %w {auto_pad = "SAME_UPPER", kernel_shape = array<i64: 2, 3, 1>} : (tensor<1x2x4x5x6xf32>, tensor<3x2x2x3x1xf32>) -> tensor<1x3x4x5x6xf32>
  return %y : tensor<1x3x4x5x6xf32>
}

// ConvTranspose3d 2x2x2 stride 2 (a 3-D U-Net's upsampling): the taps tile
// the output depth, so a reshape places them, and the bias, repeated per
// tap, rides in the 2-D transposed convolution.
// CHECK-LABEL: func.func @up_tiled
// CHECK: %[[X2:.*]] = mpc.reshape {{.*}} -> tensor<3x4x5x5xf32>
// CHECK: %[[W2:.*]] = mpc.reshape %arg1, {{.*}} -> tensor<4x4x2x2xf32>
// CHECK: %[[B:.*]] = mpc.expand {{.*}} -> tensor<2x2xf32>
// CHECK: %[[B2:.*]] = mpc.reshape %[[B]], {{.*}} -> tensor<4xf32>
// CHECK: %[[Z:.*]] = mpc.conv_transpose %[[X2]], %[[W2]], %[[B2]] {{.*}} -> tensor<3x4x10x10xf32>
// CHECK: mpc.transpose {{.*}} {perm = array<i64: 0, 2, 1, 3, 4>} : (tensor<1x3x2x2x100xf32>) -> tensor<1x2x3x2x100xf32>
// CHECK-NOT: mpc.add
// CHECK: return {{.*}} : tensor<1x2x6x10x10xf32>
func.func @up_tiled(%x: tensor<1x4x3x5x5xf32>, %w: tensor<4x2x2x2x2xf32>, %b: tensor<2xf32>) -> tensor<1x2x6x10x10xf32> {
  %y = mpc.conv_transpose %x, %w, %b {kernel_shape = array<i64: 2, 2, 2>, strides = array<i64: 2, 2, 2>} : (tensor<1x4x3x5x5xf32>, tensor<4x2x2x2x2xf32>, tensor<2xf32>) -> tensor<1x2x6x10x10xf32>
  return %y : tensor<1x2x6x10x10xf32>
}

// Overlapping taps (kernel 4, stride 2), cropped by the pads and extended
// by output_padding: each tap spread by the stride (a zero after each
// depth), shifted by its offset, summed; the full depth 8 cropped to 7;
// the bias added after.
// CHECK-LABEL: func.func @up_overlap
// CHECK: %[[Z:.*]] = mpc.conv_transpose {{.*}} {dilations = array<i64: 1, 1>, kernel_shape = array<i64: 3, 3>, output_padding = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<3x4x5x5xf32>, tensor<4x8x3x3xf32>) -> tensor<3x8x10x10xf32>
// CHECK: mpc.pad %{{.*}} {pads = array<i64: 0, 0, 0, 0, 0, 0, 0, 0, 1, 0>} : {{.*}} -> tensor<1x2x3x2x100xf32>
// CHECK: mpc.pad %{{.*}} {pads = array<i64: 0, 0, 0, 0, 0, 0, 2, 0>} : {{.*}} -> tensor<1x2x8x100xf32>
// CHECK: mpc.pad %{{.*}} {pads = array<i64: 0, 0, 1, 0, 0, 0, 1, 0>} : {{.*}} -> tensor<1x2x8x100xf32>
// CHECK: mpc.add
// CHECK: mpc.pad %{{.*}} {pads = array<i64: 0, 0, 2, 0, 0, 0, 0, 0>} : {{.*}} -> tensor<1x2x8x100xf32>
// CHECK: mpc.add
// CHECK: mpc.slice {{.*}} -> tensor<1x2x5x100xf32>
// CHECK: mpc.pad %{{.*}} {pads = array<i64: 0, 0, 3, 0, 0, 0, 0, 0>} : {{.*}} -> tensor<1x2x8x100xf32>
// CHECK: %[[S:.*]] = mpc.add
// CHECK: mpc.slice %[[S]], {{.*}} -> tensor<1x2x7x100xf32>
// CHECK: %[[Y:.*]] = mpc.reshape {{.*}} -> tensor<1x2x7x10x10xf32>
// CHECK: %[[B:.*]] = mpc.reshape %arg2, {{.*}} -> tensor<1x2x1x1x1xf32>
// CHECK: mpc.add %[[Y]], %[[B]]
func.func @up_overlap(%x: tensor<1x4x3x5x5xf32>, %w: tensor<4x2x4x3x3xf32>, %b: tensor<2xf32>) -> tensor<1x2x7x10x10xf32> {
  %y = mpc.conv_transpose %x, %w, %b {kernel_shape = array<i64: 4, 3, 3>, strides = array<i64: 2, 2, 2>, pads = array<i64: 1, 1, 1, 1, 1, 1>, output_padding = array<i64: 1, 1, 1>} : (tensor<1x4x3x5x5xf32>, tensor<4x2x4x3x3xf32>, tensor<2xf32>) -> tensor<1x2x7x10x10xf32>
  return %y : tensor<1x2x7x10x10xf32>
}

// Left as written: 2-D convolutions, a dynamic batch, channels last.
// CHECK-LABEL: func.func @left
// CHECK-NOT: mpc.reshape
// CHECK: mpc.conv %arg0
// CHECK: mpc.conv %arg2
// CHECK: mpc.conv %arg3
func.func @left(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>, %d: tensor<?x2x4x4x4xf32>, %l: tensor<1x4x4x4x2xf32>, %w3: tensor<3x2x1x1x1xf32>, %wl: tensor<3x1x1x1x2xf32>) -> (tensor<1x4x6x6xf32>, tensor<?x3x4x4x4xf32>, tensor<1x4x4x4x3xf32>) {
  %a = mpc.conv %x, %w : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
  %b = mpc.conv %d, %w3 : (tensor<?x2x4x4x4xf32>, tensor<3x2x1x1x1xf32>) -> tensor<?x3x4x4x4xf32>
  %c = mpc.conv %l, %wl {channels_last = true} : (tensor<1x4x4x4x2xf32>, tensor<3x1x1x1x2xf32>) -> tensor<1x4x4x4x3xf32>
  return %a, %b, %c : tensor<1x4x6x6xf32>, tensor<?x3x4x4x4xf32>, tensor<1x4x4x4x3xf32>
}
