// RUN: not mpc-opt %s -mpc-checkpoint-blocks=pattern=auto 2>&1 | FileCheck %s

// `auto` needs a path component numbered twice or more (blocks.0,
// blocks.1): one numbered block is no repetition.
// CHECK: error: checkpoint-blocks: auto finds no repeated blocks (NAME.<index> in two or more node names) in the forward
func.func @step(%x: tensor<4xf32> {mpc.input = "x"})
    -> (tensor<f32> {mpc.output = "loss"}, tensor<4xf32> {mpc.output = "g"})
    attributes {mpc.train_step, mpc.loss_index = 0 : i64} {
  %a = mpc.tanh %x : (tensor<4xf32>) -> tensor<4xf32> loc("/blocks.0/act")
  %b = mpc.sigmoid %a : (tensor<4xf32>) -> tensor<4xf32> loc("/head/out")
  %l = mpc.reduce_l2 %b {keepdims = false} : (tensor<4xf32>) -> tensor<f32> loc("/loss")
  %g = mpc.mul %b, %a : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> loc("/blocks.0/act")
  return %l, %g : tensor<f32>, tensor<4xf32>
}
