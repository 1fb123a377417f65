// RUN: mpc-opt %s -mpc-autodiff -split-input-file -verify-diagnostics | FileCheck %s
// RUN: mpc-opt %s -mpc-autodiff -split-input-file -verify-diagnostics --mlir-print-debuginfo --mlir-print-local-scope | FileCheck %s --check-prefix=LOC

// A linear layer with a loss: the train step returns the forward results
// and the gradient of each trainable parameter; the frozen one (no
// `trainable`) and the input get none, and dead gradients are dropped.
mpc.param @w trainable : tensor<3x4xf32> = dense<1.0> : tensor<3x4xf32>
mpc.param @b trainable : tensor<3xf32> = dense<0.0> : tensor<3xf32>
mpc.param @frozen : tensor<3xf32> = dense<0.0> : tensor<3xf32>
// CHECK-LABEL: func.func @f(
// CHECK-LABEL: func.func @f_train_step(
// CHECK-SAME: -> (tensor<f32> {mpc.output = "loss"}, tensor<3x4xf32> {mpc.gradient = @w}, tensor<3xf32> {mpc.gradient = @b})
// CHECK-SAME: attributes {mpc.loss_index = 0 : i64, mpc.train_step}
// CHECK: %[[Y:.*]] = mpc.gemm %[[X:.*]], %[[W:.*]], %[[B:.*]] {transB = true}
// CHECK: %[[LOSS:.*]], %[[LOGP:.*]] = mpc.softmax_cross_entropy_loss
// CHECK: %[[ONE:.*]] = mpc.constant {mpc.grad_seed} dense<1.000000e+00> : tensor<f32>
// CHECK: %[[DY:.*]] = mpc.softmax_cross_entropy_loss_grad %[[ONE]], %[[LOGP]], %{{.*}} : (tensor<f32>, tensor<2x3xf32>, tensor<2xi64>) -> tensor<2x3xf32>
// CHECK-NOT: mpc.gemm %[[DY]], %[[W]]
// CHECK: %[[DW:.*]] = mpc.gemm %[[DY]], %[[X]] {transA = true} : (tensor<2x3xf32>, tensor<2x4xf32>) -> tensor<3x4xf32>
// CHECK: %[[DB:.*]] = mpc.reduce_sum %[[DY]] {axes = array<i64: 0>, keepdims = false} : (tensor<2x3xf32>) -> tensor<3xf32>
// CHECK: return %[[LOSS]], %[[DW]], %[[DB]]
// LOC: mpc.softmax_cross_entropy_loss_grad {{.*}} loc("loss")
// LOC: mpc.gemm {{.*}} loc("fc")
func.func @f(%x: tensor<2x4xf32> {mpc.input = "x"}, %labels: tensor<2xi64> {mpc.input = "labels"},
             %w: tensor<3x4xf32> {mpc.param = @w}, %b: tensor<3xf32> {mpc.param = @b},
             %frozen: tensor<3xf32> {mpc.param = @frozen}) -> (tensor<f32> {mpc.output = "loss"})
    attributes {mpc.entry} {
  %y = mpc.gemm %x, %w, %b {transB = true} : (tensor<2x4xf32>, tensor<3x4xf32>, tensor<3xf32>) -> tensor<2x3xf32> loc("fc")
  %z = mpc.add %y, %frozen : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32> loc("shift")
  %loss, %logp = mpc.softmax_cross_entropy_loss %z, %labels : (tensor<2x3xf32>, tensor<2xi64>) -> (tensor<f32>, tensor<2x3xf32>) loc("loss")
  return %loss : tensor<f32>
}

// -----

// A parameter with no path to the loss gets a zero gradient.
mpc.param @unused trainable : tensor<2xf32> = dense<1.0> : tensor<2xf32>
// CHECK-LABEL: func.func @g_train_step(
// CHECK: %[[Z:.*]] = mpc.constant dense<0.000000e+00> : tensor<2xf32>
// CHECK: return %{{.*}}, %[[Z]] : tensor<f32>, tensor<2xf32>
func.func @g(%x: tensor<3xf32> {mpc.input = "x"}, %p: tensor<2xf32> {mpc.param = @unused}) -> tensor<f32>
    attributes {mpc.entry} {
  %s = mpc.reduce_sum %x {keepdims = false} : (tensor<3xf32>) -> tensor<f32>
  return %s : tensor<f32>
}

// -----

mpc.param @w trainable : tensor<4xf32> = dense<1.0> : tensor<4xf32>
func.func @no_rule(%w: tensor<4xf32> {mpc.param = @w}) -> tensor<f32> attributes {mpc.entry} {
  %c = mpc.constant dense<3.0> : tensor<4xf32>
  // expected-error @+1 {{no gradient rule for Mod (mpc.mod) yet}}
  %g = mpc.mod %w, %c {fmod = true} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %s = mpc.reduce_sum %g {keepdims = false} : (tensor<4xf32>) -> tensor<f32>
  return %s : tensor<f32>
}

// -----

// A rule that gives no gradient to a float operand depending on a trained
// parameter would train it with zeros: refused (Pad's value here).
mpc.param @w trainable : tensor<4xf32> = dense<1.0> : tensor<4xf32>
func.func @dropped_gradient(%w: tensor<4xf32> {mpc.param = @w}) -> tensor<f32> attributes {mpc.entry} {
  %m = mpc.reduce_mean %w {keepdims = false} : (tensor<4xf32>) -> tensor<f32>
  // expected-error @+1 {{no gradient for operand 1 of mpc.pad, which depends on a trained parameter}}
  %p = mpc.pad %w, %m {pads = array<i64: 1, 1>} : (tensor<4xf32>, tensor<f32>) -> tensor<6xf32>
  %s = mpc.reduce_sum %p {keepdims = false} : (tensor<6xf32>) -> tensor<f32>
  return %s : tensor<f32>
}

// -----

// With no f32 scalar result, the first float scalar is the loss (a BF16
// loss of a torch.autocast export on the CPU), the backward seeded in
// its type.
mpc.param @w trainable : tensor<4xf32> = dense<1.0> : tensor<4xf32>
// CHECK-LABEL: func.func @half_loss_train_step(
// CHECK-SAME: -> (tensor<4xbf16> {mpc.output = "y"}, tensor<bf16> {mpc.output = "loss"}, tensor<4xf32> {mpc.gradient = @w}) attributes {mpc.loss_index = 1 : i64, mpc.train_step}
// CHECK: mpc.constant {mpc.grad_seed} dense<1.000000e+00> : tensor<bf16>
func.func @half_loss(%w: tensor<4xf32> {mpc.param = @w}) -> (tensor<4xbf16> {mpc.output = "y"}, tensor<bf16> {mpc.output = "loss"}) attributes {mpc.entry} {
  %h = mpc.cast %w : (tensor<4xf32>) -> tensor<4xbf16>
  %s = mpc.reduce_sum %h {keepdims = false} : (tensor<4xbf16>) -> tensor<bf16>
  return %h, %s : tensor<4xbf16>, tensor<bf16>
}

// -----

// expected-error @+1 {{no float scalar result to use as the loss}}
func.func @no_loss(%x: tensor<4xf32> {mpc.input = "x"}) -> tensor<4xf32> attributes {mpc.entry} {
  return %x : tensor<4xf32>
}

// -----

// A linear over a sequence, exported as torch does (x @ W with x of rank
// 3): the weight's gradient is one GEMM over the flattened rows, summing
// over all of them in its K (no transposed copy of x, no per-batch
// products summed afterwards).
mpc.param @w trainable : tensor<4x3xf32> = dense<1.0> : tensor<4x3xf32>
// CHECK-LABEL: func.func @seq_train_step(
// CHECK-NOT: mpc.transpose
// CHECK: %[[X2:.*]] = mpc.reshape %arg0, %{{.*}} : (tensor<2x5x4xf32>, tensor<2xi64>) -> tensor<10x4xf32>
// CHECK: %[[G2:.*]] = mpc.reshape %{{.*}}, %{{.*}} : (tensor<2x5x3xf32>, tensor<2xi64>) -> tensor<10x3xf32>
// CHECK-NOT: mpc.reduce_sum
// CHECK: %[[DW:.*]] = mpc.gemm %[[X2]], %[[G2]] {transA = true} : (tensor<10x4xf32>, tensor<10x3xf32>) -> tensor<4x3xf32>
// CHECK: return %{{.*}}, %[[DW]]
// LOC: mpc.gemm {{.*}}{transA = true}{{.*}} loc("proj")
func.func @seq(%x: tensor<2x5x4xf32> {mpc.input = "x"}, %w: tensor<4x3xf32> {mpc.param = @w}) -> tensor<f32>
    attributes {mpc.entry} {
  %y = mpc.matmul %x, %w : (tensor<2x5x4xf32>, tensor<4x3xf32>) -> tensor<2x5x3xf32> loc("proj")
  %s = mpc.reduce_sum %y {keepdims = false} : (tensor<2x5x3xf32>) -> tensor<f32>
  return %s : tensor<f32>
}

// -----

// Dropout as exports write it (a constant ratio and training flag): the
// gradient is the dropout of g with the forward's ratio, flag and key
// (seed, stream), which draws the forward's mask again: the forward's mask
// is left unread, no step computes 1 - ratio or selects on the flag.
// Fused attention with dropout differentiates to attention_grad with the
// forward's ratio and key, so it redraws the forward's mask.
mpc.param @w trainable : tensor<2x4x8xf32> = dense<1.0> : tensor<2x4x8xf32>
// CHECK-LABEL: func.func @dropout_train_step(
// CHECK: %[[R:.*]] = mpc.constant dense<2.000000e-01> : tensor<f32>
// CHECK-NEXT: %[[T:.*]] = mpc.constant dense<true> : tensor<i1>
// CHECK-NEXT: %{{.*}}, %[[M:.*]] = mpc.dropout %{{.*}} ratio %[[R]] training %[[T]] {stream = 7 : i64}
// CHECK-NOT: %[[M]]
// CHECK-NOT: mpc.sub
// CHECK: mpc.attention_grad {{.*}} {dropout = 1.000000e-01 : f32, scale = 1.000000e+00 : f32, seed = 3 : i64, stream = 9 : i64}
// CHECK-NOT: mpc.sub
// CHECK: mpc.add
// CHECK-NEXT: %[[G:.*]] = mpc.add
// CHECK-NEXT: %[[DG:.*]], %{{.*}} = mpc.dropout %[[G]] ratio %[[R]] training %[[T]] {stream = 7 : i64}
// CHECK-NEXT: return %{{.*}}, %[[DG]]
func.func @dropout(%w: tensor<2x4x8xf32> {mpc.param = @w}) -> tensor<f32> attributes {mpc.entry} {
  %r = mpc.constant dense<2.000000e-01> : tensor<f32>
  %t = mpc.constant dense<true> : tensor<i1>
  %y, %m = mpc.dropout %w ratio %r training %t {stream = 7 : i64} : (tensor<2x4x8xf32>, tensor<f32>, tensor<i1>) -> (tensor<2x4x8xf32>, tensor<2x4x8xi1>)
  %a, %lse = mpc.attention %y, %y, %y {scale = 1.0 : f32, dropout = 0.1 : f32, seed = 3 : i64, stream = 9 : i64} : (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> (tensor<2x4x8xf32>, tensor<2x4xf32>)
  %s = mpc.reduce_sum %a {keepdims = false} : (tensor<2x4x8xf32>) -> tensor<f32>
  return %s : tensor<f32>
}

// -----

// A learned bias (Swin's and T5's relative positions, here shared by the
// batch): attention_grad also returns dS, the gradient w.r.t. the biased
// scores, [B, H, Sq, Skv]; summed over the batch it is the bias's. No
// score or probability is recomputed outside attention_grad (no matmul,
// no exp); a constant bias (a mask) takes none.
mpc.param @rel trainable : tensor<1x2x4x4xf32> = dense<0.5> : tensor<1x2x4x4xf32>
// CHECK-LABEL: func.func @learned_bias_train_step(
// CHECK: %{{.*}}, %{{.*}}, %{{.*}}, %[[DS:.*]] = mpc.attention_grad {{.*}} {scale = 5.000000e-01 : f32, with_scores_grad} : ({{.*}}) -> (tensor<3x2x4x8xf32>, tensor<3x2x4x8xf32>, tensor<3x2x4x8xf32>, tensor<3x2x4x4xf32>)
// CHECK-NOT: mpc.matmul
// CHECK-NOT: mpc.exp
// CHECK-NEXT: %[[SUM:.*]] = mpc.reduce_sum %[[DS]] {axes = array<i64: 0>, keepdims = false} : (tensor<3x2x4x4xf32>) -> tensor<2x4x4xf32>
// CHECK: %[[DB:.*]] = mpc.reshape %[[SUM]], %{{.*}} -> tensor<1x2x4x4xf32>
// CHECK: return %{{.*}}, %[[DB]]
func.func @learned_bias(%x: tensor<3x2x4x8xf32>, %rel: tensor<1x2x4x4xf32> {mpc.param = @rel}) -> tensor<f32> attributes {mpc.entry} {
  %a, %lse = mpc.attention %x, %x, %x, %rel {scale = 0.5 : f32} : (tensor<3x2x4x8xf32>, tensor<3x2x4x8xf32>, tensor<3x2x4x8xf32>, tensor<1x2x4x4xf32>) -> (tensor<3x2x4x8xf32>, tensor<3x2x4xf32>)
  %s = mpc.reduce_sum %a {keepdims = false} : (tensor<3x2x4x8xf32>) -> tensor<f32>
  return %s : tensor<f32>
}

// -----

// CHECK-LABEL: func.func @mask_bias_train_step(
// CHECK: mpc.attention_grad
// CHECK-NOT: with_scores_grad
// CHECK-SAME: -> (tensor<3x2x4x8xf32>, tensor<3x2x4x8xf32>, tensor<3x2x4x8xf32>)
mpc.param @wq trainable : tensor<3x2x4x8xf32> = dense<0.5> : tensor<3x2x4x8xf32>
func.func @mask_bias(%q: tensor<3x2x4x8xf32> {mpc.param = @wq}) -> tensor<f32> attributes {mpc.entry} {
  %m = mpc.constant dense<0.0> : tensor<4x4xf32>
  %a, %lse = mpc.attention %q, %q, %q, %m {scale = 0.5 : f32} : (tensor<3x2x4x8xf32>, tensor<3x2x4x8xf32>, tensor<3x2x4x8xf32>, tensor<4x4xf32>) -> (tensor<3x2x4x8xf32>, tensor<3x2x4xf32>)
  %s = mpc.reduce_sum %a {keepdims = false} : (tensor<3x2x4x8xf32>) -> tensor<f32>
  return %s : tensor<f32>
}

// -----

// An embedding with torch's padding_idx: the positions that read row 1
// add nothing to the table's gradient (g * (ids != 1)), as in torch.
mpc.param @table trainable : tensor<5x3xf32> = dense<1.0> : tensor<5x3xf32>
// CHECK-LABEL: func.func @padding_idx_train_step(
// CHECK: %[[P:.*]] = mpc.constant dense<1> : tensor<i64>
// CHECK: %[[EQ:.*]] = mpc.equal %arg0, %[[P]] : (tensor<2x4xi64>, tensor<i64>) -> tensor<2x4xi1>
// CHECK: %[[KEEP:.*]] = mpc.not %[[EQ]]
// CHECK: %[[W:.*]] = mpc.cast %[[KEEP]] : (tensor<2x4xi1>) -> tensor<2x4xf32>
// CHECK: %[[W3:.*]] = mpc.reshape %[[W]], %{{.*}} : (tensor<2x4xf32>, tensor<3xi64>) -> tensor<2x4x1xf32>
// CHECK: %[[G:.*]] = mpc.mul %{{.*}}, %[[W3]] : (tensor<2x4x3xf32>, tensor<2x4x1xf32>) -> tensor<2x4x3xf32>
// CHECK: mpc.gather_grad %[[G]], %arg0
// LOC-LABEL: func.func @padding_idx_train_step(
// LOC: mpc.equal {{.*}} loc("embed")
// LOC: mpc.gather_grad {{.*}} loc("embed")
func.func @padding_idx(%ids: tensor<2x4xi64> {mpc.input = "ids"}, %t: tensor<5x3xf32> {mpc.param = @table}) -> tensor<f32>
    attributes {mpc.entry} {
  %e = mpc.gather %t, %ids {padding_idx = 1 : i64} : (tensor<5x3xf32>, tensor<2x4xi64>) -> tensor<2x4x3xf32> loc("embed")
  %s = mpc.reduce_sum %e {keepdims = false} : (tensor<2x4x3xf32>) -> tensor<f32>
  return %s : tensor<f32>
}
