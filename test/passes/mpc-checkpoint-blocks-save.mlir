// RUN: mpc-opt %s -mpc-checkpoint-blocks='pattern=blocks\.[0-9]+ save=products' -mlir-print-debuginfo | FileCheck %s
// RUN: mpc-opt %s -mpc-checkpoint-blocks='pattern=blocks\.[0-9]+' -mlir-print-debuginfo | FileCheck %s --check-prefix=ALL
// RUN: not mpc-opt %s -mpc-checkpoint-blocks='pattern=blocks\.[0-9]+ save=gemms' 2>&1 | FileCheck %s --check-prefix=BAD

// mpc-checkpoint-blocks' save=products (selective checkpointing saving
// matmuls): a block's tensor-core ops (its matmul here) are not
// recomputed; the backward reads their forward results, and only what
// follows them (the tanh) is computed again, from them. With save=all
// (the default) the matmul is computed again too.
// CHECK-LABEL: func.func @step
// CHECK: %[[M:.*]] = mpc.matmul %[[X:[a-z0-9]+]], %[[W:[a-z0-9]+]] {{.*}}loc(#[[MM:.*]])
// CHECK: %[[T:.*]] = mpc.tanh %[[M]] {{.*}}loc(#[[ACT:.*]])
// CHECK: %[[U:.*]] = mpc.exp %[[T]]
// CHECK: %[[L:.*]] = mpc.reduce_l2 %[[U]]
// CHECK-NOT: mpc.matmul
// CHECK: %[[T2:.*]] = mpc.tanh %[[M]] {{.*}}loc(#[[ACT]])
// CHECK: %[[G1:.*]] = mpc.mul %[[U]], %[[T2]]
// CHECK: %[[G2:.*]] = mpc.mul %[[G1]], %[[M]]
// CHECK: return %[[L]], %[[G2]] :
// CHECK-DAG: #[[MM]] = loc("/blocks.0/fc")
// CHECK-DAG: #[[ACT]] = loc("/blocks.0/act")
// ALL-LABEL: func.func @step
// ALL: %[[L:.*]] = mpc.reduce_l2
// ALL: %[[M2:.*]] = mpc.matmul {{.*}}loc(#[[MM:.*]])
// ALL: %[[T2:.*]] = mpc.tanh %[[M2]]
// ALL: mpc.mul %{{.*}}, %[[M2]]
// ALL-DAG: #[[MM]] = loc("/blocks.0/fc")
// BAD: error: checkpoint-blocks: save='gemms' is not all or products
func.func @step(%x: tensor<4x4xf32> {mpc.input = "x"}, %w: tensor<4x4xf32> {mpc.input = "w"})
    -> (tensor<f32> {mpc.output = "loss"}, tensor<4x4xf32> {mpc.output = "g"})
    attributes {mpc.train_step, mpc.loss_index = 0 : i64} {
  %m = mpc.matmul %x, %w : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32> loc("/blocks.0/fc")
  %t = mpc.tanh %m : (tensor<4x4xf32>) -> tensor<4x4xf32> loc("/blocks.0/act")
  %u = mpc.exp %t : (tensor<4x4xf32>) -> tensor<4x4xf32> loc("/blocks.0/out")
  %l = mpc.reduce_l2 %u {keepdims = false} : (tensor<4x4xf32>) -> tensor<f32> loc("/loss")
  %g1 = mpc.mul %u, %t : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32> loc("/blocks.0/act")
  %g2 = mpc.mul %g1, %m : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32> loc("/blocks.0/fc")
  return %l, %g2 : tensor<f32>, tensor<4x4xf32>
}
