// RUN: mpc-opt %s -mpc-clip-grad-norm -verify-diagnostics

// The norm reads every gradient before the first update: an update that
// reads one before the last is computed (not what mpc-optimizer builds)
// is refused, not reordered.
mpc.param @w trainable : tensor<3xf32> = dense<1.0> : tensor<3xf32>
mpc.param @b trainable : tensor<3xf32> = dense<0.0> : tensor<3xf32>
func.func @early_update_train_step(%w: tensor<3xf32> {mpc.param = @w}, %b: tensor<3xf32> {mpc.param = @b},
                                   %dw: tensor<3xf32> {mpc.input = "dw"})
    -> (tensor<3xf32> {mpc.gradient = @w}, tensor<3xf32> {mpc.gradient = @b}, tensor<3xf32> {mpc.output = "mpc.new.w"})
    attributes {mpc.train_step, mpc.optimizer = "sgd"} {
  // expected-error @+1 {{clip-grad-norm: an update reads a gradient before every gradient is computed}}
  %nw = mpc.sub %w, %dw : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %db = mpc.mul %b, %b : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  return %dw, %db, %nw : tensor<3xf32>, tensor<3xf32>, tensor<3xf32>
}

