// RUN: mpc-opt %s -mpc-fuse-attention | FileCheck %s
// RUN: mpc-opt %s -mpc-fuse-attention --mlir-print-debuginfo --mlir-print-local-scope | FileCheck %s --check-prefix=LOC

// mpc-fuse-attention on half-precision models whose softmax runs in FP32:
// cast(softmax(cast(s, f32)), f16) as torch exports softmax(dtype=
// torch.float32).to(q.dtype) (Hugging Face's Llama and its descendants),
// as `mpc convert` writes it (Softmax kept FP32, the scores and mask
// added after the widening cast), and as ONNX Attention's
// softmax_precision imports. mpc.attention computes scores and softmax in
// FP32 whatever Q's type, so both casts go with the subgraph.

// An FP16 export of Llama: the scale and FP16's lowest (-65504, torch's
// finfo(float16).min) as the causal mask in FP16, the cast to FP32, the
// softmax, the cast back, a training dropout. The mask is the band: no
// bias, no cast, softmax or dropout left.
// CHECK-LABEL: func.func @llama_fp16
// CHECK-NOT: mpc.cast
// CHECK: %[[Y:.*]], %{{.*}} = mpc.attention %arg0, %arg1, %arg2 {causal = true, dropout = 1.000000e-01 : f32, scale = 0.353515625 : f32, seed = 3 : i64, stream = 7 : i64} : (tensor<1x2x4x8xf16>, tensor<1x2x4x8xf16>, tensor<1x2x4x8xf16>) -> (tensor<1x2x4x8xf16>, tensor<1x2x4xf32>)
// CHECK-NOT: mpc.softmax
// CHECK-NOT: mpc.dropout
// CHECK: return %[[Y]]
// LOC-LABEL: func.func @llama_fp16
// LOC: mpc.attention {{.*}} loc("pv")
func.func @llama_fp16(%q: tensor<1x2x4x8xf16>, %k: tensor<1x2x4x8xf16>, %v: tensor<1x2x4x8xf16>) -> tensor<1x2x4x8xf16> {
  %kt = mpc.transpose %k {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x2x4x8xf16>) -> tensor<1x2x8x4xf16>
  %qk = mpc.matmul %q, %kt : (tensor<1x2x4x8xf16>, tensor<1x2x8x4xf16>) -> tensor<1x2x4x4xf16>
  %c = mpc.constant dense<3.535160e-01> : tensor<f16>
  %s = mpc.mul %qk, %c : (tensor<1x2x4x4xf16>, tensor<f16>) -> tensor<1x2x4x4xf16>
  %causal = mpc.constant dense<[[[[0.0, -65504.0, -65504.0, -65504.0], [0.0, 0.0, -65504.0, -65504.0], [0.0, 0.0, 0.0, -65504.0], [0.0, 0.0, 0.0, 0.0]]]]> : tensor<1x1x4x4xf16>
  %sm = mpc.add %s, %causal : (tensor<1x2x4x4xf16>, tensor<1x1x4x4xf16>) -> tensor<1x2x4x4xf16>
  %s32 = mpc.cast %sm : (tensor<1x2x4x4xf16>) -> tensor<1x2x4x4xf32>
  %p32 = mpc.softmax %s32 : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %p = mpc.cast %p32 : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf16>
  %r = mpc.constant dense<1.000000e-01> : tensor<f32>
  %t = mpc.constant dense<true> : tensor<i1>
  %pd, %mask = mpc.dropout %p ratio %r training %t {seed = 3 : i64, stream = 7 : i64} : (tensor<1x2x4x4xf16>, tensor<f32>, tensor<i1>) -> (tensor<1x2x4x4xf16>, tensor<1x2x4x4xi1>)
  %y = mpc.matmul %pd, %v : (tensor<1x2x4x4xf16>, tensor<1x2x4x8xf16>) -> tensor<1x2x4x8xf16> loc("pv")
  return %y : tensor<1x2x4x8xf16>
}

// `mpc convert`'s Llama: K (its rotary products FP32) transposed in FP32
// and cast, the padding added in FP32 after the widening cast, the
// dropout in FP32 before the cast back, grouped-query K and V repeated.
// K is read cast where it lies, its heads not repeated; the padding stays
// the FP32 bias.
// CHECK-LABEL: func.func @converted
// CHECK: %[[K:.*]] = mpc.cast %arg1 : (tensor<1x1x4x8xf32>) -> tensor<1x1x4x8xf16>
// CHECK: mpc.attention %arg0, %[[K]], %arg2, %arg3 {dropout = 1.000000e-01 : f32, scale = 0.353591174 : f32} : (tensor<1x2x4x8xf16>, tensor<1x1x4x8xf16>, tensor<1x1x4x8xf16>, tensor<1x1x1x4xf32>)
// CHECK-NOT: mpc.softmax
func.func @converted(%q: tensor<1x2x4x8xf16>, %k32: tensor<1x1x4x8xf32>, %v1: tensor<1x1x4x8xf16>, %pad: tensor<1x1x1x4xf32>) -> tensor<1x2x4x8xf16> {
  %shape = mpc.constant dense<[1, 1, 2, 4, 8]> : tensor<5xi64>
  %heads = mpc.constant dense<[1, 2, 4, 8]> : tensor<4xi64>
  %k5 = mpc.unsqueeze %k32 {axes = array<i64: 2>} : (tensor<1x1x4x8xf32>) -> tensor<1x1x1x4x8xf32>
  %ke = mpc.expand %k5, %shape : (tensor<1x1x1x4x8xf32>, tensor<5xi64>) -> tensor<1x1x2x4x8xf32>
  %k = mpc.reshape %ke, %heads : (tensor<1x1x2x4x8xf32>, tensor<4xi64>) -> tensor<1x2x4x8xf32>
  %v5 = mpc.unsqueeze %v1 {axes = array<i64: 2>} : (tensor<1x1x4x8xf16>) -> tensor<1x1x1x4x8xf16>
  %ve = mpc.expand %v5, %shape : (tensor<1x1x1x4x8xf16>, tensor<5xi64>) -> tensor<1x1x2x4x8xf16>
  %v = mpc.reshape %ve, %heads : (tensor<1x1x2x4x8xf16>, tensor<4xi64>) -> tensor<1x2x4x8xf16>
  %kt32 = mpc.transpose %k {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x2x4x8xf32>) -> tensor<1x2x8x4xf32>
  %kt = mpc.cast %kt32 : (tensor<1x2x8x4xf32>) -> tensor<1x2x8x4xf16>
  %qk = mpc.matmul %q, %kt : (tensor<1x2x4x8xf16>, tensor<1x2x8x4xf16>) -> tensor<1x2x4x4xf16>
  %c = mpc.constant dense<2.828130e+00> : tensor<f16>
  %s = mpc.div %qk, %c : (tensor<1x2x4x4xf16>, tensor<f16>) -> tensor<1x2x4x4xf16>
  %s32 = mpc.cast %s : (tensor<1x2x4x4xf16>) -> tensor<1x2x4x4xf32>
  %sm = mpc.add %s32, %pad : (tensor<1x2x4x4xf32>, tensor<1x1x1x4xf32>) -> tensor<1x2x4x4xf32>
  %p = mpc.softmax %sm : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %r = mpc.constant dense<1.000000e-01> : tensor<f32>
  %t = mpc.constant dense<true> : tensor<i1>
  %pd, %mask = mpc.dropout %p ratio %r training %t : (tensor<1x2x4x4xf32>, tensor<f32>, tensor<i1>) -> (tensor<1x2x4x4xf32>, tensor<1x2x4x4xi1>)
  %p16 = mpc.cast %pd : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf16>
  %y = mpc.matmul %p16, %v : (tensor<1x2x4x4xf16>, tensor<1x2x4x8xf16>) -> tensor<1x2x4x8xf16>
  return %y : tensor<1x2x4x8xf16>
}

// A causal mask in FP16 before the widening cast and a padding in FP32
// after it (`mpc convert`'s CLIP text model): the causal part is the band,
// the padding the bias.
// CHECK-LABEL: func.func @two_mask_types
// CHECK: mpc.attention %arg0, %arg1, %arg2, %arg3 {causal = true, scale = 1.000000e+00 : f32} : (tensor<1x2x4x8xf16>, tensor<1x2x4x8xf16>, tensor<1x2x4x8xf16>, tensor<1x1x1x4xf32>)
func.func @two_mask_types(%q: tensor<1x2x4x8xf16>, %k: tensor<1x2x4x8xf16>, %v: tensor<1x2x4x8xf16>, %pad: tensor<1x1x1x4xf32>) -> tensor<1x2x4x8xf16> {
  %kt = mpc.transpose %k {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x2x4x8xf16>) -> tensor<1x2x8x4xf16>
  %qk = mpc.matmul %q, %kt : (tensor<1x2x4x8xf16>, tensor<1x2x8x4xf16>) -> tensor<1x2x4x4xf16>
  %causal = mpc.constant dense<[[[[0.0, -65504.0, -65504.0, -65504.0], [0.0, 0.0, -65504.0, -65504.0], [0.0, 0.0, 0.0, -65504.0], [0.0, 0.0, 0.0, 0.0]]]]> : tensor<1x1x4x4xf16>
  %sc = mpc.add %qk, %causal : (tensor<1x2x4x4xf16>, tensor<1x1x4x4xf16>) -> tensor<1x2x4x4xf16>
  %s32 = mpc.cast %sc : (tensor<1x2x4x4xf16>) -> tensor<1x2x4x4xf32>
  %sm = mpc.add %s32, %pad : (tensor<1x2x4x4xf32>, tensor<1x1x1x4xf32>) -> tensor<1x2x4x4xf32>
  %p = mpc.softmax %sm : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %p16 = mpc.cast %p : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf16>
  %y = mpc.matmul %p16, %v : (tensor<1x2x4x4xf16>, tensor<1x2x4x8xf16>) -> tensor<1x2x4x8xf16>
  return %y : tensor<1x2x4x8xf16>
}

// Bloom converted: the probabilities viewed as merged heads, then cast.
// CHECK-LABEL: func.func @merged_then_cast
// CHECK: %[[Y:.*]], %{{.*}} = mpc.attention {{.*}} : (tensor<1x2x4x8xf16>, tensor<1x2x4x8xf16>, tensor<1x2x4x8xf16>, tensor<1x1x1x4xf32>)
// CHECK: mpc.reshape %[[Y]], {{.*}} -> tensor<2x4x8xf16>
// CHECK-NOT: mpc.softmax
func.func @merged_then_cast(%q: tensor<2x4x8xf16>, %kt: tensor<2x8x4xf16>, %v: tensor<2x4x8xf16>, %pad: tensor<1x1x1x4xf32>) -> tensor<2x4x8xf16> {
  %heads = mpc.constant dense<[1, 2, 4, 4]> : tensor<4xi64>
  %merged = mpc.constant dense<[2, 4, 4]> : tensor<3xi64>
  %qk = mpc.matmul %q, %kt : (tensor<2x4x8xf16>, tensor<2x8x4xf16>) -> tensor<2x4x4xf16>
  %s32 = mpc.cast %qk : (tensor<2x4x4xf16>) -> tensor<2x4x4xf32>
  %s4 = mpc.reshape %s32, %heads : (tensor<2x4x4xf32>, tensor<4xi64>) -> tensor<1x2x4x4xf32>
  %sm = mpc.add %s4, %pad : (tensor<1x2x4x4xf32>, tensor<1x1x1x4xf32>) -> tensor<1x2x4x4xf32>
  %p = mpc.softmax %sm : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %p3 = mpc.reshape %p, %merged : (tensor<1x2x4x4xf32>, tensor<3xi64>) -> tensor<2x4x4xf32>
  %p16 = mpc.cast %p3 : (tensor<2x4x4xf32>) -> tensor<2x4x4xf16>
  %y = mpc.matmul %p16, %v : (tensor<2x4x4xf16>, tensor<2x4x8xf16>) -> tensor<2x4x8xf16>
  return %y : tensor<2x4x8xf16>
}

// FP16's lowest masking a whole row (query 0 sees no key) is no band: the
// unfused softmax gives that row uniform weights, a band NaN. It stays a
// bias.
// CHECK-LABEL: func.func @half_lowest_whole_row
// CHECK: mpc.attention %arg0, %{{.*}}, %arg2, %{{.*}} {scale = 1.000000e+00 : f32} : (tensor<1x2x4x8xf16>, tensor<1x2x4x8xf16>, tensor<1x2x4x8xf16>, tensor<1x1x4x4xf16>)
func.func @half_lowest_whole_row(%q: tensor<1x2x4x8xf16>, %kt: tensor<1x2x8x4xf16>, %v: tensor<1x2x4x8xf16>) -> tensor<1x2x4x8xf16> {
  %qk = mpc.matmul %q, %kt : (tensor<1x2x4x8xf16>, tensor<1x2x8x4xf16>) -> tensor<1x2x4x4xf16>
  %m = mpc.constant dense<[[[[-65504.0, -65504.0, -65504.0, -65504.0], [0.0, -65504.0, -65504.0, -65504.0], [0.0, 0.0, -65504.0, -65504.0], [0.0, 0.0, 0.0, -65504.0]]]]> : tensor<1x1x4x4xf16>
  %sc = mpc.add %qk, %m : (tensor<1x2x4x4xf16>, tensor<1x1x4x4xf16>) -> tensor<1x2x4x4xf16>
  %s32 = mpc.cast %sc : (tensor<1x2x4x4xf16>) -> tensor<1x2x4x4xf32>
  %p = mpc.softmax %s32 : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %p16 = mpc.cast %p : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf16>
  %y = mpc.matmul %p16, %v : (tensor<1x2x4x4xf16>, tensor<1x2x4x8xf16>) -> tensor<1x2x4x8xf16>
  return %y : tensor<1x2x4x8xf16>
}

// Perturbed forms stay as written: cast back to another type than the
// scores were widened from; a narrowing cast with no widening one (FP32
// scores); a widening cast with no narrowing one (P V in FP32); the cast
// back read twice.
// CHECK-LABEL: func.func @other_type
// CHECK-NOT: mpc.attention
// CHECK: mpc.softmax
func.func @other_type(%q: tensor<1x2x4x8xf16>, %kt: tensor<1x2x8x4xf16>, %v: tensor<1x2x4x8xbf16>) -> tensor<1x2x4x8xbf16> {
  %qk = mpc.matmul %q, %kt : (tensor<1x2x4x8xf16>, tensor<1x2x8x4xf16>) -> tensor<1x2x4x4xf16>
  %s32 = mpc.cast %qk : (tensor<1x2x4x4xf16>) -> tensor<1x2x4x4xf32>
  %p = mpc.softmax %s32 : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %pb = mpc.cast %p : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xbf16>
  %y = mpc.matmul %pb, %v : (tensor<1x2x4x4xbf16>, tensor<1x2x4x8xbf16>) -> tensor<1x2x4x8xbf16>
  return %y : tensor<1x2x4x8xbf16>
}

// CHECK-LABEL: func.func @narrow_only
// CHECK-NOT: mpc.attention
// CHECK: mpc.softmax
func.func @narrow_only(%q: tensor<1x2x4x8xf32>, %kt: tensor<1x2x8x4xf32>, %v: tensor<1x2x4x8xf16>) -> tensor<1x2x4x8xf16> {
  %qk = mpc.matmul %q, %kt : (tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x4x4xf32>
  %p = mpc.softmax %qk : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %p16 = mpc.cast %p : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf16>
  %y = mpc.matmul %p16, %v : (tensor<1x2x4x4xf16>, tensor<1x2x4x8xf16>) -> tensor<1x2x4x8xf16>
  return %y : tensor<1x2x4x8xf16>
}

// CHECK-LABEL: func.func @widen_only
// CHECK-NOT: mpc.attention
// CHECK: mpc.softmax
func.func @widen_only(%q: tensor<1x2x4x8xf16>, %kt: tensor<1x2x8x4xf16>, %v: tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> {
  %qk = mpc.matmul %q, %kt : (tensor<1x2x4x8xf16>, tensor<1x2x8x4xf16>) -> tensor<1x2x4x4xf16>
  %s32 = mpc.cast %qk : (tensor<1x2x4x4xf16>) -> tensor<1x2x4x4xf32>
  %p = mpc.softmax %s32 : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %y = mpc.matmul %p, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  return %y : tensor<1x2x4x8xf32>
}

// CHECK-LABEL: func.func @cast_read_twice
// CHECK-NOT: mpc.attention
// CHECK: mpc.softmax
func.func @cast_read_twice(%q: tensor<1x2x4x8xf16>, %kt: tensor<1x2x8x4xf16>, %v: tensor<1x2x4x8xf16>) -> (tensor<1x2x4x8xf16>, tensor<1x2x4x4xf16>) {
  %qk = mpc.matmul %q, %kt : (tensor<1x2x4x8xf16>, tensor<1x2x8x4xf16>) -> tensor<1x2x4x4xf16>
  %s32 = mpc.cast %qk : (tensor<1x2x4x4xf16>) -> tensor<1x2x4x4xf32>
  %p = mpc.softmax %s32 : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %p16 = mpc.cast %p : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf16>
  %y = mpc.matmul %p16, %v : (tensor<1x2x4x4xf16>, tensor<1x2x4x8xf16>) -> tensor<1x2x4x8xf16>
  return %y, %p16 : tensor<1x2x4x8xf16>, tensor<1x2x4x4xf16>
}

// Hugging Face's FP16 masks, FP16's lowest (-65504) where FP32 models have
// -FLT_MAX: full(min).triu(1) is the causal band, and the padding laid
// over it, where(P, min, C), the band plus a [b, 1, 1, S] bias of min (the
// same fill added where a key is padding).
// CHECK-LABEL: func.func @triu_half_lowest
// CHECK: mpc.attention %arg0, %{{.*}}, %arg2 {causal = true, scale = 1.000000e+00 : f32} : (tensor<1x2x4x8xf16>, tensor<1x2x4x8xf16>, tensor<1x2x4x8xf16>) ->
// CHECK-NOT: mpc.trilu
func.func @triu_half_lowest(%q: tensor<1x2x4x8xf16>, %kt: tensor<1x2x8x4xf16>, %v: tensor<1x2x4x8xf16>) -> tensor<1x2x4x8xf16> {
  %qk = mpc.matmul %q, %kt : (tensor<1x2x4x8xf16>, tensor<1x2x8x4xf16>) -> tensor<1x2x4x4xf16>
  %full = mpc.constant dense<-65504.0> : tensor<4x4xf16>
  %causal = mpc.trilu %full {k = 1 : i64} : (tensor<4x4xf16>) -> tensor<4x4xf16>
  %sc = mpc.add %qk, %causal : (tensor<1x2x4x4xf16>, tensor<4x4xf16>) -> tensor<1x2x4x4xf16>
  %s32 = mpc.cast %sc : (tensor<1x2x4x4xf16>) -> tensor<1x2x4x4xf32>
  %p = mpc.softmax %s32 : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %p16 = mpc.cast %p : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf16>
  %y = mpc.matmul %p16, %v : (tensor<1x2x4x4xf16>, tensor<1x2x4x8xf16>) -> tensor<1x2x4x8xf16>
  return %y : tensor<1x2x4x8xf16>
}

// CHECK-LABEL: func.func @padding_over_half_lowest
// CHECK: mpc.attention %arg0, %{{.*}}, %arg2, %{{.*}} {causal = true, scale = 1.000000e+00 : f32} : (tensor<1x2x4x8xf16>, tensor<1x2x4x8xf16>, tensor<1x2x4x8xf16>, tensor<1x1x1x4xf16>) ->
func.func @padding_over_half_lowest(%q: tensor<1x2x4x8xf16>, %kt: tensor<1x2x8x4xf16>, %v: tensor<1x2x4x8xf16>, %pad: tensor<1x1x1x4xi1>) -> tensor<1x2x4x8xf16> {
  %qk = mpc.matmul %q, %kt : (tensor<1x2x4x8xf16>, tensor<1x2x8x4xf16>) -> tensor<1x2x4x4xf16>
  %full = mpc.constant dense<-65504.0> : tensor<1x1x4x4xf16>
  %causal = mpc.trilu %full {k = 1 : i64} : (tensor<1x1x4x4xf16>) -> tensor<1x1x4x4xf16>
  %min = mpc.constant dense<-65504.0> : tensor<f16>
  %mask = mpc.where %pad, %min, %causal : (tensor<1x1x1x4xi1>, tensor<f16>, tensor<1x1x4x4xf16>) -> tensor<1x1x4x4xf16>
  %sc = mpc.add %qk, %mask : (tensor<1x2x4x4xf16>, tensor<1x1x4x4xf16>) -> tensor<1x2x4x4xf16>
  %s32 = mpc.cast %sc : (tensor<1x2x4x4xf16>) -> tensor<1x2x4x4xf32>
  %p = mpc.softmax %s32 : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %p16 = mpc.cast %p : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf16>
  %y = mpc.matmul %p16, %v : (tensor<1x2x4x4xf16>, tensor<1x2x4x8xf16>) -> tensor<1x2x4x8xf16>
  return %y : tensor<1x2x4x8xf16>
}

// FP16's lowest over the diagonal too, triu(0): the first query keeps no
// key, a row uniform unfused and NaN as a band: no band, the mask stays
// the bias.
// CHECK-LABEL: func.func @triu_half_lowest_empty_row
// CHECK: mpc.attention %arg0, %{{.*}}, %arg2, %{{.*}} {scale = 1.000000e+00 : f32} : (tensor<1x2x4x8xf16>, tensor<1x2x4x8xf16>, tensor<1x2x4x8xf16>, tensor<4x4xf16>) ->
func.func @triu_half_lowest_empty_row(%q: tensor<1x2x4x8xf16>, %kt: tensor<1x2x8x4xf16>, %v: tensor<1x2x4x8xf16>) -> tensor<1x2x4x8xf16> {
  %qk = mpc.matmul %q, %kt : (tensor<1x2x4x8xf16>, tensor<1x2x8x4xf16>) -> tensor<1x2x4x4xf16>
  %full = mpc.constant dense<-65504.0> : tensor<4x4xf16>
  %mask = mpc.trilu %full {k = 0 : i64} : (tensor<4x4xf16>) -> tensor<4x4xf16>
  %sc = mpc.add %qk, %mask : (tensor<1x2x4x4xf16>, tensor<4x4xf16>) -> tensor<1x2x4x4xf16>
  %s32 = mpc.cast %sc : (tensor<1x2x4x4xf16>) -> tensor<1x2x4x4xf32>
  %p = mpc.softmax %s32 : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %p16 = mpc.cast %p : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf16>
  %y = mpc.matmul %p16, %v : (tensor<1x2x4x4xf16>, tensor<1x2x4x8xf16>) -> tensor<1x2x4x8xf16>
  return %y : tensor<1x2x4x8xf16>
}

// where(causal, s, -65504) (GPT-J's where() with its -FLT_MAX fill
// saturated to FP16 by `mpc convert`): every row keeps a key, so the fill
// masks as -inf does and the constant condition is the band. With the
// first query's keys all masked, the where() stays as written.
// CHECK-LABEL: func.func @where_half_lowest
// CHECK: mpc.attention %arg0, %{{.*}}, %arg2 {causal = true, scale = 0.353{{[0-9]*}} : f32} : (tensor<1x2x4x8xf16>, tensor<1x2x4x8xf16>, tensor<1x2x4x8xf16>) ->
// CHECK-NOT: mpc.where
func.func @where_half_lowest(%q: tensor<1x2x4x8xf16>, %kt: tensor<1x2x8x4xf16>, %v: tensor<1x2x4x8xf16>) -> tensor<1x2x4x8xf16> {
  %qk = mpc.matmul %q, %kt : (tensor<1x2x4x8xf16>, tensor<1x2x8x4xf16>) -> tensor<1x2x4x4xf16>
  %causal = mpc.constant dense<[[[[true, false, false, false], [true, true, false, false], [true, true, true, false], [true, true, true, true]]]]> : tensor<1x1x4x4xi1>
  %min = mpc.constant dense<-65504.0> : tensor<f16>
  %w = mpc.where %causal, %qk, %min : (tensor<1x1x4x4xi1>, tensor<1x2x4x4xf16>, tensor<f16>) -> tensor<1x2x4x4xf16>
  %c = mpc.constant dense<2.828130e+00> : tensor<f16>
  %sd = mpc.div %w, %c : (tensor<1x2x4x4xf16>, tensor<f16>) -> tensor<1x2x4x4xf16>
  %s32 = mpc.cast %sd : (tensor<1x2x4x4xf16>) -> tensor<1x2x4x4xf32>
  %p = mpc.softmax %s32 : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %p16 = mpc.cast %p : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf16>
  %y = mpc.matmul %p16, %v : (tensor<1x2x4x4xf16>, tensor<1x2x4x8xf16>) -> tensor<1x2x4x8xf16>
  return %y : tensor<1x2x4x8xf16>
}

// CHECK-LABEL: func.func @where_half_lowest_empty_row
// CHECK-NOT: mpc.attention
// CHECK: mpc.softmax
func.func @where_half_lowest_empty_row(%q: tensor<1x2x4x8xf16>, %kt: tensor<1x2x8x4xf16>, %v: tensor<1x2x4x8xf16>) -> tensor<1x2x4x8xf16> {
  %qk = mpc.matmul %q, %kt : (tensor<1x2x4x8xf16>, tensor<1x2x8x4xf16>) -> tensor<1x2x4x4xf16>
  %keep = mpc.constant dense<[[[[false, false, false, false], [true, true, false, false], [true, true, true, false], [true, true, true, true]]]]> : tensor<1x1x4x4xi1>
  %min = mpc.constant dense<-65504.0> : tensor<f16>
  %w = mpc.where %keep, %qk, %min : (tensor<1x1x4x4xi1>, tensor<1x2x4x4xf16>, tensor<f16>) -> tensor<1x2x4x4xf16>
  %s32 = mpc.cast %w : (tensor<1x2x4x4xf16>) -> tensor<1x2x4x4xf32>
  %p = mpc.softmax %s32 : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %p16 = mpc.cast %p : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf16>
  %y = mpc.matmul %p16, %v : (tensor<1x2x4x4xf16>, tensor<1x2x4x8xf16>) -> tensor<1x2x4x8xf16>
  return %y : tensor<1x2x4x8xf16>
}

// The same where() scaled by 1e-3 afterwards: the fill is -65.5, which
// exp() does not map to 0 (a leaky mask): left as written.
// CHECK-LABEL: func.func @where_half_lowest_small_scale
// CHECK-NOT: mpc.attention
// CHECK: mpc.softmax
func.func @where_half_lowest_small_scale(%q: tensor<1x2x4x8xf16>, %kt: tensor<1x2x8x4xf16>, %v: tensor<1x2x4x8xf16>) -> tensor<1x2x4x8xf16> {
  %qk = mpc.matmul %q, %kt : (tensor<1x2x4x8xf16>, tensor<1x2x8x4xf16>) -> tensor<1x2x4x4xf16>
  %causal = mpc.constant dense<[[[[true, false, false, false], [true, true, false, false], [true, true, true, false], [true, true, true, true]]]]> : tensor<1x1x4x4xi1>
  %min = mpc.constant dense<-65504.0> : tensor<f16>
  %w = mpc.where %causal, %qk, %min : (tensor<1x1x4x4xi1>, tensor<1x2x4x4xf16>, tensor<f16>) -> tensor<1x2x4x4xf16>
  %c = mpc.constant dense<1.000000e-03> : tensor<f16>
  %sd = mpc.mul %w, %c : (tensor<1x2x4x4xf16>, tensor<f16>) -> tensor<1x2x4x4xf16>
  %s32 = mpc.cast %sd : (tensor<1x2x4x4xf16>) -> tensor<1x2x4x4xf32>
  %p = mpc.softmax %s32 : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %p16 = mpc.cast %p : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf16>
  %y = mpc.matmul %p16, %v : (tensor<1x2x4x4xf16>, tensor<1x2x4x8xf16>) -> tensor<1x2x4x8xf16>
  return %y : tensor<1x2x4x8xf16>
}
