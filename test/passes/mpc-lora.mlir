// RUN: mpc-opt %s -mpc-lora="rank=2 alpha=4 train=b" -verify-diagnostics | FileCheck %s
// RUN: mpc-opt %s -mpc-lora="rank=2 alpha=4 train=b" -verify-diagnostics --mlir-print-debuginfo --mlir-print-local-scope | FileCheck %s --check-prefix=LOC

// Every linear weight (targets empty) gets adapters A [in, r] and B [r, out]
// (zeros), in whatever layout its layer reads it: a MatMul's [in, out]
// (x [2, 3, 4]), a Gemm's transB [out, in] (its alpha 0.5 joins the
// scale alpha / r = 2), a MatMul of a transposed [out, in]. The embedding
// (read by a Gather) is not adapted; everything but the adapters and the
// bias (train=b) is frozen.
// CHECK-DAG: mpc.param @emb : tensor<10x4xf32>
// CHECK-DAG: mpc.param @w1 : tensor<4x6xf32>
// CHECK-DAG: mpc.param @w1.lora_A trainable {mpc.lora_b = @w1.lora_B, mpc.lora_base = @w1, mpc.lora_scale = 2.000000e+00 : f64, mpc.lora_transposed = false} : tensor<4x2xf32>
// CHECK-DAG: mpc.param @w1.lora_B trainable : tensor<2x6xf32> = dense<0.000000e+00> : tensor<2x6xf32>
// CHECK-DAG: mpc.param @w2 : tensor<5x6xf32>
// CHECK-DAG: mpc.param @w2.lora_A trainable {{.*}}mpc.lora_transposed = true} : tensor<6x2xf32>
// CHECK-DAG: mpc.param @w2.lora_B trainable : tensor<2x5xf32>
// CHECK-DAG: mpc.param @w3.lora_A trainable {{.*}}mpc.lora_transposed = true} : tensor<5x2xf32>
// CHECK-DAG: mpc.param @b trainable : tensor<5xf32>
mpc.param @emb trainable : tensor<10x4xf32> = dense<1.0> : tensor<10x4xf32>
mpc.param @w1 trainable : tensor<4x6xf32> = dense<1.0> : tensor<4x6xf32>
mpc.param @w2 trainable : tensor<5x6xf32> = dense<1.0> : tensor<5x6xf32>
mpc.param @w3 trainable : tensor<3x5xf32> = dense<1.0> : tensor<3x5xf32>
mpc.param @b trainable : tensor<5xf32> = dense<0.0> : tensor<5xf32>

// The second product is one Gemm: the scale its alpha, the layer's
// result its C, on the rows viewed 2-D.
// CHECK-LABEL: func.func @f
// CHECK-SAME: %[[A1:[a-z0-9]*]]: tensor<4x2xf32> {mpc.param = @w1.lora_A}, %[[B1:[a-z0-9]*]]: tensor<2x6xf32> {mpc.param = @w1.lora_B}
// CHECK: %[[Y:.*]] = mpc.matmul %{{.*}}, %arg2 : (tensor<2x3x4xf32>, tensor<4x6xf32>) -> tensor<2x3x6xf32>
// CHECK-NEXT: %[[XA:.*]] = mpc.matmul %{{.*}}, %[[A1]] : (tensor<2x3x4xf32>, tensor<4x2xf32>) -> tensor<2x3x2xf32>
// CHECK: %[[XA2:.*]] = mpc.reshape %[[XA]]
// CHECK: %[[Y2:.*]] = mpc.reshape %[[Y]]
// CHECK-NEXT: %[[G1:.*]] = mpc.gemm %[[XA2]], %[[B1]], %[[Y2]] {alpha = 2.000000e+00 : f32} : (tensor<6x2xf32>, tensor<2x6xf32>, tensor<6x6xf32>) -> tensor<6x6xf32>
// CHECK: mpc.reshape %[[G1]]
// The Gemm layer's alpha 0.5 times the scale 2: the adapter's Gemm has alpha 1.
// CHECK: %[[G:.*]] = mpc.gemm %{{.*}}, %arg3, %arg5 {alpha = 5.000000e-01 : f32, transB = true}
// CHECK-NEXT: %[[XA3:.*]] = mpc.matmul
// CHECK-NEXT: mpc.gemm %[[XA3]], %{{.*}}, %[[G]] : (tensor<6x2xf32>, tensor<2x5xf32>, tensor<6x5xf32>) -> tensor<6x5xf32>
// CHECK: mpc.transpose %arg4
// CHECK: %[[Z:.*]] = mpc.matmul
// CHECK: mpc.matmul
// CHECK: mpc.gemm %{{.*}}, %{{.*}}, %[[Z]] {alpha = 2.000000e+00 : f32}
// LOC: mpc.matmul {{.*}} -> tensor<2x3x2xf32> loc("fc1")
func.func @f(%ids: tensor<2x3xi64> {mpc.input = "ids"},
             %emb: tensor<10x4xf32> {mpc.param = @emb},
             %w1: tensor<4x6xf32> {mpc.param = @w1},
             %w2: tensor<5x6xf32> {mpc.param = @w2},
             %w3: tensor<3x5xf32> {mpc.param = @w3},
             %b: tensor<5xf32> {mpc.param = @b}) -> tensor<6x3xf32> {
  %e = mpc.gather %emb, %ids {axis = 0 : i64} : (tensor<10x4xf32>, tensor<2x3xi64>) -> tensor<2x3x4xf32> loc("embed")
  %y = mpc.matmul %e, %w1 : (tensor<2x3x4xf32>, tensor<4x6xf32>) -> tensor<2x3x6xf32> loc("fc1")
  %shape = mpc.constant dense<[6, 6]> : tensor<2xi64>
  %r = mpc.reshape %y, %shape : (tensor<2x3x6xf32>, tensor<2xi64>) -> tensor<6x6xf32>
  %g = mpc.gemm %r, %w2, %b {alpha = 0.5 : f32, transB = true} : (tensor<6x6xf32>, tensor<5x6xf32>, tensor<5xf32>) -> tensor<6x5xf32> loc("fc2")
  %t = mpc.transpose %w3 {perm = array<i64: 1, 0>} : (tensor<3x5xf32>) -> tensor<5x3xf32>
  %z = mpc.matmul %g, %t : (tensor<6x5xf32>, tensor<5x3xf32>) -> tensor<6x3xf32> loc("fc3")
  return %z : tensor<6x3xf32>
}
