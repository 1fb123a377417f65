// RUN: mpc-opt %s -mpc-fold-linear-bias | FileCheck %s
// RUN: mpc-opt %s -mpc-fold-linear-bias -mlir-print-debuginfo | FileCheck %s --check-prefix=LOC

// nn.Linear over a sequence as torch exports it: MatMul, then Add of the
// bias. One Gemm of the 32 rows, the bias as C, reshapes around it.
// CHECK-LABEL: func.func @sequence_linear
// CHECK: %[[X2:.*]] = mpc.reshape %arg0, %{{.*}} : (tensor<2x16x64xf16>, tensor<2xi64>) -> tensor<32x64xf16>
// CHECK: %[[G:.*]] = mpc.gemm %[[X2]], %arg1, %arg2 : (tensor<32x64xf16>, tensor<64x256xf16>, tensor<256xf16>) -> tensor<32x256xf16>
// CHECK: %[[Y:.*]] = mpc.reshape %[[G]], %{{.*}} : (tensor<32x256xf16>, tensor<3xi64>) -> tensor<2x16x256xf16>
// CHECK-NOT: mpc.matmul
// CHECK-NOT: mpc.add
// CHECK: return %[[Y]]
// LOC-LABEL: func.func @sequence_linear
// LOC: mpc.gemm {{.*}} loc(#[[FUSED:loc[0-9]*]])
// LOC-DAG: #[[MM:loc[0-9]*]] = loc("fc/MatMul")
// LOC-DAG: #[[ADD:loc[0-9]*]] = loc("fc/Add")
// LOC-DAG: #[[FUSED]] = loc(fused[#[[MM]], #[[ADD]]])
func.func @sequence_linear(%x: tensor<2x16x64xf16>, %w: tensor<64x256xf16>, %b: tensor<256xf16>) -> tensor<2x16x256xf16> {
  %m = mpc.matmul %x, %w : (tensor<2x16x64xf16>, tensor<64x256xf16>) -> tensor<2x16x256xf16> loc("fc/MatMul")
  %y = mpc.add %b, %m : (tensor<256xf16>, tensor<2x16x256xf16>) -> tensor<2x16x256xf16> loc("fc/Add")
  return %y : tensor<2x16x256xf16>
}

// Two-dimensional rows need no reshape; a [1, N] bias is C as it is.
// CHECK-LABEL: func.func @rows
// CHECK-NEXT: %[[G:.*]] = mpc.gemm %arg0, %arg1, %arg2 : (tensor<8x4xf32>, tensor<4x3xf32>, tensor<1x3xf32>) -> tensor<8x3xf32>
// CHECK-NEXT: return %[[G]]
func.func @rows(%x: tensor<8x4xf32>, %w: tensor<4x3xf32>, %b: tensor<1x3xf32>) -> tensor<8x3xf32> {
  %m = mpc.matmul %x, %w : (tensor<8x4xf32>, tensor<4x3xf32>) -> tensor<8x3xf32>
  %y = mpc.add %m, %b : (tensor<8x3xf32>, tensor<1x3xf32>) -> tensor<8x3xf32>
  return %y : tensor<8x3xf32>
}

// Left as written: the MatMul's result read elsewhere, a bias that is not
// a vector of N, a bias of another type (the precision passes decided
// so), a batched weight.
// CHECK-LABEL: func.func @read_elsewhere
// CHECK: mpc.matmul
// CHECK: mpc.add
// CHECK-NOT: mpc.gemm
// CHECK-LABEL: func.func @not_a_bias
// CHECK: mpc.matmul
// CHECK-NOT: mpc.gemm
// CHECK-LABEL: func.func @mixed_types
// CHECK: mpc.matmul
// CHECK-NOT: mpc.gemm
// CHECK-LABEL: func.func @batched_weight
// CHECK: mpc.matmul
// CHECK-NOT: mpc.gemm
func.func @read_elsewhere(%x: tensor<2x8x4xf32>, %w: tensor<4x3xf32>, %b: tensor<3xf32>) -> (tensor<2x8x3xf32>, tensor<2x8x3xf32>) {
  %m = mpc.matmul %x, %w : (tensor<2x8x4xf32>, tensor<4x3xf32>) -> tensor<2x8x3xf32>
  %y = mpc.add %m, %b : (tensor<2x8x3xf32>, tensor<3xf32>) -> tensor<2x8x3xf32>
  return %y, %m : tensor<2x8x3xf32>, tensor<2x8x3xf32>
}
func.func @not_a_bias(%x: tensor<2x8x4xf32>, %w: tensor<4x3xf32>, %b: tensor<8x3xf32>) -> tensor<2x8x3xf32> {
  %m = mpc.matmul %x, %w : (tensor<2x8x4xf32>, tensor<4x3xf32>) -> tensor<2x8x3xf32>
  %y = mpc.add %m, %b : (tensor<2x8x3xf32>, tensor<8x3xf32>) -> tensor<2x8x3xf32>
  return %y : tensor<2x8x3xf32>
}
func.func @mixed_types(%x: tensor<2x8x4xf16>, %w: tensor<4x3xf16>, %b: tensor<3xf32>) -> tensor<2x8x3xf32> {
  %m = mpc.matmul %x, %w : (tensor<2x8x4xf16>, tensor<4x3xf16>) -> tensor<2x8x3xf16>
  %c = mpc.cast %m : (tensor<2x8x3xf16>) -> tensor<2x8x3xf32>
  %y = mpc.add %c, %b : (tensor<2x8x3xf32>, tensor<3xf32>) -> tensor<2x8x3xf32>
  return %y : tensor<2x8x3xf32>
}
func.func @batched_weight(%x: tensor<2x8x4xf32>, %w: tensor<2x4x3xf32>, %b: tensor<3xf32>) -> tensor<2x8x3xf32> {
  %m = mpc.matmul %x, %w : (tensor<2x8x4xf32>, tensor<2x4x3xf32>) -> tensor<2x8x3xf32>
  %y = mpc.add %m, %b : (tensor<2x8x3xf32>, tensor<3xf32>) -> tensor<2x8x3xf32>
  return %y : tensor<2x8x3xf32>
}

// A training-mode export keeps nn.Linear's weight as held, [N, K], and
// transposes it in the graph: the Gemm reads it with transB, biased or
// not, and the transpose goes. A transpose also read elsewhere stays for
// that reader; a batched transpose is no weight.
// CHECK-LABEL: func.func @transposed_weight
// CHECK: %[[X2:.*]] = mpc.reshape %arg0, %{{.*}} : (tensor<2x16x64xf16>, tensor<2xi64>) -> tensor<32x64xf16>
// CHECK: %[[G:.*]] = mpc.gemm %[[X2]], %arg1, %arg2 {transB = true} : (tensor<32x64xf16>, tensor<256x64xf16>, tensor<256xf16>) -> tensor<32x256xf16>
// CHECK: %[[Y:.*]] = mpc.reshape %[[G]]
// CHECK-NOT: mpc.transpose
// CHECK: return %[[Y]]
func.func @transposed_weight(%x: tensor<2x16x64xf16>, %w: tensor<256x64xf16>, %b: tensor<256xf16>) -> tensor<2x16x256xf16> {
  %t = mpc.transpose %w {perm = array<i64: 1, 0>} : (tensor<256x64xf16>) -> tensor<64x256xf16>
  %m = mpc.matmul %x, %t : (tensor<2x16x64xf16>, tensor<64x256xf16>) -> tensor<2x16x256xf16>
  %y = mpc.add %m, %b : (tensor<2x16x256xf16>, tensor<256xf16>) -> tensor<2x16x256xf16>
  return %y : tensor<2x16x256xf16>
}

// CHECK-LABEL: func.func @tied_head
// CHECK: %[[T:.*]] = mpc.transpose %arg1
// CHECK: mpc.gemm %{{.*}}, %arg1 {transB = true} : (tensor<32x64xf32>, tensor<100x64xf32>) -> tensor<32x100xf32>
// CHECK-NOT: mpc.matmul %{{.*}}, %[[T]]
// CHECK: return %{{.*}}, %[[T]]
func.func @tied_head(%h: tensor<2x16x64xf32>, %wte: tensor<100x64xf32>) -> (tensor<2x16x100xf32>, tensor<64x100xf32>) {
  %t = mpc.transpose %wte {perm = array<i64: 1, 0>} : (tensor<100x64xf32>) -> tensor<64x100xf32>
  %m = mpc.matmul %h, %t : (tensor<2x16x64xf32>, tensor<64x100xf32>) -> tensor<2x16x100xf32>
  return %m, %t : tensor<2x16x100xf32>, tensor<64x100xf32>
}

// CHECK-LABEL: func.func @batched_transpose
// CHECK: mpc.transpose
// CHECK-NEXT: mpc.matmul
// CHECK-NOT: mpc.gemm
func.func @batched_transpose(%q: tensor<2x16x8xf32>, %k: tensor<2x16x8xf32>) -> tensor<2x16x16xf32> {
  %t = mpc.transpose %k {perm = array<i64: 0, 2, 1>} : (tensor<2x16x8xf32>) -> tensor<2x8x16xf32>
  %s = mpc.matmul %q, %t : (tensor<2x16x8xf32>, tensor<2x8x16xf32>) -> tensor<2x16x16xf32>
  return %s : tensor<2x16x16xf32>
}
