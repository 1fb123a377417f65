// RUN: mpc-opt %s "-mpc-ema=decay=0.9 warmup-power=0.75" -split-input-file -verify-diagnostics

// The warmup's rate is one FP32 input for every average: a parameter kept
// in another type (no master weights) is refused, not averaged with a
// rate the host does not feed.
mpc.param @w trainable : tensor<3xf16> = dense<1.0> : tensor<3xf16>
// expected-error @+1 {{ema: the warmup's rate is FP32; parameter 'w' is 'f16'}}
func.func @half_train_step(%w: tensor<3xf16> {mpc.param = @w}, %g: tensor<3xf16> {mpc.input = "g"})
    -> (tensor<3xf16> {mpc.output = "mpc.new.w"}) attributes {mpc.train_step, mpc.optimizer = "sgd"} {
  %nw = mpc.sub %w, %g : (tensor<3xf16>, tensor<3xf16>) -> tensor<3xf16>
  return %nw : tensor<3xf16>
}
