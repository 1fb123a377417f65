// RUN: mpc-opt %s -mpc-transposes-to-attention | FileCheck %s
// RUN: mpc-opt %s -mpc-transposes-to-attention -mlir-print-debuginfo | FileCheck %s --check-prefix=LOC

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
