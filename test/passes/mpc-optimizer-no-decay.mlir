// RUN: mpc-opt %s -mpc-optimizer="kind=sgd lr=0.5 weight-decay=0.25 no-decay=.*\.bias" -split-input-file | FileCheck %s --check-prefix=SGD
// RUN: mpc-opt %s -mpc-optimizer="kind=adamw lr=0.5 weight-decay=0.25 no-decay=.*\.bias" -split-input-file | FileCheck %s --check-prefix=ADAMW
// RUN: not mpc-opt %s -mpc-optimizer="kind=sgd weight-decay=0.25 no-decay=head" -split-input-file 2>&1 | FileCheck %s --check-prefix=NOMATCH
// RUN: not mpc-opt %s -mpc-optimizer="kind=sgd no-decay=.*\.bias" -split-input-file 2>&1 | FileCheck %s --check-prefix=NOWD

// Hugging Face's no_decay group: the parameters whose whole name matches
// (here the bias) update without weight decay, the others with it.
// SGD-LABEL: func.func @f_train_step
// SGD: %[[WD:.*]] = mpc.constant dense<2.500000e-01> : tensor<f32>
// SGD: %[[T:.*]] = mpc.mul %[[WD]], %[[W:[a-z0-9]+]] :
// SGD: %[[D:.*]] = mpc.add %[[GW:[a-z0-9]+]], %[[T]] :
// SGD: %[[S:.*]] = mpc.mul %{{.*}}, %[[D]] :
// SGD: %[[NW:.*]] = mpc.sub %[[W]], %[[S]] :
// SGD-NOT: dense<2.500000e-01>
// SGD: %[[SB:.*]] = mpc.mul %{{.*}}, %[[GB:[a-z0-9]+]] :
// SGD: %[[NB:.*]] = mpc.sub %[[B:[a-z0-9]+]], %[[SB]] :
// SGD: return %{{.*}}, %[[GW]], %[[GB]], %[[NW]], %[[NB]]
// AdamW decays the weight (w (1 - lr wd)) and not the bias.
// ADAMW-LABEL: func.func @f_train_step
// ADAMW: %[[DECAY:.*]] = mpc.constant dense<8.750000e-01> : tensor<f32>
// ADAMW: mpc.mul %[[W:[a-z0-9]+]], %[[DECAY]]
// ADAMW-NOT: dense<8.750000e-01>
// ADAMW: return
// NOMATCH: error: --no-weight-decay 'head' matches no trained parameter (they are: model.weight, model.bias)
// NOWD: error: --no-weight-decay exempts parameters from --weight-decay, which is 0
mpc.param @model.weight trainable : tensor<3xf32> = dense<1.0> : tensor<3xf32>
mpc.param @model.bias trainable : tensor<3xf32> = dense<0.0> : tensor<3xf32>
func.func @f_train_step(%x: tensor<3xf32> {mpc.input = "x"}, %w: tensor<3xf32> {mpc.param = @model.weight}, %b: tensor<3xf32> {mpc.param = @model.bias})
    -> (tensor<f32> {mpc.output = "loss"}, tensor<3xf32> {mpc.gradient = @model.weight}, tensor<3xf32> {mpc.gradient = @model.bias})
    attributes {mpc.train_step} {
  %l = mpc.constant dense<1.0> : tensor<f32>
  return %l, %x, %x : tensor<f32>, tensor<3xf32>, tensor<3xf32>
}
