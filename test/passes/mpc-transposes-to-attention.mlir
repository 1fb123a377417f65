// RUN: mpc-opt %s -mpc-transposes-to-attention | FileCheck %s
// RUN: mpc-opt %s -mpc-transposes-to-attention -mlir-print-debuginfo | FileCheck %s --check-prefix=LOC
// RUN: mpc-opt %s -mpc-transposes-to-attention -mlir-print-debuginfo | FileCheck %s --check-prefix=ULOC

// nn.MultiheadAttention(batch_first=True) as torch 1.13 exports it (after
// mpc-slices-to-split and mpc-fuse-attention): batch 4, 16 tokens, 4 heads
// of 16. The input projection runs on the batch-first rows and each part
// is transposed; the output's transpose moves before its GEMM.
// CHECK-LABEL: func.func @mha
// CHECK: %[[M:.*]] = mpc.matmul %arg0, %arg1 : (tensor<4x16x64xf32>, tensor<64x192xf32>) -> tensor<4x16x192xf32>
// CHECK: %[[A:.*]] = mpc.add %arg2, %[[M]] : (tensor<192xf32>, tensor<4x16x192xf32>) -> tensor<4x16x192xf32>
// CHECK: %[[P:.*]]:3 = mpc.split %[[A]] {axis = 2 : i64, num_outputs = 3 : i64, split = array<i64: 64, 64, 64>} : (tensor<4x16x192xf32>)
// CHECK: mpc.transpose %[[P]]#0 {perm = array<i64: 1, 0, 2>} : (tensor<4x16x64xf32>) -> tensor<16x4x64xf32>
// CHECK: mpc.transpose %[[P]]#1 {perm = array<i64: 1, 0, 2>} : (tensor<4x16x64xf32>) -> tensor<16x4x64xf32>
// CHECK: mpc.transpose %[[P]]#2 {perm = array<i64: 1, 0, 2>} : (tensor<4x16x64xf32>) -> tensor<16x4x64xf32>
// CHECK: %[[Y:.*]], %{{.*}} = mpc.attention
// CHECK: %[[HB:.*]] = mpc.transpose %[[Y]]
// CHECK: %[[R:.*]] = mpc.reshape %[[HB]], %{{.*}} -> tensor<64x64xf32>
// CHECK: %[[R3:.*]] = mpc.reshape %[[R]], %{{.*}} -> tensor<16x4x64xf32>
// CHECK: %[[BF:.*]] = mpc.transpose %[[R3]] {perm = array<i64: 1, 0, 2>} : (tensor<16x4x64xf32>) -> tensor<4x16x64xf32>
// CHECK: %[[R2:.*]] = mpc.reshape %[[BF]], %{{.*}} -> tensor<64x64xf32>
// CHECK: %[[G:.*]] = mpc.gemm %[[R2]], %arg3, %arg4 {transB = true}
// CHECK: %[[OUT:.*]] = mpc.reshape %[[G]], %{{.*}} -> tensor<4x16x64xf32>
// CHECK: return %[[OUT]]
// LOC-LABEL: func.func @mha
// LOC: mpc.transpose {{.*}} -> tensor<16x4x64xf32> loc(#[[IN:loc[0-9]*]])
// LOC: mpc.transpose {{.*}} -> tensor<4x16x64xf32> loc(#[[OUT:loc[0-9]*]])
// LOC-DAG: #[[IN]] = loc("attn/Transpose")
// LOC-DAG: #[[OUT]] = loc("attn/Transpose_5")
func.func @mha(%x: tensor<4x16x64xf32>, %w: tensor<64x192xf32>, %b: tensor<192xf32>, %wo: tensor<64x64xf32>, %bo: tensor<64xf32>) -> tensor<4x16x64xf32> {
  %heads = mpc.constant dense<[16, 16, 16]> : tensor<3xi64>
  %rows = mpc.constant dense<[64, 64]> : tensor<2xi64>
  %seq = mpc.constant dense<[16, 4, 64]> : tensor<3xi64>
  %t = mpc.transpose %x {perm = array<i64: 1, 0, 2>} : (tensor<4x16x64xf32>) -> tensor<16x4x64xf32> loc("attn/Transpose")
  %m = mpc.matmul %t, %w : (tensor<16x4x64xf32>, tensor<64x192xf32>) -> tensor<16x4x192xf32>
  %a = mpc.add %b, %m : (tensor<192xf32>, tensor<16x4x192xf32>) -> tensor<16x4x192xf32>
  %p:3 = mpc.split %a {axis = 2 : i64, num_outputs = 3 : i64, split = array<i64: 64, 64, 64>} : (tensor<16x4x192xf32>) -> (tensor<16x4x64xf32>, tensor<16x4x64xf32>, tensor<16x4x64xf32>)
  %q0 = mpc.reshape %p#0, %heads : (tensor<16x4x64xf32>, tensor<3xi64>) -> tensor<16x16x16xf32>
  %q = mpc.transpose %q0 {perm = array<i64: 1, 0, 2>} : (tensor<16x16x16xf32>) -> tensor<16x16x16xf32>
  %k0 = mpc.reshape %p#1, %heads : (tensor<16x4x64xf32>, tensor<3xi64>) -> tensor<16x16x16xf32>
  %k = mpc.transpose %k0 {perm = array<i64: 1, 0, 2>} : (tensor<16x16x16xf32>) -> tensor<16x16x16xf32>
  %v0 = mpc.reshape %p#2, %heads : (tensor<16x4x64xf32>, tensor<3xi64>) -> tensor<16x16x16xf32>
  %v = mpc.transpose %v0 {perm = array<i64: 1, 0, 2>} : (tensor<16x16x16xf32>) -> tensor<16x16x16xf32>
  %y, %lse = mpc.attention %q, %k, %v {scale = 2.500000e-01 : f32} : (tensor<16x16x16xf32>, tensor<16x16x16xf32>, tensor<16x16x16xf32>) -> (tensor<16x16x16xf32>, tensor<16x16xf32>)
  %yt = mpc.transpose %y {perm = array<i64: 1, 0, 2>} : (tensor<16x16x16xf32>) -> tensor<16x16x16xf32>
  %r1 = mpc.reshape %yt, %rows : (tensor<16x16x16xf32>, tensor<2xi64>) -> tensor<64x64xf32>
  %g = mpc.gemm %r1, %wo, %bo {transB = true} : (tensor<64x64xf32>, tensor<64x64xf32>, tensor<64xf32>) -> tensor<64x64xf32>
  %r2 = mpc.reshape %g, %seq : (tensor<64x64xf32>, tensor<3xi64>) -> tensor<16x4x64xf32>
  %o = mpc.transpose %r2 {perm = array<i64: 1, 0, 2>} : (tensor<16x4x64xf32>) -> tensor<4x16x64xf32> loc("attn/Transpose_5")
  return %o : tensor<4x16x64xf32>
}

// Left as written: a part read by something else than attention, a bias
// that differs between rows, a transpose that moves the last dim, and an
// output projection whose input is no attention result.
// CHECK-LABEL: func.func @part_read_elsewhere
// CHECK: mpc.transpose %arg0
// CHECK-NEXT: mpc.matmul
// CHECK-LABEL: func.func @row_bias
// CHECK: mpc.transpose %arg0
// CHECK-NEXT: mpc.matmul
// CHECK-LABEL: func.func @moves_last_dim
// CHECK: mpc.transpose %arg0
// CHECK-NEXT: mpc.matmul
// CHECK-LABEL: func.func @not_attention
// CHECK: mpc.gemm %arg0
// CHECK: %[[T:.*]] = mpc.transpose
// CHECK-NEXT: return %[[T]]
func.func @part_read_elsewhere(%x: tensor<4x16x64xf32>, %w: tensor<64x128xf32>) -> (tensor<16x16x16xf32>, tensor<16x4x64xf32>) {
  %heads = mpc.constant dense<[16, 16, 16]> : tensor<3xi64>
  %t = mpc.transpose %x {perm = array<i64: 1, 0, 2>} : (tensor<4x16x64xf32>) -> tensor<16x4x64xf32>
  %m = mpc.matmul %t, %w : (tensor<16x4x64xf32>, tensor<64x128xf32>) -> tensor<16x4x128xf32>
  %p:2 = mpc.split %m {axis = 2 : i64, num_outputs = 2 : i64} : (tensor<16x4x128xf32>) -> (tensor<16x4x64xf32>, tensor<16x4x64xf32>)
  %q = mpc.reshape %p#0, %heads : (tensor<16x4x64xf32>, tensor<3xi64>) -> tensor<16x16x16xf32>
  %k = mpc.reshape %p#1, %heads : (tensor<16x4x64xf32>, tensor<3xi64>) -> tensor<16x16x16xf32>
  %y, %lse = mpc.attention %q, %k, %k {scale = 2.500000e-01 : f32} : (tensor<16x16x16xf32>, tensor<16x16x16xf32>, tensor<16x16x16xf32>) -> (tensor<16x16x16xf32>, tensor<16x16xf32>)
  return %y, %p#1 : tensor<16x16x16xf32>, tensor<16x4x64xf32>
}
func.func @row_bias(%x: tensor<4x16x64xf32>, %w: tensor<64x128xf32>, %b: tensor<16x4x128xf32>) -> tensor<16x16x16xf32> {
  %heads = mpc.constant dense<[16, 16, 16]> : tensor<3xi64>
  %t = mpc.transpose %x {perm = array<i64: 1, 0, 2>} : (tensor<4x16x64xf32>) -> tensor<16x4x64xf32>
  %m = mpc.matmul %t, %w : (tensor<16x4x64xf32>, tensor<64x128xf32>) -> tensor<16x4x128xf32>
  %a = mpc.add %m, %b : (tensor<16x4x128xf32>, tensor<16x4x128xf32>) -> tensor<16x4x128xf32>
  %p:2 = mpc.split %a {axis = 2 : i64, num_outputs = 2 : i64} : (tensor<16x4x128xf32>) -> (tensor<16x4x64xf32>, tensor<16x4x64xf32>)
  %q = mpc.reshape %p#0, %heads : (tensor<16x4x64xf32>, tensor<3xi64>) -> tensor<16x16x16xf32>
  %k = mpc.reshape %p#1, %heads : (tensor<16x4x64xf32>, tensor<3xi64>) -> tensor<16x16x16xf32>
  %y, %lse = mpc.attention %q, %k, %k {scale = 2.500000e-01 : f32} : (tensor<16x16x16xf32>, tensor<16x16x16xf32>, tensor<16x16x16xf32>) -> (tensor<16x16x16xf32>, tensor<16x16xf32>)
  return %y : tensor<16x16x16xf32>
}
func.func @moves_last_dim(%x: tensor<16x4x64xf32>, %w: tensor<16x128xf32>) -> tensor<64x4x64xf32> {
  %t = mpc.transpose %x {perm = array<i64: 2, 1, 0>} : (tensor<16x4x64xf32>) -> tensor<64x4x16xf32>
  %m = mpc.matmul %t, %w : (tensor<64x4x16xf32>, tensor<16x128xf32>) -> tensor<64x4x128xf32>
  %p:2 = mpc.split %m {axis = 2 : i64, num_outputs = 2 : i64} : (tensor<64x4x128xf32>) -> (tensor<64x4x64xf32>, tensor<64x4x64xf32>)
  %y, %lse = mpc.attention %p#0, %p#1, %p#1 {scale = 1.250000e-01 : f32} : (tensor<64x4x64xf32>, tensor<64x4x64xf32>, tensor<64x4x64xf32>) -> (tensor<64x4x64xf32>, tensor<64x4xf32>)
  return %y : tensor<64x4x64xf32>
}
func.func @not_attention(%r1: tensor<64x64xf32>, %wo: tensor<64x64xf32>) -> tensor<4x16x64xf32> {
  %seq = mpc.constant dense<[16, 4, 64]> : tensor<3xi64>
  %g = mpc.gemm %r1, %wo {transB = true} : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32>
  %r2 = mpc.reshape %g, %seq : (tensor<64x64xf32>, tensor<3xi64>) -> tensor<16x4x64xf32>
  %o = mpc.transpose %r2 {perm = array<i64: 1, 0, 2>} : (tensor<16x4x64xf32>) -> tensor<4x16x64xf32>
  return %o : tensor<4x16x64xf32>
}

// timm's and torchvision's ViT attention: the projection viewed [B, N, 3,
// H, D], permuted (2, 0, 3, 1, 4) and unbound into Q, K, V (a Split of
// one-element parts, squeezed; mpc-slices-to-split makes torchvision's
// qkv[0], qkv[1], qkv[2] the same). Unbound before the permutation: the
// Split along axis 2, each part viewed [B, N, H, D] and transposed (0, 2,
// 1, 3), as GPT-2's parts are.
// CHECK-LABEL: func.func @vit_unbind
// CHECK: %[[P:.*]]:3 = mpc.split %{{.*}} {axis = 2 : i64, num_outputs = 3 : i64, split = array<i64: 1, 1, 1>} : (tensor<2x17x3x4x16xf32>) -> (tensor<2x17x1x4x16xf32>, tensor<2x17x1x4x16xf32>, tensor<2x17x1x4x16xf32>)
// CHECK: %[[Q:.*]] = mpc.reshape %[[P]]#0, %{{.*}} -> tensor<2x17x4x16xf32>
// CHECK: %[[QT:.*]] = mpc.transpose %[[Q]] {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x17x4x16xf32>) -> tensor<2x4x17x16xf32>
// CHECK: %[[K:.*]] = mpc.reshape %[[P]]#1, %{{.*}} -> tensor<2x17x4x16xf32>
// CHECK: %[[KT:.*]] = mpc.transpose %[[K]] {perm = array<i64: 0, 2, 1, 3>}
// CHECK: %[[V:.*]] = mpc.reshape %[[P]]#2, %{{.*}} -> tensor<2x17x4x16xf32>
// CHECK: %[[VT:.*]] = mpc.transpose %[[V]] {perm = array<i64: 0, 2, 1, 3>}
// CHECK: mpc.attention %[[QT]], %[[KT]], %[[VT]]
// CHECK-NOT: mpc.squeeze
// CHECK-NOT: perm = array<i64: 2, 0, 3, 1, 4>
// ULOC: mpc.transpose {{.*}} -> tensor<2x4x17x16xf32> loc(#[[PERM:loc[0-9]*]])
// ULOC: #[[PERM]] = loc("attn/permute")
func.func @vit_unbind(%p: tensor<2x17x192xf32>) -> tensor<2x4x17x16xf32> {
  %s5 = mpc.constant dense<[2, 17, 3, 4, 16]> : tensor<5xi64>
  %r = mpc.reshape %p, %s5 : (tensor<2x17x192xf32>, tensor<5xi64>) -> tensor<2x17x3x4x16xf32>
  %t = mpc.transpose %r {perm = array<i64: 2, 0, 3, 1, 4>} : (tensor<2x17x3x4x16xf32>) -> tensor<3x2x4x17x16xf32> loc("attn/permute")
  %parts:3 = mpc.split %t {axis = 0 : i64, num_outputs = 3 : i64, split = array<i64: 1, 1, 1>} : (tensor<3x2x4x17x16xf32>) -> (tensor<1x2x4x17x16xf32>, tensor<1x2x4x17x16xf32>, tensor<1x2x4x17x16xf32>)
  %q = mpc.squeeze %parts#0 {axes = array<i64: 0>} : (tensor<1x2x4x17x16xf32>) -> tensor<2x4x17x16xf32>
  %k = mpc.squeeze %parts#1 {axes = array<i64: 0>} : (tensor<1x2x4x17x16xf32>) -> tensor<2x4x17x16xf32>
  %v = mpc.squeeze %parts#2 {axes = array<i64: 0>} : (tensor<1x2x4x17x16xf32>) -> tensor<2x4x17x16xf32>
  %y, %lse = mpc.attention %q, %k, %v {scale = 2.500000e-01 : f32} : (tensor<2x4x17x16xf32>, tensor<2x4x17x16xf32>, tensor<2x4x17x16xf32>) -> (tensor<2x4x17x16xf32>, tensor<2x4x17xf32>)
  return %y : tensor<2x4x17x16xf32>
}

// An attention adding a learned bias (Swin's relative positions) is
// unbound the same: the bias's gradient comes from mpc.attention_grad's
// dS, so nothing but attention reads Q and K. Left as written: a part
// read besides attention.
// CHECK-LABEL: func.func @unbind_learned_bias
// CHECK: mpc.split %{{.*}} {axis = 2 : i64
// CHECK-NOT: perm = array<i64: 2, 0, 3, 1, 4>
// CHECK: mpc.attention {{.*}}, %arg1 {
// CHECK-LABEL: func.func @unbind_part_read_elsewhere
// CHECK: mpc.transpose %{{.*}} {perm = array<i64: 2, 0, 3, 1, 4>}
// CHECK: mpc.split %{{.*}} {axis = 0 : i64
mpc.param @rel trainable : tensor<1x4x17x17xf32> = dense<0.0> : tensor<1x4x17x17xf32>
func.func @unbind_learned_bias(%p: tensor<2x17x192xf32>, %rel: tensor<1x4x17x17xf32> {mpc.param = @rel}) -> tensor<2x4x17x16xf32> {
  %s5 = mpc.constant dense<[2, 17, 3, 4, 16]> : tensor<5xi64>
  %r = mpc.reshape %p, %s5 : (tensor<2x17x192xf32>, tensor<5xi64>) -> tensor<2x17x3x4x16xf32>
  %t = mpc.transpose %r {perm = array<i64: 2, 0, 3, 1, 4>} : (tensor<2x17x3x4x16xf32>) -> tensor<3x2x4x17x16xf32>
  %parts:3 = mpc.split %t {axis = 0 : i64, num_outputs = 3 : i64, split = array<i64: 1, 1, 1>} : (tensor<3x2x4x17x16xf32>) -> (tensor<1x2x4x17x16xf32>, tensor<1x2x4x17x16xf32>, tensor<1x2x4x17x16xf32>)
  %q = mpc.squeeze %parts#0 {axes = array<i64: 0>} : (tensor<1x2x4x17x16xf32>) -> tensor<2x4x17x16xf32>
  %k = mpc.squeeze %parts#1 {axes = array<i64: 0>} : (tensor<1x2x4x17x16xf32>) -> tensor<2x4x17x16xf32>
  %v = mpc.squeeze %parts#2 {axes = array<i64: 0>} : (tensor<1x2x4x17x16xf32>) -> tensor<2x4x17x16xf32>
  %y, %lse = mpc.attention %q, %k, %v, %rel {scale = 2.500000e-01 : f32} : (tensor<2x4x17x16xf32>, tensor<2x4x17x16xf32>, tensor<2x4x17x16xf32>, tensor<1x4x17x17xf32>) -> (tensor<2x4x17x16xf32>, tensor<2x4x17xf32>)
  return %y : tensor<2x4x17x16xf32>
}

func.func @unbind_part_read_elsewhere(%p: tensor<2x17x192xf32>) -> (tensor<2x4x17x16xf32>, tensor<2x4x17x16xf32>) {
  %s5 = mpc.constant dense<[2, 17, 3, 4, 16]> : tensor<5xi64>
  %r = mpc.reshape %p, %s5 : (tensor<2x17x192xf32>, tensor<5xi64>) -> tensor<2x17x3x4x16xf32>
  %t = mpc.transpose %r {perm = array<i64: 2, 0, 3, 1, 4>} : (tensor<2x17x3x4x16xf32>) -> tensor<3x2x4x17x16xf32>
  %parts:3 = mpc.split %t {axis = 0 : i64, num_outputs = 3 : i64, split = array<i64: 1, 1, 1>} : (tensor<3x2x4x17x16xf32>) -> (tensor<1x2x4x17x16xf32>, tensor<1x2x4x17x16xf32>, tensor<1x2x4x17x16xf32>)
  %q = mpc.squeeze %parts#0 {axes = array<i64: 0>} : (tensor<1x2x4x17x16xf32>) -> tensor<2x4x17x16xf32>
  %k = mpc.squeeze %parts#1 {axes = array<i64: 0>} : (tensor<1x2x4x17x16xf32>) -> tensor<2x4x17x16xf32>
  %v = mpc.squeeze %parts#2 {axes = array<i64: 0>} : (tensor<1x2x4x17x16xf32>) -> tensor<2x4x17x16xf32>
  %y, %lse = mpc.attention %q, %k, %v {scale = 2.500000e-01 : f32} : (tensor<2x4x17x16xf32>, tensor<2x4x17x16xf32>, tensor<2x4x17x16xf32>) -> (tensor<2x4x17x16xf32>, tensor<2x4x17xf32>)
  %q2 = mpc.neg %q : (tensor<2x4x17x16xf32>) -> tensor<2x4x17x16xf32>
  return %y, %q2 : tensor<2x4x17x16xf32>, tensor<2x4x17x16xf32>
}
