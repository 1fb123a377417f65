// RUN: mpc-opt %s -mpc-fuse-attention | FileCheck %s
// RUN: mpc-opt %s -mpc-fuse-attention --mlir-print-debuginfo --mlir-print-local-scope | FileCheck %s --check-prefix=LOC

// GPT-2 as torch exports it: K^T by one transpose of [b, s, h, d], the
// scores divided by pow(cast(head size), 0.5), a causal where() from a
// constant Trilu: causal, no bias, K taken as [b, h, s, d].
// CHECK-LABEL: func.func @gpt2
// CHECK: %[[K:.*]] = mpc.transpose %arg1 {perm = array<i64: 0, 2, 1, 3>}
// CHECK: %[[Y:.*]], %{{.*}} = mpc.attention %arg0, %[[K]], %arg2 {causal = true, scale = 2.500000e-01 : f32}
// CHECK-NOT: mpc.softmax
// CHECK: return %[[Y]]
// LOC-LABEL: func.func @gpt2
// LOC: mpc.attention {{.*}} loc("/attn/MatMul_1")
func.func @gpt2(%q: tensor<2x4x8x16xf32>, %kin: tensor<2x8x4x16xf32>, %v: tensor<2x4x8x16xf32>) -> tensor<2x4x8x16xf32> {
  %kt = mpc.transpose %kin {perm = array<i64: 0, 2, 3, 1>} : (tensor<2x8x4x16xf32>) -> tensor<2x4x16x8xf32>
  %s = mpc.matmul %q, %kt : (tensor<2x4x8x16xf32>, tensor<2x4x16x8xf32>) -> tensor<2x4x8x8xf32>
  %hd = mpc.constant dense<16> : tensor<i64>
  %hdf = mpc.cast %hd : (tensor<i64>) -> tensor<f32>
  %half = mpc.constant dense<5.000000e-01> : tensor<f32>
  %root = mpc.pow %hdf, %half : (tensor<f32>, tensor<f32>) -> tensor<f32>
  %d = mpc.div %s, %root : (tensor<2x4x8x8xf32>, tensor<f32>) -> tensor<2x4x8x8xf32>
  %ones = mpc.constant dense<true> : tensor<8x8xi1>
  %upper = mpc.trilu %ones {k = 1 : i64} : (tensor<8x8xi1>) -> tensor<8x8xi1>
  %ninf = mpc.constant dense<0xFF800000> : tensor<f32>
  %m = mpc.where %upper, %ninf, %d : (tensor<8x8xi1>, tensor<f32>, tensor<2x4x8x8xf32>) -> tensor<2x4x8x8xf32>
  %p = mpc.softmax %m : (tensor<2x4x8x8xf32>) -> tensor<2x4x8x8xf32>
  %y = mpc.matmul %p, %v : (tensor<2x4x8x8xf32>, tensor<2x4x8x16xf32>) -> tensor<2x4x8x16xf32> loc("/attn/MatMul_1")
  return %y : tensor<2x4x8x16xf32>
}

// ONNX Attention's causal bias as imported: where(0 <= rows - cols, 0,
// -inf) over an FP32 column of rows i + skv - sq and a row of columns j
// (4 queries, 6 keys): causal, no bias, the constants left unused.
// CHECK-LABEL: func.func @causal_positions
// CHECK: mpc.attention %arg0, %{{.*}}, %arg2 {causal = true, scale = 1.000000e+00 : f32}
// CHECK-NOT: mpc.where
func.func @causal_positions(%q: tensor<2x4x8xf32>, %kt: tensor<2x8x6xf32>, %v: tensor<2x6x8xf32>) -> tensor<2x4x8xf32> {
  %s = mpc.matmul %q, %kt : (tensor<2x4x8xf32>, tensor<2x8x6xf32>) -> tensor<2x4x6xf32>
  %rows = mpc.constant dense<[[2.0], [3.0], [4.0], [5.0]]> : tensor<4x1xf32>
  %cols = mpc.constant dense<[[0.0, 1.0, 2.0, 3.0, 4.0, 5.0]]> : tensor<1x6xf32>
  %diff = mpc.sub %rows, %cols : (tensor<4x1xf32>, tensor<1x6xf32>) -> tensor<4x6xf32>
  %zero = mpc.constant dense<0.0> : tensor<f32>
  %ok = mpc.less_or_equal %zero, %diff : (tensor<f32>, tensor<4x6xf32>) -> tensor<4x6xi1>
  %ninf = mpc.constant dense<0xFF800000> : tensor<f32>
  %bias = mpc.where %ok, %zero, %ninf : (tensor<4x6xi1>, tensor<f32>, tensor<f32>) -> tensor<4x6xf32>
  %b = mpc.add %s, %bias : (tensor<2x4x6xf32>, tensor<4x6xf32>) -> tensor<2x4x6xf32>
  %p = mpc.softmax %b : (tensor<2x4x6xf32>) -> tensor<2x4x6xf32>
  %y = mpc.matmul %p, %v : (tensor<2x4x6xf32>, tensor<2x6x8xf32>) -> tensor<2x4x8xf32>
  return %y : tensor<2x4x8xf32>
}

// The same aligned to the top left (rows i: ONNX's causal without a past,
// more keys than queries): causal with its offset, 0.
// CHECK-LABEL: func.func @causal_positions_top_left
// CHECK: mpc.attention %arg0, %{{.*}}, %arg2 {causal = true, causal_offset = 0 : i64, scale = 1.000000e+00 : f32}
// CHECK-NOT: mpc.where
func.func @causal_positions_top_left(%q: tensor<2x4x8xf32>, %kt: tensor<2x8x6xf32>, %v: tensor<2x6x8xf32>) -> tensor<2x4x8xf32> {
  %s = mpc.matmul %q, %kt : (tensor<2x4x8xf32>, tensor<2x8x6xf32>) -> tensor<2x4x6xf32>
  %rows = mpc.constant dense<[[0.0], [1.0], [2.0], [3.0]]> : tensor<4x1xf32>
  %cols = mpc.constant dense<[[0.0, 1.0, 2.0, 3.0, 4.0, 5.0]]> : tensor<1x6xf32>
  %diff = mpc.sub %rows, %cols : (tensor<4x1xf32>, tensor<1x6xf32>) -> tensor<4x6xf32>
  %zero = mpc.constant dense<0.0> : tensor<f32>
  %ok = mpc.less_or_equal %zero, %diff : (tensor<f32>, tensor<4x6xf32>) -> tensor<4x6xi1>
  %ninf = mpc.constant dense<0xFF800000> : tensor<f32>
  %bias = mpc.where %ok, %zero, %ninf : (tensor<4x6xi1>, tensor<f32>, tensor<f32>) -> tensor<4x6xf32>
  %b = mpc.add %s, %bias : (tensor<2x4x6xf32>, tensor<4x6xf32>) -> tensor<2x4x6xf32>
  %p = mpc.softmax %b : (tensor<2x4x6xf32>) -> tensor<2x4x6xf32>
  %y = mpc.matmul %p, %v : (tensor<2x4x6xf32>, tensor<2x6x8xf32>) -> tensor<2x4x8xf32>
  return %y : tensor<2x4x8xf32>
}

// ONNX Attention's sliding windows as imported: causal and a left
// window of 2 (0 <= diff and diff <= 2); both windows without causal
// (-1 <= diff and diff <= 3): the band's attributes, no bias.
// CHECK-LABEL: func.func @window_positions
// CHECK: mpc.attention %arg0, %{{.*}}, %arg2 {causal = true, causal_offset = 0 : i64, scale = 1.000000e+00 : f32, window_left = 2 : i64}
// CHECK-NOT: mpc.where
func.func @window_positions(%q: tensor<2x4x8xf32>, %kt: tensor<2x8x6xf32>, %v: tensor<2x6x8xf32>) -> tensor<2x4x8xf32> {
  %s = mpc.matmul %q, %kt : (tensor<2x4x8xf32>, tensor<2x8x6xf32>) -> tensor<2x4x6xf32>
  %rows = mpc.constant dense<[[0.0], [1.0], [2.0], [3.0]]> : tensor<4x1xf32>
  %cols = mpc.constant dense<[[0.0, 1.0, 2.0, 3.0, 4.0, 5.0]]> : tensor<1x6xf32>
  %diff = mpc.sub %rows, %cols : (tensor<4x1xf32>, tensor<1x6xf32>) -> tensor<4x6xf32>
  %zero = mpc.constant dense<0.0> : tensor<f32>
  %two = mpc.constant dense<2.0> : tensor<f32>
  %causal = mpc.less_or_equal %zero, %diff : (tensor<f32>, tensor<4x6xf32>) -> tensor<4x6xi1>
  %left = mpc.less_or_equal %diff, %two : (tensor<4x6xf32>, tensor<f32>) -> tensor<4x6xi1>
  %ok = mpc.and %causal, %left : (tensor<4x6xi1>, tensor<4x6xi1>) -> tensor<4x6xi1>
  %ninf = mpc.constant dense<0xFF800000> : tensor<f32>
  %bias = mpc.where %ok, %zero, %ninf : (tensor<4x6xi1>, tensor<f32>, tensor<f32>) -> tensor<4x6xf32>
  %b = mpc.add %s, %bias : (tensor<2x4x6xf32>, tensor<4x6xf32>) -> tensor<2x4x6xf32>
  %p = mpc.softmax %b : (tensor<2x4x6xf32>) -> tensor<2x4x6xf32>
  %y = mpc.matmul %p, %v : (tensor<2x4x6xf32>, tensor<2x6x8xf32>) -> tensor<2x4x8xf32>
  return %y : tensor<2x4x8xf32>
}

// CHECK-LABEL: func.func @window_both_sides
// CHECK: mpc.attention %arg0, %{{.*}}, %arg2 {causal_offset = 0 : i64, scale = 1.000000e+00 : f32, window_left = 3 : i64, window_right = 1 : i64}
func.func @window_both_sides(%q: tensor<2x4x8xf32>, %kt: tensor<2x8x6xf32>, %v: tensor<2x6x8xf32>) -> tensor<2x4x8xf32> {
  %s = mpc.matmul %q, %kt : (tensor<2x4x8xf32>, tensor<2x8x6xf32>) -> tensor<2x4x6xf32>
  %rows = mpc.constant dense<[[0.0], [1.0], [2.0], [3.0]]> : tensor<4x1xf32>
  %cols = mpc.constant dense<[[0.0, 1.0, 2.0, 3.0, 4.0, 5.0]]> : tensor<1x6xf32>
  %diff = mpc.sub %rows, %cols : (tensor<4x1xf32>, tensor<1x6xf32>) -> tensor<4x6xf32>
  %zero = mpc.constant dense<0.0> : tensor<f32>
  %three = mpc.constant dense<3.0> : tensor<f32>
  %minus1 = mpc.constant dense<-1.0> : tensor<f32>
  %left = mpc.less_or_equal %diff, %three : (tensor<4x6xf32>, tensor<f32>) -> tensor<4x6xi1>
  %right = mpc.less_or_equal %minus1, %diff : (tensor<f32>, tensor<4x6xf32>) -> tensor<4x6xi1>
  %ok = mpc.and %left, %right : (tensor<4x6xi1>, tensor<4x6xi1>) -> tensor<4x6xi1>
  %ninf = mpc.constant dense<0xFF800000> : tensor<f32>
  %bias = mpc.where %ok, %zero, %ninf : (tensor<4x6xi1>, tensor<f32>, tensor<f32>) -> tensor<4x6xf32>
  %b = mpc.add %s, %bias : (tensor<2x4x6xf32>, tensor<4x6xf32>) -> tensor<2x4x6xf32>
  %p = mpc.softmax %b : (tensor<2x4x6xf32>) -> tensor<2x4x6xf32>
  %y = mpc.matmul %p, %v : (tensor<2x4x6xf32>, tensor<2x6x8xf32>) -> tensor<2x4x8xf32>
  return %y : tensor<2x4x8xf32>
}

// A window beside an attn_mask in one bias (mask + positions, as the
// import adds them): the band from the positions, the mask the bias.
// CHECK-LABEL: func.func @window_and_mask
// CHECK: mpc.attention %arg0, %{{.*}}, %arg2, %arg3 {causal = true, causal_offset = 0 : i64, scale = 1.000000e+00 : f32, window_left = 2 : i64}
func.func @window_and_mask(%q: tensor<2x4x8xf32>, %kt: tensor<2x8x6xf32>, %v: tensor<2x6x8xf32>, %mask: tensor<4x6xf32>) -> tensor<2x4x8xf32> {
  %s = mpc.matmul %q, %kt : (tensor<2x4x8xf32>, tensor<2x8x6xf32>) -> tensor<2x4x6xf32>
  %rows = mpc.constant dense<[[0.0], [1.0], [2.0], [3.0]]> : tensor<4x1xf32>
  %cols = mpc.constant dense<[[0.0, 1.0, 2.0, 3.0, 4.0, 5.0]]> : tensor<1x6xf32>
  %diff = mpc.sub %rows, %cols : (tensor<4x1xf32>, tensor<1x6xf32>) -> tensor<4x6xf32>
  %zero = mpc.constant dense<0.0> : tensor<f32>
  %two = mpc.constant dense<2.0> : tensor<f32>
  %causal = mpc.less_or_equal %zero, %diff : (tensor<f32>, tensor<4x6xf32>) -> tensor<4x6xi1>
  %left = mpc.less_or_equal %diff, %two : (tensor<4x6xf32>, tensor<f32>) -> tensor<4x6xi1>
  %ok = mpc.and %causal, %left : (tensor<4x6xi1>, tensor<4x6xi1>) -> tensor<4x6xi1>
  %ninf = mpc.constant dense<0xFF800000> : tensor<f32>
  %pos = mpc.where %ok, %zero, %ninf : (tensor<4x6xi1>, tensor<f32>, tensor<f32>) -> tensor<4x6xf32>
  %bias = mpc.add %mask, %pos : (tensor<4x6xf32>, tensor<4x6xf32>) -> tensor<4x6xf32>
  %b = mpc.add %s, %bias : (tensor<2x4x6xf32>, tensor<4x6xf32>) -> tensor<2x4x6xf32>
  %p = mpc.softmax %b : (tensor<2x4x6xf32>) -> tensor<2x4x6xf32>
  %y = mpc.matmul %p, %v : (tensor<2x4x6xf32>, tensor<2x6x8xf32>) -> tensor<2x4x8xf32>
  return %y : tensor<2x4x8xf32>
}

// A bound the band cannot say (1 <= diff: strictly earlier keys): the
// bias stays.
// CHECK-LABEL: func.func @positions_strictly_before
// CHECK: %[[BIAS:.*]] = mpc.where
// CHECK: mpc.attention %arg0, %{{.*}}, %arg2, %[[BIAS]] {scale = 1.000000e+00 : f32}
func.func @positions_strictly_before(%q: tensor<2x4x8xf32>, %kt: tensor<2x8x6xf32>, %v: tensor<2x6x8xf32>) -> tensor<2x4x8xf32> {
  %s = mpc.matmul %q, %kt : (tensor<2x4x8xf32>, tensor<2x8x6xf32>) -> tensor<2x4x6xf32>
  %rows = mpc.constant dense<[[2.0], [3.0], [4.0], [5.0]]> : tensor<4x1xf32>
  %cols = mpc.constant dense<[[0.0, 1.0, 2.0, 3.0, 4.0, 5.0]]> : tensor<1x6xf32>
  %diff = mpc.sub %rows, %cols : (tensor<4x1xf32>, tensor<1x6xf32>) -> tensor<4x6xf32>
  %zero = mpc.constant dense<0.0> : tensor<f32>
  %one = mpc.constant dense<1.0> : tensor<f32>
  %ok = mpc.less_or_equal %one, %diff : (tensor<f32>, tensor<4x6xf32>) -> tensor<4x6xi1>
  %ninf = mpc.constant dense<0xFF800000> : tensor<f32>
  %bias = mpc.where %ok, %zero, %ninf : (tensor<4x6xi1>, tensor<f32>, tensor<f32>) -> tensor<4x6xf32>
  %b = mpc.add %s, %bias : (tensor<2x4x6xf32>, tensor<4x6xf32>) -> tensor<2x4x6xf32>
  %p = mpc.softmax %b : (tensor<2x4x6xf32>) -> tensor<2x4x6xf32>
  %y = mpc.matmul %p, %v : (tensor<2x4x6xf32>, tensor<2x6x8xf32>) -> tensor<2x4x8xf32>
  return %y : tensor<2x4x8xf32>
}

// Grouped-query heads as ONNX Attention's import (and Hugging Face's
// repeat_kv) repeat them: each of K's and V's 2 heads unsqueezed,
// expanded to 2 and reshaped to Q's 4; the op reads K and V unrepeated
// (q head h reads head h / 2), the copies left dead.
// CHECK-LABEL: func.func @grouped_query
// CHECK-NOT: mpc.expand
// CHECK: mpc.attention %arg0, %arg1, %arg2 {scale = 1.250000e-01 : f32} : (tensor<1x4x6x8xf32>, tensor<1x2x6x8xf32>, tensor<1x2x6x8xf32>)
func.func @grouped_query(%q: tensor<1x4x6x8xf32>, %k: tensor<1x2x6x8xf32>, %v: tensor<1x2x6x8xf32>) -> tensor<1x4x6x8xf32> {
  %ku = mpc.unsqueeze %k {axes = array<i64: 2>} : (tensor<1x2x6x8xf32>) -> tensor<1x2x1x6x8xf32>
  %rep = mpc.constant dense<[1, 1, 2, 1, 1]> : tensor<5xi64>
  %ke = mpc.expand %ku, %rep : (tensor<1x2x1x6x8xf32>, tensor<5xi64>) -> tensor<1x2x2x6x8xf32>
  %heads = mpc.constant dense<[0, 4, -1, 8]> : tensor<4xi64>
  %kr = mpc.reshape %ke, %heads : (tensor<1x2x2x6x8xf32>, tensor<4xi64>) -> tensor<1x4x6x8xf32>
  %vu = mpc.unsqueeze %v {axes = array<i64: 2>} : (tensor<1x2x6x8xf32>) -> tensor<1x2x1x6x8xf32>
  %ve = mpc.expand %vu, %rep : (tensor<1x2x1x6x8xf32>, tensor<5xi64>) -> tensor<1x2x2x6x8xf32>
  %vr = mpc.reshape %ve, %heads : (tensor<1x2x2x6x8xf32>, tensor<4xi64>) -> tensor<1x4x6x8xf32>
  %kt = mpc.transpose %kr {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x4x6x8xf32>) -> tensor<1x4x8x6xf32>
  %s = mpc.matmul %q, %kt : (tensor<1x4x6x8xf32>, tensor<1x4x8x6xf32>) -> tensor<1x4x6x6xf32>
  %c = mpc.constant dense<0.125> : tensor<f32>
  %ss = mpc.mul %s, %c : (tensor<1x4x6x6xf32>, tensor<f32>) -> tensor<1x4x6x6xf32>
  %p = mpc.softmax %ss : (tensor<1x4x6x6xf32>) -> tensor<1x4x6x6xf32>
  %y = mpc.matmul %p, %vr : (tensor<1x4x6x6xf32>, tensor<1x4x6x8xf32>) -> tensor<1x4x6x8xf32>
  return %y : tensor<1x4x6x8xf32>
}

// Heads repeated the other way round (each head's copies apart: tile, not
// repeat_kv): q head h would read head h % 2, which the op does not say;
// K and V stay as written.
// CHECK-LABEL: func.func @heads_tiled
// CHECK: mpc.attention %arg0, %{{.*}}, %{{.*}} {scale = 1.250000e-01 : f32} : (tensor<1x4x6x8xf32>, tensor<1x4x6x8xf32>, tensor<1x4x6x8xf32>)
func.func @heads_tiled(%q: tensor<1x4x6x8xf32>, %k: tensor<1x2x6x8xf32>, %v: tensor<1x2x6x8xf32>) -> tensor<1x4x6x8xf32> {
  %ku = mpc.unsqueeze %k {axes = array<i64: 1>} : (tensor<1x2x6x8xf32>) -> tensor<1x1x2x6x8xf32>
  %rep = mpc.constant dense<[1, 2, 1, 1, 1]> : tensor<5xi64>
  %ke = mpc.expand %ku, %rep : (tensor<1x1x2x6x8xf32>, tensor<5xi64>) -> tensor<1x2x2x6x8xf32>
  %heads = mpc.constant dense<[0, 4, -1, 8]> : tensor<4xi64>
  %kr = mpc.reshape %ke, %heads : (tensor<1x2x2x6x8xf32>, tensor<4xi64>) -> tensor<1x4x6x8xf32>
  %vu = mpc.unsqueeze %v {axes = array<i64: 1>} : (tensor<1x2x6x8xf32>) -> tensor<1x1x2x6x8xf32>
  %ve = mpc.expand %vu, %rep : (tensor<1x1x2x6x8xf32>, tensor<5xi64>) -> tensor<1x2x2x6x8xf32>
  %vr = mpc.reshape %ve, %heads : (tensor<1x2x2x6x8xf32>, tensor<4xi64>) -> tensor<1x4x6x8xf32>
  %kt = mpc.transpose %kr {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x4x6x8xf32>) -> tensor<1x4x8x6xf32>
  %s = mpc.matmul %q, %kt : (tensor<1x4x6x8xf32>, tensor<1x4x8x6xf32>) -> tensor<1x4x6x6xf32>
  %c = mpc.constant dense<0.125> : tensor<f32>
  %ss = mpc.mul %s, %c : (tensor<1x4x6x6xf32>, tensor<f32>) -> tensor<1x4x6x6xf32>
  %p = mpc.softmax %ss : (tensor<1x4x6x6xf32>) -> tensor<1x4x6x6xf32>
  %y = mpc.matmul %p, %vr : (tensor<1x4x6x6xf32>, tensor<1x4x6x8xf32>) -> tensor<1x4x6x8xf32>
  return %y : tensor<1x4x6x8xf32>
}

// ONNX Attention's softcap as imported (Gemma 2's logit cap): c *
// tanh(s / c) on the scaled scores, before the mask: the op's `softcap`,
// the mask its bias. A scale outside the cap is not the op's: unfused.
// CHECK-LABEL: func.func @softcap
// CHECK: mpc.attention %arg0, %{{.*}}, %arg2, %arg3 {scale = 1.250000e-01 : f32, softcap = 5.000000e+00 : f32}
// CHECK-NOT: mpc.tanh
func.func @softcap(%q: tensor<2x4x8xf32>, %kt: tensor<2x8x6xf32>, %v: tensor<2x6x8xf32>, %mask: tensor<4x6xf32>) -> tensor<2x4x8xf32> {
  %s = mpc.matmul %q, %kt : (tensor<2x4x8xf32>, tensor<2x8x6xf32>) -> tensor<2x4x6xf32>
  %c = mpc.constant dense<0.125> : tensor<f32>
  %ss = mpc.mul %s, %c : (tensor<2x4x6xf32>, tensor<f32>) -> tensor<2x4x6xf32>
  %cap = mpc.constant dense<5.0> : tensor<f32>
  %d = mpc.div %ss, %cap : (tensor<2x4x6xf32>, tensor<f32>) -> tensor<2x4x6xf32>
  %t = mpc.tanh %d : (tensor<2x4x6xf32>) -> tensor<2x4x6xf32>
  %capped = mpc.mul %t, %cap : (tensor<2x4x6xf32>, tensor<f32>) -> tensor<2x4x6xf32>
  %b = mpc.add %capped, %mask : (tensor<2x4x6xf32>, tensor<4x6xf32>) -> tensor<2x4x6xf32>
  %p = mpc.softmax %b : (tensor<2x4x6xf32>) -> tensor<2x4x6xf32>
  %y = mpc.matmul %p, %v : (tensor<2x4x6xf32>, tensor<2x6x8xf32>) -> tensor<2x4x8xf32>
  return %y : tensor<2x4x8xf32>
}

// CHECK-LABEL: func.func @scale_outside_softcap
// CHECK-NOT: mpc.attention
func.func @scale_outside_softcap(%q: tensor<2x4x8xf32>, %kt: tensor<2x8x6xf32>, %v: tensor<2x6x8xf32>) -> tensor<2x4x8xf32> {
  %s = mpc.matmul %q, %kt : (tensor<2x4x8xf32>, tensor<2x8x6xf32>) -> tensor<2x4x6xf32>
  %cap = mpc.constant dense<5.0> : tensor<f32>
  %d = mpc.div %s, %cap : (tensor<2x4x6xf32>, tensor<f32>) -> tensor<2x4x6xf32>
  %t = mpc.tanh %d : (tensor<2x4x6xf32>) -> tensor<2x4x6xf32>
  %capped = mpc.mul %t, %cap : (tensor<2x4x6xf32>, tensor<f32>) -> tensor<2x4x6xf32>
  %c = mpc.constant dense<0.125> : tensor<f32>
  %ss = mpc.mul %capped, %c : (tensor<2x4x6xf32>, tensor<f32>) -> tensor<2x4x6xf32>
  %p = mpc.softmax %ss : (tensor<2x4x6xf32>) -> tensor<2x4x6xf32>
  %y = mpc.matmul %p, %v : (tensor<2x4x6xf32>, tensor<2x6x8xf32>) -> tensor<2x4x8xf32>
  return %y : tensor<2x4x8xf32>
}

// Rows that are not consecutive (no causal offset says them): the bias
// stays.
// CHECK-LABEL: func.func @positions_not_causal
// CHECK: %[[BIAS:.*]] = mpc.where
// CHECK: mpc.attention %arg0, %{{.*}}, %arg2, %[[BIAS]] {scale = 1.000000e+00 : f32}
func.func @positions_not_causal(%q: tensor<2x4x8xf32>, %kt: tensor<2x8x6xf32>, %v: tensor<2x6x8xf32>) -> tensor<2x4x8xf32> {
  %s = mpc.matmul %q, %kt : (tensor<2x4x8xf32>, tensor<2x8x6xf32>) -> tensor<2x4x6xf32>
  %rows = mpc.constant dense<[[0.0], [2.0], [3.0], [4.0]]> : tensor<4x1xf32>
  %cols = mpc.constant dense<[[0.0, 1.0, 2.0, 3.0, 4.0, 5.0]]> : tensor<1x6xf32>
  %diff = mpc.sub %rows, %cols : (tensor<4x1xf32>, tensor<1x6xf32>) -> tensor<4x6xf32>
  %zero = mpc.constant dense<0.0> : tensor<f32>
  %ok = mpc.less_or_equal %zero, %diff : (tensor<f32>, tensor<4x6xf32>) -> tensor<4x6xi1>
  %ninf = mpc.constant dense<0xFF800000> : tensor<f32>
  %bias = mpc.where %ok, %zero, %ninf : (tensor<4x6xi1>, tensor<f32>, tensor<f32>) -> tensor<4x6xf32>
  %b = mpc.add %s, %bias : (tensor<2x4x6xf32>, tensor<4x6xf32>) -> tensor<2x4x6xf32>
  %p = mpc.softmax %b : (tensor<2x4x6xf32>) -> tensor<2x4x6xf32>
  %y = mpc.matmul %p, %v : (tensor<2x4x6xf32>, tensor<2x6x8xf32>) -> tensor<2x4x8xf32>
  return %y : tensor<2x4x8xf32>
}

// Llama-style code's mask, torch.full((n, n), -inf).triu(1) added to the
// scores (torch exports a splat Trilu'd at run time): causal, no bias, the
// Trilu gone; with 4 queries on 6 keys, triu(3) (ONNX's bottom-right
// alignment) too.
// CHECK-LABEL: func.func @triu_full_mask
// CHECK: %[[Y:.*]], %{{.*}} = mpc.attention %arg0, %{{.*}}, %arg2 {causal = true, scale = 1.250000e-01 : f32}
// CHECK-NOT: mpc.trilu
// CHECK: return %[[Y]]
func.func @triu_full_mask(%q: tensor<1x2x8x64xf32>, %kt: tensor<1x2x64x8xf32>, %v: tensor<1x2x8x64xf32>) -> tensor<1x2x8x64xf32> {
  %s = mpc.matmul %q, %kt : (tensor<1x2x8x64xf32>, tensor<1x2x64x8xf32>) -> tensor<1x2x8x8xf32>
  %c = mpc.constant dense<8.0> : tensor<f32>
  %d = mpc.div %s, %c : (tensor<1x2x8x8xf32>, tensor<f32>) -> tensor<1x2x8x8xf32>
  %full = mpc.constant dense<0xFF800000> : tensor<8x8xf32>
  %mask = mpc.trilu %full {k = 1 : i64} : (tensor<8x8xf32>) -> tensor<8x8xf32>
  %b = mpc.add %d, %mask : (tensor<1x2x8x8xf32>, tensor<8x8xf32>) -> tensor<1x2x8x8xf32>
  %p = mpc.softmax %b : (tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
  %y = mpc.matmul %p, %v : (tensor<1x2x8x8xf32>, tensor<1x2x8x64xf32>) -> tensor<1x2x8x64xf32>
  return %y : tensor<1x2x8x64xf32>
}
// CHECK-LABEL: func.func @triu_full_mask_more_keys
// CHECK: mpc.attention %arg0, %{{.*}}, %arg2 {causal = true, scale = 1.000000e+00 : f32}
// CHECK-NOT: mpc.trilu
func.func @triu_full_mask_more_keys(%q: tensor<2x4x8xf32>, %kt: tensor<2x8x6xf32>, %v: tensor<2x6x8xf32>) -> tensor<2x4x8xf32> {
  %s = mpc.matmul %q, %kt : (tensor<2x4x8xf32>, tensor<2x8x6xf32>) -> tensor<2x4x6xf32>
  %full = mpc.constant dense<-3.40282347E+38> : tensor<4x6xf32>
  %mask = mpc.trilu %full {k = 3 : i64} : (tensor<4x6xf32>) -> tensor<4x6xf32>
  %b = mpc.add %s, %mask : (tensor<2x4x6xf32>, tensor<4x6xf32>) -> tensor<2x4x6xf32>
  %p = mpc.softmax %b : (tensor<2x4x6xf32>) -> tensor<2x4x6xf32>
  %y = mpc.matmul %p, %v : (tensor<2x4x6xf32>, tensor<2x6x8xf32>) -> tensor<2x4x8xf32>
  return %y : tensor<2x4x8xf32>
}

// Sliding windows as torch code builds them: Mistral's in Hugging Face
// 4.34-4.36, log(ones.tril(0).triu(-3)) (0 on the band, -inf off it), and
// triu(full(-inf), 1) + tril(full(-inf), -4): both causal with a left
// window of 3, no bias; two -inf Trilus nested mask a band's inside,
// which no band says: kept.
// CHECK-LABEL: func.func @trilu_windows
// CHECK: mpc.attention %arg0, %{{.*}}, %arg2 {causal = true, scale = 1.000000e+00 : f32, window_left = 3 : i64}
// CHECK: mpc.attention %arg0, %{{.*}}, %arg2 {causal = true, scale = 1.000000e+00 : f32, window_left = 3 : i64}
// CHECK: mpc.attention %arg0, %{{.*}}, %arg2, %{{.*}} {scale = 1.000000e+00 : f32}
func.func @trilu_windows(%q: tensor<2x8x8xf32>, %kt: tensor<2x8x8xf32>, %v: tensor<2x8x8xf32>) -> (tensor<2x8x8xf32>, tensor<2x8x8xf32>, tensor<2x8x8xf32>) {
  %ones = mpc.constant dense<1.0> : tensor<8x8xf32>
  %low = mpc.trilu %ones {k = 0 : i64, upper = false} : (tensor<8x8xf32>) -> tensor<8x8xf32>
  %band = mpc.trilu %low {k = -3 : i64} : (tensor<8x8xf32>) -> tensor<8x8xf32>
  %m0 = mpc.log %band : (tensor<8x8xf32>) -> tensor<8x8xf32>
  %s0 = mpc.matmul %q, %kt : (tensor<2x8x8xf32>, tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %b0 = mpc.add %s0, %m0 : (tensor<2x8x8xf32>, tensor<8x8xf32>) -> tensor<2x8x8xf32>
  %p0 = mpc.softmax %b0 : (tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %y0 = mpc.matmul %p0, %v : (tensor<2x8x8xf32>, tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %ninf = mpc.constant dense<0xFF800000> : tensor<8x8xf32>
  %future = mpc.trilu %ninf {k = 1 : i64} : (tensor<8x8xf32>) -> tensor<8x8xf32>
  %far = mpc.trilu %ninf {k = -4 : i64, upper = false} : (tensor<8x8xf32>) -> tensor<8x8xf32>
  %m1 = mpc.add %future, %far : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  %s1 = mpc.matmul %q, %kt : (tensor<2x8x8xf32>, tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %b1 = mpc.add %s1, %m1 : (tensor<2x8x8xf32>, tensor<8x8xf32>) -> tensor<2x8x8xf32>
  %p1 = mpc.softmax %b1 : (tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %y1 = mpc.matmul %p1, %v : (tensor<2x8x8xf32>, tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %in1 = mpc.trilu %ninf {k = -3 : i64} : (tensor<8x8xf32>) -> tensor<8x8xf32>
  %m2 = mpc.trilu %in1 {k = 0 : i64, upper = false} : (tensor<8x8xf32>) -> tensor<8x8xf32>
  %s2 = mpc.matmul %q, %kt : (tensor<2x8x8xf32>, tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %b2 = mpc.add %s2, %m2 : (tensor<2x8x8xf32>, tensor<8x8xf32>) -> tensor<2x8x8xf32>
  %p2 = mpc.softmax %b2 : (tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %y2 = mpc.matmul %p2, %v : (tensor<2x8x8xf32>, tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  return %y0, %y1, %y2 : tensor<2x8x8xf32>, tensor<2x8x8xf32>, tensor<2x8x8xf32>
}

// Hugging Face's causal mask before torch folds it:
// mask_cond < (mask_cond + 1).view(n, 1) over arange(n), where() 0 else
// min, broadcast to the batch; evaluated element by element (the view
// moves the column vector to rows): causal, no bias. With view(1, n)
// (the same vector kept as columns) the condition is j < j + 1,
// everything seen: no band, no bias.
// CHECK-LABEL: func.func @hf_causal_unfolded
// CHECK: mpc.attention %arg0, %{{.*}}, %arg2 {causal = true, scale = 1.000000e+00 : f32}
// CHECK: mpc.attention %arg0, %{{.*}}, %arg2 {scale = 1.000000e+00 : f32}
func.func @hf_causal_unfolded(%q: tensor<2x8x8xf32>, %kt: tensor<2x8x8xf32>, %v: tensor<2x8x8xf32>) -> (tensor<2x8x8xf32>, tensor<2x8x8xf32>) {
  %cond = mpc.constant dense<[0, 1, 2, 3, 4, 5, 6, 7]> : tensor<8xi64>
  %one = mpc.constant dense<1> : tensor<i64>
  %next = mpc.add %cond, %one : (tensor<8xi64>, tensor<i64>) -> tensor<8xi64>
  %rows = mpc.constant dense<[8, 1]> : tensor<2xi64>
  %col = mpc.reshape %next, %rows : (tensor<8xi64>, tensor<2xi64>) -> tensor<8x1xi64>
  %lt = mpc.less %cond, %col : (tensor<8xi64>, tensor<8x1xi64>) -> tensor<8x8xi1>
  %zero = mpc.constant dense<0.0> : tensor<f32>
  %min = mpc.constant dense<-3.40282347E+38> : tensor<8x8xf32>
  %m0 = mpc.where %lt, %zero, %min : (tensor<8x8xi1>, tensor<f32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  %bshape = mpc.constant dense<[2, 8, 8]> : tensor<3xi64>
  %mb = mpc.expand %m0, %bshape : (tensor<8x8xf32>, tensor<3xi64>) -> tensor<2x8x8xf32>
  %s0 = mpc.matmul %q, %kt : (tensor<2x8x8xf32>, tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %b0 = mpc.add %s0, %mb : (tensor<2x8x8xf32>, tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %p0 = mpc.softmax %b0 : (tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %y0 = mpc.matmul %p0, %v : (tensor<2x8x8xf32>, tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %cols = mpc.constant dense<[1, 8]> : tensor<2xi64>
  %row = mpc.reshape %next, %cols : (tensor<8xi64>, tensor<2xi64>) -> tensor<1x8xi64>
  %lt1 = mpc.less %cond, %row : (tensor<8xi64>, tensor<1x8xi64>) -> tensor<1x8xi1>
  %m1 = mpc.where %lt1, %zero, %min : (tensor<1x8xi1>, tensor<f32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  %s1 = mpc.matmul %q, %kt : (tensor<2x8x8xf32>, tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %b1 = mpc.add %s1, %m1 : (tensor<2x8x8xf32>, tensor<8x8xf32>) -> tensor<2x8x8xf32>
  %p1 = mpc.softmax %b1 : (tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %y1 = mpc.matmul %p1, %v : (tensor<2x8x8xf32>, tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  return %y0, %y1 : tensor<2x8x8xf32>, tensor<2x8x8xf32>
}

// Kept as the bias: triu(0) (the diagonal masked too: strictly earlier
// keys, which the band cannot say) and a finite fill; tril(-1) of -inf
// (the past masked) is the band of keys at or after the query.
// CHECK-LABEL: func.func @triu_not_causal
// CHECK: %[[M0:.*]] = mpc.trilu %{{[0-9]+}} :
// CHECK: %[[M2:.*]] = mpc.trilu %{{[0-9]+}} {k = 1 : i64}
// CHECK: mpc.attention %arg0, %{{.*}}, %arg2, %[[M0]] {scale = 1.000000e+00 : f32}
// CHECK: mpc.attention %arg0, %{{.*}}, %arg2 {scale = 1.000000e+00 : f32, window_left = 0 : i64}
// CHECK: mpc.attention %arg0, %{{.*}}, %arg2, %[[M2]] {scale = 1.000000e+00 : f32}
func.func @triu_not_causal(%q: tensor<2x4x8xf32>, %kt: tensor<2x8x4xf32>, %v: tensor<2x4x8xf32>) -> (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>) {
  %ninf = mpc.constant dense<0xFF800000> : tensor<4x4xf32>
  %small = mpc.constant dense<-1.0e+04> : tensor<4x4xf32>
  %m0 = mpc.trilu %ninf {k = 0 : i64} : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %m1 = mpc.trilu %ninf {k = -1 : i64, upper = false} : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %m2 = mpc.trilu %small {k = 1 : i64} : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %s0 = mpc.matmul %q, %kt : (tensor<2x4x8xf32>, tensor<2x8x4xf32>) -> tensor<2x4x4xf32>
  %b0 = mpc.add %s0, %m0 : (tensor<2x4x4xf32>, tensor<4x4xf32>) -> tensor<2x4x4xf32>
  %p0 = mpc.softmax %b0 : (tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %y0 = mpc.matmul %p0, %v : (tensor<2x4x4xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %s1 = mpc.matmul %q, %kt : (tensor<2x4x8xf32>, tensor<2x8x4xf32>) -> tensor<2x4x4xf32>
  %b1 = mpc.add %s1, %m1 : (tensor<2x4x4xf32>, tensor<4x4xf32>) -> tensor<2x4x4xf32>
  %p1 = mpc.softmax %b1 : (tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %y1 = mpc.matmul %p1, %v : (tensor<2x4x4xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %s2 = mpc.matmul %q, %kt : (tensor<2x4x8xf32>, tensor<2x8x4xf32>) -> tensor<2x4x4xf32>
  %b2 = mpc.add %s2, %m2 : (tensor<2x4x4xf32>, tensor<4x4xf32>) -> tensor<2x4x4xf32>
  %p2 = mpc.softmax %b2 : (tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %y2 = mpc.matmul %p2, %v : (tensor<2x4x4xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  return %y0, %y1, %y2 : tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>
}

// nn.TransformerEncoder (torch 1.13): Q divided before the product, K^T a
// [1, 2, 0] transpose of [s, b*h, d]; K becomes its [1, 0, 2] transpose.
// CHECK-LABEL: func.func @encoder
// CHECK: %[[K:.*]] = mpc.transpose %arg1 {perm = array<i64: 1, 0, 2>}
// CHECK: mpc.attention %arg0, %[[K]], %arg2 {scale = 2.500000e-01 : f32}
func.func @encoder(%q: tensor<8x16x16xf32>, %kin: tensor<16x8x16xf32>, %v: tensor<8x16x16xf32>) -> tensor<8x16x16xf32> {
  %c = mpc.constant dense<4.000000e+00> : tensor<f32>
  %qs = mpc.div %q, %c : (tensor<8x16x16xf32>, tensor<f32>) -> tensor<8x16x16xf32>
  %kt = mpc.transpose %kin {perm = array<i64: 1, 2, 0>} : (tensor<16x8x16xf32>) -> tensor<8x16x16xf32>
  %s = mpc.matmul %qs, %kt : (tensor<8x16x16xf32>, tensor<8x16x16xf32>) -> tensor<8x16x16xf32>
  %p = mpc.softmax %s {axis = 2 : i64} : (tensor<8x16x16xf32>) -> tensor<8x16x16xf32>
  %y = mpc.matmul %p, %v : (tensor<8x16x16xf32>, tensor<8x16x16xf32>) -> tensor<8x16x16xf32>
  return %y : tensor<8x16x16xf32>
}

// BERT: an additive padding mask computed from an input stays the bias;
// sqrt(scale) on Q and on K (torch 2.x, and ONNX Attention as imported)
// multiply into one scale; K^T's transpose folds away.
// CHECK-LABEL: func.func @bert
// CHECK: mpc.attention %arg0, %arg1, %arg2, %{{.*}} {scale = 0.12499{{.*}} : f32}
func.func @bert(%q: tensor<2x2x4x8xf32>, %k: tensor<2x2x4x8xf32>, %v: tensor<2x2x4x8xf32>, %mask: tensor<2x1x1x4xf32>) -> tensor<2x2x4x8xf32> {
  %r = mpc.constant dense<0.353553385> : tensor<f32>
  %qs = mpc.mul %q, %r : (tensor<2x2x4x8xf32>, tensor<f32>) -> tensor<2x2x4x8xf32>
  %kt = mpc.transpose %k {perm = array<i64: 0, 1, 3, 2>} : (tensor<2x2x4x8xf32>) -> tensor<2x2x8x4xf32>
  %kts = mpc.mul %kt, %r : (tensor<2x2x8x4xf32>, tensor<f32>) -> tensor<2x2x8x4xf32>
  %s = mpc.matmul %qs, %kts : (tensor<2x2x4x8xf32>, tensor<2x2x8x4xf32>) -> tensor<2x2x4x4xf32>
  %one = mpc.constant dense<1.000000e+00> : tensor<f32>
  %inv = mpc.sub %one, %mask : (tensor<f32>, tensor<2x1x1x4xf32>) -> tensor<2x1x1x4xf32>
  %big = mpc.constant dense<-1.000000e+04> : tensor<f32>
  %bias = mpc.mul %inv, %big : (tensor<2x1x1x4xf32>, tensor<f32>) -> tensor<2x1x1x4xf32>
  %b = mpc.add %s, %bias : (tensor<2x2x4x4xf32>, tensor<2x1x1x4xf32>) -> tensor<2x2x4x4xf32>
  %p = mpc.softmax %b : (tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xf32>
  %y = mpc.matmul %p, %v : (tensor<2x2x4x4xf32>, tensor<2x2x4x8xf32>) -> tensor<2x2x4x8xf32>
  return %y : tensor<2x2x4x8xf32>
}

// ONNX Attention's decomposition scales K before its transpose: that
// scale folds too (its Mul was a kernel each way).
// CHECK-LABEL: func.func @k_scaled_before_transpose
// CHECK-NEXT: %[[Y:.*]], %{{.*}} = mpc.attention %arg0, %arg1, %arg2 {scale = 0.12499{{.*}} : f32}
// CHECK-NEXT: return %[[Y]]
func.func @k_scaled_before_transpose(%q: tensor<2x2x4x8xf32>, %k: tensor<2x2x4x8xf32>, %v: tensor<2x2x4x8xf32>) -> tensor<2x2x4x8xf32> {
  %r = mpc.constant dense<0.353553385> : tensor<f32>
  %qs = mpc.mul %q, %r : (tensor<2x2x4x8xf32>, tensor<f32>) -> tensor<2x2x4x8xf32>
  %ks = mpc.mul %k, %r : (tensor<2x2x4x8xf32>, tensor<f32>) -> tensor<2x2x4x8xf32>
  %kt = mpc.transpose %ks {perm = array<i64: 0, 1, 3, 2>} : (tensor<2x2x4x8xf32>) -> tensor<2x2x8x4xf32>
  %s = mpc.matmul %qs, %kt : (tensor<2x2x4x8xf32>, tensor<2x2x8x4xf32>) -> tensor<2x2x4x4xf32>
  %p = mpc.softmax %s : (tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xf32>
  %y = mpc.matmul %p, %v : (tensor<2x2x4x4xf32>, tensor<2x2x4x8xf32>) -> tensor<2x2x4x8xf32>
  return %y : tensor<2x2x4x8xf32>
}

// Left as written: a softmax over another axis...
// CHECK-LABEL: func.func @other_axis
// CHECK-NOT: mpc.attention
// CHECK: mpc.softmax
func.func @other_axis(%q: tensor<2x4x8xf32>, %kt: tensor<2x8x4xf32>, %v: tensor<2x4x8xf32>) -> tensor<2x4x8xf32> {
  %s = mpc.matmul %q, %kt : (tensor<2x4x8xf32>, tensor<2x8x4xf32>) -> tensor<2x4x4xf32>
  %p = mpc.softmax %s {axis = 1 : i64} : (tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %y = mpc.matmul %p, %v : (tensor<2x4x4xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  return %y : tensor<2x4x8xf32>
}

// ...probabilities another op reads too...
// CHECK-LABEL: func.func @probs_used_twice
// CHECK-NOT: mpc.attention
// CHECK: mpc.softmax
func.func @probs_used_twice(%q: tensor<2x4x8xf32>, %kt: tensor<2x8x4xf32>, %v: tensor<2x4x8xf32>) -> (tensor<2x4x8xf32>, tensor<2x4x4xf32>) {
  %s = mpc.matmul %q, %kt : (tensor<2x4x8xf32>, tensor<2x8x4xf32>) -> tensor<2x4x4xf32>
  %p = mpc.softmax %s : (tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %y = mpc.matmul %p, %v : (tensor<2x4x4xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  return %y, %p : tensor<2x4x8xf32>, tensor<2x4x4xf32>
}

// ...scores another op reads too...
// CHECK-LABEL: func.func @scores_used_twice
// CHECK-NOT: mpc.attention
func.func @scores_used_twice(%q: tensor<2x4x8xf32>, %kt: tensor<2x8x4xf32>, %v: tensor<2x4x8xf32>) -> (tensor<2x4x8xf32>, tensor<2x4x4xf32>) {
  %s = mpc.matmul %q, %kt : (tensor<2x4x8xf32>, tensor<2x8x4xf32>) -> tensor<2x4x4xf32>
  %p = mpc.softmax %s : (tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %y = mpc.matmul %p, %v : (tensor<2x4x4xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  return %y, %s : tensor<2x4x8xf32>, tensor<2x4x4xf32>
}

// ...a where() whose fill exp() does not take to 0 as -inf (replacing a
// score is not adding to it)...
// CHECK-LABEL: func.func @small_fill
// CHECK-NOT: mpc.attention
func.func @small_fill(%q: tensor<2x4x8xf32>, %kt: tensor<2x8x4xf32>, %v: tensor<2x4x8xf32>, %m: tensor<4x4xi1>) -> tensor<2x4x8xf32> {
  %s = mpc.matmul %q, %kt : (tensor<2x4x8xf32>, tensor<2x8x4xf32>) -> tensor<2x4x4xf32>
  %f = mpc.constant dense<-1.000000e+04> : tensor<f32>
  %w = mpc.where %m, %f, %s : (tensor<4x4xi1>, tensor<f32>, tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %p = mpc.softmax %w : (tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %y = mpc.matmul %p, %v : (tensor<2x4x4xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  return %y : tensor<2x4x8xf32>
}

// ...and a product whose batch dimensions broadcast.
// CHECK-LABEL: func.func @broadcast_batch
// CHECK-NOT: mpc.attention
func.func @broadcast_batch(%q: tensor<2x4x8xf32>, %kt: tensor<1x8x4xf32>, %v: tensor<2x4x8xf32>) -> tensor<2x4x8xf32> {
  %s = mpc.matmul %q, %kt : (tensor<2x4x8xf32>, tensor<1x8x4xf32>) -> tensor<2x4x4xf32>
  %p = mpc.softmax %s : (tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %y = mpc.matmul %p, %v : (tensor<2x4x4xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  return %y : tensor<2x4x8xf32>
}

// The mask added before the scale: softmax((QK^T + m) / 8) adds m / 8.
// CHECK-LABEL: func.func @mask_then_scale
// CHECK: %[[C:.*]] = mpc.constant dense<1.250000e-01> : tensor<f32>
// CHECK: %[[B:.*]] = mpc.mul %arg3, %[[C]]
// CHECK: mpc.attention %arg0, %{{.*}}, %arg2, %[[B]] {scale = 1.250000e-01 : f32}
func.func @mask_then_scale(%q: tensor<2x4x8xf32>, %kt: tensor<2x8x4xf32>, %v: tensor<2x4x8xf32>, %m: tensor<4x4xf32>) -> tensor<2x4x8xf32> {
  %s = mpc.matmul %q, %kt : (tensor<2x4x8xf32>, tensor<2x8x4xf32>) -> tensor<2x4x4xf32>
  %b = mpc.add %s, %m : (tensor<2x4x4xf32>, tensor<4x4xf32>) -> tensor<2x4x4xf32>
  %c = mpc.constant dense<8.0> : tensor<f32>
  %d = mpc.div %b, %c : (tensor<2x4x4xf32>, tensor<f32>) -> tensor<2x4x4xf32>
  %p = mpc.softmax %d : (tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %y = mpc.matmul %p, %v : (tensor<2x4x4xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  return %y : tensor<2x4x8xf32>
}

// ONNX Attention as imported: a boolean mask made a bias by where(), and the
// guard zeroing rows whose bias is all -inf. The bias stays as it is; the
// guard becomes zero_masked_rows.
// CHECK-LABEL: func.func @onnx_attention_guard
// CHECK: %[[B:.*]] = mpc.where %arg3
// CHECK: mpc.attention %arg0, %{{.*}}, %arg2, %[[B]] {scale = 1.000000e+00 : f32, zero_masked_rows = true}
// CHECK-NOT: mpc.softmax
func.func @onnx_attention_guard(%q: tensor<2x4x8xf32>, %kt: tensor<2x8x6xf32>, %v: tensor<2x6x8xf32>, %m: tensor<4x6xi1>) -> tensor<2x4x8xf32> {
  %s = mpc.matmul %q, %kt : (tensor<2x4x8xf32>, tensor<2x8x6xf32>) -> tensor<2x4x6xf32>
  %ninf = mpc.constant dense<0xFF800000> : tensor<f32>
  %zero = mpc.constant dense<0.0> : tensor<f32>
  %bias = mpc.where %m, %zero, %ninf : (tensor<4x6xi1>, tensor<f32>, tensor<f32>) -> tensor<4x6xf32>
  %b = mpc.add %s, %bias : (tensor<2x4x6xf32>, tensor<4x6xf32>) -> tensor<2x4x6xf32>
  %p = mpc.softmax %b : (tensor<2x4x6xf32>) -> tensor<2x4x6xf32>
  %mx = mpc.reduce_max %bias {axes = array<i64: -1>} : (tensor<4x6xf32>) -> tensor<4x1xf32>
  %dead = mpc.is_inf %mx {detect_positive = false} : (tensor<4x1xf32>) -> tensor<4x1xi1>
  %g = mpc.where %dead, %zero, %p : (tensor<4x1xi1>, tensor<f32>, tensor<2x4x6xf32>) -> tensor<2x4x6xf32>
  %y = mpc.matmul %g, %v : (tensor<2x4x6xf32>, tensor<2x6x8xf32>) -> tensor<2x4x8xf32>
  return %y : tensor<2x4x8xf32>
}

// The same guard over a different value than the bias: left as written.
// CHECK-LABEL: func.func @guard_other_value
// CHECK-NOT: mpc.attention
func.func @guard_other_value(%q: tensor<2x4x8xf32>, %kt: tensor<2x8x6xf32>, %v: tensor<2x6x8xf32>, %bias: tensor<4x6xf32>, %other: tensor<4x6xf32>) -> tensor<2x4x8xf32> {
  %s = mpc.matmul %q, %kt : (tensor<2x4x8xf32>, tensor<2x8x6xf32>) -> tensor<2x4x6xf32>
  %zero = mpc.constant dense<0.0> : tensor<f32>
  %b = mpc.add %s, %bias : (tensor<2x4x6xf32>, tensor<4x6xf32>) -> tensor<2x4x6xf32>
  %p = mpc.softmax %b : (tensor<2x4x6xf32>) -> tensor<2x4x6xf32>
  %mx = mpc.reduce_max %other {axes = array<i64: -1>} : (tensor<4x6xf32>) -> tensor<4x1xf32>
  %dead = mpc.is_inf %mx {detect_positive = false} : (tensor<4x1xf32>) -> tensor<4x1xi1>
  %g = mpc.where %dead, %zero, %p : (tensor<4x1xi1>, tensor<f32>, tensor<2x4x6xf32>) -> tensor<2x4x6xf32>
  %y = mpc.matmul %g, %v : (tensor<2x4x6xf32>, tensor<2x6x8xf32>) -> tensor<2x4x8xf32>
  return %y : tensor<2x4x8xf32>
}

// A training-mode export's attention dropout (torch: Softmax -> Dropout
// with a constant ratio and training flag -> MatMul) fuses: the op keeps
// its ratio and key (seed, stream) and draws the mask the dropout would.
// CHECK-LABEL: func.func @dropout
// CHECK: mpc.attention %arg0, %arg1, %arg2 {dropout = 1.000000e-01 : f32, scale = 2.500000e-01 : f32, seed = 3 : i64, stream = 42 : i64}
// CHECK-NOT: mpc.dropout
// LOC-LABEL: func.func @dropout
// LOC: mpc.attention {{.*}} loc("/attn/MatMul_1")
func.func @dropout(%q: tensor<2x8x16xf32>, %k: tensor<2x8x16xf32>, %v: tensor<2x8x16xf32>) -> tensor<2x8x16xf32> {
  %kt = mpc.transpose %k {perm = array<i64: 0, 2, 1>} : (tensor<2x8x16xf32>) -> tensor<2x16x8xf32>
  %s = mpc.matmul %q, %kt : (tensor<2x8x16xf32>, tensor<2x16x8xf32>) -> tensor<2x8x8xf32>
  %c = mpc.constant dense<2.500000e-01> : tensor<f32>
  %ss = mpc.mul %s, %c : (tensor<2x8x8xf32>, tensor<f32>) -> tensor<2x8x8xf32>
  %p = mpc.softmax %ss : (tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %r = mpc.constant dense<1.000000e-01> : tensor<f32>
  %t = mpc.constant dense<true> : tensor<i1>
  %pd, %mask = mpc.dropout %p ratio %r training %t {seed = 3 : i64, stream = 42 : i64} : (tensor<2x8x8xf32>, tensor<f32>, tensor<i1>) -> (tensor<2x8x8xf32>, tensor<2x8x8xi1>)
  %y = mpc.matmul %pd, %v : (tensor<2x8x8xf32>, tensor<2x8x16xf32>) -> tensor<2x8x16xf32> loc("/attn/MatMul_1")
  return %y : tensor<2x8x16xf32>
}

// Perturbed dropouts stay as written: one whose mask is read (fusing would
// leave nothing to read), one whose training flag is only known at run
// time, and one with a ratio of 1.
// CHECK-LABEL: func.func @dropout_unfused
// CHECK-NOT: mpc.attention
// CHECK-COUNT-3: mpc.dropout
func.func @dropout_unfused(%q: tensor<2x8x16xf32>, %k: tensor<2x8x16xf32>, %v: tensor<2x8x16xf32>, %flag: tensor<i1>) -> (tensor<2x8x16xf32>, tensor<2x8x8xi1>, tensor<2x8x16xf32>, tensor<2x8x16xf32>) {
  %kt = mpc.transpose %k {perm = array<i64: 0, 2, 1>} : (tensor<2x8x16xf32>) -> tensor<2x16x8xf32>
  %r = mpc.constant dense<1.000000e-01> : tensor<f32>
  %one = mpc.constant dense<1.000000e+00> : tensor<f32>
  %t = mpc.constant dense<true> : tensor<i1>
  %s = mpc.matmul %q, %kt : (tensor<2x8x16xf32>, tensor<2x16x8xf32>) -> tensor<2x8x8xf32>
  %p = mpc.softmax %s : (tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %pd, %mask = mpc.dropout %p ratio %r training %t : (tensor<2x8x8xf32>, tensor<f32>, tensor<i1>) -> (tensor<2x8x8xf32>, tensor<2x8x8xi1>)
  %y = mpc.matmul %pd, %v : (tensor<2x8x8xf32>, tensor<2x8x16xf32>) -> tensor<2x8x16xf32>
  %s1 = mpc.matmul %q, %kt : (tensor<2x8x16xf32>, tensor<2x16x8xf32>) -> tensor<2x8x8xf32>
  %p1 = mpc.softmax %s1 : (tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %pd1, %mask1 = mpc.dropout %p1 ratio %r training %flag : (tensor<2x8x8xf32>, tensor<f32>, tensor<i1>) -> (tensor<2x8x8xf32>, tensor<2x8x8xi1>)
  %y1 = mpc.matmul %pd1, %v : (tensor<2x8x8xf32>, tensor<2x8x16xf32>) -> tensor<2x8x16xf32>
  %s2 = mpc.matmul %q, %kt : (tensor<2x8x16xf32>, tensor<2x16x8xf32>) -> tensor<2x8x8xf32>
  %p2 = mpc.softmax %s2 : (tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %pd2, %mask2 = mpc.dropout %p2 ratio %one training %t : (tensor<2x8x8xf32>, tensor<f32>, tensor<i1>) -> (tensor<2x8x8xf32>, tensor<2x8x8xi1>)
  %y2 = mpc.matmul %pd2, %v : (tensor<2x8x8xf32>, tensor<2x8x16xf32>) -> tensor<2x8x16xf32>
  return %y, %mask, %y1, %y2 : tensor<2x8x16xf32>, tensor<2x8x8xi1>, tensor<2x8x16xf32>, tensor<2x8x16xf32>
}
