// RUN: mpc-opt %s -mpc-unscale-in-optimizer -split-input-file -mlir-print-debuginfo | FileCheck %s

// The unscale becomes a check that only reads the gradients; each update
// reads its gradient widened (fp16) and times 1/scale where it read the
// unscaled copy, at the unscale's location; the step returns the
// gradients as the backward made them (scaled, their own types) and the
// check's flag.
// CHECK-LABEL: func.func @sgd_train_step
// CHECK-SAME: -> (tensor<f32> {mpc.output = "loss"}, tensor<3x4xf16> {mpc.gradient = @w}, tensor<3xf32> {mpc.gradient = @b}, tensor<i1> {mpc.output = "mpc.found_inf"}, tensor<3x4xf32> {mpc.output = "mpc.new.w"}, tensor<3xf32> {mpc.output = "mpc.new.b"})
// CHECK-NOT: mpc.unscale_grads
// CHECK: %[[INV:.*]], %[[INF:.*]] = mpc.check_grads %[[DW:[a-z0-9]+]], %[[DB:[a-z0-9]+]], %[[S:[a-z0-9]+]] : (tensor<3x4xf16>, tensor<3xf32>, tensor<f32>) -> (tensor<f32>, tensor<i1>) loc(#[[LOC:.*]])
// CHECK: %[[W:.*]] = mpc.cast %[[DW]] : (tensor<3x4xf16>) -> tensor<3x4xf32> loc(#[[LOC]])
// CHECK: %[[U:.*]] = mpc.mul %[[W]], %[[INV]] : (tensor<3x4xf32>, tensor<f32>) -> tensor<3x4xf32> loc(#[[LOC]])
// CHECK: mpc.mul %{{.*}}, %[[U]]
// CHECK: mpc.where %[[INF]],
// CHECK-NOT: mpc.cast
// CHECK: %[[UB:.*]] = mpc.mul %[[DB]], %[[INV]] : (tensor<3xf32>, tensor<f32>) -> tensor<3xf32> loc(#[[LOC]])
// CHECK: mpc.mul %{{.*}}, %[[UB]]
// CHECK: mpc.where %[[INF]],
// CHECK: return %{{.*}}, %[[DW]], %[[DB]], %[[INF]],
// CHECK: #[[LOC]] = loc("unscale")
mpc.param @w trainable : tensor<3x4xf32> = dense<1.0> : tensor<3x4xf32>
mpc.param @b trainable : tensor<3xf32> = dense<0.0> : tensor<3xf32>
func.func @sgd_train_step(%w: tensor<3x4xf32> {mpc.param = @w}, %b: tensor<3xf32> {mpc.param = @b},
                          %dw: tensor<3x4xf16> {mpc.input = "dw"}, %db: tensor<3xf32> {mpc.input = "db"},
                          %s: tensor<f32> {mpc.input = "mpc.loss_scale"}, %loss: tensor<f32> {mpc.input = "l"})
    -> (tensor<f32> {mpc.output = "loss"}, tensor<3x4xf32> {mpc.gradient = @w}, tensor<3xf32> {mpc.gradient = @b}, tensor<i1> {mpc.output = "mpc.found_inf"}, tensor<3x4xf32> {mpc.output = "mpc.new.w"}, tensor<3xf32> {mpc.output = "mpc.new.b"})
    attributes {mpc.train_step, mpc.optimizer = "sgd"} {
  %u:2, %inf = mpc.unscale_grads %dw, %db, %s : (tensor<3x4xf16>, tensor<3xf32>, tensor<f32>) -> (tensor<3x4xf32>, tensor<3xf32>, tensor<i1>) loc("unscale")
  %lr = mpc.constant dense<0.1> : tensor<f32>
  %sw = mpc.mul %lr, %u#0 : (tensor<f32>, tensor<3x4xf32>) -> tensor<3x4xf32>
  %nw = mpc.sub %w, %sw : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
  %gw = mpc.where %inf, %w, %nw : (tensor<i1>, tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
  %sb = mpc.mul %lr, %u#1 : (tensor<f32>, tensor<3xf32>) -> tensor<3xf32>
  %nb = mpc.sub %b, %sb : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %gb = mpc.where %inf, %b, %nb : (tensor<i1>, tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  return %loss, %u#0, %u#1, %inf, %gw, %gb : tensor<f32>, tensor<3x4xf32>, tensor<3xf32>, tensor<i1>, tensor<3x4xf32>, tensor<3xf32>
}

// -----

// Without an optimizer (mpc grad) the step returns unscaled gradients: as
// written.
// CHECK-LABEL: func.func @grad_step
// CHECK: mpc.unscale_grads
// CHECK-NOT: mpc.check_grads
mpc.param @v trainable : tensor<3xf32> = dense<0.0> : tensor<3xf32>
func.func @grad_step(%v: tensor<3xf32> {mpc.param = @v}, %dv: tensor<3xf16> {mpc.input = "dv"},
                     %s: tensor<f32> {mpc.input = "mpc.loss_scale"})
    -> (tensor<3xf32> {mpc.gradient = @v}, tensor<i1> {mpc.output = "mpc.found_inf"})
    attributes {mpc.train_step} {
  %u, %inf = mpc.unscale_grads %dv, %s : (tensor<3xf16>, tensor<f32>) -> (tensor<3xf32>, tensor<i1>)
  return %u, %inf : tensor<3xf32>, tensor<i1>
}

// -----

// A global norm of the unscaled gradients reads them scaled, 1/scale its
// factor; one that also reads another value keeps reading the products.
// The first reads exactly the check's gradients: it gives the flag (its
// kernel reads them anyway), right where the check was, and the check
// becomes 1 / scale.
// CHECK-LABEL: func.func @norms
// CHECK-NOT: mpc.check_grads
// CHECK: %[[C1:.*]] = mpc.constant dense<1.000000e+00> : tensor<f32> loc(#[[UN:.*]])
// CHECK: %[[INV:.*]] = mpc.div %[[C1]], %[[S:[a-z0-9]+]] : (tensor<f32>, tensor<f32>) -> tensor<f32> loc(#[[UN]])
// CHECK: %[[N:.*]], %[[INF:.*]] = mpc.global_norm %[[INV]], %[[DW:[a-z0-9]+]] : (tensor<f32>, tensor<3xf16>) -> (tensor<f32>, tensor<i1>) loc(#[[NL:.*]])
// CHECK: %[[ONE:.*]] = mpc.constant dense<1.000000e+00>
// CHECK: %[[W:.*]] = mpc.cast %[[DW]]
// CHECK: %[[U:.*]] = mpc.mul %[[W]], %[[INV]]
// CHECK: %[[M:.*]] = mpc.global_norm %[[ONE]], %[[U]], %[[X:[a-z0-9]+]] : (tensor<f32>, tensor<3xf32>, tensor<3xf32>) -> tensor<f32>
// CHECK: return %[[DW]], %[[INF]], %{{.*}}, %[[N]], %[[M]] :
// CHECK-DAG: #[[UN]] = loc("unscale")
// CHECK-DAG: #[[NL]] = loc("norm")
mpc.param @p trainable : tensor<3xf32> = dense<1.0> : tensor<3xf32>
func.func @norms(%p: tensor<3xf32> {mpc.param = @p}, %dp: tensor<3xf16> {mpc.input = "dp"},
                 %x: tensor<3xf32> {mpc.input = "x"}, %s: tensor<f32> {mpc.input = "mpc.loss_scale"})
    -> (tensor<3xf32> {mpc.gradient = @p}, tensor<i1> {mpc.output = "mpc.found_inf"}, tensor<3xf32> {mpc.output = "mpc.new.p"}, tensor<f32> {mpc.output = "n"}, tensor<f32> {mpc.output = "m"})
    attributes {mpc.train_step, mpc.optimizer = "sgd"} {
  %u, %inf = mpc.unscale_grads %dp, %s : (tensor<3xf16>, tensor<f32>) -> (tensor<3xf32>, tensor<i1>) loc("unscale")
  %one = mpc.constant dense<1.0> : tensor<f32>
  %n = mpc.global_norm %one, %u : (tensor<f32>, tensor<3xf32>) -> tensor<f32> loc("norm")
  %m = mpc.global_norm %one, %u, %x : (tensor<f32>, tensor<3xf32>, tensor<3xf32>) -> tensor<f32>
  %np = mpc.sub %p, %u : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  return %u, %inf, %np, %n, %m : tensor<3xf32>, tensor<i1>, tensor<3xf32>, tensor<f32>, tensor<f32>
}

// -----

// A norm of some of the checked gradients does not see them all: the
// check keeps the flag.
// CHECK-LABEL: func.func @partial_norm
// CHECK: %[[INV:.*]], %[[INF:.*]] = mpc.check_grads %[[DA:[a-z0-9]+]], %[[DB:[a-z0-9]+]], %{{.*}} :
// CHECK: %[[N:.*]] = mpc.global_norm %[[INV]], %[[DA]] : (tensor<f32>, tensor<3xf16>) -> tensor<f32>
// CHECK: return %{{.*}}, %[[INF]], %[[N]] :
mpc.param @a trainable : tensor<3xf32> = dense<1.0> : tensor<3xf32>
mpc.param @b trainable : tensor<2xf32> = dense<1.0> : tensor<2xf32>
func.func @partial_norm(%a: tensor<3xf32> {mpc.param = @a}, %b: tensor<2xf32> {mpc.param = @b},
                        %da: tensor<3xf16> {mpc.input = "da"}, %db: tensor<2xf16> {mpc.input = "db"},
                        %s: tensor<f32> {mpc.input = "mpc.loss_scale"})
    -> (tensor<3xf32> {mpc.output = "mpc.new.a"}, tensor<2xf32> {mpc.output = "mpc.new.b"}, tensor<i1> {mpc.output = "mpc.found_inf"}, tensor<f32> {mpc.output = "n"})
    attributes {mpc.train_step, mpc.optimizer = "sgd"} {
  %u:2, %inf = mpc.unscale_grads %da, %db, %s : (tensor<3xf16>, tensor<2xf16>, tensor<f32>) -> (tensor<3xf32>, tensor<2xf32>, tensor<i1>)
  %one = mpc.constant dense<1.0> : tensor<f32>
  %n = mpc.global_norm %one, %u#0 : (tensor<f32>, tensor<3xf32>) -> tensor<f32>
  %na = mpc.sub %a, %u#0 : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %nb = mpc.sub %b, %u#1 : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  return %na, %nb, %inf, %n : tensor<3xf32>, tensor<2xf32>, tensor<i1>, tensor<f32>
}
