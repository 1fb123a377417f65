// RUN: mpc-opt %s -mpc-fuse-decomposed | FileCheck %s
// RUN: mpc-opt %s -mpc-fuse-decomposed --mlir-print-debuginfo --mlir-print-local-scope | FileCheck %s --check-prefix=LOC

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

// Rotary embeddings as Hugging Face's Llama writes them: q * cos +
// rotate_half(q) * sin, rotate_half(q) = cat(-q[..., 4:], q[..., :4]),
// the tables cat(freqs, freqs) through cos/sin and two unsqueezes. Both
// q's and k's (operands in other orders) become mpc.rotary on the
// tables' first halves, each half sliced once, after its table.
// CHECK-LABEL: func.func @rotary
// CHECK: %[[C:.*]] = mpc.reshape {{.*}} -> tensor<1x4x4xf32>
// CHECK: %[[S:.*]] = mpc.reshape {{.*}} -> tensor<1x4x4xf32>
// CHECK: %[[Q:.*]] = mpc.rotary %arg0, %[[C]], %[[S]] {rotary_dim = 8 : i64, seq_axis = 2 : i64}
// CHECK: %[[K:.*]] = mpc.rotary %arg1, %[[C]], %[[S]] {rotary_dim = 8 : i64, seq_axis = 2 : i64}
// CHECK-NOT: mpc.neg
// CHECK: return %[[Q]], %[[K]]
// The halves keep their tables' locations, the rotations their Adds'.
// LOC-LABEL: func.func @rotary
// LOC: mpc.reshape {{.*}} -> tensor<1x4x4xf32> loc("cos")
// LOC: mpc.reshape {{.*}} -> tensor<1x4x4xf32> loc("sin")
// LOC: mpc.rotary %arg0, {{.*}} loc("q_embed")
// LOC: mpc.rotary %arg1, {{.*}} loc("k_embed")
func.func @rotary(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %f: tensor<4x4xf32>) -> (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) {
  %emb = mpc.concat %f, %f {axis = -1 : i64} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x8xf32>
  %c0 = mpc.cos %emb : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %c1 = mpc.unsqueeze %c0 {axes = array<i64: 0>} : (tensor<4x8xf32>) -> tensor<1x4x8xf32>
  %cos = mpc.unsqueeze %c1 {axes = array<i64: 1>} : (tensor<1x4x8xf32>) -> tensor<1x1x4x8xf32> loc("cos")
  %s0 = mpc.sin %emb : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %s1 = mpc.unsqueeze %s0 {axes = array<i64: 0>} : (tensor<4x8xf32>) -> tensor<1x4x8xf32>
  %sin = mpc.unsqueeze %s1 {axes = array<i64: 1>} : (tensor<1x4x8xf32>) -> tensor<1x1x4x8xf32> loc("sin")
  %h = mpc.constant dense<4> : tensor<1xi64>
  %end = mpc.constant dense<9223372036854775807> : tensor<1xi64>
  %zero = mpc.constant dense<0> : tensor<1xi64>
  %ax = mpc.constant dense<3> : tensor<1xi64>
  %one = mpc.constant dense<1> : tensor<1xi64>
  %qc = mpc.mul %q, %cos : (tensor<1x2x4x8xf32>, tensor<1x1x4x8xf32>) -> tensor<1x2x4x8xf32>
  %q2 = mpc.slice %q, %h, %end axes %ax steps %one : (tensor<1x2x4x8xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x2x4x4xf32>
  %nq2 = mpc.neg %q2 : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %q1 = mpc.slice %q, %zero, %h axes %ax steps %one : (tensor<1x2x4x8xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x2x4x4xf32>
  %qr = mpc.concat %nq2, %q1 {axis = -1 : i64} : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x8xf32>
  %qs = mpc.mul %qr, %sin : (tensor<1x2x4x8xf32>, tensor<1x1x4x8xf32>) -> tensor<1x2x4x8xf32>
  %qe = mpc.add %qc, %qs : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> loc("q_embed")
  %kc = mpc.mul %cos, %k : (tensor<1x1x4x8xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  %k2 = mpc.slice %k, %h, %end axes %ax steps %one : (tensor<1x2x4x8xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x2x4x4xf32>
  %nk2 = mpc.neg %k2 : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %k1 = mpc.slice %k, %zero, %h axes %ax steps %one : (tensor<1x2x4x8xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x2x4x4xf32>
  %kr = mpc.concat %nk2, %k1 {axis = 3 : i64} : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x8xf32>
  %ks = mpc.mul %sin, %kr : (tensor<1x1x4x8xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  %ke = mpc.add %ks, %kc : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> loc("k_embed")
  return %qe, %ke : tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>
}

// q the heads transpose of the projection's (batch, seq, heads, head):
// the rotation moves before it (seq_axis 1) so the transpose meets
// attention, which reads heads in place; where the transposed q has
// another user the rotation stays after it.
// CHECK-LABEL: func.func @rotary_before_transpose
// CHECK: %[[R:.*]] = mpc.rotary %arg0, %{{.*}}, %{{.*}} {rotary_dim = 8 : i64, seq_axis = 1 : i64} : (tensor<1x4x2x8xf32>
// CHECK: %[[Q:.*]] = mpc.transpose %[[R]] {perm = array<i64: 0, 2, 1, 3>}
// CHECK: %[[T:.*]] = mpc.transpose %arg1
// CHECK: %[[K:.*]] = mpc.rotary %[[T]], %{{.*}}, %{{.*}} {rotary_dim = 8 : i64, seq_axis = 2 : i64}
// CHECK: return %[[Q]], %[[K]], %[[T]]
func.func @rotary_before_transpose(%qp: tensor<1x4x2x8xf32>, %kp: tensor<1x4x2x8xf32>) -> (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) {
  %cos = mpc.constant dense<5.000000e-01> : tensor<1x1x4x8xf32>
  %sin = mpc.constant dense<2.500000e-01> : tensor<1x1x4x8xf32>
  %h = mpc.constant dense<4> : tensor<1xi64>
  %end = mpc.constant dense<8> : tensor<1xi64>
  %zero = mpc.constant dense<0> : tensor<1xi64>
  %ax = mpc.constant dense<-1> : tensor<1xi64>
  %q = mpc.transpose %qp {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x4x2x8xf32>) -> tensor<1x2x4x8xf32>
  %q2 = mpc.slice %q, %h, %end axes %ax : (tensor<1x2x4x8xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x2x4x4xf32>
  %nq2 = mpc.neg %q2 : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %q1 = mpc.slice %q, %zero, %h axes %ax : (tensor<1x2x4x8xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x2x4x4xf32>
  %qr = mpc.concat %nq2, %q1 {axis = -1 : i64} : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x8xf32>
  %qs = mpc.mul %qr, %sin : (tensor<1x2x4x8xf32>, tensor<1x1x4x8xf32>) -> tensor<1x2x4x8xf32>
  %qc = mpc.mul %q, %cos : (tensor<1x2x4x8xf32>, tensor<1x1x4x8xf32>) -> tensor<1x2x4x8xf32>
  %qe = mpc.add %qc, %qs : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  %k = mpc.transpose %kp {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x4x2x8xf32>) -> tensor<1x2x4x8xf32>
  %k2 = mpc.slice %k, %h, %end axes %ax : (tensor<1x2x4x8xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x2x4x4xf32>
  %nk2 = mpc.neg %k2 : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %k1 = mpc.slice %k, %zero, %h axes %ax : (tensor<1x2x4x8xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x2x4x4xf32>
  %kr = mpc.concat %nk2, %k1 {axis = -1 : i64} : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x8xf32>
  %ks = mpc.mul %kr, %sin : (tensor<1x2x4x8xf32>, tensor<1x1x4x8xf32>) -> tensor<1x2x4x8xf32>
  %kc = mpc.mul %k, %cos : (tensor<1x2x4x8xf32>, tensor<1x1x4x8xf32>) -> tensor<1x2x4x8xf32>
  %ke = mpc.add %kc, %ks : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  return %qe, %ke, %k : tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>
}

// GPT-NeoX's partial rotary: the first 4 of each head's 8 rotate,
// cat(rope(q[..., :4]), q[..., 4:]): one mpc.rotary over the whole head
// with rotary_dim 4 (the rest passes through it); a pass-through taken
// from another tensor stays a concat.
// CHECK-LABEL: func.func @partial_rotary
// CHECK: %[[Y:.*]] = mpc.rotary %arg0, %{{.*}}, %{{.*}} {rotary_dim = 4 : i64, seq_axis = 2 : i64} : (tensor<1x2x4x8xf32>
// CHECK: %[[R:.*]] = mpc.rotary %{{.*}} {rotary_dim = 4 : i64, seq_axis = 2 : i64} : (tensor<1x2x4x4xf32>
// CHECK: %[[Z:.*]] = mpc.concat %[[R]], %{{.*}}
// CHECK: return %[[Y]], %[[Z]]
func.func @partial_rotary(%q: tensor<1x2x4x8xf32>, %other: tensor<1x2x4x8xf32>) -> (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) {
  %cos = mpc.constant dense<5.000000e-01> : tensor<1x1x4x4xf32>
  %sin = mpc.constant dense<2.500000e-01> : tensor<1x1x4x4xf32>
  %two = mpc.constant dense<2> : tensor<1xi64>
  %four = mpc.constant dense<4> : tensor<1xi64>
  %end = mpc.constant dense<8> : tensor<1xi64>
  %zero = mpc.constant dense<0> : tensor<1xi64>
  %ax = mpc.constant dense<-1> : tensor<1xi64>
  %qr = mpc.slice %q, %zero, %four axes %ax : (tensor<1x2x4x8xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x2x4x4xf32>
  %qp = mpc.slice %q, %four, %end axes %ax : (tensor<1x2x4x8xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x2x4x4xf32>
  %a2 = mpc.slice %qr, %two, %four axes %ax : (tensor<1x2x4x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x2x4x2xf32>
  %na2 = mpc.neg %a2 : (tensor<1x2x4x2xf32>) -> tensor<1x2x4x2xf32>
  %a1 = mpc.slice %qr, %zero, %two axes %ax : (tensor<1x2x4x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x2x4x2xf32>
  %ar = mpc.concat %na2, %a1 {axis = -1 : i64} : (tensor<1x2x4x2xf32>, tensor<1x2x4x2xf32>) -> tensor<1x2x4x4xf32>
  %as = mpc.mul %ar, %sin : (tensor<1x2x4x4xf32>, tensor<1x1x4x4xf32>) -> tensor<1x2x4x4xf32>
  %ac = mpc.mul %qr, %cos : (tensor<1x2x4x4xf32>, tensor<1x1x4x4xf32>) -> tensor<1x2x4x4xf32>
  %rope = mpc.add %ac, %as : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %y = mpc.concat %rope, %qp {axis = -1 : i64} : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x8xf32>
  %or = mpc.slice %other, %zero, %four axes %ax : (tensor<1x2x4x8xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x2x4x4xf32>
  %op = mpc.slice %q, %four, %end axes %ax : (tensor<1x2x4x8xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x2x4x4xf32>
  %b2 = mpc.slice %or, %two, %four axes %ax : (tensor<1x2x4x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x2x4x2xf32>
  %nb2 = mpc.neg %b2 : (tensor<1x2x4x2xf32>) -> tensor<1x2x4x2xf32>
  %b1 = mpc.slice %or, %zero, %two axes %ax : (tensor<1x2x4x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x2x4x2xf32>
  %br = mpc.concat %nb2, %b1 {axis = -1 : i64} : (tensor<1x2x4x2xf32>, tensor<1x2x4x2xf32>) -> tensor<1x2x4x4xf32>
  %bs = mpc.mul %br, %sin : (tensor<1x2x4x4xf32>, tensor<1x1x4x4xf32>) -> tensor<1x2x4x4xf32>
  %bc = mpc.mul %or, %cos : (tensor<1x2x4x4xf32>, tensor<1x1x4x4xf32>) -> tensor<1x2x4x4xf32>
  %brope = mpc.add %bc, %bs : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %z = mpc.concat %brope, %op {axis = -1 : i64} : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x8xf32>
  return %y, %z : tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>
}

// Not rotary, left as written: tables whose halves differ (cat(f, g)),
// the negation on the first half (cat(q1, -q2)), and a rotation of part
// of the head (q[..., :2] and q[..., 2:]).
// CHECK-LABEL: func.func @not_rotary
// CHECK-NOT: mpc.rotary
// CHECK: return
func.func @not_rotary(%q: tensor<1x2x4x8xf32>, %f: tensor<4x4xf32>, %g: tensor<4x4xf32>) -> (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) {
  %tab = mpc.constant dense<5.000000e-01> : tensor<1x1x4x8xf32>
  %shape = mpc.constant dense<[1, 1, 4, 8]> : tensor<4xi64>
  %emb = mpc.concat %f, %g {axis = -1 : i64} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x8xf32>
  %c0 = mpc.cos %emb : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %cos = mpc.reshape %c0, %shape : (tensor<4x8xf32>, tensor<4xi64>) -> tensor<1x1x4x8xf32>
  %s0 = mpc.sin %emb : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %sin = mpc.reshape %s0, %shape : (tensor<4x8xf32>, tensor<4xi64>) -> tensor<1x1x4x8xf32>
  %two = mpc.constant dense<2> : tensor<1xi64>
  %h = mpc.constant dense<4> : tensor<1xi64>
  %end = mpc.constant dense<8> : tensor<1xi64>
  %zero = mpc.constant dense<0> : tensor<1xi64>
  %ax = mpc.constant dense<-1> : tensor<1xi64>
  %a1 = mpc.slice %q, %h, %end axes %ax : (tensor<1x2x4x8xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x2x4x4xf32>
  %a2 = mpc.neg %a1 : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %a3 = mpc.slice %q, %zero, %h axes %ax : (tensor<1x2x4x8xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x2x4x4xf32>
  %a4 = mpc.concat %a2, %a3 {axis = -1 : i64} : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x8xf32>
  %a5 = mpc.mul %a4, %sin : (tensor<1x2x4x8xf32>, tensor<1x1x4x8xf32>) -> tensor<1x2x4x8xf32>
  %a6 = mpc.mul %q, %cos : (tensor<1x2x4x8xf32>, tensor<1x1x4x8xf32>) -> tensor<1x2x4x8xf32>
  %ya = mpc.add %a6, %a5 : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  %b1 = mpc.slice %q, %h, %end axes %ax : (tensor<1x2x4x8xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x2x4x4xf32>
  %b2 = mpc.neg %b1 : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %b3 = mpc.slice %q, %zero, %h axes %ax : (tensor<1x2x4x8xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x2x4x4xf32>
  %b4 = mpc.concat %b3, %b2 {axis = -1 : i64} : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x8xf32>
  %b5 = mpc.mul %b4, %tab : (tensor<1x2x4x8xf32>, tensor<1x1x4x8xf32>) -> tensor<1x2x4x8xf32>
  %b6 = mpc.mul %q, %tab : (tensor<1x2x4x8xf32>, tensor<1x1x4x8xf32>) -> tensor<1x2x4x8xf32>
  %yb = mpc.add %b6, %b5 : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  %c1 = mpc.slice %q, %two, %end axes %ax : (tensor<1x2x4x8xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x2x4x6xf32>
  %c2 = mpc.neg %c1 : (tensor<1x2x4x6xf32>) -> tensor<1x2x4x6xf32>
  %c3 = mpc.slice %q, %zero, %two axes %ax : (tensor<1x2x4x8xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x2x4x2xf32>
  %c4 = mpc.concat %c2, %c3 {axis = -1 : i64} : (tensor<1x2x4x6xf32>, tensor<1x2x4x2xf32>) -> tensor<1x2x4x8xf32>
  %c5 = mpc.mul %c4, %tab : (tensor<1x2x4x8xf32>, tensor<1x1x4x8xf32>) -> tensor<1x2x4x8xf32>
  %c6 = mpc.mul %q, %tab : (tensor<1x2x4x8xf32>, tensor<1x1x4x8xf32>) -> tensor<1x2x4x8xf32>
  %yc = mpc.add %c6, %c5 : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  return %ya, %yb, %yc : tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>
}

// GPT-J's and CodeGen's interleaved rotary on the first 4 of each head's
// 8: rotate_every_two(x) = stack(-x[..., 1::2], x[..., ::2], -1)
// .flatten(-2), the tables repeat_interleave'd (each angle broadcast to
// a pair): one mpc.rotary {interleaved} over the whole head, the tables'
// even elements its cos and sin.
// CHECK-LABEL: func.func @rotary_interleaved
// CHECK: %[[C:.*]] = mpc.slice %{{.*}} steps %{{.*}} : (tensor<1x4x1x4xf32>, {{.*}}) -> tensor<1x4x1x2xf32>
// CHECK: %[[Y:.*]] = mpc.rotary %arg0, %{{.*}}, %{{.*}} {interleaved = true, rotary_dim = 4 : i64, seq_axis = 1 : i64} : (tensor<1x4x2x8xf32>
// CHECK-NOT: mpc.neg
// CHECK: return %[[Y]]
// LOC-LABEL: func.func @rotary_interleaved
// LOC: mpc.rotary %arg0, {{.*}} loc("rope")
func.func @rotary_interleaved(%q: tensor<1x4x2x8xf32>, %f: tensor<1x4x1x2xf32>) -> tensor<1x4x2x8xf32> {
  %e5 = mpc.constant dense<[1, 4, 1, 2, 2]> : tensor<5xi64>
  %s4 = mpc.constant dense<[1, 4, 1, 4]> : tensor<4xi64>
  %flat = mpc.constant dense<[1, 4, 2, 4]> : tensor<4xi64>
  %zero = mpc.constant dense<0> : tensor<1xi64>
  %one = mpc.constant dense<1> : tensor<1xi64>
  %two = mpc.constant dense<2> : tensor<1xi64>
  %four = mpc.constant dense<4> : tensor<1xi64>
  %end = mpc.constant dense<8> : tensor<1xi64>
  %ax = mpc.constant dense<-1> : tensor<1xi64>
  %fu = mpc.unsqueeze %f {axes = array<i64: 4>} : (tensor<1x4x1x2xf32>) -> tensor<1x4x1x2x1xf32>
  %fe = mpc.expand %fu, %e5 : (tensor<1x4x1x2x1xf32>, tensor<5xi64>) -> tensor<1x4x1x2x2xf32>
  %fr = mpc.reshape %fe, %s4 : (tensor<1x4x1x2x2xf32>, tensor<4xi64>) -> tensor<1x4x1x4xf32>
  %cos = mpc.cos %fr : (tensor<1x4x1x4xf32>) -> tensor<1x4x1x4xf32>
  %sin = mpc.sin %fr : (tensor<1x4x1x4xf32>) -> tensor<1x4x1x4xf32>
  %qr = mpc.slice %q, %zero, %four axes %ax : (tensor<1x4x2x8xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x4x2x4xf32>
  %qp = mpc.slice %q, %four, %end axes %ax : (tensor<1x4x2x8xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x4x2x4xf32>
  %ev = mpc.slice %qr, %zero, %end axes %ax steps %two : (tensor<1x4x2x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x4x2x2xf32>
  %od = mpc.slice %qr, %one, %end axes %ax steps %two : (tensor<1x4x2x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x4x2x2xf32>
  %no = mpc.neg %od : (tensor<1x4x2x2xf32>) -> tensor<1x4x2x2xf32>
  %u0 = mpc.unsqueeze %no {axes = array<i64: -1>} : (tensor<1x4x2x2xf32>) -> tensor<1x4x2x2x1xf32>
  %u1 = mpc.unsqueeze %ev {axes = array<i64: -1>} : (tensor<1x4x2x2xf32>) -> tensor<1x4x2x2x1xf32>
  %st = mpc.concat %u0, %u1 {axis = -1 : i64} : (tensor<1x4x2x2x1xf32>, tensor<1x4x2x2x1xf32>) -> tensor<1x4x2x2x2xf32>
  %rot = mpc.reshape %st, %flat : (tensor<1x4x2x2x2xf32>, tensor<4xi64>) -> tensor<1x4x2x4xf32>
  %rs = mpc.mul %rot, %sin : (tensor<1x4x2x4xf32>, tensor<1x4x1x4xf32>) -> tensor<1x4x2x4xf32>
  %rc = mpc.mul %qr, %cos : (tensor<1x4x2x4xf32>, tensor<1x4x1x4xf32>) -> tensor<1x4x2x4xf32>
  %rope = mpc.add %rc, %rs : (tensor<1x4x2x4xf32>, tensor<1x4x2x4xf32>) -> tensor<1x4x2x4xf32>
  %y = mpc.concat %rope, %qp {axis = -1 : i64} : (tensor<1x4x2x4xf32>, tensor<1x4x2x4xf32>) -> tensor<1x4x2x8xf32> loc("rope")
  return %y : tensor<1x4x2x8xf32>
}

// Not interleaved rotary, left as written: tables whose pairs differ, and
// the pairs stacked as (x[..., ::2], -x[..., 1::2]).
// CHECK-LABEL: func.func @not_rotary_interleaved
// CHECK-NOT: mpc.rotary
// CHECK: return
func.func @not_rotary_interleaved(%q: tensor<1x4x2x4xf32>) -> (tensor<1x4x2x4xf32>, tensor<1x4x2x4xf32>) {
  %tab = mpc.constant dense<[[[[1.0, 2.0, 3.0, 4.0]], [[1.0, 2.0, 3.0, 4.0]], [[1.0, 2.0, 3.0, 4.0]], [[1.0, 2.0, 3.0, 4.0]]]]> : tensor<1x4x1x4xf32>
  %even = mpc.constant dense<5.000000e-01> : tensor<1x4x1x4xf32>
  %flat = mpc.constant dense<[1, 4, 2, 4]> : tensor<4xi64>
  %zero = mpc.constant dense<0> : tensor<1xi64>
  %one = mpc.constant dense<1> : tensor<1xi64>
  %two = mpc.constant dense<2> : tensor<1xi64>
  %end = mpc.constant dense<4> : tensor<1xi64>
  %ax = mpc.constant dense<-1> : tensor<1xi64>
  %ev = mpc.slice %q, %zero, %end axes %ax steps %two : (tensor<1x4x2x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x4x2x2xf32>
  %od = mpc.slice %q, %one, %end axes %ax steps %two : (tensor<1x4x2x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x4x2x2xf32>
  %no = mpc.neg %od : (tensor<1x4x2x2xf32>) -> tensor<1x4x2x2xf32>
  %u0 = mpc.unsqueeze %no {axes = array<i64: -1>} : (tensor<1x4x2x2xf32>) -> tensor<1x4x2x2x1xf32>
  %u1 = mpc.unsqueeze %ev {axes = array<i64: -1>} : (tensor<1x4x2x2xf32>) -> tensor<1x4x2x2x1xf32>
  %st = mpc.concat %u0, %u1 {axis = -1 : i64} : (tensor<1x4x2x2x1xf32>, tensor<1x4x2x2x1xf32>) -> tensor<1x4x2x2x2xf32>
  %rot = mpc.reshape %st, %flat : (tensor<1x4x2x2x2xf32>, tensor<4xi64>) -> tensor<1x4x2x4xf32>
  %rs = mpc.mul %rot, %tab : (tensor<1x4x2x4xf32>, tensor<1x4x1x4xf32>) -> tensor<1x4x2x4xf32>
  %rc = mpc.mul %q, %tab : (tensor<1x4x2x4xf32>, tensor<1x4x1x4xf32>) -> tensor<1x4x2x4xf32>
  %ya = mpc.add %rc, %rs : (tensor<1x4x2x4xf32>, tensor<1x4x2x4xf32>) -> tensor<1x4x2x4xf32>
  %ev2 = mpc.slice %q, %zero, %end axes %ax steps %two : (tensor<1x4x2x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x4x2x2xf32>
  %od2 = mpc.slice %q, %one, %end axes %ax steps %two : (tensor<1x4x2x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x4x2x2xf32>
  %no2 = mpc.neg %od2 : (tensor<1x4x2x2xf32>) -> tensor<1x4x2x2xf32>
  %v0 = mpc.unsqueeze %ev2 {axes = array<i64: -1>} : (tensor<1x4x2x2xf32>) -> tensor<1x4x2x2x1xf32>
  %v1 = mpc.unsqueeze %no2 {axes = array<i64: -1>} : (tensor<1x4x2x2xf32>) -> tensor<1x4x2x2x1xf32>
  %st2 = mpc.concat %v0, %v1 {axis = -1 : i64} : (tensor<1x4x2x2x1xf32>, tensor<1x4x2x2x1xf32>) -> tensor<1x4x2x2x2xf32>
  %rot2 = mpc.reshape %st2, %flat : (tensor<1x4x2x2x2xf32>, tensor<4xi64>) -> tensor<1x4x2x4xf32>
  %rs2 = mpc.mul %rot2, %even : (tensor<1x4x2x4xf32>, tensor<1x4x1x4xf32>) -> tensor<1x4x2x4xf32>
  %rc2 = mpc.mul %q, %even : (tensor<1x4x2x4xf32>, tensor<1x4x1x4xf32>) -> tensor<1x4x2x4xf32>
  %yb = mpc.add %rc2, %rs2 : (tensor<1x4x2x4xf32>, tensor<1x4x2x4xf32>) -> tensor<1x4x2x4xf32>
  return %ya, %yb : tensor<1x4x2x4xf32>, tensor<1x4x2x4xf32>
}
