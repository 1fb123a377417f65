// RUN: mpc-opt %s -mpc-grad-accumulation=steps=2 -split-input-file -verify-diagnostics

// Accumulation changes what updates read: a step without them (mpc grad's
// gradients only) is refused, not returned summed.
mpc.param @w trainable : tensor<3xf32> = dense<1.0> : tensor<3xf32>
// expected-error @+1 {{grad-accumulation: the train step has no optimizer updates to accumulate for (run mpc-optimizer first)}}
func.func @grads_train_step(%w: tensor<3xf32> {mpc.param = @w}, %dw: tensor<3xf32> {mpc.input = "dw"})
    -> (tensor<3xf32> {mpc.gradient = @w}) attributes {mpc.train_step} {
  return %dw : tensor<3xf32>
}

// -----

// expected-error @+1 {{grad-accumulation: no train step (run mpc-autodiff and mpc-optimizer first)}}
module {
  func.func @forward(%x: tensor<3xf32>) -> tensor<3xf32> {
    return %x : tensor<3xf32>
  }
}
