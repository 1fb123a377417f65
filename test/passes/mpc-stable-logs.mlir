// RUN: mpc-opt %s -mpc-stable-logs -mlir-print-debuginfo -mlir-print-local-scope | FileCheck %s
// RUN: mpc-opt %s -mpc-stable-logs -mpc-amp-classify=precision=f16 | FileCheck %s --check-prefix=AMP

// torch's BCE-with-logits: log(sigmoid(x)) and log(1 - sigmoid(x)) become
// log-sigmoid forms; the sigmoid, read by nothing else, goes.
// CHECK-LABEL: func.func @bce_with_logits
// CHECK-NOT: mpc.sigmoid
// CHECK: %[[N:.*]] = mpc.neg %arg0 : {{.*}} loc("x_neg_site")
// CHECK: %[[P:.*]] = mpc.softplus %[[N]] {mpc.amp_fp32 = "a log-sigmoid (mpc-stable-logs)"} {{.*}} loc("x_neg_site")
// CHECK: %[[LS:.*]] = mpc.neg %[[P]] {{.*}} loc("x_neg_site")
// CHECK: %[[Q:.*]] = mpc.softplus %arg0 {mpc.amp_fp32
// CHECK: %[[L1:.*]] = mpc.neg %[[Q]]
// CHECK: mpc.mul %arg1, %[[LS]]
// CHECK: mpc.mul %{{.*}}, %[[L1]]
// CHECK-NOT: mpc.log
// AMP-LABEL: func.func @bce_with_logits
// AMP: mpc.softplus {{.*}}mpc.amp = "kept fp32: a log-sigmoid (mpc-stable-logs)", {{.*}}mpc.precision = f32
func.func @bce_with_logits(%x: tensor<8x1xf32>, %t: tensor<8x1xf32>) -> tensor<8x1xf32> {
  %s = mpc.sigmoid %x : (tensor<8x1xf32>) -> tensor<8x1xf32>
  %l = mpc.log %s : (tensor<8x1xf32>) -> tensor<8x1xf32> loc("x_neg_site")
  %one = mpc.constant dense<1.0> : tensor<1xf32>
  %c = mpc.sub %one, %s : (tensor<1xf32>, tensor<8x1xf32>) -> tensor<8x1xf32>
  %l1 = mpc.log %c : (tensor<8x1xf32>) -> tensor<8x1xf32>
  %ct = mpc.sub %one, %t : (tensor<1xf32>, tensor<8x1xf32>) -> tensor<8x1xf32>
  %a = mpc.mul %t, %l : (tensor<8x1xf32>, tensor<8x1xf32>) -> tensor<8x1xf32>
  %b = mpc.mul %ct, %l1 : (tensor<8x1xf32>, tensor<8x1xf32>) -> tensor<8x1xf32>
  %sum = mpc.add %a, %b : (tensor<8x1xf32>, tensor<8x1xf32>) -> tensor<8x1xf32>
  return %sum : tensor<8x1xf32>
}

// log(softmax) is log_softmax on the same axis; a softmax read elsewhere
// stays.
// CHECK-LABEL: func.func @log_of_softmax
// CHECK: %[[S:.*]] = mpc.softmax %arg0 {axis = 1 : i64}
// CHECK: %[[L:.*]] = mpc.log_softmax %arg0 {axis = 1 : i64}
// CHECK: return %[[L]], %[[S]]
func.func @log_of_softmax(%x: tensor<4x10xf32>) -> (tensor<4x10xf32>, tensor<4x10xf32>) {
  %s = mpc.softmax %x {axis = 1 : i64} : (tensor<4x10xf32>) -> tensor<4x10xf32>
  %l = mpc.log %s : (tensor<4x10xf32>) -> tensor<4x10xf32>
  return %l, %s : tensor<4x10xf32>, tensor<4x10xf32>
}

// Not the patterns: 2 - sigmoid, and 1 - sigmoid broadcast to a larger
// shape, stay as written.
// CHECK-LABEL: func.func @left_alone
// CHECK: mpc.sigmoid
// CHECK: mpc.log
// CHECK: mpc.log
// CHECK-NOT: mpc.softplus
func.func @left_alone(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<3x4xf32>) {
  %s = mpc.sigmoid %x : (tensor<4xf32>) -> tensor<4xf32>
  %two = mpc.constant dense<2.0> : tensor<f32>
  %c = mpc.sub %two, %s : (tensor<f32>, tensor<4xf32>) -> tensor<4xf32>
  %l = mpc.log %c : (tensor<4xf32>) -> tensor<4xf32>
  %ones = mpc.constant dense<1.0> : tensor<3x4xf32>
  %d = mpc.sub %ones, %s : (tensor<3x4xf32>, tensor<4xf32>) -> tensor<3x4xf32>
  %m = mpc.log %d : (tensor<3x4xf32>) -> tensor<3x4xf32>
  return %l, %m : tensor<4xf32>, tensor<3x4xf32>
}
