// RUN: mpc-opt %s -mpc-fuse-attention | FileCheck %s
// RUN: mpc-opt %s -mpc-fuse-attention --mlir-print-debuginfo --mlir-print-local-scope | FileCheck %s --check-prefix=LOC

// mpc-fuse-attention on multi-query attention and on the mask forms of
// Hugging Face's OPT, Falcon and GPT-BigCode exports.

// Falcon: one K and V head that the matmuls broadcast over Q's heads:
// attention reads it as grouped-query K and V (no copy).
// CHECK-LABEL: func.func @falcon
// CHECK: %[[K:.*]] = mpc.transpose %arg1 {perm = array<i64: 0, 1, 3, 2>}
// CHECK: mpc.attention %arg0, %[[K]], %arg2 {scale = 0.353553385 : f32} : (tensor<2x4x8x8xf32>, tensor<2x1x8x8xf32>, tensor<2x1x8x8xf32>)
// CHECK-NOT: mpc.softmax
func.func @falcon(%q: tensor<2x4x8x8xf32>, %kt: tensor<2x1x8x8xf32>, %v: tensor<2x1x8x8xf32>) -> tensor<2x4x8x8xf32> {
  %c = mpc.constant dense<2.828427> : tensor<f32>
  %qk = mpc.matmul %q, %kt : (tensor<2x4x8x8xf32>, tensor<2x1x8x8xf32>) -> tensor<2x4x8x8xf32>
  %s = mpc.div %qk, %c : (tensor<2x4x8x8xf32>, tensor<f32>) -> tensor<2x4x8x8xf32>
  %p = mpc.softmax %s : (tensor<2x4x8x8xf32>) -> tensor<2x4x8x8xf32>
  %y = mpc.matmul %p, %v : (tensor<2x4x8x8xf32>, tensor<2x1x8x8xf32>) -> tensor<2x4x8x8xf32>
  return %y : tensor<2x4x8x8xf32>
}

// K shared across the batch rather than the heads: no grouped-query
// reading says that; left as written.
// CHECK-LABEL: func.func @batch_broadcast_kept
// CHECK: mpc.softmax
// CHECK-NOT: mpc.attention
func.func @batch_broadcast_kept(%q: tensor<2x4x8x8xf32>, %kt: tensor<1x4x8x8xf32>, %v: tensor<1x4x8x8xf32>) -> tensor<2x4x8x8xf32> {
  %qk = mpc.matmul %q, %kt : (tensor<2x4x8x8xf32>, tensor<1x4x8x8xf32>) -> tensor<2x4x8x8xf32>
  %p = mpc.softmax %qk : (tensor<2x4x8x8xf32>) -> tensor<2x4x8x8xf32>
  %y = mpc.matmul %p, %v : (tensor<2x4x8x8xf32>, tensor<1x4x8x8xf32>) -> tensor<2x4x8x8xf32>
  return %y : tensor<2x4x8x8xf32>
}

// OPT: the masked scores clamped to the finite minimum, max(s + mask,
// min), over merged heads. The clamp changes only scores exp() maps to 0:
// dropped, the mask the bias.
// CHECK-LABEL: func.func @opt
// CHECK-NOT: mpc.max
// CHECK: mpc.attention {{.*}}, %arg3 {scale = 1.000000e+00 : f32} : (tensor<2x4x8x8xf32>, tensor<2x4x8x8xf32>, tensor<2x4x8x8xf32>, tensor<2x1x8x8xf32>)
// CHECK-NOT: mpc.softmax
func.func @opt(%q: tensor<8x8x8xf32>, %kt: tensor<8x8x8xf32>, %v: tensor<8x8x8xf32>, %mask: tensor<2x1x8x8xf32>) -> tensor<8x8x8xf32> {
  %heads = mpc.constant dense<[2, 4, 8, 8]> : tensor<4xi64>
  %merged = mpc.constant dense<[8, 8, 8]> : tensor<3xi64>
  %min = mpc.constant dense<-3.40282347E+38> : tensor<f32>
  %qk = mpc.matmul %q, %kt : (tensor<8x8x8xf32>, tensor<8x8x8xf32>) -> tensor<8x8x8xf32>
  %s = mpc.reshape %qk, %heads : (tensor<8x8x8xf32>, tensor<4xi64>) -> tensor<2x4x8x8xf32>
  %b = mpc.add %s, %mask : (tensor<2x4x8x8xf32>, tensor<2x1x8x8xf32>) -> tensor<2x4x8x8xf32>
  %c = mpc.max %b, %min : (tensor<2x4x8x8xf32>, tensor<f32>) -> tensor<2x4x8x8xf32>
  %s3 = mpc.reshape %c, %merged : (tensor<2x4x8x8xf32>, tensor<3xi64>) -> tensor<8x8x8xf32>
  %p = mpc.softmax %s3 : (tensor<8x8x8xf32>) -> tensor<8x8x8xf32>
  %y = mpc.matmul %p, %v : (tensor<8x8x8xf32>, tensor<8x8x8xf32>) -> tensor<8x8x8xf32>
  return %y : tensor<8x8x8xf32>
}

// A clamp at a value exp() does not map to 0 changes the probabilities:
// kept.
// CHECK-LABEL: func.func @clamp_kept
// CHECK: mpc.max
// CHECK: mpc.softmax
// CHECK-NOT: mpc.attention
func.func @clamp_kept(%q: tensor<2x4x8x8xf32>, %kt: tensor<2x4x8x8xf32>, %v: tensor<2x4x8x8xf32>) -> tensor<2x4x8x8xf32> {
  %floor = mpc.constant dense<-1.000000e+00> : tensor<f32>
  %qk = mpc.matmul %q, %kt : (tensor<2x4x8x8xf32>, tensor<2x4x8x8xf32>) -> tensor<2x4x8x8xf32>
  %c = mpc.max %qk, %floor : (tensor<2x4x8x8xf32>, tensor<f32>) -> tensor<2x4x8x8xf32>
  %p = mpc.softmax %c : (tensor<2x4x8x8xf32>) -> tensor<2x4x8x8xf32>
  %y = mpc.matmul %p, %v : (tensor<2x4x8x8xf32>, tensor<2x4x8x8xf32>) -> tensor<2x4x8x8xf32>
  return %y : tensor<2x4x8x8xf32>
}

// GPT-BigCode's multi-query attention: Q [b, s, h * d] viewed [b, s * h,
// d] (the heads among the rows) against one K^T [b, d, s], the scores
// viewed [b, s, h, s] for where(causal and padding) and the softmax, P V
// merged again. Q becomes [b, h, s, d] (view, transpose), K and V one
// head; the causal constant of the condition becomes the band and the
// padding a [b, 1, 1, s] bias; the output goes back to the rows.
// CHECK-LABEL: func.func @bigcode
// CHECK-DAG: %[[Q4:.*]] = mpc.reshape %{{.*}}, %{{.*}} -> tensor<2x8x4x8xf32>
// CHECK-DAG: %[[Q:.*]] = mpc.transpose %[[Q4]] {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x8x4x8xf32>) -> tensor<2x4x8x8xf32>
// CHECK-DAG: %[[K:.*]] = mpc.reshape %arg1, %{{.*}} -> tensor<2x1x8x8xf32>
// CHECK-DAG: %[[V:.*]] = mpc.reshape %arg2, %{{.*}} -> tensor<2x1x8x8xf32>
// CHECK-DAG: %[[PAD:.*]] = mpc.unsqueeze %arg3 {axes = array<i64: 2>} : (tensor<2x1x8xi1>) -> tensor<2x1x1x8xi1>
// CHECK-DAG: %[[BIAS:.*]] = mpc.where %[[PAD]], %{{.*}}, %{{.*}} : (tensor<2x1x1x8xi1>, tensor<f32>, tensor<f32>) -> tensor<2x1x1x8xf32>
// CHECK: %[[Y:.*]], %{{.*}} = mpc.attention %[[Q]], %[[K]], %[[V]], %[[BIAS]] {causal = true, scale = 0.353553385 : f32}
// CHECK: %[[YT:.*]] = mpc.transpose %[[Y]] {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x4x8x8xf32>) -> tensor<2x8x4x8xf32>
// CHECK: mpc.reshape %[[YT]], %{{.*}} -> tensor<2x32x8xf32>
// CHECK-NOT: mpc.softmax
// LOC-LABEL: func.func @bigcode
// LOC: mpc.attention {{.*}} loc("/attn/MatMul_1")
func.func @bigcode(%q: tensor<2x8x32xf32>, %k: tensor<2x8x8xf32>, %v: tensor<2x8x8xf32>, %pad: tensor<2x1x8xi1>) -> tensor<2x32x8xf32> {
  %rows = mpc.constant dense<[2, 32, 8]> : tensor<3xi64>
  %view = mpc.constant dense<[2, 8, 4, 8]> : tensor<4xi64>
  %c3 = mpc.constant dense<[1, 8, 8]> : tensor<3xi64>
  %scale = mpc.constant dense<0.353553385> : tensor<f32>
  %min = mpc.constant dense<-3.40282347E+38> : tensor<f32>
  %ones = mpc.constant dense<true> : tensor<8x8xi1>
  %lower = mpc.trilu %ones {upper = false} : (tensor<8x8xi1>) -> tensor<8x8xi1>
  %causal = mpc.reshape %lower, %c3 : (tensor<8x8xi1>, tensor<3xi64>) -> tensor<1x8x8xi1>
  %q3 = mpc.reshape %q, %rows : (tensor<2x8x32xf32>, tensor<3xi64>) -> tensor<2x32x8xf32>
  %kt = mpc.transpose %k {perm = array<i64: 0, 2, 1>} : (tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %qk = mpc.matmul %q3, %kt : (tensor<2x32x8xf32>, tensor<2x8x8xf32>) -> tensor<2x32x8xf32>
  %scaled = mpc.mul %qk, %scale : (tensor<2x32x8xf32>, tensor<f32>) -> tensor<2x32x8xf32>
  %s = mpc.reshape %scaled, %view : (tensor<2x32x8xf32>, tensor<4xi64>) -> tensor<2x8x4x8xf32>
  %both = mpc.and %pad, %causal : (tensor<2x1x8xi1>, tensor<1x8x8xi1>) -> tensor<2x8x8xi1>
  %seen = mpc.unsqueeze %both {axes = array<i64: 2>} : (tensor<2x8x8xi1>) -> tensor<2x8x1x8xi1>
  %m = mpc.where %seen, %s, %min : (tensor<2x8x1x8xi1>, tensor<2x8x4x8xf32>, tensor<f32>) -> tensor<2x8x4x8xf32>
  %p = mpc.softmax %m : (tensor<2x8x4x8xf32>) -> tensor<2x8x4x8xf32>
  %p3 = mpc.reshape %p, %rows : (tensor<2x8x4x8xf32>, tensor<3xi64>) -> tensor<2x32x8xf32>
  %y = mpc.matmul %p3, %v : (tensor<2x32x8xf32>, tensor<2x8x8xf32>) -> tensor<2x32x8xf32> loc("/attn/MatMul_1")
  return %y : tensor<2x32x8xf32>
}

// The rows view on the scores but P V reading them as written (no view
// back): not the multi-query form; kept.
// CHECK-LABEL: func.func @rows_unmerged_kept
// CHECK: mpc.softmax
// CHECK-NOT: mpc.attention
func.func @rows_unmerged_kept(%q3: tensor<2x32x8xf32>, %kt: tensor<2x8x8xf32>, %v: tensor<2x8x8x8xf32>) -> tensor<2x8x4x8xf32> {
  %view = mpc.constant dense<[2, 8, 4, 8]> : tensor<4xi64>
  %qk = mpc.matmul %q3, %kt : (tensor<2x32x8xf32>, tensor<2x8x8xf32>) -> tensor<2x32x8xf32>
  %s = mpc.reshape %qk, %view : (tensor<2x32x8xf32>, tensor<4xi64>) -> tensor<2x8x4x8xf32>
  %p = mpc.softmax %s : (tensor<2x8x4x8xf32>) -> tensor<2x8x4x8xf32>
  %y = mpc.matmul %p, %v : (tensor<2x8x4x8xf32>, tensor<2x8x8x8xf32>) -> tensor<2x8x4x8xf32>
  return %y : tensor<2x8x4x8xf32>
}

// OPT's padding as 4.36's _expand_mask writes it: the mask broadcast
// along the queries ([b, 1, 1, s] to [b, 1, s, s]) before 1 - mask and its
// where(): computed on one row instead, the bias [b, 1, 1, s].
// CHECK-LABEL: func.func @expanded_padding
// CHECK: %[[SUB:.*]] = mpc.sub %{{.*}}, %{{.*}} : (tensor<f32>, tensor<2x1x1x8xf32>) -> tensor<2x1x1x8xf32>
// CHECK: mpc.attention %arg0, %arg1, %arg2, %{{.*}} {scale = 1.000000e+00 : f32} : (tensor<2x4x8x8xf32>, tensor<2x4x8x8xf32>, tensor<2x4x8x8xf32>, tensor<2x1x1x8xf32>)
func.func @expanded_padding(%q: tensor<2x4x8x8xf32>, %k: tensor<2x4x8x8xf32>, %v: tensor<2x4x8x8xf32>, %am: tensor<2x1x1x8xi64>) -> tensor<2x4x8x8xf32> {
  %shape = mpc.constant dense<[2, 1, 8, 8]> : tensor<4xi64>
  %one = mpc.constant dense<1.000000e+00> : tensor<f32>
  %min = mpc.constant dense<-3.40282347E+38> : tensor<f32>
  %e = mpc.expand %am, %shape : (tensor<2x1x1x8xi64>, tensor<4xi64>) -> tensor<2x1x8x8xi64>
  %f = mpc.cast %e : (tensor<2x1x8x8xi64>) -> tensor<2x1x8x8xf32>
  %inv = mpc.sub %one, %f : (tensor<f32>, tensor<2x1x8x8xf32>) -> tensor<2x1x8x8xf32>
  %masked = mpc.cast %inv : (tensor<2x1x8x8xf32>) -> tensor<2x1x8x8xi1>
  %bias = mpc.where %masked, %min, %inv : (tensor<2x1x8x8xi1>, tensor<f32>, tensor<2x1x8x8xf32>) -> tensor<2x1x8x8xf32>
  %kt = mpc.transpose %k {perm = array<i64: 0, 1, 3, 2>} : (tensor<2x4x8x8xf32>) -> tensor<2x4x8x8xf32>
  %qk = mpc.matmul %q, %kt : (tensor<2x4x8x8xf32>, tensor<2x4x8x8xf32>) -> tensor<2x4x8x8xf32>
  %s = mpc.add %qk, %bias : (tensor<2x4x8x8xf32>, tensor<2x1x8x8xf32>) -> tensor<2x4x8x8xf32>
  %p = mpc.softmax %s : (tensor<2x4x8x8xf32>) -> tensor<2x4x8x8xf32>
  %y = mpc.matmul %p, %v : (tensor<2x4x8x8xf32>, tensor<2x4x8x8xf32>) -> tensor<2x4x8x8xf32>
  return %y : tensor<2x4x8x8xf32>
}

// A negative scale outside the clamp turns it into a cap on large scores:
// kept.
// CHECK-LABEL: func.func @clamp_negated_kept
// CHECK: mpc.max
// CHECK: mpc.softmax
// CHECK-NOT: mpc.attention
func.func @clamp_negated_kept(%q: tensor<2x4x8x8xf32>, %kt: tensor<2x4x8x8xf32>, %v: tensor<2x4x8x8xf32>) -> tensor<2x4x8x8xf32> {
  %min = mpc.constant dense<-3.40282347E+38> : tensor<f32>
  %neg = mpc.constant dense<-1.000000e+00> : tensor<f32>
  %qk = mpc.matmul %q, %kt : (tensor<2x4x8x8xf32>, tensor<2x4x8x8xf32>) -> tensor<2x4x8x8xf32>
  %c = mpc.max %qk, %min : (tensor<2x4x8x8xf32>, tensor<f32>) -> tensor<2x4x8x8xf32>
  %n = mpc.mul %c, %neg : (tensor<2x4x8x8xf32>, tensor<f32>) -> tensor<2x4x8x8xf32>
  %p = mpc.softmax %n : (tensor<2x4x8x8xf32>) -> tensor<2x4x8x8xf32>
  %y = mpc.matmul %p, %v : (tensor<2x4x8x8xf32>, tensor<2x4x8x8xf32>) -> tensor<2x4x8x8xf32>
  return %y : tensor<2x4x8x8xf32>
}
