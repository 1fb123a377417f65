// RUN: mpc-opt %s -mpc-slices-to-split | FileCheck %s
// RUN: mpc-opt %s -mpc-slices-to-split -mlir-print-debuginfo | FileCheck %s --check-prefix=LOC

// nn.MultiheadAttention's fused input projection as torch 1.13 exports
// it: Q, K and V cut from the last axis, the last one to INT64_MAX. One
// Split, its results in range order whatever the slices' order.
// CHECK-LABEL: func.func @qkv
// CHECK: %[[Q:.*]]:3 = mpc.split %arg0 {axis = 2 : i64, num_outputs = 3 : i64, split = array<i64: 64, 64, 64>} : (tensor<16x4x192xf32>) -> (tensor<16x4x64xf32>, tensor<16x4x64xf32>, tensor<16x4x64xf32>)
// CHECK-NOT: mpc.slice
// CHECK: return %[[Q]]#0, %[[Q]]#1, %[[Q]]#2
// LOC-LABEL: func.func @qkv
// LOC: mpc.split {{.*}} loc(#[[FUSED:loc[0-9]*]])
// LOC-DAG: #[[S0:loc[0-9]*]] = loc("attn/Slice")
// LOC-DAG: #[[S1:loc[0-9]*]] = loc("attn/Slice_1")
// LOC-DAG: #[[S2:loc[0-9]*]] = loc("attn/Slice_2")
// LOC-DAG: #[[FUSED]] = loc(fused[#[[S0]], #[[S1]], #[[S2]]])
func.func @qkv(%x: tensor<16x4x192xf32>) -> (tensor<16x4x64xf32>, tensor<16x4x64xf32>, tensor<16x4x64xf32>) {
  %axes = mpc.constant dense<2> : tensor<1xi64>
  %c0 = mpc.constant dense<0> : tensor<1xi64>
  %c64 = mpc.constant dense<64> : tensor<1xi64>
  %c128 = mpc.constant dense<128> : tensor<1xi64>
  %cmax = mpc.constant dense<9223372036854775807> : tensor<1xi64>
  %v = mpc.slice %x, %c128, %cmax axes %axes : (tensor<16x4x192xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<16x4x64xf32> loc("attn/Slice_2")
  %k = mpc.slice %x, %c64, %c128 axes %axes : (tensor<16x4x192xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<16x4x64xf32> loc("attn/Slice_1")
  %q = mpc.slice %x, %c0, %c64 axes %axes : (tensor<16x4x192xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<16x4x64xf32> loc("attn/Slice")
  return %q, %k, %v : tensor<16x4x64xf32>, tensor<16x4x64xf32>, tensor<16x4x64xf32>
}

// Negative bounds and no axes (the leading ones); a slice that keeps the
// whole of another axis still cuts one. Unequal parts.
// CHECK-LABEL: func.func @negative_bounds
// CHECK: %[[P:.*]]:2 = mpc.split %arg0 {axis = 0 : i64, num_outputs = 2 : i64, split = array<i64: 2, 6>} : (tensor<8x3xf32>) -> (tensor<2x3xf32>, tensor<6x3xf32>)
// CHECK-NEXT: return %[[P]]#1, %[[P]]#0
func.func @negative_bounds(%x: tensor<8x3xf32>) -> (tensor<6x3xf32>, tensor<2x3xf32>) {
  %s0 = mpc.constant dense<[-6, 0]> : tensor<2xi64>
  %e0 = mpc.constant dense<[8, 3]> : tensor<2xi64>
  %s1 = mpc.constant dense<0> : tensor<1xi64>
  %e1 = mpc.constant dense<-6> : tensor<1xi64>
  %a = mpc.slice %x, %s0, %e0 : (tensor<8x3xf32>, tensor<2xi64>, tensor<2xi64>) -> tensor<6x3xf32>
  %b = mpc.slice %x, %s1, %e1 : (tensor<8x3xf32>, tensor<1xi64>, tensor<1xi64>) -> tensor<2x3xf32>
  return %a, %b : tensor<6x3xf32>, tensor<2x3xf32>
}

// Left as written: slices that overlap, leave a gap, step by 2, cut
// different axes, repeat a range, or have bounds that are not constants.
// CHECK-LABEL: func.func @overlap
// CHECK-NOT: mpc.split
// CHECK-LABEL: func.func @gap
// CHECK-NOT: mpc.split
// CHECK-LABEL: func.func @steps
// CHECK-NOT: mpc.split
// CHECK-LABEL: func.func @other_axes
// CHECK-NOT: mpc.split
// CHECK-LABEL: func.func @repeated
// CHECK-NOT: mpc.split
// CHECK-LABEL: func.func @dynamic
// CHECK-NOT: mpc.split
// CHECK: return
func.func @overlap(%x: tensor<8x6xf32>) -> (tensor<5x6xf32>, tensor<4x6xf32>) {
  %c0 = mpc.constant dense<0> : tensor<1xi64>
  %c4 = mpc.constant dense<4> : tensor<1xi64>
  %c5 = mpc.constant dense<5> : tensor<1xi64>
  %c8 = mpc.constant dense<8> : tensor<1xi64>
  %a = mpc.slice %x, %c0, %c5 : (tensor<8x6xf32>, tensor<1xi64>, tensor<1xi64>) -> tensor<5x6xf32>
  %b = mpc.slice %x, %c4, %c8 : (tensor<8x6xf32>, tensor<1xi64>, tensor<1xi64>) -> tensor<4x6xf32>
  return %a, %b : tensor<5x6xf32>, tensor<4x6xf32>
}
func.func @gap(%x: tensor<8x6xf32>) -> (tensor<3x6xf32>, tensor<4x6xf32>) {
  %c0 = mpc.constant dense<0> : tensor<1xi64>
  %c3 = mpc.constant dense<3> : tensor<1xi64>
  %c4 = mpc.constant dense<4> : tensor<1xi64>
  %c8 = mpc.constant dense<8> : tensor<1xi64>
  %a = mpc.slice %x, %c0, %c3 : (tensor<8x6xf32>, tensor<1xi64>, tensor<1xi64>) -> tensor<3x6xf32>
  %b = mpc.slice %x, %c4, %c8 : (tensor<8x6xf32>, tensor<1xi64>, tensor<1xi64>) -> tensor<4x6xf32>
  return %a, %b : tensor<3x6xf32>, tensor<4x6xf32>
}
func.func @steps(%x: tensor<8x6xf32>) -> (tensor<4x6xf32>, tensor<4x6xf32>) {
  %c0 = mpc.constant dense<0> : tensor<1xi64>
  %c1 = mpc.constant dense<1> : tensor<1xi64>
  %c2 = mpc.constant dense<2> : tensor<1xi64>
  %c8 = mpc.constant dense<8> : tensor<1xi64>
  %a = mpc.slice %x, %c0, %c8 axes %c0 steps %c2 : (tensor<8x6xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<4x6xf32>
  %b = mpc.slice %x, %c1, %c8 axes %c0 steps %c2 : (tensor<8x6xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<4x6xf32>
  return %a, %b : tensor<4x6xf32>, tensor<4x6xf32>
}
func.func @other_axes(%x: tensor<8x6xf32>) -> (tensor<4x6xf32>, tensor<8x3xf32>) {
  %c0 = mpc.constant dense<0> : tensor<1xi64>
  %c1 = mpc.constant dense<1> : tensor<1xi64>
  %c3 = mpc.constant dense<3> : tensor<1xi64>
  %c4 = mpc.constant dense<4> : tensor<1xi64>
  %c8 = mpc.constant dense<8> : tensor<1xi64>
  %a = mpc.slice %x, %c4, %c8 axes %c0 : (tensor<8x6xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<4x6xf32>
  %b = mpc.slice %x, %c0, %c3 axes %c1 : (tensor<8x6xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<8x3xf32>
  return %a, %b : tensor<4x6xf32>, tensor<8x3xf32>
}
func.func @repeated(%x: tensor<8x6xf32>) -> (tensor<4x6xf32>, tensor<4x6xf32>, tensor<4x6xf32>) {
  %c0 = mpc.constant dense<0> : tensor<1xi64>
  %c4 = mpc.constant dense<4> : tensor<1xi64>
  %c8 = mpc.constant dense<8> : tensor<1xi64>
  %a = mpc.slice %x, %c0, %c4 : (tensor<8x6xf32>, tensor<1xi64>, tensor<1xi64>) -> tensor<4x6xf32>
  %b = mpc.slice %x, %c4, %c8 : (tensor<8x6xf32>, tensor<1xi64>, tensor<1xi64>) -> tensor<4x6xf32>
  %c = mpc.slice %x, %c4, %c8 : (tensor<8x6xf32>, tensor<1xi64>, tensor<1xi64>) -> tensor<4x6xf32>
  return %a, %b, %c : tensor<4x6xf32>, tensor<4x6xf32>, tensor<4x6xf32>
}
func.func @dynamic(%x: tensor<8x6xf32>, %n: tensor<1xi64>) -> (tensor<4x6xf32>, tensor<4x6xf32>) {
  %c0 = mpc.constant dense<0> : tensor<1xi64>
  %c8 = mpc.constant dense<8> : tensor<1xi64>
  %a = mpc.slice %x, %c0, %n : (tensor<8x6xf32>, tensor<1xi64>, tensor<1xi64>) -> tensor<4x6xf32>
  %b = mpc.slice %x, %n, %c8 : (tensor<8x6xf32>, tensor<1xi64>, tensor<1xi64>) -> tensor<4x6xf32>
  return %a, %b : tensor<4x6xf32>, tensor<4x6xf32>
}

// Slices of slices (GPT-J's rotary takes x[..., ::2] of each head's
// rotated part): the inner value, once the outer Split replaced its
// slice, is rewritten as that Split's part (it once read the erased
// slice). Step-2 slices stay slices.
// CHECK-LABEL: func.func @nested
// CHECK: %[[H:.*]]:2 = mpc.split %arg0 {axis = 1 : i64, num_outputs = 2 : i64, split = array<i64: 4, 4>}
// CHECK: %[[P:.*]]:2 = mpc.split %[[H]]#0 {axis = 1 : i64, num_outputs = 2 : i64, split = array<i64: 2, 2>}
// CHECK: mpc.slice %[[H]]#0
// CHECK: return %[[P]]#0, %[[P]]#1, %[[H]]#1
func.func @nested(%x: tensor<3x8xf32>) -> (tensor<3x2xf32>, tensor<3x2xf32>, tensor<3x4xf32>, tensor<3x2xf32>) {
  %ax = mpc.constant dense<1> : tensor<1xi64>
  %c0 = mpc.constant dense<0> : tensor<1xi64>
  %c2 = mpc.constant dense<2> : tensor<1xi64>
  %c4 = mpc.constant dense<4> : tensor<1xi64>
  %c8 = mpc.constant dense<8> : tensor<1xi64>
  %rot = mpc.slice %x, %c0, %c4 axes %ax : (tensor<3x8xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<3x4xf32>
  %pass = mpc.slice %x, %c4, %c8 axes %ax : (tensor<3x8xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<3x4xf32>
  %a = mpc.slice %rot, %c0, %c2 axes %ax : (tensor<3x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<3x2xf32>
  %b = mpc.slice %rot, %c2, %c4 axes %ax : (tensor<3x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<3x2xf32>
  %even = mpc.slice %rot, %c0, %c4 axes %ax steps %c2 : (tensor<3x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<3x2xf32>
  return %a, %b, %pass, %even : tensor<3x2xf32>, tensor<3x2xf32>, tensor<3x4xf32>, tensor<3x2xf32>
}

// torchvision's Swin selects q, k, v = qkv[0], qkv[1], qkv[2]: Gathers of
// scalar indices (a negative one too), each a one-element slice squeezed,
// together one Split (as timm's unbind).
// CHECK-LABEL: func.func @selects
// CHECK: %[[P:.*]]:3 = mpc.split %arg0 {axis = 0 : i64, num_outputs = 3 : i64, split = array<i64: 1, 1, 1>} : (tensor<3x2x4xf32>) -> (tensor<1x2x4xf32>, tensor<1x2x4xf32>, tensor<1x2x4xf32>)
// CHECK-DAG: mpc.squeeze %[[P]]#0 {axes = array<i64: 0>} : (tensor<1x2x4xf32>) -> tensor<2x4xf32>
// CHECK-DAG: mpc.squeeze %[[P]]#1 {axes = array<i64: 0>}
// CHECK-DAG: mpc.squeeze %[[P]]#2 {axes = array<i64: 0>}
// CHECK-NOT: mpc.gather
func.func @selects(%x: tensor<3x2x4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>) {
  %i0 = mpc.constant dense<0> : tensor<i64>
  %i1 = mpc.constant dense<1> : tensor<i64>
  %i2 = mpc.constant dense<-1> : tensor<i64>
  %q = mpc.gather %x, %i0 : (tensor<3x2x4xf32>, tensor<i64>) -> tensor<2x4xf32>
  %k = mpc.gather %x, %i1 : (tensor<3x2x4xf32>, tensor<i64>) -> tensor<2x4xf32>
  %v = mpc.gather %x, %i2 : (tensor<3x2x4xf32>, tensor<i64>) -> tensor<2x4xf32>
  return %q, %k, %v : tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>
}

// Along a negative axis (-2: the heads of [3, 2, 4]) with the same axis
// counted from 0 beside it: one group.
// CHECK-LABEL: func.func @selects_negative_axis
// CHECK: %[[P:.*]]:2 = mpc.split %arg0 {axis = 1 : i64, num_outputs = 2 : i64, split = array<i64: 1, 1>} : (tensor<3x2x4xf32>) -> (tensor<3x1x4xf32>, tensor<3x1x4xf32>)
// CHECK-NOT: mpc.gather
func.func @selects_negative_axis(%x: tensor<3x2x4xf32>) -> (tensor<3x4xf32>, tensor<3x4xf32>) {
  %i0 = mpc.constant dense<0> : tensor<i64>
  %i1 = mpc.constant dense<1> : tensor<i64>
  %a = mpc.gather %x, %i0 {axis = -2 : i64} : (tensor<3x2x4xf32>, tensor<i64>) -> tensor<3x4xf32>
  %b = mpc.gather %x, %i1 {axis = 1 : i64} : (tensor<3x2x4xf32>, tensor<i64>) -> tensor<3x4xf32>
  return %a, %b : tensor<3x4xf32>, tensor<3x4xf32>
}

// Left as written: a lone select, and selects by an index the graph
// computes or of more than one element (an embedding lookup).
// CHECK-LABEL: func.func @lone_select
// CHECK: mpc.gather
// CHECK-NOT: mpc.split
// CHECK-LABEL: func.func @computed_index
// CHECK-COUNT-2: mpc.gather
// CHECK-NOT: mpc.split
func.func @lone_select(%x: tensor<3x2x4xf32>) -> tensor<2x4xf32> {
  %i0 = mpc.constant dense<0> : tensor<i64>
  %q = mpc.gather %x, %i0 : (tensor<3x2x4xf32>, tensor<i64>) -> tensor<2x4xf32>
  return %q : tensor<2x4xf32>
}

func.func @computed_index(%x: tensor<3x2x4xf32>, %i: tensor<i64>, %ids: tensor<2xi64>) -> (tensor<2x4xf32>, tensor<2x2x4xf32>) {
  %q = mpc.gather %x, %i : (tensor<3x2x4xf32>, tensor<i64>) -> tensor<2x4xf32>
  %e = mpc.gather %x, %ids : (tensor<3x2x4xf32>, tensor<2xi64>) -> tensor<2x2x4xf32>
  return %q, %e : tensor<2x4xf32>, tensor<2x2x4xf32>
}
