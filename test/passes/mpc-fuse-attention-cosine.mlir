// RUN: mpc-opt %s -mpc-fuse-attention | FileCheck %s
// RUN: mpc-opt %s -mpc-fuse-attention --mlir-print-debuginfo --mlir-print-local-scope | FileCheck %s --check-prefix=LOC

// timm's SwinV2 (cosine attention): the product of normalized Q and K
// times a learned per-head scale [h, 1, 1] (exp of a clamped logit
// scale), the same for every query and key of a head: moved onto Q, the
// op's scale 1.
// CHECK-LABEL: func.func @cosine
// CHECK: %[[QS:.*]] = mpc.mul %arg0, %arg3 : (tensor<8x2x16x8xf32>, tensor<2x1x1xf32>) -> tensor<8x2x16x8xf32>
// CHECK: %[[Y:.*]], %{{.*}} = mpc.attention %[[QS]], %arg1, %arg2, %arg4 {scale = 1.000000e+00 : f32}
// CHECK-NOT: mpc.softmax
// LOC-LABEL: func.func @cosine
// LOC: mpc.mul {{.*}} loc("/cosine/MatMul_1")
// LOC: mpc.attention {{.*}} loc("/cosine/MatMul_1")
func.func @cosine(%q: tensor<8x2x16x8xf32>, %k: tensor<8x2x16x8xf32>, %v: tensor<8x2x16x8xf32>, %logit: tensor<2x1x1xf32>, %rel: tensor<1x2x16x16xf32>) -> tensor<8x2x16x8xf32> {
  %kt = mpc.transpose %k {perm = array<i64: 0, 1, 3, 2>} : (tensor<8x2x16x8xf32>) -> tensor<8x2x8x16xf32>
  %qk = mpc.matmul %q, %kt : (tensor<8x2x16x8xf32>, tensor<8x2x8x16xf32>) -> tensor<8x2x16x16xf32>
  %sc = mpc.mul %qk, %logit : (tensor<8x2x16x16xf32>, tensor<2x1x1xf32>) -> tensor<8x2x16x16xf32>
  %s = mpc.add %sc, %rel : (tensor<8x2x16x16xf32>, tensor<1x2x16x16xf32>) -> tensor<8x2x16x16xf32>
  %p = mpc.softmax %s : (tensor<8x2x16x16xf32>) -> tensor<8x2x16x16xf32>
  %y = mpc.matmul %p, %v : (tensor<8x2x16x16xf32>, tensor<8x2x16x8xf32>) -> tensor<8x2x16x8xf32> loc("/cosine/MatMul_1")
  return %y : tensor<8x2x16x8xf32>
}

// Left as written: a scale that differs between keys ([h, 1, skv]) is
// not one of Q's rows; nor is one applied outside a mask.
// CHECK-LABEL: func.func @cosine_per_key
// CHECK-NOT: mpc.attention
// CHECK: mpc.softmax
// CHECK-LABEL: func.func @scale_outside_mask
// CHECK-NOT: mpc.attention
// CHECK: mpc.softmax
func.func @cosine_per_key(%q: tensor<8x2x16x8xf32>, %kt: tensor<8x2x8x16xf32>, %v: tensor<8x2x16x8xf32>, %logit: tensor<2x1x16xf32>) -> tensor<8x2x16x8xf32> {
  %qk = mpc.matmul %q, %kt : (tensor<8x2x16x8xf32>, tensor<8x2x8x16xf32>) -> tensor<8x2x16x16xf32>
  %sc = mpc.mul %qk, %logit : (tensor<8x2x16x16xf32>, tensor<2x1x16xf32>) -> tensor<8x2x16x16xf32>
  %p = mpc.softmax %sc : (tensor<8x2x16x16xf32>) -> tensor<8x2x16x16xf32>
  %y = mpc.matmul %p, %v : (tensor<8x2x16x16xf32>, tensor<8x2x16x8xf32>) -> tensor<8x2x16x8xf32>
  return %y : tensor<8x2x16x8xf32>
}
func.func @scale_outside_mask(%q: tensor<8x2x16x8xf32>, %kt: tensor<8x2x8x16xf32>, %v: tensor<8x2x16x8xf32>, %logit: tensor<2x1x1xf32>, %rel: tensor<1x2x16x16xf32>) -> tensor<8x2x16x8xf32> {
  %qk = mpc.matmul %q, %kt : (tensor<8x2x16x8xf32>, tensor<8x2x8x16xf32>) -> tensor<8x2x16x16xf32>
  %b = mpc.add %qk, %rel : (tensor<8x2x16x16xf32>, tensor<1x2x16x16xf32>) -> tensor<8x2x16x16xf32>
  %sc = mpc.mul %b, %logit : (tensor<8x2x16x16xf32>, tensor<2x1x1xf32>) -> tensor<8x2x16x16xf32>
  %p = mpc.softmax %sc : (tensor<8x2x16x16xf32>) -> tensor<8x2x16x16xf32>
  %y = mpc.matmul %p, %v : (tensor<8x2x16x16xf32>, tensor<8x2x16x8xf32>) -> tensor<8x2x16x8xf32>
  return %y : tensor<8x2x16x8xf32>
}
