// RUN: mpc-opt %s -mpc-specialize-shapes="batch=4" -split-input-file \
// RUN:   --mlir-print-debuginfo --mlir-print-local-scope | FileCheck %s
// RUN: mpc-opt %s -mpc-specialize-shapes -split-input-file | FileCheck %s --check-prefix=NOBIND

// The Shape -> Gather -> Unsqueeze -> Concat -> Reshape chain torch emits for
// `x.view(x.size(0), -1, 8)` folds to a constant once the batch is bound.
// CHECK-LABEL: func.func @shape_chain
// CHECK-SAME: (%[[X:.*]]: tensor<4x16x64xf32> {mpc.input = "x"} loc({{.*}})) -> tensor<4x128x8xf32>
// CHECK-NEXT: %[[S:.*]] = mpc.constant dense<[4, -1, 8]> : tensor<3xi64> loc("concat")
// CHECK-NEXT: %[[R:.*]] = mpc.reshape %[[X]], %[[S]] : (tensor<4x16x64xf32>, tensor<3xi64>) -> tensor<4x128x8xf32> loc("reshape")
// CHECK-NEXT: return %[[R]] : tensor<4x128x8xf32>
// NOBIND-LABEL: func.func @shape_chain
// NOBIND: mpc.shape
// NOBIND: mpc.reshape {{.*}} -> tensor<?x?x8xf32>
// NOBIND: return {{.*}} : tensor<?x?x8xf32>
func.func @shape_chain(%x: tensor<?x16x64xf32> {mpc.input = "x"}) -> tensor<?x?x?xf32> {
  %shape = mpc.shape %x : (tensor<?x16x64xf32>) -> tensor<3xi64> loc("shape")
  %zero = mpc.constant dense<0> : tensor<i64>
  %n = mpc.gather %shape, %zero {axis = 0 : i64} : (tensor<3xi64>, tensor<i64>) -> tensor<i64> loc("gather")
  %n1 = mpc.unsqueeze %n {axes = array<i64: 0>} : (tensor<i64>) -> tensor<1xi64> loc("unsqueeze")
  %rest = mpc.constant dense<[-1, 8]> : tensor<2xi64>
  %target = mpc.concat %n1, %rest {axis = 0 : i64} : (tensor<1xi64>, tensor<2xi64>) -> tensor<3xi64> loc("concat")
  %y = mpc.reshape %x, %target : (tensor<?x16x64xf32>, tensor<3xi64>) -> tensor<?x?x?xf32> loc("reshape")
  return %y : tensor<?x?x?xf32>
}

// -----

// torch's expand pattern: ConstantOfShape -> Mul -> Equal -> Where -> Expand.
// CHECK-LABEL: func.func @expand_chain
// CHECK-NOT: mpc.where
// CHECK: %[[S:.*]] = mpc.constant dense<[4, 3]> : tensor<2xi64>
// CHECK: mpc.expand %{{.*}}, %[[S]] : (tensor<1x3xf32>, tensor<2xi64>) -> tensor<4x3xf32>
// NOBIND-LABEL: func.func @expand_chain
// NOBIND: mpc.where
// NOBIND: mpc.expand {{.*}} -> tensor<?x3xf32>
func.func @expand_chain(%x: tensor<?x3xf32> {mpc.input = "x"}, %b: tensor<1x3xf32>) -> tensor<?x?xf32> {
  %shape = mpc.shape %x : (tensor<?x3xf32>) -> tensor<2xi64>
  %two = mpc.constant dense<2> : tensor<1xi64>
  %ones = mpc.constant_of_shape %two {value = dense<1> : tensor<1xi64>} : (tensor<1xi64>) -> tensor<2xi64>
  %m1 = mpc.constant dense<-1> : tensor<i64>
  %neg = mpc.mul %ones, %m1 : (tensor<2xi64>, tensor<i64>) -> tensor<2xi64>
  %eq = mpc.equal %shape, %neg : (tensor<2xi64>, tensor<2xi64>) -> tensor<2xi1>
  %sel = mpc.where %eq, %ones, %shape : (tensor<2xi1>, tensor<2xi64>, tensor<2xi64>) -> tensor<2xi64>
  %y = mpc.expand %b, %sel : (tensor<1x3xf32>, tensor<2xi64>) -> tensor<?x?xf32>
  return %y : tensor<?x?xf32>
}

// -----

// Parameters (no mpc.input) keep their types; only graph inputs are bound.
// CHECK-LABEL: func.func @only_inputs
// CHECK-SAME: (%{{.*}}: tensor<4x8xf32> {mpc.input = "x"} loc({{.*}}), %{{.*}}: tensor<?x8xf32> loc({{.*}}))
func.func @only_inputs(%x: tensor<?x8xf32> {mpc.input = "x"}, %p: tensor<?x8xf32>) {
  return
}
