// RUN: mpc-opt %s -mpc-checkpoint-blocks='pattern=blocks\.[0-9]+' -split-input-file -mlir-print-debuginfo | FileCheck %s
// RUN: mpc-opt %s -mpc-checkpoint-blocks=pattern=auto -split-input-file -mlir-print-debuginfo | FileCheck %s
// RUN: not mpc-opt %s -mpc-checkpoint-blocks='pattern=layers\.[0-9]+' -split-input-file 2>&1 | FileCheck %s --check-prefix=NONE
// RUN: not mpc-opt %s -mpc-checkpoint-blocks='pattern=blocks(' -split-input-file 2>&1 | FileCheck %s --check-prefix=BAD

// Two blocks; the backward (after the loss) reads both blocks' values. A
// block's values that only its own forward ops and the backward read are
// computed again, at their own locations, right before the first
// backward op that reads them, and the backward reads the copies. Block
// 0's output %b, which block 1 reads, is held (not recomputed), as are
// block 1's %d, which the loss reads, and %k, which the step returns.
// `auto` finds the same blocks (blocks.N, the component numbered most).
// CHECK-LABEL: func.func @step
// CHECK: %[[A:.*]] = mpc.tanh %[[X:[a-z0-9]+]] {{.*}}loc(#[[A0:.*]])
// CHECK: %[[B:.*]] = mpc.sigmoid %[[A]] {{.*}}loc(#[[B0:.*]])
// CHECK: %[[C:.*]] = mpc.tanh %[[B]] {{.*}}loc(#[[C1:.*]])
// CHECK: %[[D:.*]] = mpc.exp %[[C]]
// CHECK: %[[L:.*]] = mpc.reduce_l2 %[[D]]
// CHECK: %[[C2:.*]] = mpc.tanh %[[B]] {{.*}}loc(#[[C1]])
// CHECK-NOT: mpc.exp
// CHECK: %[[G1:.*]] = mpc.mul %[[D]], %[[C2]]
// CHECK: %[[G2:.*]] = mpc.mul %[[G1]], %[[B]]
// CHECK: %[[A2:.*]] = mpc.tanh %[[X]] {{.*}}loc(#[[A0]])
// CHECK-NOT: mpc.sigmoid
// CHECK: %[[G3:.*]] = mpc.mul %[[G2]], %[[A2]]
// CHECK: %[[G4:.*]] = mpc.mul %[[G3]], %[[K:[a-z0-9]+]]
// CHECK: return %[[L]], %[[G4]], %[[K]] :
// CHECK-DAG: #[[A0]] = loc("/blocks.0/act")
// CHECK-DAG: #[[C1]] = loc("/blocks.1/act")
// BAD: error: checkpoint-blocks: 'blocks(' is not a regular expression: parentheses not balanced
// NONE: error: checkpoint-blocks: 'layers\.[0-9]+' matches no node name of the forward
func.func @step(%x: tensor<4xf32> {mpc.input = "x"})
    -> (tensor<f32> {mpc.output = "loss"}, tensor<4xf32> {mpc.output = "g"}, tensor<4xf32> {mpc.output = "k"})
    attributes {mpc.train_step, mpc.loss_index = 0 : i64} {
  %a = mpc.tanh %x : (tensor<4xf32>) -> tensor<4xf32> loc("/blocks.0/act")
  %b = mpc.sigmoid %a : (tensor<4xf32>) -> tensor<4xf32> loc("/blocks.0/out")
  %c = mpc.tanh %b : (tensor<4xf32>) -> tensor<4xf32> loc("/blocks.1/act")
  %d = mpc.exp %c : (tensor<4xf32>) -> tensor<4xf32> loc("/blocks.1/out")
  %k = mpc.sin %d : (tensor<4xf32>) -> tensor<4xf32> loc("/blocks.1/kept")
  %l = mpc.reduce_l2 %d {keepdims = false} : (tensor<4xf32>) -> tensor<f32> loc("/loss")
  %g1 = mpc.mul %d, %c : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> loc("/blocks.1/out")
  %g2 = mpc.mul %g1, %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> loc("/blocks.1/act")
  %g3 = mpc.mul %g2, %a : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> loc("/blocks.0/act")
  %g4 = mpc.mul %g3, %k : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> loc("/blocks.1/kept")
  return %l, %g4, %k : tensor<f32>, tensor<4xf32>, tensor<4xf32>
}
