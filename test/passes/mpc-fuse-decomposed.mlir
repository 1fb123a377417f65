// RUN: mpc-opt %s -mpc-fuse-decomposed | FileCheck %s

// torch's LayerNorm below opset 17, with its affine parameters.
// CHECK-LABEL: func.func @layer_norm
// CHECK: %[[Y:.*]], %{{.*}}, %{{.*}} = mpc.layer_norm %arg0, %arg1, %arg2 {axis = 2 : i64}
// CHECK-NOT: mpc.reduce_mean
// CHECK: return %[[Y]]
func.func @layer_norm(%x: tensor<2x16x64xf32>, %g: tensor<64xf32>, %b: tensor<64xf32>) -> tensor<2x16x64xf32> {
  %m = mpc.reduce_mean %x {axes = array<i64: -1>} : (tensor<2x16x64xf32>) -> tensor<2x16x1xf32>
  %d = mpc.sub %x, %m : (tensor<2x16x64xf32>, tensor<2x16x1xf32>) -> tensor<2x16x64xf32>
  %two = mpc.constant dense<2.0> : tensor<f32>
  %p = mpc.pow %d, %two : (tensor<2x16x64xf32>, tensor<f32>) -> tensor<2x16x64xf32>
  %v = mpc.reduce_mean %p {axes = array<i64: -1>} : (tensor<2x16x64xf32>) -> tensor<2x16x1xf32>
  %eps = mpc.constant dense<1.0e-5> : tensor<f32>
  %e = mpc.add %v, %eps : (tensor<2x16x1xf32>, tensor<f32>) -> tensor<2x16x1xf32>
  %s = mpc.sqrt %e : (tensor<2x16x1xf32>) -> tensor<2x16x1xf32>
  %n = mpc.div %d, %s : (tensor<2x16x64xf32>, tensor<2x16x1xf32>) -> tensor<2x16x64xf32>
  %y = mpc.mul %n, %g : (tensor<2x16x64xf32>, tensor<64xf32>) -> tensor<2x16x64xf32>
  %z = mpc.add %y, %b : (tensor<2x16x64xf32>, tensor<64xf32>) -> tensor<2x16x64xf32>
  return %z : tensor<2x16x64xf32>
}

// Over the last two axes, d * d for the square, no affine part: a scale of
// ones, the epsilon kept.
// CHECK-LABEL: func.func @two_axes_plain
// CHECK: %[[ONES:.*]] = mpc.constant dense<1.000000e+00> : tensor<4x8xf32>
// CHECK: mpc.layer_norm %arg0, %[[ONES]] {axis = 1 : i64, epsilon = 1.000000e-03 : f32}
func.func @two_axes_plain(%x: tensor<3x4x8xf32>) -> tensor<3x4x8xf32> {
  %m = mpc.reduce_mean %x {axes = array<i64: 1, 2>} : (tensor<3x4x8xf32>) -> tensor<3x1x1xf32>
  %d = mpc.sub %x, %m : (tensor<3x4x8xf32>, tensor<3x1x1xf32>) -> tensor<3x4x8xf32>
  %p = mpc.mul %d, %d : (tensor<3x4x8xf32>, tensor<3x4x8xf32>) -> tensor<3x4x8xf32>
  %v = mpc.reduce_mean %p {axes = array<i64: -2, -1>} : (tensor<3x4x8xf32>) -> tensor<3x1x1xf32>
  %eps = mpc.constant dense<1.0e-3> : tensor<f32>
  %e = mpc.add %eps, %v : (tensor<f32>, tensor<3x1x1xf32>) -> tensor<3x1x1xf32>
  %s = mpc.sqrt %e : (tensor<3x1x1xf32>) -> tensor<3x1x1xf32>
  %n = mpc.div %d, %s : (tensor<3x4x8xf32>, tensor<3x1x1xf32>) -> tensor<3x4x8xf32>
  return %n : tensor<3x4x8xf32>
}

// Left as written: the centred value read elsewhere...
// CHECK-LABEL: func.func @centred_used_twice
// CHECK-NOT: mpc.layer_norm
func.func @centred_used_twice(%x: tensor<2x8xf32>) -> (tensor<2x8xf32>, tensor<2x8xf32>) {
  %m = mpc.reduce_mean %x {axes = array<i64: -1>} : (tensor<2x8xf32>) -> tensor<2x1xf32>
  %d = mpc.sub %x, %m : (tensor<2x8xf32>, tensor<2x1xf32>) -> tensor<2x8xf32>
  %p = mpc.mul %d, %d : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %v = mpc.reduce_mean %p {axes = array<i64: -1>} : (tensor<2x8xf32>) -> tensor<2x1xf32>
  %eps = mpc.constant dense<1.0e-5> : tensor<f32>
  %e = mpc.add %v, %eps : (tensor<2x1xf32>, tensor<f32>) -> tensor<2x1xf32>
  %s = mpc.sqrt %e : (tensor<2x1xf32>) -> tensor<2x1xf32>
  %n = mpc.div %d, %s : (tensor<2x8xf32>, tensor<2x1xf32>) -> tensor<2x8xf32>
  return %n, %d : tensor<2x8xf32>, tensor<2x8xf32>
}

// ...and statistics over a leading axis (not a layer norm).
// CHECK-LABEL: func.func @leading_axis
// CHECK-NOT: mpc.layer_norm
func.func @leading_axis(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %m = mpc.reduce_mean %x {axes = array<i64: 0>} : (tensor<2x8xf32>) -> tensor<1x8xf32>
  %d = mpc.sub %x, %m : (tensor<2x8xf32>, tensor<1x8xf32>) -> tensor<2x8xf32>
  %p = mpc.mul %d, %d : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %v = mpc.reduce_mean %p {axes = array<i64: 0>} : (tensor<2x8xf32>) -> tensor<1x8xf32>
  %eps = mpc.constant dense<1.0e-5> : tensor<f32>
  %e = mpc.add %v, %eps : (tensor<1x8xf32>, tensor<f32>) -> tensor<1x8xf32>
  %s = mpc.sqrt %e : (tensor<1x8xf32>) -> tensor<1x8xf32>
  %n = mpc.div %d, %s : (tensor<2x8xf32>, tensor<1x8xf32>) -> tensor<2x8xf32>
  return %n : tensor<2x8xf32>
}

// GELU as torch writes it below opset 20: x * (erf(x / sqrt 2) + 1) * 0.5.
// CHECK-LABEL: func.func @gelu_erf
// CHECK: %[[G:.*]] = mpc.gelu %arg0
// CHECK-NOT: mpc.erf
// CHECK: return %[[G]]
func.func @gelu_erf(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %r2 = mpc.constant dense<1.41421354> : tensor<f32>
  %a = mpc.div %x, %r2 : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %e = mpc.erf %a : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %one = mpc.constant dense<1.0> : tensor<f32>
  %b = mpc.add %e, %one : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %c = mpc.mul %x, %b : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %h = mpc.constant dense<0.5> : tensor<f32>
  %y = mpc.mul %c, %h : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// The half applied first, x * (1/sqrt 2) inside.
// CHECK-LABEL: func.func @gelu_half_first
// CHECK: mpc.gelu %arg0
func.func @gelu_half_first(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %h = mpc.constant dense<0.5> : tensor<f32>
  %xh = mpc.mul %x, %h : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %r = mpc.constant dense<0.707106769> : tensor<f32>
  %a = mpc.mul %x, %r : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %e = mpc.erf %a : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %one = mpc.constant dense<1.0> : tensor<f32>
  %b = mpc.add %one, %e : (tensor<f32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %y = mpc.mul %xh, %b : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// Not GELU: another constant inside the erf.
// CHECK-LABEL: func.func @not_gelu
// CHECK-NOT: mpc.gelu
// CHECK: mpc.erf
func.func @not_gelu(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %r2 = mpc.constant dense<2.0> : tensor<f32>
  %a = mpc.div %x, %r2 : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %e = mpc.erf %a : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %one = mpc.constant dense<1.0> : tensor<f32>
  %b = mpc.add %e, %one : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %c = mpc.mul %x, %b : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %h = mpc.constant dense<0.5> : tensor<f32>
  %y = mpc.mul %c, %h : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// GPT-2's gelu_new as torch 1.13 exports F.gelu(approximate="tanh") below
// opset 20: x * (tanh(sqrt(2/pi) * (x + 0.044715 * x * (x * x))) + 1) * 0.5.
// CHECK-LABEL: func.func @gelu_tanh_torch
// CHECK: %[[G:.*]] = mpc.gelu %arg0 {approximate = "tanh"}
// CHECK-NOT: mpc.tanh
// CHECK-NOT: mpc.mul
// CHECK: return %[[G]]
func.func @gelu_tanh_torch(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %sq = mpc.mul %x, %x : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %cube = mpc.mul %x, %sq : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %c = mpc.constant dense<4.471500e-02> : tensor<f32>
  %t3 = mpc.mul %cube, %c : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %in = mpc.add %x, %t3 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %k = mpc.constant dense<0.797884583> : tensor<f32>
  %u = mpc.mul %in, %k : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %t = mpc.tanh %u : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %one = mpc.constant dense<1.0> : tensor<f32>
  %b = mpc.add %t, %one : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %p = mpc.mul %x, %b : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %h = mpc.constant dense<0.5> : tensor<f32>
  %y = mpc.mul %p, %h : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// Hugging Face's NewGELUActivation: 0.5 * x * (1 + tanh(sqrt(2/pi) *
// (x + 0.044715 * pow(x, 3)))), constants on the left.
// CHECK-LABEL: func.func @gelu_tanh_pow
// CHECK: mpc.gelu %arg0 {approximate = "tanh"}
// CHECK-NOT: mpc.pow
func.func @gelu_tanh_pow(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %h = mpc.constant dense<0.5> : tensor<f32>
  %xh = mpc.mul %h, %x : (tensor<f32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %three = mpc.constant dense<3.0> : tensor<f32>
  %cube = mpc.pow %x, %three : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %c = mpc.constant dense<4.471500e-02> : tensor<f32>
  %t3 = mpc.mul %c, %cube : (tensor<f32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %in = mpc.add %t3, %x : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %k = mpc.constant dense<0.797884583> : tensor<f32>
  %u = mpc.mul %k, %in : (tensor<f32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %t = mpc.tanh %u : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %one = mpc.constant dense<1.0> : tensor<f32>
  %b = mpc.add %one, %t : (tensor<f32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %y = mpc.mul %xh, %b : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// Not GELU: x^2 where the cube belongs, and a cube read elsewhere; both
// stay as written.
// CHECK-LABEL: func.func @not_gelu_tanh
// CHECK-NOT: mpc.gelu
// CHECK: mpc.tanh
// CHECK-LABEL: func.func @gelu_tanh_cube_used_twice
// CHECK-NOT: mpc.gelu
// CHECK: mpc.tanh
func.func @not_gelu_tanh(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %sq = mpc.mul %x, %x : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %c = mpc.constant dense<4.471500e-02> : tensor<f32>
  %t3 = mpc.mul %sq, %c : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %in = mpc.add %x, %t3 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %k = mpc.constant dense<0.797884583> : tensor<f32>
  %u = mpc.mul %in, %k : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %t = mpc.tanh %u : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %one = mpc.constant dense<1.0> : tensor<f32>
  %b = mpc.add %t, %one : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %p = mpc.mul %x, %b : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %h = mpc.constant dense<0.5> : tensor<f32>
  %y = mpc.mul %p, %h : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}
func.func @gelu_tanh_cube_used_twice(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %three = mpc.constant dense<3.0> : tensor<f32>
  %cube = mpc.pow %x, %three : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %c = mpc.constant dense<4.471500e-02> : tensor<f32>
  %t3 = mpc.mul %cube, %c : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %in = mpc.add %x, %t3 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %k = mpc.constant dense<0.797884583> : tensor<f32>
  %u = mpc.mul %in, %k : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %t = mpc.tanh %u : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %one = mpc.constant dense<1.0> : tensor<f32>
  %b = mpc.add %t, %one : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %p = mpc.mul %x, %b : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %h = mpc.constant dense<0.5> : tensor<f32>
  %y = mpc.mul %p, %h : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  return %y, %cube : tensor<4x8xf32>, tensor<4x8xf32>
}

// RMS normalization as LLaMA-style code exports it: x * rsqrt(mean(x^2) +
// eps) (Sqrt, Reciprocal), then times the weight.
// CHECK-LABEL: func.func @rms_norm
// CHECK: %[[Y:.*]], %{{.*}} = mpc.rms_norm %arg0, %arg1 {axis = 2 : i64, epsilon = 9.99999997E-7 : f32}
// CHECK-NOT: mpc.reduce_mean
// CHECK: return %[[Y]]
func.func @rms_norm(%x: tensor<2x16x64xf32>, %w: tensor<64xf32>) -> tensor<2x16x64xf32> {
  %two = mpc.constant dense<2.0> : tensor<f32>
  %p = mpc.pow %x, %two : (tensor<2x16x64xf32>, tensor<f32>) -> tensor<2x16x64xf32>
  %v = mpc.reduce_mean %p {axes = array<i64: -1>} : (tensor<2x16x64xf32>) -> tensor<2x16x1xf32>
  %eps = mpc.constant dense<1.0e-6> : tensor<f32>
  %e = mpc.add %v, %eps : (tensor<2x16x1xf32>, tensor<f32>) -> tensor<2x16x1xf32>
  %s = mpc.sqrt %e : (tensor<2x16x1xf32>) -> tensor<2x16x1xf32>
  %r = mpc.reciprocal %s : (tensor<2x16x1xf32>) -> tensor<2x16x1xf32>
  %n = mpc.mul %x, %r : (tensor<2x16x64xf32>, tensor<2x16x1xf32>) -> tensor<2x16x64xf32>
  %y = mpc.mul %w, %n : (tensor<64xf32>, tensor<2x16x64xf32>) -> tensor<2x16x64xf32>
  return %y : tensor<2x16x64xf32>
}

// torch's TorchScript exporter writes rsqrt as Div(1, Sqrt) (Llama's
// RMSNorm exported by torch 1.13 and 2.x): the same op; Div(2, Sqrt) is
// not an inverse RMS and stays.
// CHECK-LABEL: func.func @rms_norm_one_over
// CHECK: %[[Y:.*]], %{{.*}} = mpc.rms_norm %arg0, %arg1 {axis = 2 : i64, epsilon = 9.99999997E-7 : f32}
// CHECK-NOT: mpc.sqrt
// CHECK: return %[[Y]]
func.func @rms_norm_one_over(%x: tensor<2x16x64xf32>, %w: tensor<64xf32>) -> tensor<2x16x64xf32> {
  %two = mpc.constant dense<2.0> : tensor<f32>
  %p = mpc.pow %x, %two : (tensor<2x16x64xf32>, tensor<f32>) -> tensor<2x16x64xf32>
  %v = mpc.reduce_mean %p {axes = array<i64: -1>} : (tensor<2x16x64xf32>) -> tensor<2x16x1xf32>
  %eps = mpc.constant dense<1.0e-6> : tensor<f32>
  %e = mpc.add %v, %eps : (tensor<2x16x1xf32>, tensor<f32>) -> tensor<2x16x1xf32>
  %s = mpc.sqrt %e : (tensor<2x16x1xf32>) -> tensor<2x16x1xf32>
  %one = mpc.constant dense<1.0> : tensor<f32>
  %r = mpc.div %one, %s : (tensor<f32>, tensor<2x16x1xf32>) -> tensor<2x16x1xf32>
  %n = mpc.mul %x, %r : (tensor<2x16x64xf32>, tensor<2x16x1xf32>) -> tensor<2x16x64xf32>
  %y = mpc.mul %w, %n : (tensor<64xf32>, tensor<2x16x64xf32>) -> tensor<2x16x64xf32>
  return %y : tensor<2x16x64xf32>
}
// CHECK-LABEL: func.func @rms_norm_two_over
// CHECK-NOT: mpc.rms_norm
// CHECK: mpc.sqrt
// CHECK: return
func.func @rms_norm_two_over(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %p = mpc.mul %x, %x : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %v = mpc.reduce_mean %p {axes = array<i64: 1>} : (tensor<4x8xf32>) -> tensor<4x1xf32>
  %eps = mpc.constant dense<1.0e-5> : tensor<f32>
  %e = mpc.add %v, %eps : (tensor<4x1xf32>, tensor<f32>) -> tensor<4x1xf32>
  %s = mpc.sqrt %e : (tensor<4x1xf32>) -> tensor<4x1xf32>
  %c = mpc.constant dense<2.0> : tensor<f32>
  %r = mpc.div %c, %s : (tensor<f32>, tensor<4x1xf32>) -> tensor<4x1xf32>
  %n = mpc.mul %x, %r : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  return %n : tensor<4x8xf32>
}

// x / sqrt(mean(x * x) + eps) without a weight: a scale of ones.
// CHECK-LABEL: func.func @rms_norm_div
// CHECK: mpc.rms_norm %arg0, %{{.*}} {axis = 1 : i64}
func.func @rms_norm_div(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %p = mpc.mul %x, %x : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %v = mpc.reduce_mean %p {axes = array<i64: 1>} : (tensor<4x8xf32>) -> tensor<4x1xf32>
  %eps = mpc.constant dense<1.0e-5> : tensor<f32>
  %e = mpc.add %v, %eps : (tensor<4x1xf32>, tensor<f32>) -> tensor<4x1xf32>
  %s = mpc.sqrt %e : (tensor<4x1xf32>) -> tensor<4x1xf32>
  %n = mpc.div %x, %s : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  return %n : tensor<4x8xf32>
}
