// RUN: mpc-opt %s -mpc-fuse-attention | FileCheck %s
// RUN: mpc-opt %s -mpc-fuse-attention --mlir-print-debuginfo --mlir-print-local-scope | FileCheck %s --check-prefix=LOC

// mpc-fuse-attention on scores computed over merged batch and heads, as
// Hugging Face's GPT-NeoX (Pythia) exports torch.baddbmm: Q and K viewed
// as [b * h, s, d], zeros * beta + alpha * Q K^T, the scores viewed back
// as [b, h, sq, skv] before the causal where(). Q and K are taken from
// before their views, the zero addend is dropped, alpha is the scale.

// CHECK-LABEL: func.func @neox
// CHECK-NEXT: %[[Y:.*]], %{{.*}} = mpc.attention %arg0, %arg1, %arg2 {causal = true, scale = 0.353553385 : f32}
// CHECK-NEXT: return %[[Y]]
// LOC-LABEL: func.func @neox
// LOC: mpc.attention {{.*}} loc("/attention/MatMul_1")
func.func @neox(%q: tensor<2x4x16x8xf32>, %k: tensor<2x4x16x8xf32>, %v: tensor<2x4x16x8xf32>) -> tensor<2x4x16x8xf32> {
  %merged = mpc.constant dense<[8, 16, 8]> : tensor<3xi64>
  %heads = mpc.constant dense<[2, 4, 16, 16]> : tensor<4xi64>
  %zeros = mpc.constant dense<0.000000e+00> : tensor<8x16x16xf32>
  %alpha = mpc.constant dense<0.353553385> : tensor<f32>
  %beta = mpc.constant dense<1.000000e+00> : tensor<f32>
  %q3 = mpc.reshape %q, %merged : (tensor<2x4x16x8xf32>, tensor<3xi64>) -> tensor<8x16x8xf32>
  %k3 = mpc.reshape %k, %merged : (tensor<2x4x16x8xf32>, tensor<3xi64>) -> tensor<8x16x8xf32>
  %kt = mpc.transpose %k3 {perm = array<i64: 0, 2, 1>} : (tensor<8x16x8xf32>) -> tensor<8x8x16xf32>
  %qk = mpc.matmul %q3, %kt : (tensor<8x16x8xf32>, tensor<8x8x16xf32>) -> tensor<8x16x16xf32>
  %scaled = mpc.mul %qk, %alpha : (tensor<8x16x16xf32>, tensor<f32>) -> tensor<8x16x16xf32>
  %addend = mpc.mul %zeros, %beta : (tensor<8x16x16xf32>, tensor<f32>) -> tensor<8x16x16xf32>
  %s3 = mpc.add %scaled, %addend : (tensor<8x16x16xf32>, tensor<8x16x16xf32>) -> tensor<8x16x16xf32>
  %s = mpc.reshape %s3, %heads : (tensor<8x16x16xf32>, tensor<4xi64>) -> tensor<2x4x16x16xf32>
  %ones = mpc.constant dense<true> : tensor<16x16xi1>
  %lower = mpc.trilu %ones {upper = false} : (tensor<16x16xi1>) -> tensor<16x16xi1>
  %min = mpc.constant dense<-3.40282347E+38> : tensor<f32>
  %m = mpc.where %lower, %s, %min : (tensor<16x16xi1>, tensor<2x4x16x16xf32>, tensor<f32>) -> tensor<2x4x16x16xf32>
  %p = mpc.softmax %m : (tensor<2x4x16x16xf32>) -> tensor<2x4x16x16xf32>
  %y = mpc.matmul %p, %v : (tensor<2x4x16x16xf32>, tensor<2x4x16x8xf32>) -> tensor<2x4x16x8xf32> loc("/attention/MatMul_1")
  return %y : tensor<2x4x16x8xf32>
}

// Q and K^T that were never views of [b, h, s, d] tensors: viewed so, K^T
// transposed back (attention takes K).
// CHECK-LABEL: func.func @merged_operands
// CHECK-DAG: %[[Q:.*]] = mpc.reshape %arg0, %{{.*}} -> tensor<2x2x4x8xf32>
// CHECK-DAG: %[[KT:.*]] = mpc.reshape %arg1, %{{.*}} -> tensor<2x2x8x4xf32>
// CHECK: %[[K:.*]] = mpc.transpose %[[KT]] {perm = array<i64: 0, 1, 3, 2>}
// CHECK: mpc.attention %[[Q]], %[[K]], %arg2 {scale = 1.000000e+00 : f32}
func.func @merged_operands(%q3: tensor<4x4x8xf32>, %kt: tensor<4x8x4xf32>, %v: tensor<2x2x4x8xf32>) -> tensor<2x2x4x8xf32> {
  %heads = mpc.constant dense<[2, 2, 4, 4]> : tensor<4xi64>
  %qk = mpc.matmul %q3, %kt : (tensor<4x4x8xf32>, tensor<4x8x4xf32>) -> tensor<4x4x4xf32>
  %s = mpc.reshape %qk, %heads : (tensor<4x4x4xf32>, tensor<4xi64>) -> tensor<2x2x4x4xf32>
  %p = mpc.softmax %s : (tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xf32>
  %y = mpc.matmul %p, %v : (tensor<2x2x4x4xf32>, tensor<2x2x4x8xf32>) -> tensor<2x2x4x8xf32>
  return %y : tensor<2x2x4x8xf32>
}

// A bias of the merged scores, as Bloom's baddbmm adds ALiBi's
// [b * h, 1, skv] times beta: viewed as [b, h, 1, skv] (one of [1, sq,
// skv] as [1, 1, sq, skv]), scaled by beta, the bias.
// CHECK-LABEL: func.func @merged_bias
// CHECK-DAG: %[[AS:.*]] = mpc.mul %arg3, %{{.*}} : (tensor<4x1x4xf32>, tensor<f32>)
// CHECK-DAG: %[[M:.*]] = mpc.reshape %arg4, %{{.*}} -> tensor<1x1x4x4xf32>
// CHECK-DAG: %[[A:.*]] = mpc.reshape %[[AS]], %{{.*}} -> tensor<2x2x1x4xf32>
// CHECK: %[[B:.*]] = mpc.add %[[M]], %[[A]]
// CHECK: mpc.attention %{{.*}}, %{{.*}}, %arg2, %[[B]] {scale = 1.250000e-01 : f32}
// CHECK-NOT: mpc.softmax
func.func @merged_bias(%q3: tensor<4x4x8xf32>, %kt: tensor<4x8x4xf32>, %v: tensor<2x2x4x8xf32>, %alibi: tensor<4x1x4xf32>, %mask: tensor<1x4x4xf32>) -> tensor<2x2x4x8xf32> {
  %heads = mpc.constant dense<[2, 2, 4, 4]> : tensor<4xi64>
  %alpha = mpc.constant dense<1.250000e-01> : tensor<f32>
  %beta = mpc.constant dense<5.000000e-01> : tensor<f32>
  %qk = mpc.matmul %q3, %kt : (tensor<4x4x8xf32>, tensor<4x8x4xf32>) -> tensor<4x4x4xf32>
  %scaled = mpc.mul %qk, %alpha : (tensor<4x4x4xf32>, tensor<f32>) -> tensor<4x4x4xf32>
  %ab = mpc.mul %alibi, %beta : (tensor<4x1x4xf32>, tensor<f32>) -> tensor<4x1x4xf32>
  %b = mpc.add %ab, %scaled : (tensor<4x1x4xf32>, tensor<4x4x4xf32>) -> tensor<4x4x4xf32>
  %bm = mpc.add %b, %mask : (tensor<4x4x4xf32>, tensor<1x4x4xf32>) -> tensor<4x4x4xf32>
  %s = mpc.reshape %bm, %heads : (tensor<4x4x4xf32>, tensor<4xi64>) -> tensor<2x2x4x4xf32>
  %p = mpc.softmax %s : (tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xf32>
  %y = mpc.matmul %p, %v : (tensor<2x2x4x4xf32>, tensor<2x2x4x8xf32>) -> tensor<2x2x4x8xf32>
  return %y : tensor<2x2x4x8xf32>
}

// Left as written: a view that is not a split of the leading dimension ([4, 4, 4] as
// [2, 2, 2, 8] mixes queries and keys)...
// CHECK-LABEL: func.func @not_a_head_split
// CHECK-NOT: mpc.attention
// CHECK: mpc.softmax
func.func @not_a_head_split(%q3: tensor<4x4x8xf32>, %kt: tensor<4x8x4xf32>, %v: tensor<2x2x8x8xf32>) -> tensor<2x2x2x8xf32> {
  %shape = mpc.constant dense<[2, 2, 2, 8]> : tensor<4xi64>
  %qk = mpc.matmul %q3, %kt : (tensor<4x4x8xf32>, tensor<4x8x4xf32>) -> tensor<4x4x4xf32>
  %s = mpc.reshape %qk, %shape : (tensor<4x4x4xf32>, tensor<4xi64>) -> tensor<2x2x2x8xf32>
  %p = mpc.softmax %s : (tensor<2x2x2x8xf32>) -> tensor<2x2x2x8xf32>
  %y = mpc.matmul %p, %v : (tensor<2x2x2x8xf32>, tensor<2x2x8x8xf32>) -> tensor<2x2x2x8xf32>
  return %y : tensor<2x2x2x8xf32>
}

// ...a where() on the merged scores, and merged scores read elsewhere.
// CHECK-LABEL: func.func @where_or_read_twice
// CHECK-NOT: mpc.attention
// CHECK: mpc.softmax
// CHECK-NOT: mpc.attention
// CHECK: mpc.softmax
func.func @where_or_read_twice(%q3: tensor<4x4x8xf32>, %kt: tensor<4x8x4xf32>, %v: tensor<2x2x4x8xf32>, %keep: tensor<4x4x4xi1>) -> (tensor<2x2x4x8xf32>, tensor<2x2x4x8xf32>, tensor<4x4x4xf32>) {
  %heads = mpc.constant dense<[2, 2, 4, 4]> : tensor<4xi64>
  %ninf = mpc.constant dense<0xFF800000> : tensor<f32>
  %qk = mpc.matmul %q3, %kt : (tensor<4x4x8xf32>, tensor<4x8x4xf32>) -> tensor<4x4x4xf32>
  %w = mpc.where %keep, %qk, %ninf : (tensor<4x4x4xi1>, tensor<4x4x4xf32>, tensor<f32>) -> tensor<4x4x4xf32>
  %s = mpc.reshape %w, %heads : (tensor<4x4x4xf32>, tensor<4xi64>) -> tensor<2x2x4x4xf32>
  %p = mpc.softmax %s : (tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xf32>
  %y = mpc.matmul %p, %v : (tensor<2x2x4x4xf32>, tensor<2x2x4x8xf32>) -> tensor<2x2x4x8xf32>
  %qk2 = mpc.matmul %q3, %kt : (tensor<4x4x8xf32>, tensor<4x8x4xf32>) -> tensor<4x4x4xf32>
  %s2 = mpc.reshape %qk2, %heads : (tensor<4x4x4xf32>, tensor<4xi64>) -> tensor<2x2x4x4xf32>
  %p2 = mpc.softmax %s2 : (tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xf32>
  %y2 = mpc.matmul %p2, %v : (tensor<2x2x4x4xf32>, tensor<2x2x4x8xf32>) -> tensor<2x2x4x8xf32>
  return %y, %y2, %qk2 : tensor<2x2x4x8xf32>, tensor<2x2x4x8xf32>, tensor<4x4x4xf32>
}

// BART, Marian, Whisper (Hugging Face's bmm attention): Q K^T over merged
// heads, viewed as heads for the mask and back, a softmax over merged
// scores, P V merged too: one attention over heads, its output merged.
// CHECK-LABEL: func.func @bart
// CHECK-DAG: %[[Q:.*]] = mpc.reshape %arg0, %{{.*}} -> tensor<2x4x16x8xf32>
// CHECK-DAG: %[[K:.*]] = mpc.reshape %arg1, %{{.*}} -> tensor<2x4x16x8xf32>
// CHECK-DAG: %[[V:.*]] = mpc.reshape %arg2, %{{.*}} -> tensor<2x4x16x8xf32>
// CHECK: %[[Y:.*]], %{{.*}} = mpc.attention %[[Q]], %[[K]], %[[V]], %arg3 {scale = 1.000000e+00 : f32}
// CHECK: %[[M:.*]] = mpc.reshape %[[Y]], %{{.*}} -> tensor<8x16x8xf32>
// CHECK-NOT: mpc.softmax
// CHECK: return %[[M]]
func.func @bart(%q3: tensor<8x16x8xf32>, %k3: tensor<8x16x8xf32>, %v3: tensor<8x16x8xf32>, %mask: tensor<2x1x1x16xf32>) -> tensor<8x16x8xf32> {
  %heads = mpc.constant dense<[2, 4, 16, 16]> : tensor<4xi64>
  %merged = mpc.constant dense<[8, 16, 16]> : tensor<3xi64>
  %kt = mpc.transpose %k3 {perm = array<i64: 0, 2, 1>} : (tensor<8x16x8xf32>) -> tensor<8x8x16xf32>
  %qk = mpc.matmul %q3, %kt : (tensor<8x16x8xf32>, tensor<8x8x16xf32>) -> tensor<8x16x16xf32>
  %s4 = mpc.reshape %qk, %heads : (tensor<8x16x16xf32>, tensor<4xi64>) -> tensor<2x4x16x16xf32>
  %b = mpc.add %s4, %mask : (tensor<2x4x16x16xf32>, tensor<2x1x1x16xf32>) -> tensor<2x4x16x16xf32>
  %s3 = mpc.reshape %b, %merged : (tensor<2x4x16x16xf32>, tensor<3xi64>) -> tensor<8x16x16xf32>
  %p = mpc.softmax %s3 : (tensor<8x16x16xf32>) -> tensor<8x16x16xf32>
  %y = mpc.matmul %p, %v3 : (tensor<8x16x16xf32>, tensor<8x16x8xf32>) -> tensor<8x16x8xf32>
  return %y : tensor<8x16x8xf32>
}

// Left as written: viewed as 2 x 4 heads for the mask, but the product's
// merged dimension split 4 x 2.
// CHECK-LABEL: func.func @bart_other_heads
// CHECK-NOT: mpc.attention
// CHECK: mpc.softmax
func.func @bart_other_heads(%q3: tensor<8x16x8xf32>, %kt: tensor<8x8x16xf32>, %v3: tensor<8x16x8xf32>, %mask: tensor<4x2x16x16xf32>) -> tensor<8x16x8xf32> {
  %split = mpc.constant dense<[4, 2, 16, 16]> : tensor<4xi64>
  %merged = mpc.constant dense<[8, 16, 16]> : tensor<3xi64>
  %back = mpc.constant dense<[2, 4, 16, 16]> : tensor<4xi64>
  %qk = mpc.matmul %q3, %kt : (tensor<8x16x8xf32>, tensor<8x8x16xf32>) -> tensor<8x16x16xf32>
  %s4 = mpc.reshape %qk, %split : (tensor<8x16x16xf32>, tensor<4xi64>) -> tensor<4x2x16x16xf32>
  %b = mpc.add %s4, %mask : (tensor<4x2x16x16xf32>, tensor<4x2x16x16xf32>) -> tensor<4x2x16x16xf32>
  %s3 = mpc.reshape %b, %merged : (tensor<4x2x16x16xf32>, tensor<3xi64>) -> tensor<8x16x16xf32>
  %s5 = mpc.reshape %s3, %back : (tensor<8x16x16xf32>, tensor<4xi64>) -> tensor<2x4x16x16xf32>
  %s6 = mpc.reshape %s5, %merged : (tensor<2x4x16x16xf32>, tensor<3xi64>) -> tensor<8x16x16xf32>
  %p = mpc.softmax %s6 : (tensor<8x16x16xf32>) -> tensor<8x16x16xf32>
  %y = mpc.matmul %p, %v3 : (tensor<8x16x16xf32>, tensor<8x16x8xf32>) -> tensor<8x16x8xf32>
  return %y : tensor<8x16x8xf32>
}

// torchvision's Swin (shifted windows): scores over merged batch and
// windows [b * nw, h, n, n] with the relative position bias [1, h, n, n]
// added, viewed [b, nw, h, n, n] for the shift's mask [1, nw, 1, n, n],
// and back. One attention over [b, nw, h, n, d]; the bias term added
// merged is split too, K's transpose folds away, the output is merged.
// CHECK-LABEL: func.func @swin
// CHECK-DAG: %[[Q:.*]] = mpc.reshape %arg0, %{{.*}} -> tensor<2x4x2x16x8xf32>
// CHECK-DAG: %[[K:.*]] = mpc.reshape %arg1, %{{.*}} -> tensor<2x4x2x16x8xf32>
// CHECK-DAG: %[[V:.*]] = mpc.reshape %arg2, %{{.*}} -> tensor<2x4x2x16x8xf32>
// CHECK-DAG: %[[REL:.*]] = mpc.reshape %arg3, %{{.*}} -> tensor<1x1x2x16x16xf32>
// CHECK: %[[B:.*]] = mpc.add %arg4, %[[REL]] : (tensor<1x4x1x16x16xf32>, tensor<1x1x2x16x16xf32>) -> tensor<1x4x2x16x16xf32>
// CHECK: %[[Y:.*]], %{{.*}} = mpc.attention %[[Q]], %[[K]], %[[V]], %[[B]] {scale = 0.353553385 : f32}
// CHECK: %[[M:.*]] = mpc.reshape %[[Y]], %{{.*}} -> tensor<8x2x16x8xf32>
// CHECK-NOT: mpc.transpose
// CHECK-NOT: mpc.softmax
// CHECK: return %[[M]]
// LOC-LABEL: func.func @swin
// LOC: mpc.attention {{.*}} loc("/swin/MatMul_1")
func.func @swin(%q: tensor<8x2x16x8xf32>, %k: tensor<8x2x16x8xf32>, %v: tensor<8x2x16x8xf32>, %rel: tensor<1x2x16x16xf32>, %shift: tensor<1x4x1x16x16xf32>) -> tensor<8x2x16x8xf32> {
  %windows = mpc.constant dense<[2, 4, 2, 16, 16]> : tensor<5xi64>
  %merged = mpc.constant dense<[8, 2, 16, 16]> : tensor<4xi64>
  %c = mpc.constant dense<0.353553385> : tensor<f32>
  %qs = mpc.mul %q, %c : (tensor<8x2x16x8xf32>, tensor<f32>) -> tensor<8x2x16x8xf32>
  %kt = mpc.transpose %k {perm = array<i64: 0, 1, 3, 2>} : (tensor<8x2x16x8xf32>) -> tensor<8x2x8x16xf32>
  %qk = mpc.matmul %qs, %kt : (tensor<8x2x16x8xf32>, tensor<8x2x8x16xf32>) -> tensor<8x2x16x16xf32>
  %r = mpc.add %qk, %rel : (tensor<8x2x16x16xf32>, tensor<1x2x16x16xf32>) -> tensor<8x2x16x16xf32>
  %w5 = mpc.reshape %r, %windows : (tensor<8x2x16x16xf32>, tensor<5xi64>) -> tensor<2x4x2x16x16xf32>
  %m5 = mpc.add %w5, %shift : (tensor<2x4x2x16x16xf32>, tensor<1x4x1x16x16xf32>) -> tensor<2x4x2x16x16xf32>
  %s = mpc.reshape %m5, %merged : (tensor<2x4x2x16x16xf32>, tensor<4xi64>) -> tensor<8x2x16x16xf32>
  %p = mpc.softmax %s : (tensor<8x2x16x16xf32>) -> tensor<8x2x16x16xf32>
  %y = mpc.matmul %p, %v : (tensor<8x2x16x16xf32>, tensor<8x2x16x8xf32>) -> tensor<8x2x16x8xf32> loc("/swin/MatMul_1")
  return %y : tensor<8x2x16x8xf32>
}

// Left as written: the windows' view merged back across windows and
// heads ([2, 4, 2, n, n] as [4, 4, n, n]), not into the product's
// [b * nw, h]; and masked scores with a second reader.
// CHECK-LABEL: func.func @swin_other_merge
// CHECK-NOT: mpc.attention
// CHECK: mpc.softmax
// CHECK-LABEL: func.func @swin_extra_reader
// CHECK-NOT: mpc.attention
// CHECK: mpc.softmax
func.func @swin_other_merge(%qk: tensor<8x2x16x16xf32>, %v: tensor<4x4x16x8xf32>, %shift: tensor<1x4x1x16x16xf32>) -> tensor<4x4x16x8xf32> {
  %windows = mpc.constant dense<[2, 4, 2, 16, 16]> : tensor<5xi64>
  %other = mpc.constant dense<[4, 4, 16, 16]> : tensor<4xi64>
  %w5 = mpc.reshape %qk, %windows : (tensor<8x2x16x16xf32>, tensor<5xi64>) -> tensor<2x4x2x16x16xf32>
  %m5 = mpc.add %w5, %shift : (tensor<2x4x2x16x16xf32>, tensor<1x4x1x16x16xf32>) -> tensor<2x4x2x16x16xf32>
  %s = mpc.reshape %m5, %other : (tensor<2x4x2x16x16xf32>, tensor<4xi64>) -> tensor<4x4x16x16xf32>
  %p = mpc.softmax %s : (tensor<4x4x16x16xf32>) -> tensor<4x4x16x16xf32>
  %y = mpc.matmul %p, %v : (tensor<4x4x16x16xf32>, tensor<4x4x16x8xf32>) -> tensor<4x4x16x8xf32>
  return %y : tensor<4x4x16x8xf32>
}
func.func @swin_extra_reader(%q: tensor<8x2x16x8xf32>, %kt: tensor<8x2x8x16xf32>, %v: tensor<8x2x16x8xf32>, %shift: tensor<1x4x1x16x16xf32>) -> (tensor<8x2x16x8xf32>, tensor<2x4x2x16x16xf32>) {
  %windows = mpc.constant dense<[2, 4, 2, 16, 16]> : tensor<5xi64>
  %merged = mpc.constant dense<[8, 2, 16, 16]> : tensor<4xi64>
  %qk = mpc.matmul %q, %kt : (tensor<8x2x16x8xf32>, tensor<8x2x8x16xf32>) -> tensor<8x2x16x16xf32>
  %w5 = mpc.reshape %qk, %windows : (tensor<8x2x16x16xf32>, tensor<5xi64>) -> tensor<2x4x2x16x16xf32>
  %m5 = mpc.add %w5, %shift : (tensor<2x4x2x16x16xf32>, tensor<1x4x1x16x16xf32>) -> tensor<2x4x2x16x16xf32>
  %s = mpc.reshape %m5, %merged : (tensor<2x4x2x16x16xf32>, tensor<4xi64>) -> tensor<8x2x16x16xf32>
  %p = mpc.softmax %s : (tensor<8x2x16x16xf32>) -> tensor<8x2x16x16xf32>
  %y = mpc.matmul %p, %v : (tensor<8x2x16x16xf32>, tensor<8x2x16x8xf32>) -> tensor<8x2x16x8xf32>
  return %y, %m5 : tensor<8x2x16x8xf32>, tensor<2x4x2x16x16xf32>
}
