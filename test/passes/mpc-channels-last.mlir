// RUN: mpc-opt %s -mpc-channels-last | FileCheck %s
// RUN: mpc-opt %s -mpc-channels-last -mlir-print-debuginfo | FileCheck %s --check-prefix=LOC
// RUN: mpc-opt %s -mpc-channels-last="stored-filters=true" | FileCheck %s --check-prefix=STORED

// A ResNet basic block: both convolutions, their batch norms, the Relus and
// the residual Add run channels last. The block's input is transposed once
// (the first convolution and the residual share it), each filter once, and
// one transpose back remains, before global pooling.
// CHECK-LABEL: func.func @block
// CHECK-NEXT: %[[X:.*]] = mpc.transpose %arg0 {perm = array<i64: 0, 2, 3, 1>} : (tensor<8x16x8x8xf32>) -> tensor<8x8x8x16xf32>
// CHECK-NEXT: %[[W1:.*]] = mpc.transpose %arg1 {perm = array<i64: 0, 2, 3, 1>} : (tensor<16x16x3x3xf32>) -> tensor<16x3x3x16xf32>
// CHECK-NEXT: %[[C1:.*]] = mpc.conv %[[X]], %[[W1]] {channels_last = true, pads = array<i64: 1, 1, 1, 1>} : (tensor<8x8x8x16xf32>, tensor<16x3x3x16xf32>) -> tensor<8x8x8x16xf32>
// CHECK-NEXT: %[[B1:.*]], %[[RM:.*]], %{{.*}} = mpc.batch_norm_train %[[C1]], %arg3, %arg4, %arg5, %arg6 {channels_last = true} : (tensor<8x8x8x16xf32>, {{.*}}) -> (tensor<8x8x8x16xf32>, tensor<16xf32>, tensor<16xf32>)
// CHECK-NEXT: %[[R1:.*]] = mpc.relu %[[B1]] : (tensor<8x8x8x16xf32>) -> tensor<8x8x8x16xf32>
// CHECK-NEXT: %[[W2:.*]] = mpc.transpose %arg2 {perm = array<i64: 0, 2, 3, 1>}
// CHECK-NEXT: %[[C2:.*]] = mpc.conv %[[R1]], %[[W2]] {channels_last = true, pads = array<i64: 1, 1, 1, 1>}
// CHECK-NEXT: %[[B2:.*]] = mpc.batch_norm %[[C2]], %arg3, %arg4, %arg5, %arg6 {channels_last = true} : (tensor<8x8x8x16xf32>, {{.*}}) -> tensor<8x8x8x16xf32>
// CHECK-NEXT: %[[A:.*]] = mpc.add %[[B2]], %[[X]] : (tensor<8x8x8x16xf32>, tensor<8x8x8x16xf32>) -> tensor<8x8x8x16xf32>
// CHECK-NEXT: %[[R2:.*]] = mpc.relu %[[A]]
// CHECK-NEXT: %[[BACK:.*]] = mpc.transpose %[[R2]] {perm = array<i64: 0, 3, 1, 2>} : (tensor<8x8x8x16xf32>) -> tensor<8x16x8x8xf32>
// CHECK-NEXT: %[[P:.*]] = mpc.global_average_pool %[[BACK]]
// CHECK-NEXT: return %[[P]], %[[RM]]
// LOC-LABEL: func.func @block
// LOC: mpc.transpose %arg0 {{.*}} loc(#[[CONV1:loc[0-9]*]])
// LOC: mpc.conv {{.*}} loc(#[[CONV1]])
// LOC: mpc.batch_norm_train {{.*}} loc(#[[BN1:loc[0-9]*]])
// LOC-DAG: #[[CONV1]] = loc("layer1/conv1")
// LOC-DAG: #[[BN1]] = loc("layer1/bn1")
func.func @block(%x: tensor<8x16x8x8xf32>, %w1: tensor<16x16x3x3xf32>, %w2: tensor<16x16x3x3xf32>, %s: tensor<16xf32>, %b: tensor<16xf32>, %m: tensor<16xf32>, %v: tensor<16xf32>) -> (tensor<8x16x1x1xf32>, tensor<16xf32>) {
  %c1 = mpc.conv %x, %w1 {pads = array<i64: 1, 1, 1, 1>} : (tensor<8x16x8x8xf32>, tensor<16x16x3x3xf32>) -> tensor<8x16x8x8xf32> loc("layer1/conv1")
  %b1, %rm, %rv = mpc.batch_norm_train %c1, %s, %b, %m, %v {epsilon = 1.0e-05 : f32, momentum = 0.9 : f32} : (tensor<8x16x8x8xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<8x16x8x8xf32>, tensor<16xf32>, tensor<16xf32>) loc("layer1/bn1")
  %r1 = mpc.relu %b1 : (tensor<8x16x8x8xf32>) -> tensor<8x16x8x8xf32>
  %c2 = mpc.conv %r1, %w2 {pads = array<i64: 1, 1, 1, 1>} : (tensor<8x16x8x8xf32>, tensor<16x16x3x3xf32>) -> tensor<8x16x8x8xf32>
  %b2 = mpc.batch_norm %c2, %s, %b, %m, %v : (tensor<8x16x8x8xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<8x16x8x8xf32>
  %a = mpc.add %b2, %x : (tensor<8x16x8x8xf32>, tensor<8x16x8x8xf32>) -> tensor<8x16x8x8xf32>
  %r2 = mpc.relu %a : (tensor<8x16x8x8xf32>) -> tensor<8x16x8x8xf32>
  %p = mpc.global_average_pool %r2 : (tensor<8x16x8x8xf32>) -> tensor<8x16x1x1xf32>
  return %p, %rm : tensor<8x16x1x1xf32>, tensor<16xf32>
}

// A per-channel bias ([C, 1, 1]) is reshaped to [C] and the Add stays
// channels last. Left channels first: a softmax over the channels (a
// transpose back before it), a 1-D convolution, and a Mul with a tensor
// no convolution reads channels last (its result goes back instead).
// CHECK-LABEL: func.func @edges
// CHECK: %[[C:.*]] = mpc.conv %{{.*}}, %{{.*}} {channels_last = true, pads = array<i64: 1, 1, 1, 1>} : (tensor<8x8x8x16xf32>, tensor<16x3x3x16xf32>) -> tensor<8x8x8x16xf32>
// CHECK-NEXT: %[[BACK:.*]] = mpc.transpose %[[C]] {perm = array<i64: 0, 3, 1, 2>}
// CHECK-NEXT: mpc.softmax %[[BACK]] {axis = 1 : i64} : (tensor<8x16x8x8xf32>)
// CHECK: %[[BIAS:.*]] = mpc.reshape %arg4, %{{.*}} : (tensor<16x1x1xf32>, tensor<1xi64>) -> tensor<16xf32>
// CHECK-NEXT: mpc.add %[[C]], %[[BIAS]] : (tensor<8x8x8x16xf32>, tensor<16xf32>) -> tensor<8x8x8x16xf32>
// CHECK: mpc.conv %arg3, %arg2 : (tensor<8x16x10xf32>, tensor<4x16x3xf32>) -> tensor<8x4x8xf32>
// CHECK: %[[R:.*]] = mpc.relu %[[C]] : (tensor<8x8x8x16xf32>)
// CHECK-NEXT: %[[RB:.*]] = mpc.transpose %[[R]] {perm = array<i64: 0, 3, 1, 2>}
// CHECK-NEXT: mpc.mul %[[RB]], %arg5 : (tensor<8x16x8x8xf32>, tensor<8x16x8x8xf32>)
func.func @edges(%x: tensor<8x16x8x8xf32>, %w: tensor<16x16x3x3xf32>, %w1d: tensor<4x16x3xf32>, %x1d: tensor<8x16x10xf32>, %bias: tensor<16x1x1xf32>, %other: tensor<8x16x8x8xf32>) -> (tensor<8x16x8x8xf32>, tensor<8x16x8x8xf32>, tensor<8x4x8xf32>, tensor<8x16x8x8xf32>) {
  %c = mpc.conv %x, %w {pads = array<i64: 1, 1, 1, 1>} : (tensor<8x16x8x8xf32>, tensor<16x16x3x3xf32>) -> tensor<8x16x8x8xf32>
  %s = mpc.softmax %c {axis = 1 : i64} : (tensor<8x16x8x8xf32>) -> tensor<8x16x8x8xf32>
  %a = mpc.add %c, %bias : (tensor<8x16x8x8xf32>, tensor<16x1x1xf32>) -> tensor<8x16x8x8xf32>
  %c1 = mpc.conv %x1d, %w1d : (tensor<8x16x10xf32>, tensor<4x16x3xf32>) -> tensor<8x4x8xf32>
  %r = mpc.relu %c : (tensor<8x16x8x8xf32>) -> tensor<8x16x8x8xf32>
  %m = mpc.mul %r, %other : (tensor<8x16x8x8xf32>, tensor<8x16x8x8xf32>) -> tensor<8x16x8x8xf32>
  return %s, %a, %c1, %m : tensor<8x16x8x8xf32>, tensor<8x16x8x8xf32>, tensor<8x4x8xf32>, tensor<8x16x8x8xf32>
}

// Binary ops of other ranks stay as they are: a GAN's two loss terms
// summed as scalars, after a convolution region (this crashed the pass).
// CHECK-LABEL: func.func @scalars
// CHECK: mpc.conv %{{.*}}, %{{.*}} {channels_last = true
// CHECK: %[[L:.*]] = mpc.reduce_mean %{{.*}} {keepdims = false} : (tensor<8x16x8x8xf32>) -> tensor<f32>
// CHECK-NEXT: mpc.add %[[L]], %arg2 : (tensor<f32>, tensor<f32>) -> tensor<f32>
func.func @scalars(%x: tensor<8x16x8x8xf32>, %w: tensor<16x16x3x3xf32>, %other: tensor<f32>) -> tensor<f32> {
  %c = mpc.conv %x, %w {pads = array<i64: 1, 1, 1, 1>} : (tensor<8x16x8x8xf32>, tensor<16x16x3x3xf32>) -> tensor<8x16x8x8xf32>
  %l = mpc.reduce_mean %c {keepdims = false} : (tensor<8x16x8x8xf32>) -> tensor<f32>
  %s = mpc.add %l, %other : (tensor<f32>, tensor<f32>) -> tensor<f32>
  return %s : tensor<f32>
}

// stored-filters (a train step with an optimizer): a filter parameter only
// convolutions read is kept KRSC, its argument retyped and marked, no
// transpose left; one that something else reads too keeps ONNX's layout
// and its transpose. Without the option both are transposed.
// STORED-LABEL: func.func @filters
// STORED-SAME: %arg1: tensor<16x3x3x16xf32> {mpc.param = @w, mpc.stored_perm = array<i64: 0, 2, 3, 1>}
// STORED-SAME: %arg2: tensor<16x16x3x3xf32> {mpc.param = @v})
// STORED-NEXT: %[[X:.*]] = mpc.transpose %arg0
// STORED-NEXT: %[[C:.*]] = mpc.conv %[[X]], %arg1 {channels_last = true
// STORED-NEXT: %[[V:.*]] = mpc.transpose %arg2 {perm = array<i64: 0, 2, 3, 1>}
// STORED-NEXT: mpc.conv %[[C]], %[[V]] {channels_last = true
// STORED: mpc.neg %arg2 : (tensor<16x16x3x3xf32>)
// CHECK-LABEL: func.func @filters
// CHECK-SAME: %arg1: tensor<16x16x3x3xf32> {mpc.param = @w}
// CHECK: mpc.transpose %arg1 {perm = array<i64: 0, 2, 3, 1>}
mpc.param @w trainable : tensor<16x16x3x3xf32> = dense<0.5> : tensor<16x16x3x3xf32>
mpc.param @v trainable : tensor<16x16x3x3xf32> = dense<0.25> : tensor<16x16x3x3xf32>
func.func @filters(%x: tensor<8x16x8x8xf32>, %w: tensor<16x16x3x3xf32> {mpc.param = @w}, %v: tensor<16x16x3x3xf32> {mpc.param = @v}) -> (tensor<8x16x8x8xf32>, tensor<16x16x3x3xf32>) {
  %c = mpc.conv %x, %w {pads = array<i64: 1, 1, 1, 1>} : (tensor<8x16x8x8xf32>, tensor<16x16x3x3xf32>) -> tensor<8x16x8x8xf32>
  %d = mpc.conv %c, %v {pads = array<i64: 1, 1, 1, 1>} : (tensor<8x16x8x8xf32>, tensor<16x16x3x3xf32>) -> tensor<8x16x8x8xf32>
  %n = mpc.neg %v : (tensor<16x16x3x3xf32>) -> tensor<16x16x3x3xf32>
  return %d, %n : tensor<8x16x8x8xf32>, tensor<16x16x3x3xf32>
}
