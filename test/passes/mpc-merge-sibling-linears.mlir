// RUN: mpc-opt %s -mpc-merge-sibling-linears | FileCheck %s
// RUN: mpc-opt %s -mpc-merge-sibling-linears -mlir-print-debuginfo | FileCheck %s --check-prefix=LOC

// BERT's query, key and value Linears (the bias on either side of the
// Add; GQA-narrow key and value): one MatMul by the weights concatenated
// along N, one Add of the concatenated biases, split back.
// CHECK-LABEL: func.func @qkv
// CHECK-NEXT: %[[W:.*]] = mpc.concat %arg1, %arg3, %arg5 {axis = 1 : i64} : (tensor<64x64xf32>, tensor<64x32xf32>, tensor<64x32xf32>) -> tensor<64x128xf32>
// CHECK-NEXT: %[[M:.*]] = mpc.matmul %arg0, %[[W]] : (tensor<2x16x64xf32>, tensor<64x128xf32>) -> tensor<2x16x128xf32>
// CHECK-NEXT: %[[B:.*]] = mpc.concat %arg2, %arg4, %arg6 {axis = 0 : i64} : (tensor<64xf32>, tensor<32xf32>, tensor<32xf32>) -> tensor<128xf32>
// CHECK-NEXT: %[[Y:.*]] = mpc.add %[[M]], %[[B]]
// CHECK-NEXT: %[[S:.*]]:3 = mpc.split %[[Y]] {axis = 2 : i64, num_outputs = 3 : i64, split = array<i64: 64, 32, 32>}
// CHECK-NEXT: return %[[S]]#0, %[[S]]#1, %[[S]]#2
// LOC-LABEL: func.func @qkv
// LOC: mpc.matmul {{.*}} loc(#[[FUSED:loc[0-9]+]])
// LOC-DAG: #[[Q:loc[0-9]+]] = loc("q")
// LOC-DAG: #[[QB:loc[0-9]+]] = loc("qb")
// LOC-DAG: #[[FUSED]] = loc(fused[#[[Q]], #[[QB]], #{{.*}}, #{{.*}}, #{{.*}}, #{{.*}}])
func.func @qkv(%x: tensor<2x16x64xf32>, %wq: tensor<64x64xf32>, %bq: tensor<64xf32>, %wk: tensor<64x32xf32>, %bk: tensor<32xf32>, %wv: tensor<64x32xf32>, %bv: tensor<32xf32>) -> (tensor<2x16x64xf32>, tensor<2x16x32xf32>, tensor<2x16x32xf32>) {
  %q = mpc.matmul %x, %wq : (tensor<2x16x64xf32>, tensor<64x64xf32>) -> tensor<2x16x64xf32> loc("q")
  %qb = mpc.add %bq, %q : (tensor<64xf32>, tensor<2x16x64xf32>) -> tensor<2x16x64xf32> loc("qb")
  %k = mpc.matmul %x, %wk : (tensor<2x16x64xf32>, tensor<64x32xf32>) -> tensor<2x16x32xf32> loc("k")
  %kb = mpc.add %k, %bk : (tensor<2x16x32xf32>, tensor<32xf32>) -> tensor<2x16x32xf32> loc("kb")
  %v = mpc.matmul %x, %wv : (tensor<2x16x64xf32>, tensor<64x32xf32>) -> tensor<2x16x32xf32> loc("v")
  %vb = mpc.add %v, %bv : (tensor<2x16x32xf32>, tensor<32xf32>) -> tensor<2x16x32xf32> loc("vb")
  return %qb, %kb, %vb : tensor<2x16x64xf32>, tensor<2x16x32xf32>, tensor<2x16x32xf32>
}

// Unbiased linears merge the same way (no Add). A MatMul by an activation
// (attention's scores), one of another input, and a biased one beside
// unbiased ones are left as written; so is a lone linear.
// CHECK-LABEL: func.func @mixed
// CHECK: %[[W:.*]] = mpc.concat %arg1, %arg2 {axis = 1 : i64}
// CHECK-NEXT: %[[M:.*]] = mpc.matmul %arg0, %[[W]] : (tensor<8x16xf32>, tensor<16x24xf32>) -> tensor<8x24xf32>
// CHECK-NEXT: %[[S:.*]]:2 = mpc.split %[[M]] {axis = 1 : i64, num_outputs = 2 : i64, split = array<i64: 16, 8>}
// CHECK-NEXT: %[[R:.*]] = mpc.relu %arg4
// CHECK-NEXT: mpc.matmul %arg0, %[[R]]
// CHECK-NEXT: mpc.matmul %arg5, %arg1
// CHECK-NEXT: %[[Lone:.*]] = mpc.matmul %arg0, %arg6
// CHECK-NEXT: mpc.add %[[Lone]], %arg3
// CHECK-NOT: mpc.concat
func.func @mixed(%x: tensor<8x16xf32>, %w1: tensor<16x16xf32>, %w2: tensor<16x8xf32>, %b: tensor<4xf32>, %act: tensor<16x8xf32>, %y: tensor<8x16xf32>, %w3: tensor<16x4xf32>) -> (tensor<8x16xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x16xf32>, tensor<8x4xf32>) {
  %a = mpc.matmul %x, %w1 : (tensor<8x16xf32>, tensor<16x16xf32>) -> tensor<8x16xf32>
  %c = mpc.matmul %x, %w2 : (tensor<8x16xf32>, tensor<16x8xf32>) -> tensor<8x8xf32>
  %s = mpc.relu %act : (tensor<16x8xf32>) -> tensor<16x8xf32>
  %d = mpc.matmul %x, %s : (tensor<8x16xf32>, tensor<16x8xf32>) -> tensor<8x8xf32>
  %e = mpc.matmul %y, %w1 : (tensor<8x16xf32>, tensor<16x16xf32>) -> tensor<8x16xf32>
  %f = mpc.matmul %x, %w3 : (tensor<8x16xf32>, tensor<16x4xf32>) -> tensor<8x4xf32>
  %fb = mpc.add %f, %b : (tensor<8x4xf32>, tensor<4xf32>) -> tensor<8x4xf32>
  return %a, %c, %d, %e, %fb : tensor<8x16xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x16xf32>, tensor<8x4xf32>
}

// A training-mode export transposes each weight in the graph (no constant
// folding): the weights are concatenated as held, along their rows (one
// contiguous [3N, K]), and transposed once; a transposed weight and an
// untransposed one do not merge.
// CHECK-LABEL: func.func @transposed_qkv
// CHECK-NEXT: %[[W:.*]] = mpc.concat %arg1, %arg3, %arg5 {axis = 0 : i64} : (tensor<64x64xf32>, tensor<32x64xf32>, tensor<32x64xf32>) -> tensor<128x64xf32>
// CHECK-NEXT: %[[T:.*]] = mpc.transpose %[[W]] {perm = array<i64: 1, 0>} : (tensor<128x64xf32>) -> tensor<64x128xf32>
// CHECK-NEXT: %[[M:.*]] = mpc.matmul %arg0, %[[T]] : (tensor<2x16x64xf32>, tensor<64x128xf32>) -> tensor<2x16x128xf32>
// CHECK-NEXT: %[[B:.*]] = mpc.concat %arg2, %arg4, %arg6 {axis = 0 : i64}
// CHECK-NEXT: %[[Y:.*]] = mpc.add %[[M]], %[[B]]
// CHECK-NEXT: %[[S:.*]]:3 = mpc.split %[[Y]] {axis = 2 : i64, num_outputs = 3 : i64, split = array<i64: 64, 32, 32>}
// CHECK-NOT: mpc.transpose
// CHECK-NEXT: return %[[S]]#0, %[[S]]#1, %[[S]]#2
func.func @transposed_qkv(%x: tensor<2x16x64xf32>, %wq: tensor<64x64xf32>, %bq: tensor<64xf32>, %wk: tensor<32x64xf32>, %bk: tensor<32xf32>, %wv: tensor<32x64xf32>, %bv: tensor<32xf32>) -> (tensor<2x16x64xf32>, tensor<2x16x32xf32>, tensor<2x16x32xf32>) {
  %tq = mpc.transpose %wq {perm = array<i64: 1, 0>} : (tensor<64x64xf32>) -> tensor<64x64xf32>
  %q = mpc.matmul %x, %tq : (tensor<2x16x64xf32>, tensor<64x64xf32>) -> tensor<2x16x64xf32>
  %qb = mpc.add %q, %bq : (tensor<2x16x64xf32>, tensor<64xf32>) -> tensor<2x16x64xf32>
  %tk = mpc.transpose %wk {perm = array<i64: 1, 0>} : (tensor<32x64xf32>) -> tensor<64x32xf32>
  %k = mpc.matmul %x, %tk : (tensor<2x16x64xf32>, tensor<64x32xf32>) -> tensor<2x16x32xf32>
  %kb = mpc.add %k, %bk : (tensor<2x16x32xf32>, tensor<32xf32>) -> tensor<2x16x32xf32>
  %tv = mpc.transpose %wv : (tensor<32x64xf32>) -> tensor<64x32xf32>
  %v = mpc.matmul %x, %tv : (tensor<2x16x64xf32>, tensor<64x32xf32>) -> tensor<2x16x32xf32>
  %vb = mpc.add %v, %bv : (tensor<2x16x32xf32>, tensor<32xf32>) -> tensor<2x16x32xf32>
  return %qb, %kb, %vb : tensor<2x16x64xf32>, tensor<2x16x32xf32>, tensor<2x16x32xf32>
}

// CHECK-LABEL: func.func @transposed_beside_held
// CHECK-NOT: mpc.concat
// CHECK: return
func.func @transposed_beside_held(%x: tensor<8x16xf32>, %w1: tensor<16x16xf32>, %w2: tensor<8x16xf32>) -> (tensor<8x16xf32>, tensor<8x8xf32>) {
  %a = mpc.matmul %x, %w1 : (tensor<8x16xf32>, tensor<16x16xf32>) -> tensor<8x16xf32>
  %t = mpc.transpose %w2 {perm = array<i64: 1, 0>} : (tensor<8x16xf32>) -> tensor<16x8xf32>
  %c = mpc.matmul %x, %t : (tensor<8x16xf32>, tensor<16x8xf32>) -> tensor<8x8xf32>
  return %a, %c : tensor<8x16xf32>, tensor<8x8xf32>
}

// A merged MatMul's result read by another MatMul (LoRA's x A, then its B):
// the second reads the split's part, merged with its own sibling in turn.
// CHECK-LABEL: func.func @chained
// CHECK: %[[W:.*]] = mpc.concat %arg1, %arg2 {axis = 1 : i64}
// CHECK-NEXT: %[[Y:.*]] = mpc.matmul %arg0, %[[W]] : (tensor<4x8xf32>, tensor<8x4xf32>) -> tensor<4x4xf32>
// CHECK-NEXT: %[[P:.*]]:2 = mpc.split %[[Y]]
// CHECK: mpc.matmul %[[P]]#0, %arg3
// CHECK: mpc.matmul %[[P]]#1, %arg4
func.func @chained(%x: tensor<4x8xf32>, %a1: tensor<8x2xf32>, %a2: tensor<8x2xf32>,
                   %b1: tensor<2x8xf32>, %b2: tensor<2x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %xa1 = mpc.matmul %x, %a1 : (tensor<4x8xf32>, tensor<8x2xf32>) -> tensor<4x2xf32>
  %xa2 = mpc.matmul %x, %a2 : (tensor<4x8xf32>, tensor<8x2xf32>) -> tensor<4x2xf32>
  %y1 = mpc.matmul %xa1, %b1 : (tensor<4x2xf32>, tensor<2x8xf32>) -> tensor<4x8xf32>
  %y2 = mpc.matmul %xa2, %b2 : (tensor<4x2xf32>, tensor<2x8xf32>) -> tensor<4x8xf32>
  return %y1, %y2 : tensor<4x8xf32>, tensor<4x8xf32>
}
