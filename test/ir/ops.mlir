// RUN: mpc-opt %s | FileCheck %s
// RUN: mpc-opt %s | mpc-opt | FileCheck %s
// Round trip of every op family, with result types as the inference rules
// give them.

// CHECK-LABEL: func.func @elementwise
func.func @elementwise(%x: tensor<2x3xf16>, %y: tensor<3xf16>, %i: tensor<2x3xi64>,
                       %m: tensor<2x3xi1>, %lo: tensor<f16>, %hi: tensor<f16>) {
  // CHECK: mpc.exp %{{.*}} : (tensor<2x3xf16>) -> tensor<2x3xf16>
  %0 = mpc.exp %x : (tensor<2x3xf16>) -> tensor<2x3xf16>
  // CHECK: mpc.gelu %{{.*}} {approximate = "tanh"}
  %1 = mpc.gelu %x {approximate = "tanh"} : (tensor<2x3xf16>) -> tensor<2x3xf16>
  // CHECK: mpc.gelu_grad %{{.*}}, %{{.*}} {approximate = "tanh"} : (tensor<2x3xf16>, tensor<2x3xf16>) -> tensor<2x3xf16>
  %g1 = mpc.gelu_grad %x, %x {approximate = "tanh"} : (tensor<2x3xf16>, tensor<2x3xf16>) -> tensor<2x3xf16>
  // CHECK: mpc.relu_grad %{{.*}}, %{{.*}} : (tensor<2x3xf16>, tensor<2x3xf16>) -> tensor<2x3xf16>
  %r1 = mpc.relu_grad %x, %x : (tensor<2x3xf16>, tensor<2x3xf16>) -> tensor<2x3xf16>
  // CHECK: mpc.leaky_relu %{{.*}} {alpha = 2.000000e-01 : f32}
  %2 = mpc.leaky_relu %x {alpha = 0.2 : f32} : (tensor<2x3xf16>) -> tensor<2x3xf16>
  // CHECK: mpc.add %{{.*}}, %{{.*}} : (tensor<2x3xf16>, tensor<3xf16>) -> tensor<2x3xf16>
  %3 = mpc.add %x, %y : (tensor<2x3xf16>, tensor<3xf16>) -> tensor<2x3xf16>
  // CHECK: mpc.relu %{{.*}} : (tensor<2x3xi64>) -> tensor<2x3xi64>
  %4 = mpc.relu %i : (tensor<2x3xi64>) -> tensor<2x3xi64>
  // CHECK: mpc.less %{{.*}} -> tensor<2x3xi1>
  %5 = mpc.less %x, %y : (tensor<2x3xf16>, tensor<3xf16>) -> tensor<2x3xi1>
  // CHECK: mpc.where %{{.*}} -> tensor<2x3xf16>
  %6 = mpc.where %m, %x, %y : (tensor<2x3xi1>, tensor<2x3xf16>, tensor<3xf16>) -> tensor<2x3xf16>
  // CHECK: mpc.clip %{{.*}} min %{{.*}} max %{{.*}} : (tensor<2x3xf16>, tensor<f16>, tensor<f16>) -> tensor<2x3xf16>
  %7 = mpc.clip %x min %lo max %hi : (tensor<2x3xf16>, tensor<f16>, tensor<f16>) -> tensor<2x3xf16>
  // CHECK: mpc.clip %{{.*}} max %{{.*}} : (tensor<2x3xf16>, tensor<f16>) -> tensor<2x3xf16>
  %8 = mpc.clip %x max %hi : (tensor<2x3xf16>, tensor<f16>) -> tensor<2x3xf16>
  // CHECK: mpc.cast %{{.*}} : (tensor<2x3xf16>) -> tensor<2x3xf32>
  %9 = mpc.cast %x : (tensor<2x3xf16>) -> tensor<2x3xf32>
  // CHECK: mpc.pow %{{.*}} : (tensor<2x3xf16>, tensor<i64>) -> tensor<2x3xf16>
  %c2 = mpc.constant dense<2> : tensor<i64>
  %10 = mpc.pow %x, %c2 : (tensor<2x3xf16>, tensor<i64>) -> tensor<2x3xf16>
  // CHECK: mpc.max %{{.*}}, %{{.*}}, %{{.*}} : (tensor<2x3xf16>, tensor<3xf16>, tensor<f16>) -> tensor<2x3xf16>
  %11 = mpc.max %x, %y, %lo : (tensor<2x3xf16>, tensor<3xf16>, tensor<f16>) -> tensor<2x3xf16>
  // CHECK: mpc.is_nan %{{.*}} -> tensor<2x3xi1>
  %12 = mpc.is_nan %x : (tensor<2x3xf16>) -> tensor<2x3xi1>
  return
}

// CHECK-LABEL: func.func @linalg
func.func @linalg(%a: tensor<2x4x8x16xbf16>, %b: tensor<16x32xbf16>,
                  %x: tensor<?x3x32x32xf16>, %w: tensor<16x3x3x3xf16>, %bias: tensor<16xf16>,
                  %g: tensor<64x784xf32>, %gw: tensor<128x784xf32>, %gb: tensor<128xf32>,
                  %v: tensor<16xbf16>) {
  // CHECK: mpc.matmul {{.*}} -> tensor<2x4x8x32xbf16>
  %0 = mpc.matmul %a, %b : (tensor<2x4x8x16xbf16>, tensor<16x32xbf16>) -> tensor<2x4x8x32xbf16>
  // CHECK: mpc.matmul {{.*}} -> tensor<2x4x8xbf16>
  %1 = mpc.matmul %a, %v : (tensor<2x4x8x16xbf16>, tensor<16xbf16>) -> tensor<2x4x8xbf16>
  // CHECK: mpc.gemm {{.*}} {transB = true} {{.*}} -> tensor<64x128xf32>
  %2 = mpc.gemm %g, %gw, %gb {transB = true} : (tensor<64x784xf32>, tensor<128x784xf32>, tensor<128xf32>) -> tensor<64x128xf32>
  // CHECK: mpc.conv {{.*}} -> tensor<?x16x16x16xf16>
  %3 = mpc.conv %x, %w, %bias {pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<?x3x32x32xf16>, tensor<16x3x3x3xf16>, tensor<16xf16>) -> tensor<?x16x16x16xf16>
  // CHECK: mpc.conv {{.*}} -> tensor<?x16x32x32xf16>
  %4 = mpc.conv %x, %w {auto_pad = "SAME_UPPER"} : (tensor<?x3x32x32xf16>, tensor<16x3x3x3xf16>) -> tensor<?x16x32x32xf16>
  // CHECK: mpc.max_pool {{.*}} -> (tensor<?x3x16x16xf16>, tensor<?x3x16x16xi64>)
  %5:2 = mpc.max_pool %x {kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<?x3x32x32xf16>) -> (tensor<?x3x16x16xf16>, tensor<?x3x16x16xi64>)
  // CHECK: mpc.average_pool {{.*}} -> tensor<?x3x16x16xf16>
  %6 = mpc.average_pool %x {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<?x3x32x32xf16>) -> tensor<?x3x16x16xf16>
  // CHECK: mpc.average_pool {{.*}} -> tensor<?x3x11x11xf16>
  %7 = mpc.average_pool %x {ceil_mode = true, kernel_shape = array<i64: 3, 3>, strides = array<i64: 3, 3>} : (tensor<?x3x32x32xf16>) -> tensor<?x3x11x11xf16>
  // CHECK: mpc.global_average_pool {{.*}} -> tensor<?x3x1x1xf16>
  %8 = mpc.global_average_pool %x : (tensor<?x3x32x32xf16>) -> tensor<?x3x1x1xf16>
  return
}

// CHECK-LABEL: func.func @nn
func.func @nn(%x: tensor<8x64x4x4xf32>, %c: tensor<64xf32>, %s: tensor<4x16x64xf32>,
              %g: tensor<64xf32>, %logits: tensor<8x10xf32>, %labels: tensor<8xi64>,
              %r: tensor<f32>, %t: tensor<i1>) {
  // CHECK: mpc.batch_norm {{.*}} -> tensor<8x64x4x4xf32>
  %0 = mpc.batch_norm %x, %c, %c, %c, %c {epsilon = 1.0e-05 : f32} : (tensor<8x64x4x4xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<8x64x4x4xf32>
  // CHECK: mpc.batch_norm_train {{.*}} -> (tensor<8x64x4x4xf32>, tensor<64xf32>, tensor<64xf32>)
  %1:3 = mpc.batch_norm_train %x, %c, %c, %c, %c {epsilon = 1.0e-05 : f32, momentum = 0.9 : f32} : (tensor<8x64x4x4xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>) -> (tensor<8x64x4x4xf32>, tensor<64xf32>, tensor<64xf32>)
  // CHECK: mpc.batch_norm_grad {{.*}} -> (tensor<8x64x4x4xf32>, tensor<64xf32>, tensor<64xf32>)
  %bg:3 = mpc.batch_norm_grad %x, %x, %c {epsilon = 1.0e-05 : f32} : (tensor<8x64x4x4xf32>, tensor<8x64x4x4xf32>, tensor<64xf32>) -> (tensor<8x64x4x4xf32>, tensor<64xf32>, tensor<64xf32>)
  // CHECK: mpc.batch_norm_grad {{.*}} : (tensor<8x64x4x4xf16>, tensor<8x64x4x4xf16>, tensor<64xf32>, tensor<8x64x4x4xf16>) -> (tensor<8x64x4x4xf16>, tensor<64xf32>, tensor<64xf32>)
  %xh = mpc.cast %x : (tensor<8x64x4x4xf32>) -> tensor<8x64x4x4xf16>
  %br:3 = mpc.batch_norm_grad %xh, %xh, %c, %xh : (tensor<8x64x4x4xf16>, tensor<8x64x4x4xf16>, tensor<64xf32>, tensor<8x64x4x4xf16>) -> (tensor<8x64x4x4xf16>, tensor<64xf32>, tensor<64xf32>)
  // CHECK: mpc.layer_norm {{.*}} -> (tensor<4x16x64xf32>, tensor<4x16x1xf32>, tensor<4x16x1xf32>)
  %2:3 = mpc.layer_norm %s, %g, %g {axis = -1 : i64, epsilon = 1.0e-05 : f32} : (tensor<4x16x64xf32>, tensor<64xf32>, tensor<64xf32>) -> (tensor<4x16x64xf32>, tensor<4x16x1xf32>, tensor<4x16x1xf32>)
  // CHECK: mpc.softmax {{.*}} {axis = 1 : i64}
  %3 = mpc.softmax %logits {axis = 1 : i64} : (tensor<8x10xf32>) -> tensor<8x10xf32>
  // CHECK: mpc.dropout %{{.*}} ratio %{{.*}} training %{{.*}} -> (tensor<4x16x64xf32>, tensor<4x16x64xi1>)
  %4:2 = mpc.dropout %s ratio %r training %t : (tensor<4x16x64xf32>, tensor<f32>, tensor<i1>) -> (tensor<4x16x64xf32>, tensor<4x16x64xi1>)
  // CHECK: mpc.softmax_cross_entropy_loss {{.*}} -> (tensor<f32>, tensor<8x10xf32>)
  %5:2 = mpc.softmax_cross_entropy_loss %logits, %labels {reduction = "mean"} : (tensor<8x10xf32>, tensor<8xi64>) -> (tensor<f32>, tensor<8x10xf32>)
  // CHECK: mpc.nll_loss {{.*}} {ignore_index = 3 : i64, reduction = "none"} {{.*}} -> tensor<8xf32>
  %6 = mpc.nll_loss %logits, %labels {ignore_index = 3 : i64, reduction = "none"} : (tensor<8x10xf32>, tensor<8xi64>) -> tensor<8xf32>
  // CHECK: mpc.reduce_mean {{.*}} -> tensor<4x1x64xf32>
  %7 = mpc.reduce_mean %s {axes = array<i64: 1>} : (tensor<4x16x64xf32>) -> tensor<4x1x64xf32>
  // CHECK: mpc.reduce_sum {{.*}} -> tensor<f32>
  %8 = mpc.reduce_sum %s {keepdims = false} : (tensor<4x16x64xf32>) -> tensor<f32>
  // CHECK: mpc.arg_max {{.*}} -> tensor<8xi64>
  %9 = mpc.arg_max %logits {axis = 1 : i64, keepdims = false} : (tensor<8x10xf32>) -> tensor<8xi64>
  // CHECK: mpc.top_k {{.*}} {k = 3 : i64} {{.*}} -> tensor<8x3xi64>
  %top = mpc.top_k %logits {k = 3 : i64} : (tensor<8x10xf32>) -> tensor<8x3xi64>
  // CHECK: mpc.top_k {{.*}} {axis = 0 : i64, k = 2 : i64, largest = false} {{.*}} -> tensor<2x10xi64>
  %low = mpc.top_k %logits {axis = 0 : i64, k = 2 : i64, largest = false} : (tensor<8x10xf32>) -> tensor<2x10xi64>
  // CHECK: mpc.one_hot {{.*}} -> tensor<8x10xf32>
  %v = mpc.constant dense<[0.0, 1.0]> : tensor<2xf32>
  %10 = mpc.one_hot %labels, %v {depth = 10 : i64} : (tensor<8xi64>, tensor<2xf32>) -> tensor<8x10xf32>
  // CHECK: mpc.trilu {{.*}} {k = 1 : i64}
  %11 = mpc.trilu %logits {k = 1 : i64} : (tensor<8x10xf32>) -> tensor<8x10xf32>
  // CHECK: mpc.cum_sum {{.*}} {axis = 0 : i64}
  %12 = mpc.cum_sum %labels {axis = 0 : i64} : (tensor<8xi64>) -> tensor<8xi64>
  // CHECK: mpc.cum_prod {{.*}} {axis = 1 : i64, exclusive = true}
  %13 = mpc.cum_prod %logits {axis = 1 : i64, exclusive = true} : (tensor<8x10xf32>) -> tensor<8x10xf32>
  // CHECK: mpc.cum_prod_grad {{.*}} {axis = 1 : i64, reverse = true} {{.*}} -> tensor<8x10xf32>
  %14 = mpc.cum_prod_grad %logits, %13 {axis = 1 : i64, reverse = true} : (tensor<8x10xf32>, tensor<8x10xf32>) -> tensor<8x10xf32>
  return
}

// CHECK-LABEL: func.func @shapes
func.func @shapes(%x: tensor<?x16x64xf32>, %ids: tensor<4x16xi64>, %table: tensor<100x64xf32>) {
  // CHECK: mpc.shape {{.*}} -> tensor<3xi64>
  %0 = mpc.shape %x : (tensor<?x16x64xf32>) -> tensor<3xi64>
  // CHECK: mpc.shape {{.*}} {start = 1 : i64} {{.*}} -> tensor<2xi64>
  %1 = mpc.shape %x {start = 1 : i64} : (tensor<?x16x64xf32>) -> tensor<2xi64>
  %s = mpc.constant dense<[0, 16, 8, 8]> : tensor<4xi64>
  // CHECK: mpc.reshape {{.*}} -> tensor<?x16x8x8xf32>
  %2 = mpc.reshape %x, %s : (tensor<?x16x64xf32>, tensor<4xi64>) -> tensor<?x16x8x8xf32>
  // CHECK: mpc.transpose {{.*}} -> tensor<?x8x16x8xf32>
  %3 = mpc.transpose %2 {perm = array<i64: 0, 2, 1, 3>} : (tensor<?x16x8x8xf32>) -> tensor<?x8x16x8xf32>
  // CHECK: mpc.concat {{.*}} -> tensor<?x32x64xf32>
  %4 = mpc.concat %x, %x {axis = 1 : i64} : (tensor<?x16x64xf32>, tensor<?x16x64xf32>) -> tensor<?x32x64xf32>
  // CHECK: mpc.split {{.*}} -> (tensor<?x16x22xf32>, tensor<?x16x22xf32>, tensor<?x16x20xf32>)
  %5:3 = mpc.split %x {axis = 2 : i64, num_outputs = 3 : i64} : (tensor<?x16x64xf32>) -> (tensor<?x16x22xf32>, tensor<?x16x22xf32>, tensor<?x16x20xf32>)
  %st = mpc.constant dense<[2]> : tensor<1xi64>
  %en = mpc.constant dense<[-2]> : tensor<1xi64>
  %ax = mpc.constant dense<[1]> : tensor<1xi64>
  // CHECK: mpc.slice {{.*}} axes {{.*}} -> tensor<?x12x64xf32>
  %6 = mpc.slice %x, %st, %en axes %ax : (tensor<?x16x64xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<?x12x64xf32>
  // CHECK: mpc.unsqueeze {{.*}} -> tensor<?x1x16x64xf32>
  %7 = mpc.unsqueeze %x {axes = array<i64: 1>} : (tensor<?x16x64xf32>) -> tensor<?x1x16x64xf32>
  // CHECK: mpc.squeeze {{.*}} -> tensor<?x16x64xf32>
  %8 = mpc.squeeze %7 {axes = array<i64: 1>} : (tensor<?x1x16x64xf32>) -> tensor<?x16x64xf32>
  // CHECK: mpc.flatten {{.*}} -> tensor<?x1024xf32>
  %9 = mpc.flatten %x : (tensor<?x16x64xf32>) -> tensor<?x1024xf32>
  // CHECK: mpc.gather {{.*}} -> tensor<4x16x64xf32>
  %10 = mpc.gather %table, %ids : (tensor<100x64xf32>, tensor<4x16xi64>) -> tensor<4x16x64xf32>
  %es = mpc.constant dense<[4, 1, 1]> : tensor<3xi64>
  // CHECK: mpc.expand {{.*}} -> tensor<4x100x64xf32>
  %11 = mpc.expand %table, %es : (tensor<100x64xf32>, tensor<3xi64>) -> tensor<4x100x64xf32>
  %zero = mpc.constant dense<0.0> : tensor<f32>
  // CHECK: mpc.pad {{.*}} -> tensor<100x66xf32>
  %12 = mpc.pad %table, %zero {pads = array<i64: 0, 1, 0, 1>} : (tensor<100x64xf32>, tensor<f32>) -> tensor<100x66xf32>
  // CHECK: mpc.constant_of_shape {{.*}} -> tensor<4x1x1xi64>
  %13 = mpc.constant_of_shape %es {value = dense<1> : tensor<1xi64>} : (tensor<3xi64>) -> tensor<4x1x1xi64>
  %a = mpc.constant dense<0> : tensor<i64>
  %b = mpc.constant dense<16> : tensor<i64>
  %c = mpc.constant dense<3> : tensor<i64>
  // CHECK: mpc.range {{.*}} -> tensor<6xi64>
  %14 = mpc.range %a, %b, %c : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<6xi64>
  return
}

// CHECK-LABEL: mpc.param @fc1.weight trainable : tensor<2x2xf32>
mpc.param @"fc1.weight" trainable : tensor<2x2xf32> = dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
// CHECK: mpc.param @running_mean : tensor<2xf32>
mpc.param @running_mean : tensor<2xf32> = dense<0.0> : tensor<2xf32>

// CHECK-LABEL: func.func @training
func.func @training(%r: tensor<f32>, %t: tensor<i64>, %x: tensor<4xf32>, %g: tensor<4xf32>,
                    %v: tensor<4xf32>, %h: tensor<4xf32>) {
  // CHECK: mpc.gradient {{.*}} {xs = ["x"], y = "loss", zs = []} {{.*}} -> tensor<4xf32>
  %0 = mpc.gradient %x {xs = ["x"], y = "loss", zs = []} : (tensor<4xf32>) -> tensor<4xf32>
  // CHECK: mpc.momentum {{.*}} -> (tensor<4xf32>, tensor<4xf32>)
  %1:2 = mpc.momentum %r, %t, %x, %g, %v {alpha = 0.9 : f32, beta = 1.0 : f32, mode = "nesterov", norm_coefficient = 0.0 : f32} : (tensor<f32>, tensor<i64>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
  // CHECK: mpc.adagrad {{.*}} -> (tensor<4xf32>, tensor<4xf32>)
  %2:2 = mpc.adagrad %r, %t, %x, %g, %h : (tensor<f32>, tensor<i64>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
  // CHECK: mpc.adam {{.*}} -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
  %3:3 = mpc.adam %r, %t, %x, %g, %v, %h : (tensor<f32>, tensor<i64>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
  return
}

// CHECK-LABEL: func.func @attention
func.func @attention(%q: tensor<2x4x16x8xf16>, %k: tensor<2x4x32x8xf16>, %v: tensor<2x4x32x6xf16>, %b: tensor<2x1x1x32xf16>, %dy: tensor<2x4x16x6xf16>, %step: tensor<i64>) {
  // CHECK: mpc.attention {{.*}} -> (tensor<2x4x16x6xf16>, tensor<2x4x16xf32>)
  %y, %lse = mpc.attention %q, %k, %v, %b {scale = 0.35 : f32, causal = true} : (tensor<2x4x16x8xf16>, tensor<2x4x32x8xf16>, tensor<2x4x32x6xf16>, tensor<2x1x1x32xf16>) -> (tensor<2x4x16x6xf16>, tensor<2x4x16xf32>)
  // CHECK: mpc.attention %{{.*}}, %{{.*}}, %{{.*}} step %{{.*}} {dropout = 1.000000e-01 : f32, scale = 3.500000e-01 : f32, seed = 1 : i64, stream = 2 : i64}
  %yd, %lsed = mpc.attention %q, %k, %v step %step {scale = 0.35 : f32, dropout = 0.1 : f32, seed = 1 : i64, stream = 2 : i64} : (tensor<2x4x16x8xf16>, tensor<2x4x32x8xf16>, tensor<2x4x32x6xf16>, tensor<i64>) -> (tensor<2x4x16x6xf16>, tensor<2x4x16xf32>)
  // CHECK: mpc.attention_grad {{.*}} -> (tensor<2x4x16x8xf16>, tensor<2x4x32x8xf16>, tensor<2x4x32x6xf16>)
  %dq, %dk, %dv = mpc.attention_grad %dy, %q, %k, %v, %y, %lse, %b {scale = 0.35 : f32, causal = true} : (tensor<2x4x16x6xf16>, tensor<2x4x16x8xf16>, tensor<2x4x32x8xf16>, tensor<2x4x32x6xf16>, tensor<2x4x16x6xf16>, tensor<2x4x16xf32>, tensor<2x1x1x32xf16>) -> (tensor<2x4x16x8xf16>, tensor<2x4x32x8xf16>, tensor<2x4x32x6xf16>)
  // dS, the scores' gradient, in q's type: [..., Sq, Skv].
  // CHECK: mpc.attention_grad {{.*}} {causal = true, scale = 3.500000e-01 : f32, with_scores_grad} {{.*}} -> (tensor<2x4x16x8xf16>, tensor<2x4x32x8xf16>, tensor<2x4x32x6xf16>, tensor<2x4x16x32xf16>)
  %dq2, %dk2, %dv2, %ds = mpc.attention_grad %dy, %q, %k, %v, %y, %lse, %b {scale = 0.35 : f32, causal = true, with_scores_grad} : (tensor<2x4x16x6xf16>, tensor<2x4x16x8xf16>, tensor<2x4x32x8xf16>, tensor<2x4x32x6xf16>, tensor<2x4x16x6xf16>, tensor<2x4x16xf32>, tensor<2x1x1x32xf16>) -> (tensor<2x4x16x8xf16>, tensor<2x4x32x8xf16>, tensor<2x4x32x6xf16>, tensor<2x4x16x32xf16>)
  return
}
