// RUN: not mpc-opt %s -mpc-autodiff="params=d\..*" -split-input-file 2> %t.err | FileCheck %s
// RUN: FileCheck %s --check-prefix=ERR < %t.err

// `params` differentiates only the matching trainable parameters: @g.w is
// fixed, but the gradient of @d.w still flows back through the product
// with it.
// CHECK-LABEL: func.func @f_train_step
// CHECK-SAME: -> (tensor<f32>, tensor<2x2xf32> {mpc.gradient = @d.w})
// CHECK-NOT: mpc.gradient = @g.w
mpc.param @g.w trainable : tensor<2x2xf32> = dense<1.0> : tensor<2x2xf32>
mpc.param @d.w trainable : tensor<2x2xf32> = dense<2.0> : tensor<2x2xf32>
func.func @f(%x: tensor<2x2xf32> {mpc.input = "x"},
             %g: tensor<2x2xf32> {mpc.param = @g.w},
             %d: tensor<2x2xf32> {mpc.param = @d.w}) -> tensor<f32>
    attributes {mpc.entry} {
  %h = mpc.matmul %x, %g : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
  %y = mpc.matmul %h, %d : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
  %s = mpc.reduce_sum %y {keepdims = false} : (tensor<2x2xf32>) -> tensor<f32>
  return %s : tensor<f32>
}

// -----

// A pattern that matches no trainable parameter is an error naming them.
// ERR: error: --train-params 'd\..*' matches no trainable parameter (they are: w)
mpc.param @w trainable : tensor<2xf32> = dense<1.0> : tensor<2xf32>
func.func @h(%w: tensor<2xf32> {mpc.param = @w}) -> tensor<f32> attributes {mpc.entry} {
  %s = mpc.reduce_sum %w {keepdims = false} : (tensor<2xf32>) -> tensor<f32>
  return %s : tensor<f32>
}
