// RUN: mpc-opt %s -mpc-recompute-columns=ratio=0 | FileCheck %s
// RUN: mpc-opt %s -mpc-recompute-columns=ratio=0 --mlir-print-debuginfo --mlir-print-local-scope | FileCheck %s --check-prefix=LOC
// With the default ratio (2), one small layer's columns are not worth a
// rebuild (its copies outweigh them): nothing changes.
// RUN: mpc-opt %s -mpc-recompute-columns | FileCheck %s --check-prefix=SHALLOW
// SHALLOW-LABEL: func.func @argument
// SHALLOW-COUNT-1: mpc.transpose
// SHALLOW-NOT: mpc.transpose
// SHALLOW: return

// A 3-D convolution's columns (mpc-conv3d-as-2d: X viewed [N, D, C, H, W],
// two depth taps stacked after the channels) copied from the step's
// argument X: the filter gradient reads the chain rebuilt just before it,
// and the forward's columns are read by the forward convolution alone.
// CHECK-LABEL: func.func @argument
// CHECK: %[[T:.*]] = mpc.transpose %arg0
// CHECK: %[[C:.*]] = mpc.concat
// CHECK: %[[COLS:.*]] = mpc.reshape %[[C]]
// CHECK: mpc.conv %[[COLS]], %arg1
// CHECK: mpc.relu
// CHECK: %[[T2:.*]] = mpc.transpose %arg0
// CHECK: %[[S0:.*]] = mpc.slice %[[T2]]
// CHECK: %[[S1:.*]] = mpc.slice %[[T2]]
// CHECK: %[[C2:.*]] = mpc.concat
// CHECK: %[[COLS2:.*]] = mpc.reshape %[[C2]]
// CHECK: mpc.conv_grad_weight %arg2, %[[COLS2]]
// LOC-LABEL: func.func @argument
// LOC: mpc.transpose {{.*}} loc("/conv3/taps")
// LOC: mpc.transpose {{.*}} loc("/conv3/taps")
func.func @argument(%x: tensor<1x2x3x4x4xf32>, %w: tensor<3x4x3x3xf32>, %dy: tensor<2x3x4x4xf32>) -> (tensor<2x3x4x4xf32>, tensor<3x4x3x3xf32>) attributes {mpc.train_step} {
  %t = mpc.transpose %x {perm = array<i64: 0, 2, 1, 3, 4>} : (tensor<1x2x3x4x4xf32>) -> tensor<1x3x2x4x4xf32> loc("/conv3/taps")
  %z = mpc.constant dense<0> : tensor<1xi64>
  %one = mpc.constant dense<1> : tensor<1xi64>
  %two = mpc.constant dense<2> : tensor<1xi64>
  %three = mpc.constant dense<3> : tensor<1xi64>
  %s0 = mpc.slice %t, %z, %two axes %one : (tensor<1x3x2x4x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x2x2x4x4xf32>
  %s1 = mpc.slice %t, %one, %three axes %one : (tensor<1x3x2x4x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x2x2x4x4xf32>
  %u0 = mpc.unsqueeze %s0 {axes = array<i64: 3>} : (tensor<1x2x2x4x4xf32>) -> tensor<1x2x2x1x4x4xf32>
  %u1 = mpc.unsqueeze %s1 {axes = array<i64: 3>} : (tensor<1x2x2x4x4xf32>) -> tensor<1x2x2x1x4x4xf32>
  %c = mpc.concat %u0, %u1 {axis = 3 : i64} : (tensor<1x2x2x1x4x4xf32>, tensor<1x2x2x1x4x4xf32>) -> tensor<1x2x2x2x4x4xf32>
  %shape = mpc.constant dense<[2, 4, 4, 4]> : tensor<4xi64>
  %cols = mpc.reshape %c, %shape : (tensor<1x2x2x2x4x4xf32>, tensor<4xi64>) -> tensor<2x4x4x4xf32>
  %y = mpc.conv %cols, %w {pads = array<i64: 1, 1, 1, 1>} : (tensor<2x4x4x4xf32>, tensor<3x4x3x3xf32>) -> tensor<2x3x4x4xf32>
  %r = mpc.relu %y : (tensor<2x3x4x4xf32>) -> tensor<2x3x4x4xf32>
  %dw = mpc.conv_grad_weight %dy, %cols {kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>} : (tensor<2x3x4x4xf32>, tensor<2x4x4x4xf32>) -> tensor<3x4x3x3xf32>
  return %r, %dw : tensor<2x3x4x4xf32>, tensor<3x4x3x3xf32>
}

// Copied from a value the step reads at the gradient or later (a ReLU's
// result, as its gradient reads it): rebuilt. Copied from one nothing
// reads there (a max pool's result): the columns are held, as written.
// CHECK-LABEL: func.func @held_or_not
// CHECK: %[[A:.*]] = mpc.relu %arg0
// CHECK: %[[P:.*]], %{{.*}} = mpc.max_pool %arg0
// CHECK: %[[PCOLS:.*]] = mpc.reshape
// CHECK: mpc.conv_grad_weight %arg2, %[[PCOLS]]
// CHECK: mpc.transpose %[[A]]
// CHECK: %[[NEW:.*]] = mpc.reshape
// CHECK: mpc.conv_grad_weight %arg2, %[[NEW]]
// CHECK: mpc.relu_grad %arg3, %[[A]]
func.func @held_or_not(%x: tensor<1x2x3x4x4xf32>, %w: tensor<3x4x3x3xf32>, %dy: tensor<2x3x4x4xf32>, %g: tensor<1x2x3x4x4xf32>) -> (tensor<3x4x3x3xf32>, tensor<3x4x3x3xf32>, tensor<1x2x3x4x4xf32>) attributes {mpc.train_step} {
  %a = mpc.relu %x : (tensor<1x2x3x4x4xf32>) -> tensor<1x2x3x4x4xf32>
  %p, %i = mpc.max_pool %x {kernel_shape = array<i64: 1, 1, 1>} : (tensor<1x2x3x4x4xf32>) -> (tensor<1x2x3x4x4xf32>, tensor<1x2x3x4x4xi64>)
  %z = mpc.constant dense<0> : tensor<1xi64>
  %one = mpc.constant dense<1> : tensor<1xi64>
  %two = mpc.constant dense<2> : tensor<1xi64>
  %three = mpc.constant dense<3> : tensor<1xi64>
  %shape = mpc.constant dense<[2, 4, 4, 4]> : tensor<4xi64>
  %tp = mpc.transpose %p {perm = array<i64: 0, 2, 1, 3, 4>} : (tensor<1x2x3x4x4xf32>) -> tensor<1x3x2x4x4xf32>
  %p0 = mpc.slice %tp, %z, %two axes %one : (tensor<1x3x2x4x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x2x2x4x4xf32>
  %p1 = mpc.slice %tp, %one, %three axes %one : (tensor<1x3x2x4x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x2x2x4x4xf32>
  %pc = mpc.concat %p0, %p1 {axis = 2 : i64} : (tensor<1x2x2x4x4xf32>, tensor<1x2x2x4x4xf32>) -> tensor<1x2x4x4x4xf32>
  %pcols = mpc.reshape %pc, %shape : (tensor<1x2x4x4x4xf32>, tensor<4xi64>) -> tensor<2x4x4x4xf32>
  %ta = mpc.transpose %a {perm = array<i64: 0, 2, 1, 3, 4>} : (tensor<1x2x3x4x4xf32>) -> tensor<1x3x2x4x4xf32>
  %a0 = mpc.slice %ta, %z, %two axes %one : (tensor<1x3x2x4x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x2x2x4x4xf32>
  %a1 = mpc.slice %ta, %one, %three axes %one : (tensor<1x3x2x4x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x2x2x4x4xf32>
  %ac = mpc.concat %a0, %a1 {axis = 2 : i64} : (tensor<1x2x2x4x4xf32>, tensor<1x2x2x4x4xf32>) -> tensor<1x2x4x4x4xf32>
  %acols = mpc.reshape %ac, %shape : (tensor<1x2x4x4x4xf32>, tensor<4xi64>) -> tensor<2x4x4x4xf32>
  %dwp = mpc.conv_grad_weight %dy, %pcols {kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>} : (tensor<2x3x4x4xf32>, tensor<2x4x4x4xf32>) -> tensor<3x4x3x3xf32>
  %dwa = mpc.conv_grad_weight %dy, %acols {kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>} : (tensor<2x3x4x4xf32>, tensor<2x4x4x4xf32>) -> tensor<3x4x3x3xf32>
  %dx = mpc.relu_grad %g, %a : (tensor<1x2x3x4x4xf32>, tensor<1x2x3x4x4xf32>) -> tensor<1x2x3x4x4xf32>
  return %dwp, %dwa, %dx : tensor<3x4x3x3xf32>, tensor<3x4x3x3xf32>, tensor<1x2x3x4x4xf32>
}

// Left as written: columns no larger than their source (a transpose), two
// sources (a U-Net's skip concatenation), outside a train step.
// CHECK-LABEL: func.func @left
// CHECK-COUNT-1: mpc.transpose
// CHECK-COUNT-1: mpc.concat
// CHECK-NOT: mpc.transpose
// CHECK-NOT: mpc.concat
// CHECK: return
func.func @left(%x: tensor<2x4x4x4xf32>, %y: tensor<2x4x4x4xf32>, %dy: tensor<2x3x4x4xf32>, %dyc: tensor<2x3x4x4xf32>) -> (tensor<3x4x3x3xf32>, tensor<3x8x3x3xf32>) attributes {mpc.train_step} {
  %t = mpc.transpose %x {perm = array<i64: 0, 1, 3, 2>} : (tensor<2x4x4x4xf32>) -> tensor<2x4x4x4xf32>
  %c = mpc.concat %x, %y {axis = 1 : i64} : (tensor<2x4x4x4xf32>, tensor<2x4x4x4xf32>) -> tensor<2x8x4x4xf32>
  %dwt = mpc.conv_grad_weight %dy, %t {kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>} : (tensor<2x3x4x4xf32>, tensor<2x4x4x4xf32>) -> tensor<3x4x3x3xf32>
  %dwc = mpc.conv_grad_weight %dyc, %c {kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>} : (tensor<2x3x4x4xf32>, tensor<2x8x4x4xf32>) -> tensor<3x8x3x3xf32>
  return %dwt, %dwc : tensor<3x4x3x3xf32>, tensor<3x8x3x3xf32>
}
// CHECK-LABEL: func.func @forward_only
// CHECK-COUNT-1: mpc.transpose
// CHECK-NOT: mpc.transpose
func.func @forward_only(%x: tensor<1x2x3x4x4xf32>, %dy: tensor<2x3x4x4xf32>) -> tensor<3x4x3x3xf32> {
  %t = mpc.transpose %x {perm = array<i64: 0, 2, 1, 3, 4>} : (tensor<1x2x3x4x4xf32>) -> tensor<1x3x2x4x4xf32>
  %z = mpc.constant dense<0> : tensor<1xi64>
  %one = mpc.constant dense<1> : tensor<1xi64>
  %two = mpc.constant dense<2> : tensor<1xi64>
  %three = mpc.constant dense<3> : tensor<1xi64>
  %s0 = mpc.slice %t, %z, %two axes %one : (tensor<1x3x2x4x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x2x2x4x4xf32>
  %s1 = mpc.slice %t, %one, %three axes %one : (tensor<1x3x2x4x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x2x2x4x4xf32>
  %c = mpc.concat %s0, %s1 {axis = 2 : i64} : (tensor<1x2x2x4x4xf32>, tensor<1x2x2x4x4xf32>) -> tensor<1x2x4x4x4xf32>
  %shape = mpc.constant dense<[2, 4, 4, 4]> : tensor<4xi64>
  %cols = mpc.reshape %c, %shape : (tensor<1x2x4x4x4xf32>, tensor<4xi64>) -> tensor<2x4x4x4xf32>
  %dw = mpc.conv_grad_weight %dy, %cols {kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>} : (tensor<2x3x4x4xf32>, tensor<2x4x4x4xf32>) -> tensor<3x4x3x3xf32>
  return %dw : tensor<3x4x3x3xf32>
}
