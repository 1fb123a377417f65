// RUN: mpc-opt %s -mpc-lower-gradient -split-input-file --mlir-print-debuginfo --mlir-print-local-scope | FileCheck %s

// ONNX's test_gradient_of_add_and_mul: d = (a + b) * a, Gradient(xs = [a, b],
// y = d) -> (2a + b, a), built where the Gradient op stood.
// CHECK-LABEL: func.func @add_and_mul
// CHECK-NOT: mpc.gradient
// CHECK: %[[S:.*]] = mpc.add %[[A:.*]], %[[B:.*]] : {{.*}} loc("add")
// CHECK: %[[D:.*]] = mpc.mul %[[S]], %[[A]] : {{.*}} loc("mul")
// CHECK: %[[ONE:.*]] = mpc.constant {mpc.grad_seed} dense<1.000000e+00> : tensor<f32>
// CHECK: %[[DA1:.*]] = mpc.mul %[[ONE]], %[[A]] : {{.*}} loc("mul")
// CHECK: %[[DA2:.*]] = mpc.mul %[[ONE]], %[[S]] : {{.*}} loc("mul")
// CHECK: %[[DA:.*]] = mpc.add %[[DA2]], %[[DA1]] : {{.*}} loc("add")
// CHECK: return %[[D]], %[[DA]], %[[DA1]]
func.func @add_and_mul(%a: tensor<f32>, %b: tensor<f32>) -> (tensor<f32>, tensor<f32>, tensor<f32>) {
  %s = mpc.add %a, %b : (tensor<f32>, tensor<f32>) -> tensor<f32> loc("add")
  %d = mpc.mul %s, %a : (tensor<f32>, tensor<f32>) -> tensor<f32> loc("mul")
  %g:2 = mpc.gradient %a, %b target %d {xs = ["a", "b"], y = "d", zs = []} : (tensor<f32>, tensor<f32>, tensor<f32>) -> (tensor<f32>, tensor<f32>) loc("grad")
  return %d, %g#0, %g#1 : tensor<f32>, tensor<f32>, tensor<f32>
}

// -----

// An x that y does not depend on gets a zero gradient; Gradient ops without
// a target (training algorithms) are left alone.
// CHECK-LABEL: func.func @independent
// CHECK: %[[Z:.*]] = mpc.constant dense<0.000000e+00> : tensor<3xf32>
// CHECK: mpc.gradient %{{.*}} {xs = ["w"], y = "loss", zs = []}
// CHECK: return %{{.*}}, %[[Z]]
func.func @independent(%a: tensor<3xf32>, %b: tensor<3xf32>, %w: tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) {
  %y = mpc.exp %a : (tensor<3xf32>) -> tensor<3xf32>
  %g:2 = mpc.gradient %a, %b target %y {xs = ["a", "b"], y = "y", zs = []} : (tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>)
  %k = mpc.gradient %w {xs = ["w"], y = "loss", zs = []} : (tensor<3xf32>) -> tensor<3xf32>
  return %g#0, %g#1, %k : tensor<3xf32>, tensor<3xf32>, tensor<3xf32>
}
