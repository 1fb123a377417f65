// RUN: mpc-opt %s -mpc-fuse-attention -split-input-file | FileCheck %s

// mpc-fuse-attention on a padding mask laid over a constant causal one,
// as Hugging Face 4.38+ builds it: padding = (causal + attention_mask) ==
// 0, mask = causal.masked_fill(padding, min). The causal mask is the
// band; inside it the causal term is 0, so what stays is where((0 +
// attention_mask) == 0, min, 0), [b, 1, 1, S]: no (S, S) bias.

// CHECK-LABEL: func.func @padding_over_causal
// CHECK: %[[SUM:.*]] = mpc.add %{{.*}}, %arg3 : (tensor<f32>, tensor<2x1x1x4xf32>) -> tensor<2x1x1x4xf32>
// CHECK: %[[PAD:.*]] = mpc.equal %[[SUM]], %{{.*}} -> tensor<2x1x1x4xi1>
// CHECK: %[[BIAS:.*]] = mpc.where %[[PAD]], %{{.*}}, %{{.*}} : (tensor<2x1x1x4xi1>, tensor<f32>, tensor<f32>) -> tensor<2x1x1x4xf32>
// CHECK: mpc.attention %arg0, %arg1, %arg2, %[[BIAS]] {causal = true, scale = 1.000000e+00 : f32}
// CHECK-NOT: mpc.softmax
func.func @padding_over_causal(%q: tensor<2x2x4x8xf32>, %k: tensor<2x2x4x8xf32>, %v: tensor<2x2x4x8xf32>, %am: tensor<2x1x1x4xf32>) -> tensor<2x2x4x8xf32> {
  %c = mpc.constant dense<[[0.000000e+00, -3.40282347E+38, -3.40282347E+38, -3.40282347E+38], [0.000000e+00, 0.000000e+00, -3.40282347E+38, -3.40282347E+38], [0.000000e+00, 0.000000e+00, 0.000000e+00, -3.40282347E+38], [0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00]]> : tensor<4x4xf32>
  %shape = mpc.constant dense<[2, 1, 4, 4]> : tensor<4xi64>
  %ce = mpc.expand %c, %shape : (tensor<4x4xf32>, tensor<4xi64>) -> tensor<2x1x4x4xf32>
  %sum = mpc.add %ce, %am : (tensor<2x1x4x4xf32>, tensor<2x1x1x4xf32>) -> tensor<2x1x4x4xf32>
  %zero = mpc.constant dense<0.000000e+00> : tensor<f32>
  %pad = mpc.equal %sum, %zero : (tensor<2x1x4x4xf32>, tensor<f32>) -> tensor<2x1x4x4xi1>
  %fill = mpc.constant dense<-3.40282347E+38> : tensor<f32>
  %mask = mpc.where %pad, %fill, %ce : (tensor<2x1x4x4xi1>, tensor<f32>, tensor<2x1x4x4xf32>) -> tensor<2x1x4x4xf32>
  %kt = mpc.transpose %k {perm = array<i64: 0, 1, 3, 2>} : (tensor<2x2x4x8xf32>) -> tensor<2x2x8x4xf32>
  %s = mpc.matmul %q, %kt : (tensor<2x2x4x8xf32>, tensor<2x2x8x4xf32>) -> tensor<2x2x4x4xf32>
  %b = mpc.add %s, %mask : (tensor<2x2x4x4xf32>, tensor<2x1x4x4xf32>) -> tensor<2x2x4x4xf32>
  %p = mpc.softmax %b : (tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xf32>
  %y = mpc.matmul %p, %v : (tensor<2x2x4x4xf32>, tensor<2x2x4x8xf32>) -> tensor<2x2x4x8xf32>
  return %y : tensor<2x2x4x8xf32>
}

// -----

// Left as a bias: a fill exp() does not take to 0 (the masked keys count)...
// CHECK-LABEL: func.func @small_fill
// CHECK: mpc.attention %arg0, %arg1, %arg2, %{{.*}} {scale = 1.000000e+00 : f32}
func.func @small_fill(%q: tensor<2x2x4x8xf32>, %k: tensor<2x2x4x8xf32>, %v: tensor<2x2x4x8xf32>, %am: tensor<2x1x1x4xf32>) -> tensor<2x2x4x8xf32> {
  %c = mpc.constant dense<[[0.000000e+00, -3.40282347E+38, -3.40282347E+38, -3.40282347E+38], [0.000000e+00, 0.000000e+00, -3.40282347E+38, -3.40282347E+38], [0.000000e+00, 0.000000e+00, 0.000000e+00, -3.40282347E+38], [0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00]]> : tensor<4x4xf32>
  %shape = mpc.constant dense<[2, 1, 4, 4]> : tensor<4xi64>
  %ce = mpc.expand %c, %shape : (tensor<4x4xf32>, tensor<4xi64>) -> tensor<2x1x4x4xf32>
  %sum = mpc.add %ce, %am : (tensor<2x1x4x4xf32>, tensor<2x1x1x4xf32>) -> tensor<2x1x4x4xf32>
  %zero = mpc.constant dense<0.000000e+00> : tensor<f32>
  %pad = mpc.equal %sum, %zero : (tensor<2x1x4x4xf32>, tensor<f32>) -> tensor<2x1x4x4xi1>
  %fill = mpc.constant dense<-1.000000e+02> : tensor<f32>
  %mask = mpc.where %pad, %fill, %ce : (tensor<2x1x4x4xi1>, tensor<f32>, tensor<2x1x4x4xf32>) -> tensor<2x1x4x4xf32>
  %kt = mpc.transpose %k {perm = array<i64: 0, 1, 3, 2>} : (tensor<2x2x4x8xf32>) -> tensor<2x2x8x4xf32>
  %s = mpc.matmul %q, %kt : (tensor<2x2x4x8xf32>, tensor<2x2x8x4xf32>) -> tensor<2x2x4x4xf32>
  %b = mpc.add %s, %mask : (tensor<2x2x4x4xf32>, tensor<2x1x4x4xf32>) -> tensor<2x2x4x4xf32>
  %p = mpc.softmax %b : (tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xf32>
  %y = mpc.matmul %p, %v : (tensor<2x2x4x4xf32>, tensor<2x2x4x8xf32>) -> tensor<2x2x4x8xf32>
  return %y : tensor<2x2x4x8xf32>
}

// -----

// ...and a constant mask that is no band (a key hidden mid-row).
// CHECK-LABEL: func.func @not_a_band
// CHECK: mpc.attention %arg0, %arg1, %arg2, %{{.*}} {scale = 1.000000e+00 : f32}
func.func @not_a_band(%q: tensor<2x2x4x8xf32>, %k: tensor<2x2x4x8xf32>, %v: tensor<2x2x4x8xf32>, %am: tensor<2x1x1x4xf32>) -> tensor<2x2x4x8xf32> {
  %c = mpc.constant dense<[[0.000000e+00, -3.40282347E+38, 0.000000e+00, -3.40282347E+38], [0.000000e+00, 0.000000e+00, -3.40282347E+38, -3.40282347E+38], [0.000000e+00, 0.000000e+00, 0.000000e+00, -3.40282347E+38], [0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00]]> : tensor<4x4xf32>
  %shape = mpc.constant dense<[2, 1, 4, 4]> : tensor<4xi64>
  %ce = mpc.expand %c, %shape : (tensor<4x4xf32>, tensor<4xi64>) -> tensor<2x1x4x4xf32>
  %sum = mpc.add %ce, %am : (tensor<2x1x4x4xf32>, tensor<2x1x1x4xf32>) -> tensor<2x1x4x4xf32>
  %zero = mpc.constant dense<0.000000e+00> : tensor<f32>
  %pad = mpc.equal %sum, %zero : (tensor<2x1x4x4xf32>, tensor<f32>) -> tensor<2x1x4x4xi1>
  %fill = mpc.constant dense<-3.40282347E+38> : tensor<f32>
  %mask = mpc.where %pad, %fill, %ce : (tensor<2x1x4x4xi1>, tensor<f32>, tensor<2x1x4x4xf32>) -> tensor<2x1x4x4xf32>
  %kt = mpc.transpose %k {perm = array<i64: 0, 1, 3, 2>} : (tensor<2x2x4x8xf32>) -> tensor<2x2x8x4xf32>
  %s = mpc.matmul %q, %kt : (tensor<2x2x4x8xf32>, tensor<2x2x8x4xf32>) -> tensor<2x2x4x4xf32>
  %b = mpc.add %s, %mask : (tensor<2x2x4x4xf32>, tensor<2x1x4x4xf32>) -> tensor<2x2x4x4xf32>
  %p = mpc.softmax %b : (tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xf32>
  %y = mpc.matmul %p, %v : (tensor<2x2x4x4xf32>, tensor<2x2x4x8xf32>) -> tensor<2x2x4x8xf32>
  return %y : tensor<2x2x4x8xf32>
}

// -----

// T5's decoder mask: (1 - causal * mask) * min, its causal part an arange
// tiled over the batch compared with a column of query positions, its
// mask all ones (no decoder attention mask), added to the trainable
// relative position bias. Tiles are read a row at a time: the mask is the
// band, the relative bias stays the bias.
// CHECK-LABEL: func.func @t5_decoder
// CHECK: mpc.attention %arg0, %arg1, %arg2, %arg3 {causal = true, scale = 1.000000e+00 : f32}
// CHECK-NOT: mpc.softmax
func.func @t5_decoder(%q: tensor<2x2x4x8xf32>, %k: tensor<2x2x4x8xf32>, %v: tensor<2x2x4x8xf32>, %rel: tensor<1x2x4x4xf32>) -> tensor<2x2x4x8xf32> {
  %keys = mpc.constant dense<[[[0, 1, 2, 3]]]> : tensor<1x1x4xi64>
  %reps = mpc.constant dense<[2, 4, 1]> : tensor<3xi64>
  %rows = mpc.constant dense<[[[0], [1], [2], [3]]]> : tensor<1x4x1xi64>
  %ones = mpc.constant dense<1.000000e+00> : tensor<2x1x1x4xf32>
  %one = mpc.constant dense<1.000000e+00> : tensor<f32>
  %min = mpc.constant dense<-3.40282347E+38> : tensor<f32>
  %tiled = mpc.tile %keys, %reps : (tensor<1x1x4xi64>, tensor<3xi64>) -> tensor<2x4x4xi64>
  %seen = mpc.less_or_equal %tiled, %rows : (tensor<2x4x4xi64>, tensor<1x4x1xi64>) -> tensor<2x4x4xi1>
  %f = mpc.cast %seen : (tensor<2x4x4xi1>) -> tensor<2x4x4xf32>
  %u = mpc.unsqueeze %f {axes = array<i64: 1>} : (tensor<2x4x4xf32>) -> tensor<2x1x4x4xf32>
  %both = mpc.mul %u, %ones : (tensor<2x1x4x4xf32>, tensor<2x1x1x4xf32>) -> tensor<2x1x4x4xf32>
  %inv = mpc.sub %one, %both : (tensor<f32>, tensor<2x1x4x4xf32>) -> tensor<2x1x4x4xf32>
  %mask = mpc.mul %inv, %min : (tensor<2x1x4x4xf32>, tensor<f32>) -> tensor<2x1x4x4xf32>
  %bias = mpc.add %rel, %mask : (tensor<1x2x4x4xf32>, tensor<2x1x4x4xf32>) -> tensor<2x2x4x4xf32>
  %kt = mpc.transpose %k {perm = array<i64: 0, 1, 3, 2>} : (tensor<2x2x4x8xf32>) -> tensor<2x2x8x4xf32>
  %qk = mpc.matmul %q, %kt : (tensor<2x2x4x8xf32>, tensor<2x2x8x4xf32>) -> tensor<2x2x4x4xf32>
  %s = mpc.add %qk, %bias : (tensor<2x2x4x4xf32>, tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xf32>
  %p = mpc.softmax %s : (tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xf32>
  %y = mpc.matmul %p, %v : (tensor<2x2x4x4xf32>, tensor<2x2x4x8xf32>) -> tensor<2x2x4x8xf32>
  return %y : tensor<2x2x4x8xf32>
}
