// RUN: mpc-opt %s -mpc-fuse-attention | FileCheck %s
// RUN: mpc-opt %s -mpc-fuse-attention --mlir-print-debuginfo --mlir-print-local-scope | FileCheck %s --check-prefix=LOC

// mpc-fuse-attention on torch 2's decomposed scaled_dot_product_attention
// (torch.onnx.export's torch.export-based exporter): sqrt(scale) on Q and
// on K^T, K^T as a view of merged heads transposed and viewed back, the
// "safe softmax" where(isnan(P), 0, P), and Hugging Face 5's boolean mask
// and(causal, padding) as an additive where(mask, 0, min).

// The whole form: one mpc.attention, causal, the padding a [b, 1, 1, S]
// bias, rows with no key zeroed (the NaN guard's rule); K read where it
// lies, the views and transpose gone.
// CHECK-LABEL: func.func @sdpa
// CHECK-NOT: mpc.transpose
// CHECK: %[[Y:.*]], %{{.*}} = mpc.attention %arg0, %arg1, %arg2, %{{.*}} {causal = true, scale = 0.353553{{[0-9]*}} : f32, zero_masked_rows = true} : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x1x1x4xf32>)
// CHECK-NOT: mpc.softmax
// CHECK-NOT: mpc.is_nan
// CHECK: return %[[Y]]
// LOC-LABEL: func.func @sdpa
// LOC: mpc.attention {{.*}} loc("pv")
func.func @sdpa(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>, %pad: tensor<1x1x1x4xi1>) -> tensor<1x2x4x8xf32> {
  %merged = mpc.constant dense<[-1, 4, 8]> : tensor<3xi64>
  %heads = mpc.constant dense<[1, 2, 8, 4]> : tensor<4xi64>
  %r = mpc.constant dense<0.594603539> : tensor<f32>
  %zero = mpc.constant dense<0.000000e+00> : tensor<f32>
  %min = mpc.constant dense<-3.40282347E+38> : tensor<f32>
  %causal = mpc.constant dense<[[[[true, false, false, false], [true, true, false, false], [true, true, true, false], [true, true, true, true]]]]> : tensor<1x1x4x4xi1>
  %k3 = mpc.reshape %k, %merged : (tensor<1x2x4x8xf32>, tensor<3xi64>) -> tensor<2x4x8xf32>
  %kt3 = mpc.transpose %k3 {perm = array<i64: 0, 2, 1>} : (tensor<2x4x8xf32>) -> tensor<2x8x4xf32>
  %kt = mpc.reshape %kt3, %heads : (tensor<2x8x4xf32>, tensor<4xi64>) -> tensor<1x2x8x4xf32>
  %qs = mpc.mul %q, %r : (tensor<1x2x4x8xf32>, tensor<f32>) -> tensor<1x2x4x8xf32>
  %kts = mpc.mul %kt, %r : (tensor<1x2x8x4xf32>, tensor<f32>) -> tensor<1x2x8x4xf32>
  %both = mpc.and %causal, %pad : (tensor<1x1x4x4xi1>, tensor<1x1x1x4xi1>) -> tensor<1x1x4x4xi1>
  %mask = mpc.where %both, %zero, %min : (tensor<1x1x4x4xi1>, tensor<f32>, tensor<f32>) -> tensor<1x1x4x4xf32>
  %qk = mpc.matmul %qs, %kts : (tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x4x4xf32>
  %s = mpc.add %qk, %mask : (tensor<1x2x4x4xf32>, tensor<1x1x4x4xf32>) -> tensor<1x2x4x4xf32>
  %p = mpc.softmax %s : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %nan = mpc.is_nan %p : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xi1>
  %safe = mpc.where %nan, %zero, %p : (tensor<1x2x4x4xi1>, tensor<f32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %y = mpc.matmul %safe, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> loc("pv")
  return %y : tensor<1x2x4x8xf32>
}

// ModernBERT's local layers: |i - j| <= w over positions, both sides.
// CHECK-LABEL: func.func @local_window
// CHECK: mpc.attention %arg0, %{{.*}}, %arg2 {scale = 1.000000e+00 : f32, window_left = 1 : i64, window_right = 1 : i64, zero_masked_rows = true}
func.func @local_window(%q: tensor<1x2x4x8xf32>, %kt: tensor<1x2x8x4xf32>, %v: tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> {
  %d = mpc.constant dense<[[[[0, -1, -2, -3], [1, 0, -1, -2], [2, 1, 0, -1], [3, 2, 1, 0]]]]> : tensor<1x1x4x4xi64>
  %w = mpc.constant dense<1> : tensor<i64>
  %zero = mpc.constant dense<0.000000e+00> : tensor<f32>
  %min = mpc.constant dense<-3.40282347E+38> : tensor<f32>
  %dist = mpc.abs %d : (tensor<1x1x4x4xi64>) -> tensor<1x1x4x4xi64>
  %near = mpc.less_or_equal %dist, %w : (tensor<1x1x4x4xi64>, tensor<i64>) -> tensor<1x1x4x4xi1>
  %mask = mpc.where %near, %zero, %min : (tensor<1x1x4x4xi1>, tensor<f32>, tensor<f32>) -> tensor<1x1x4x4xf32>
  %qk = mpc.matmul %q, %kt : (tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x4x4xf32>
  %s = mpc.add %qk, %mask : (tensor<1x2x4x4xf32>, tensor<1x1x4x4xf32>) -> tensor<1x2x4x4xf32>
  %p = mpc.softmax %s : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %nan = mpc.is_nan %p : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xi1>
  %safe = mpc.where %nan, %zero, %p : (tensor<1x2x4x4xi1>, tensor<f32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %y = mpc.matmul %safe, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  return %y : tensor<1x2x4x8xf32>
}

// A NaN guard that writes something else than 0 (here 1) is not the
// softmax's zero rows: left as written.
// CHECK-LABEL: func.func @guard_fill_kept
// CHECK: mpc.softmax
// CHECK: mpc.is_nan
// CHECK-NOT: mpc.attention
func.func @guard_fill_kept(%q: tensor<1x2x4x8xf32>, %kt: tensor<1x2x8x4xf32>, %v: tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> {
  %one = mpc.constant dense<1.000000e+00> : tensor<f32>
  %qk = mpc.matmul %q, %kt : (tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x4x4xf32>
  %p = mpc.softmax %qk : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %nan = mpc.is_nan %p : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xi1>
  %safe = mpc.where %nan, %one, %p : (tensor<1x2x4x4xi1>, tensor<f32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %y = mpc.matmul %safe, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  return %y : tensor<1x2x4x8xf32>
}

// The probabilities read by a third op besides the guard: kept.
// CHECK-LABEL: func.func @probs_read_again_kept
// CHECK: mpc.softmax
// CHECK-NOT: mpc.attention
func.func @probs_read_again_kept(%q: tensor<1x2x4x8xf32>, %kt: tensor<1x2x8x4xf32>, %v: tensor<1x2x4x8xf32>) -> (tensor<1x2x4x8xf32>, tensor<1x2x4x4xf32>) {
  %zero = mpc.constant dense<0.000000e+00> : tensor<f32>
  %qk = mpc.matmul %q, %kt : (tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x4x4xf32>
  %p = mpc.softmax %qk : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %nan = mpc.is_nan %p : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xi1>
  %safe = mpc.where %nan, %zero, %p : (tensor<1x2x4x4xi1>, tensor<f32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %y = mpc.matmul %safe, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  return %y, %p : tensor<1x2x4x8xf32>, tensor<1x2x4x4xf32>
}

// K^T transposed from merged heads and viewed, with no view before the
// transpose to undo: read as the K^T it is, transposed once.
// CHECK-LABEL: func.func @viewed_transpose_other_perm
// CHECK: %[[KT:.*]] = mpc.reshape
// CHECK: %[[K:.*]] = mpc.transpose %[[KT]] {perm = array<i64: 0, 1, 3, 2>}
// CHECK: mpc.attention %arg0, %[[K]], %arg2
func.func @viewed_transpose_other_perm(%q: tensor<1x2x4x8xf32>, %k: tensor<2x4x8xf32>, %v: tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> {
  %heads = mpc.constant dense<[1, 2, 8, 4]> : tensor<4xi64>
  %kt3 = mpc.transpose %k {perm = array<i64: 0, 2, 1>} : (tensor<2x4x8xf32>) -> tensor<2x8x4xf32>
  %kt = mpc.reshape %kt3, %heads : (tensor<2x8x4xf32>, tensor<4xi64>) -> tensor<1x2x8x4xf32>
  %qk = mpc.matmul %q, %kt : (tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x4x4xf32>
  %p = mpc.softmax %qk : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %y = mpc.matmul %p, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  return %y : tensor<1x2x4x8xf32>
}

// DeBERTa's padding masks queries as well as keys (mask[:, None, :, None]
// * mask[:, None, None, :], masked_fill with the finite minimum): a padded
// query's row is all the fill, which the fused op's log-sum-exp cannot hold
// beside log(keys) (its backward would read every probability as 1, not
// 1 / keys): left as written. Padding of the keys alone fuses.
// CHECK-LABEL: func.func @query_padding_kept
// CHECK: mpc.softmax
// CHECK-NOT: mpc.attention
func.func @query_padding_kept(%q: tensor<1x2x4x8xf32>, %kt: tensor<1x2x8x4xf32>, %v: tensor<1x2x4x8xf32>, %pad: tensor<1x4xi64>) -> tensor<1x2x4x8xf32> {
  %rows = mpc.constant dense<[1, 1, 4, 1]> : tensor<4xi64>
  %cols = mpc.constant dense<[1, 1, 1, 4]> : tensor<4xi64>
  %min = mpc.constant dense<-3.40282347E+38> : tensor<f32>
  %r = mpc.reshape %pad, %rows : (tensor<1x4xi64>, tensor<4xi64>) -> tensor<1x1x4x1xi64>
  %c = mpc.reshape %pad, %cols : (tensor<1x4xi64>, tensor<4xi64>) -> tensor<1x1x1x4xi64>
  %both = mpc.mul %r, %c : (tensor<1x1x4x1xi64>, tensor<1x1x1x4xi64>) -> tensor<1x1x4x4xi64>
  %m = mpc.cast %both : (tensor<1x1x4x4xi64>) -> tensor<1x1x4x4xi1>
  %masked = mpc.not %m : (tensor<1x1x4x4xi1>) -> tensor<1x1x4x4xi1>
  %qk = mpc.matmul %q, %kt : (tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x4x4xf32>
  %s = mpc.where %masked, %min, %qk : (tensor<1x1x4x4xi1>, tensor<f32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %p = mpc.softmax %s : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %y = mpc.matmul %p, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  return %y : tensor<1x2x4x8xf32>
}

// CHECK-LABEL: func.func @key_padding
// CHECK: mpc.attention
func.func @key_padding(%q: tensor<1x2x4x8xf32>, %kt: tensor<1x2x8x4xf32>, %v: tensor<1x2x4x8xf32>, %pad: tensor<1x4xi64>) -> tensor<1x2x4x8xf32> {
  %cols = mpc.constant dense<[1, 1, 1, 4]> : tensor<4xi64>
  %min = mpc.constant dense<-3.40282347E+38> : tensor<f32>
  %c = mpc.reshape %pad, %cols : (tensor<1x4xi64>, tensor<4xi64>) -> tensor<1x1x1x4xi64>
  %m = mpc.cast %c : (tensor<1x1x1x4xi64>) -> tensor<1x1x1x4xi1>
  %masked = mpc.not %m : (tensor<1x1x1x4xi1>) -> tensor<1x1x1x4xi1>
  %qk = mpc.matmul %q, %kt : (tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x4x4xf32>
  %s = mpc.where %masked, %min, %qk : (tensor<1x1x1x4xi1>, tensor<f32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %p = mpc.softmax %s : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %y = mpc.matmul %p, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  return %y : tensor<1x2x4x8xf32>
}
