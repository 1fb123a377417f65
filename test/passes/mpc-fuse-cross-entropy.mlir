// RUN: mpc-opt %s -mpc-fuse-cross-entropy -mlir-print-debuginfo -mlir-print-local-scope | FileCheck %s

// torch's F.cross_entropy: LogSoftmax then NLL become one loss, with the
// NLL's weights, reduction and ignore_index; the location names all three.
// CHECK-LABEL: func.func @log_softmax_nll
// CHECK-NOT: mpc.log_softmax
// CHECK: %[[L:.*]], %{{.*}} = mpc.softmax_cross_entropy_loss %arg0, %arg1, %arg2 {ignore_index = -100 : i64, reduction = "sum"} : (tensor<8x10xf32>, tensor<8xi64>, tensor<10xf32>) -> (tensor<f32>, tensor<8x10xf32>) loc(fused["lsm", "nll"])
// CHECK-NOT: mpc.nll_loss
// CHECK: return %[[L]]
func.func @log_softmax_nll(%x: tensor<8x10xf32>, %t: tensor<8xi64>, %w: tensor<10xf32>) -> tensor<f32> {
  %p = mpc.log_softmax %x {axis = 1 : i64} : (tensor<8x10xf32>) -> tensor<8x10xf32> loc("lsm")
  %l = mpc.nll_loss %p, %t, %w {ignore_index = -100 : i64, reduction = "sum"} : (tensor<8x10xf32>, tensor<8xi64>, tensor<10xf32>) -> tensor<f32> loc("nll")
  return %l : tensor<f32>
}

// The spelled-out form: x - logsumexp(x) over the last axis of N x C
// scores (GPT-style exports), no weights; the log-probabilities also
// returned, as the loss's log_prob output.
// CHECK-LABEL: func.func @logsumexp_nll
// CHECK-NOT: mpc.reduce_log_sum_exp
// CHECK-NOT: mpc.sub
// CHECK: %[[L:.*]], %[[P:.*]] = mpc.softmax_cross_entropy_loss %arg0, %arg1 : (tensor<6x5xf32>, tensor<6xi64>) -> (tensor<f32>, tensor<6x5xf32>) loc(fused["lse", "logp", "nll"])
// CHECK-NOT: mpc.nll_loss
// CHECK: return %[[L]], %[[P]]
func.func @logsumexp_nll(%x: tensor<6x5xf32>, %t: tensor<6xi64>) -> (tensor<f32>, tensor<6x5xf32>) {
  %s = mpc.reduce_log_sum_exp %x {axes = array<i64: -1>} : (tensor<6x5xf32>) -> tensor<6x1xf32> loc("lse")
  %p = mpc.sub %x, %s : (tensor<6x5xf32>, tensor<6x1xf32>) -> tensor<6x5xf32> loc("logp")
  %l = mpc.nll_loss %p, %t : (tensor<6x5xf32>, tensor<6xi64>) -> tensor<f32> loc("nll")
  return %l, %p : tensor<f32>, tensor<6x5xf32>
}

// Scores N x C x D: the class axis is 1, reduction none.
// CHECK-LABEL: func.func @spatial
// CHECK: mpc.softmax_cross_entropy_loss %arg0, %arg1 {reduction = "none"} : (tensor<2x4x3xf32>, tensor<2x3xi64>) -> (tensor<2x3xf32>, tensor<2x4x3xf32>)
func.func @spatial(%x: tensor<2x4x3xf32>, %t: tensor<2x3xi64>) -> tensor<2x3xf32> {
  %p = mpc.log_softmax %x {axis = 1 : i64} : (tensor<2x4x3xf32>) -> tensor<2x4x3xf32>
  %l = mpc.nll_loss %p, %t {reduction = "none"} : (tensor<2x4x3xf32>, tensor<2x3xi64>) -> tensor<2x3xf32>
  return %l : tensor<2x3xf32>
}

// Left as written: a log-softmax over another axis than the classes'; one
// whose log-probabilities another op reads too (label smoothing: the
// loss's gradient would miss that term); a logsumexp over the wrong axis,
// or of other scores than those it is subtracted from, or without its
// kept dim.
// CHECK-LABEL: func.func @left_alone
// CHECK-NOT: mpc.softmax_cross_entropy_loss
// CHECK-COUNT-5: mpc.nll_loss
// CHECK-NOT: mpc.softmax_cross_entropy_loss
func.func @left_alone(%x: tensor<2x4x3xf32>, %y: tensor<6x5xf32>, %z: tensor<6x5xf32>, %t: tensor<2x3xi64>, %u: tensor<6xi64>, %sq: tensor<5x5xf32>, %u5: tensor<5xi64>) -> (tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>) {
  %p = mpc.log_softmax %x {axis = 2 : i64} : (tensor<2x4x3xf32>) -> tensor<2x4x3xf32>
  %l1 = mpc.nll_loss %p, %t : (tensor<2x4x3xf32>, tensor<2x3xi64>) -> tensor<f32>
  %q = mpc.log_softmax %y {axis = -1 : i64} : (tensor<6x5xf32>) -> tensor<6x5xf32>
  %l2 = mpc.nll_loss %q, %u : (tensor<6x5xf32>, tensor<6xi64>) -> tensor<f32>
  %smooth = mpc.reduce_mean %q {keepdims = false} : (tensor<6x5xf32>) -> tensor<f32>
  %s0 = mpc.reduce_log_sum_exp %y {axes = array<i64: 0>} : (tensor<6x5xf32>) -> tensor<1x5xf32>
  %r0 = mpc.sub %y, %s0 : (tensor<6x5xf32>, tensor<1x5xf32>) -> tensor<6x5xf32>
  %l3 = mpc.nll_loss %r0, %u : (tensor<6x5xf32>, tensor<6xi64>) -> tensor<f32>
  %s1 = mpc.reduce_log_sum_exp %z {axes = array<i64: 1>} : (tensor<6x5xf32>) -> tensor<6x1xf32>
  %r1 = mpc.sub %y, %s1 : (tensor<6x5xf32>, tensor<6x1xf32>) -> tensor<6x5xf32>
  %l4 = mpc.nll_loss %r1, %u : (tensor<6x5xf32>, tensor<6xi64>) -> tensor<f32>
  %s2 = mpc.reduce_log_sum_exp %sq {axes = array<i64: 1>, keepdims = false} : (tensor<5x5xf32>) -> tensor<5xf32>
  %r2 = mpc.sub %sq, %s2 : (tensor<5x5xf32>, tensor<5xf32>) -> tensor<5x5xf32>
  %l5 = mpc.nll_loss %r2, %u5 : (tensor<5x5xf32>, tensor<5xi64>) -> tensor<f32>
  return %l1, %l2, %smooth, %l3, %l4, %l5 : tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>
}
