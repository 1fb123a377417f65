// RUN: mpc-opt %s -split-input-file -verify-diagnostics
// Every verifier and shape rule reports a precise message; shape rule errors
// are followed by the generic "failed to infer returned types".

func.func @matmul_inner(%a: tensor<4x8xf32>, %b: tensor<16x4xf32>) {
  // expected-error @+2 {{matmul inner dimensions differ: 8 and 16}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = mpc.matmul %a, %b : (tensor<4x8xf32>, tensor<16x4xf32>) -> tensor<4x4xf32>
  return
}

// -----

func.func @matmul_types(%a: tensor<4x8xf16>, %b: tensor<8x4xf32>) {
  // expected-error @+2 {{matmul operand element types differ}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = mpc.matmul %a, %b : (tensor<4x8xf16>, tensor<8x4xf32>) -> tensor<4x4xf16>
  return
}

// -----

func.func @broadcast(%a: tensor<4x3xf32>, %b: tensor<4xf32>) {
  // expected-error @+2 {{shapes [4,3] and [4] do not broadcast}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = mpc.add %a, %b : (tensor<4x3xf32>, tensor<4xf32>) -> tensor<4x3xf32>
  return
}

// -----

func.func @wrong_result(%a: tensor<4x3xf32>) {
  // expected-error @+2 {{'mpc.relu' op inferred type(s) 'tensor<4x3xf32>' are incompatible with return type(s) of operation 'tensor<3x4xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = mpc.relu %a : (tensor<4x3xf32>) -> tensor<3x4xf32>
  return
}

// -----

func.func @element_type(%a: tensor<4xf64>) {
  // expected-error @+1 {{operand #0 must be ranked tensor of 32-bit float or 16-bit float or bfloat16 type values}}
  %0 = mpc.exp %a : (tensor<4xf64>) -> tensor<4xf64>
  return
}

// -----

func.func @gemm_c(%a: tensor<4x8xf32>, %b: tensor<8x5xf32>, %c: tensor<3xf32>) {
  // expected-error @+2 {{gemm C of type 'tensor<3xf32>' does not broadcast to [4,5]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = mpc.gemm %a, %b, %c : (tensor<4x8xf32>, tensor<8x5xf32>, tensor<3xf32>) -> tensor<4x5xf32>
  return
}

// -----

func.func @conv_channels(%x: tensor<1x4x8x8xf32>, %w: tensor<2x3x3x3xf32>) {
  // expected-error @+2 {{conv input has 4 channels but W expects 3 x group 1}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = mpc.conv %x, %w : (tensor<1x4x8x8xf32>, tensor<2x3x3x3xf32>) -> tensor<1x2x6x6xf32>
  return
}

// -----

func.func @conv_window(%x: tensor<1x3x2x2xf32>, %w: tensor<2x3x3x3xf32>) {
  // expected-error @+2 {{window of size 3 does not fit spatial dimension 0 of size 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = mpc.conv %x, %w : (tensor<1x3x2x2xf32>, tensor<2x3x3x3xf32>) -> tensor<1x2x1x1xf32>
  return
}

// -----

func.func @pool_kernel(%x: tensor<1x3x8x8xf32>) {
  // expected-error @+2 {{pooling requires kernel_shape}}
  // expected-error @+1 {{failed to infer returned types}}
  %0:2 = mpc.max_pool %x : (tensor<1x3x8x8xf32>) -> (tensor<1x3x8x8xf32>, tensor<1x3x8x8xi64>)
  return
}

// -----

func.func @reshape_count(%x: tensor<4x6xf32>) {
  %s = mpc.constant dense<[5, 5]> : tensor<2xi64>
  // expected-error @+2 {{cannot reshape 'tensor<4x6xf32>' into 2 dimensions: element counts differ}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = mpc.reshape %x, %s : (tensor<4x6xf32>, tensor<2xi64>) -> tensor<5x5xf32>
  return
}

// -----

func.func @reshape_two_minus_one(%x: tensor<4x6xf32>) {
  %s = mpc.constant dense<[-1, -1]> : tensor<2xi64>
  // expected-error @+2 {{reshape shape has more than one -1}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = mpc.reshape %x, %s : (tensor<4x6xf32>, tensor<2xi64>) -> tensor<?x?xf32>
  return
}

// -----

func.func @transpose_perm(%x: tensor<4x6xf32>) {
  // expected-error @+2 {{transpose perm is not a permutation}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = mpc.transpose %x {perm = array<i64: 0, 0>} : (tensor<4x6xf32>) -> tensor<4x4xf32>
  return
}

// -----

func.func @concat_dims(%a: tensor<4x6xf32>, %b: tensor<5x6xf32>) {
  // expected-error @+2 {{concat operands differ in dimension 0: 4 and 5}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = mpc.concat %a, %b {axis = 1 : i64} : (tensor<4x6xf32>, tensor<5x6xf32>) -> tensor<4x12xf32>
  return
}

// -----

func.func @split_sizes(%a: tensor<4x6xf32>) {
  // expected-error @+2 {{split sizes sum to 5, not 6}}
  // expected-error @+1 {{failed to infer returned types}}
  %0:2 = mpc.split %a {axis = 1 : i64, num_outputs = 2 : i64, split = array<i64: 2, 3>} : (tensor<4x6xf32>) -> (tensor<4x2xf32>, tensor<4x3xf32>)
  return
}

// -----

func.func @squeeze_non_one(%a: tensor<4x6xf32>) {
  // expected-error @+2 {{squeeze axis 0 has size 4, not 1}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = mpc.squeeze %a {axes = array<i64: 0>} : (tensor<4x6xf32>) -> tensor<6xf32>
  return
}

// -----

func.func @reduce_axis(%a: tensor<4x6xf32>) {
  // expected-error @+2 {{reduction axis 2 is out of range for rank 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = mpc.reduce_sum %a {axes = array<i64: 2>} : (tensor<4x6xf32>) -> tensor<4x6xf32>
  return
}

// -----

func.func @softmax_axis(%a: tensor<4x6xf32>) {
  // expected-error @+2 {{axis 3 is out of range for rank 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = mpc.softmax %a {axis = 3 : i64} : (tensor<4x6xf32>) -> tensor<4x6xf32>
  return
}

// -----

func.func @top_k_too_many(%a: tensor<4x6xf32>) {
  // expected-error @+2 {{top_k k = 7 is outside [0, 6], the axis' size}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = mpc.top_k %a {k = 7 : i64} : (tensor<4x6xf32>) -> tensor<4x7xi64>
  return
}

// -----

func.func @loss_labels(%s: tensor<8x10xf32>, %l: tensor<7xi64>) {
  // expected-error @+2 {{labels shape 'tensor<7xi64>' does not match scores 'tensor<8x10xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0:2 = mpc.softmax_cross_entropy_loss %s, %l : (tensor<8x10xf32>, tensor<7xi64>) -> (tensor<f32>, tensor<8x10xf32>)
  return
}

// -----

func.func @loss_reduction(%s: tensor<8x10xf32>, %l: tensor<8xi64>) {
  // expected-error @+2 {{reduction must be none, sum or mean, got 'avg'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = mpc.nll_loss %s, %l {reduction = "avg"} : (tensor<8x10xf32>, tensor<8xi64>) -> tensor<f32>
  return
}

// -----

func.func @bn_params(%x: tensor<8x4x2x2xf32>, %c: tensor<3xf32>) {
  // expected-error @+1 {{expected per-channel parameters of shape [4], got 'tensor<3xf32>'}}
  %0 = mpc.batch_norm %x, %c, %c, %c, %c : (tensor<8x4x2x2xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<8x4x2x2xf32>
  return
}

// -----

func.func @gelu_mode(%x: tensor<4xf32>) {
  // expected-error @+1 {{approximate must be 'none' or 'tanh', got 'fast'}}
  %0 = mpc.gelu %x {approximate = "fast"} : (tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @gelu_grad_mode(%g: tensor<4xf16>, %x: tensor<4xf16>) {
  // expected-error @+1 {{approximate must be 'none' or 'tanh', got 'fast'}}
  %0 = mpc.gelu_grad %g, %x {approximate = "fast"} : (tensor<4xf16>, tensor<4xf16>) -> tensor<4xf16>
  return
}

// -----

func.func @gelu_grad_types(%g: tensor<4xf32>, %x: tensor<4xf16>) {
  // expected-error @+1 {{grad and x must have one type}}
  %0 = mpc.gelu_grad %g, %x : (tensor<4xf32>, tensor<4xf16>) -> tensor<4xf32>
  return
}

// -----

func.func @batch_norm_grad_relu_type(%g: tensor<2x3x4xf16>, %y: tensor<2x3x4xf32>, %s: tensor<3xf32>) {
  // expected-error @+1 {{grad, x and relu_out must have one type}}
  %0:3 = mpc.batch_norm_grad %g, %g, %s, %y : (tensor<2x3x4xf16>, tensor<2x3x4xf16>, tensor<3xf32>, tensor<2x3x4xf32>) -> (tensor<2x3x4xf16>, tensor<3xf32>, tensor<3xf32>)
  return
}

// -----

func.func @batch_norm_grad_channels(%g: tensor<2x4x3xf32>, %s: tensor<3xf32>) {
  // expected-error @+1 {{expected x [N, C, ...] and scale [C], got 'tensor<2x4x3xf32>' and 'tensor<3xf32>'}}
  %0:3 = mpc.batch_norm_grad %g, %g, %s : (tensor<2x4x3xf32>, tensor<2x4x3xf32>, tensor<3xf32>) -> (tensor<2x4x3xf32>, tensor<3xf32>, tensor<3xf32>)
  return
}

// -----

func.func @relu_grad_types(%g: tensor<4xf32>, %y: tensor<4xf16>) {
  // expected-error @+1 {{grad and y must have one type}}
  %0 = mpc.relu_grad %g, %y : (tensor<4xf32>, tensor<4xf16>) -> tensor<4xf32>
  return
}

// -----

func.func @clip_bound(%x: tensor<4xf32>, %lo: tensor<2xf32>) {
  // expected-error @+1 {{min and max must be single elements of the input's element type}}
  %0 = mpc.clip %x min %lo : (tensor<4xf32>, tensor<2xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @cast_shape(%x: tensor<4xf32>) {
  // expected-error @+1 {{cast must keep the shape}}
  %0 = mpc.cast %x : (tensor<4xf32>) -> tensor<5xf16>
  return
}

// -----

// expected-error @+1 {{initial value of type 'tensor<3xf32>' does not match the parameter type 'tensor<2xf32>'}}
mpc.param @w trainable : tensor<2xf32> = dense<[1.0, 2.0, 3.0]> : tensor<3xf32>

// -----

func.func @gradient_operands(%x: tensor<4xf32>) {
  // expected-error @+1 {{expected 2 operands (one per name in xs and zs), got 1}}
  %0 = mpc.gradient %x {xs = ["x"], y = "loss", zs = ["z"]} : (tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @momentum_mode(%r: tensor<f32>, %t: tensor<i64>, %x: tensor<4xf32>) {
  // expected-error @+1 {{mode must be 'standard' or 'nesterov'}}
  %0:2 = mpc.momentum %r, %t, %x, %x, %x {alpha = 0.9 : f32, beta = 1.0 : f32, mode = "heavy", norm_coefficient = 0.0 : f32} : (tensor<f32>, tensor<i64>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

func.func @adam_step(%r: tensor<f32>, %t: tensor<f32>, %x: tensor<4xf32>) {
  // expected-error @+1 {{step count T must be an i64 scalar}}
  %0:3 = mpc.adam %r, %t, %x, %x, %x, %x : (tensor<f32>, tensor<f32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

func.func @adam_groups(%r: tensor<f32>, %t: tensor<i64>, %x: tensor<4xf32>) {
  // expected-error @+1 {{expected R, T and 4 groups of equally many tensors}}
  %0:2 = mpc.adam %r, %t, %x, %x, %x : (tensor<f32>, tensor<i64>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

func.func @attention_head_sizes(%q: tensor<2x4x8xf32>, %k: tensor<2x4x16xf32>, %v: tensor<2x4x8xf32>) {
  // expected-error @+2 {{attention's q and k head sizes differ}}
  // expected-error @+1 {{failed to infer returned types}}
  %y, %lse = mpc.attention %q, %k, %v {scale = 1.0 : f32} : (tensor<2x4x8xf32>, tensor<2x4x16xf32>, tensor<2x4x8xf32>) -> (tensor<2x4x8xf32>, tensor<2x4xf32>)
  return
}

// -----

func.func @attention_bias(%q: tensor<2x4x8xf32>, %b: tensor<3x4xf32>) {
  // expected-error @+1 {{bias 'tensor<3x4xf32>' does not broadcast to the scores' 'tensor<2x4x4xf32>'}}
  %y, %lse = mpc.attention %q, %q, %q, %b {scale = 1.0 : f32} : (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<3x4xf32>) -> (tensor<2x4x8xf32>, tensor<2x4xf32>)
  return
}

// -----

func.func @attention_dropout(%q: tensor<2x4x8xf32>, %s: tensor<i64>) {
  // expected-error @+1 {{dropout 1.000000e+00 is not in [0, 1)}}
  %y, %lse = mpc.attention %q, %q, %q step %s {scale = 1.0 : f32, dropout = 1.0 : f32} : (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<i64>) -> (tensor<2x4x8xf32>, tensor<2x4xf32>)
  return
}

// -----

func.func @all_reduce_wire(%g: tensor<4xf32>) {
  // expected-error @+1 {{'mpc.all_reduce' op operand of type 'tensor<4xf32>' on a bf16 wire}}
  %r = mpc.all_reduce %g {bucket = 0 : i64, wire = "bf16"} : (tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @all_reduce_kind(%g: tensor<4xf32>) {
  // expected-error @+1 {{'mpc.all_reduce' op wire must be f32, f16 or bf16, got 'f8'}}
  %r = mpc.all_reduce %g {bucket = 0 : i64, wire = "f8"} : (tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @all_reduce_results(%g: tensor<4xf32>) {
  // expected-error @+1 {{'mpc.all_reduce' op result type 'tensor<3xf32>' differs from its gradient's 'tensor<4xf32>'}}
  %r = mpc.all_reduce %g {bucket = 0 : i64, wire = "f32"} : (tensor<4xf32>) -> tensor<3xf32>
  return
}

// -----

func.func @resize_axis_index(%x: tensor<2x3xf32>) {
  // expected-error @+2 {{resize_axis index 3 is out of range for dimension 3}}
  // expected-error @+1 {{failed to infer returned types}}
  %y = mpc.resize_axis %x {axis = 1 : i64, size = 2 : i64, indices = array<i64: 0, 3>, weights = array<f32: 1.0, 1.0>} : (tensor<2x3xf32>) -> tensor<2x2xf32>
  return
}

// -----

func.func @resize_axis_rows(%x: tensor<2x3xf32>) {
  // expected-error @+2 {{resize_axis table of 3 taps does not split into 2 rows}}
  // expected-error @+1 {{failed to infer returned types}}
  %y = mpc.resize_axis %x {axis = 1 : i64, size = 2 : i64, indices = array<i64: 0, 1, 2>, weights = array<f32: 1.0, 1.0, 1.0>} : (tensor<2x3xf32>) -> tensor<2x2xf32>
  return
}

// -----

func.func @resize_axis_fill(%x: tensor<2x3xf32>) {
  // expected-error @+2 {{resize_axis fill has 1 values for 2 rows}}
  // expected-error @+1 {{failed to infer returned types}}
  %y = mpc.resize_axis %x {axis = 1 : i64, size = 2 : i64, indices = array<i64: 0, 1>, weights = array<f32: 1.0, 1.0>, fill = array<f32: 0.0>} : (tensor<2x3xf32>) -> tensor<2x2xf32>
  return
}

// -----

func.func @rotary_cache(%x: tensor<2x4x8x16xf32>, %c: tensor<2x8x4xf32>) {
  // expected-error @+2 {{rotary caches must be (batch or 1, sequence, 8), got 'tensor<2x8x4xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %y = mpc.rotary %x, %c, %c {rotary_dim = 16 : i64, seq_axis = 2 : i64} : (tensor<2x4x8x16xf32>, tensor<2x8x4xf32>, tensor<2x8x4xf32>) -> tensor<2x4x8x16xf32>
  return
}

// -----

func.func @rotary_dim(%x: tensor<2x4x8x16xf32>, %c: tensor<2x8x9xf32>) {
  // expected-error @+2 {{rotary_dim 18 must be even, positive and at most the head size 16}}
  // expected-error @+1 {{failed to infer returned types}}
  %y = mpc.rotary %x, %c, %c {rotary_dim = 18 : i64, seq_axis = 2 : i64} : (tensor<2x4x8x16xf32>, tensor<2x8x9xf32>, tensor<2x8x9xf32>) -> tensor<2x4x8x16xf32>
  return
}

// -----

func.func @unscale_grads_narrowing(%g: tensor<3xf32>, %s: tensor<f32>) {
  // expected-error @+1 {{result type 'tensor<3xf16>' is neither its gradient's 'tensor<3xf32>' nor its FP32 widening}}
  %u, %inf = mpc.unscale_grads %g, %s : (tensor<3xf32>, tensor<f32>) -> (tensor<3xf16>, tensor<i1>)
  return
}

// -----

func.func @global_norm_of_nothing(%f: tensor<f32>) {
  // expected-error @+1 {{expects at least one tensor}}
  %n = mpc.global_norm %f : (tensor<f32>) -> tensor<f32>
  return
}
