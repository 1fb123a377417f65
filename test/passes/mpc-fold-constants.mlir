// RUN: mpc-opt %s -mpc-fold-constants | FileCheck %s
// RUN: mpc-opt %s -mpc-fold-constants -mlir-print-debuginfo | FileCheck %s --check-prefix=LOC
// RUN: mpc-opt %s -mpc-fold-constants=max-bytes=16 | FileCheck %s --check-prefix=SMALL

// A rotary table: cos and sin of positions times inv_freq, each cast to
// fp16, computed once: row p holds cos and sin of [p, p / 2] (exact
// products), as NumPy's np.cos(f32).astype(np.float16) rounds them.
// CHECK-LABEL: func.func @rotary_tables
// CHECK-DAG: %[[COS:.*]] = mpc.constant dense<{{\[}}[1.000000e+00, 1.000000e+00], [5.405270e-01, 8.774410e-01], [-4.162600e-01, 5.405270e-01], [-9.902340e-01, 7.073970e-02]]> : tensor<4x2xf16>
// CHECK-DAG: %[[SIN:.*]] = mpc.constant dense<{{\[}}[0.000000e+00, 0.000000e+00], [8.413080e-01, 4.794920e-01], [9.091790e-01, 8.413080e-01], [1.411130e-01, 9.975580e-01]]> : tensor<4x2xf16>
// CHECK-NOT: mpc.cos
// CHECK-NOT: mpc.sin
// CHECK-NOT: mpc.mul %{{.*}}, %{{.*}} : (tensor<4x1xf32>
// CHECK: %[[A:.*]] = mpc.mul %arg0, %[[COS]]
// CHECK: %[[B:.*]] = mpc.mul %arg0, %[[SIN]]
// CHECK: mpc.add %[[A]], %[[B]]
// LOC-LABEL: func.func @rotary_tables
// LOC-DAG: mpc.constant {{.*}} : tensor<4x2xf16> loc(#[[CC:loc[0-9]*]])
// LOC-DAG: #[[CC]] = loc("rope/cos_cast")
func.func @rotary_tables(%x: tensor<4x2xf16>) -> tensor<4x2xf16> {
  %pos = mpc.constant dense<[[0.0], [1.0], [2.0], [3.0]]> : tensor<4x1xf32>
  %inv = mpc.constant dense<[1.0, 0.5]> : tensor<2xf32>
  %f = mpc.mul %pos, %inv : (tensor<4x1xf32>, tensor<2xf32>) -> tensor<4x2xf32> loc("rope/mul")
  %c = mpc.cos %f : (tensor<4x2xf32>) -> tensor<4x2xf32> loc("rope/cos")
  %s = mpc.sin %f : (tensor<4x2xf32>) -> tensor<4x2xf32> loc("rope/sin")
  %c16 = mpc.cast %c {to = f16} : (tensor<4x2xf32>) -> tensor<4x2xf16> loc("rope/cos_cast")
  %s16 = mpc.cast %s {to = f16} : (tensor<4x2xf32>) -> tensor<4x2xf16> loc("rope/sin_cast")
  %a = mpc.mul %x, %c16 : (tensor<4x2xf16>, tensor<4x2xf16>) -> tensor<4x2xf16>
  %b = mpc.mul %x, %s16 : (tensor<4x2xf16>, tensor<4x2xf16>) -> tensor<4x2xf16>
  %y = mpc.add %a, %b : (tensor<4x2xf16>, tensor<4x2xf16>) -> tensor<4x2xf16>
  return %y : tensor<4x2xf16>
}

// Swin's shift mask: region ids written by slice assignments (ScatterND),
// then where(ids_i - ids_j != 0, -100, 0): one constant.
// CHECK-LABEL: func.func @shift_mask
// CHECK: %[[M:.*]] = mpc.constant dense<{{\[}}[0.000000e+00, -1.000000e+02, -1.000000e+02], [-1.000000e+02, 0.000000e+00, 0.000000e+00], [-1.000000e+02, 0.000000e+00, 0.000000e+00]]> : tensor<3x3xf32>
// CHECK-NEXT: %[[Y:.*]] = mpc.add %arg0, %[[M]]
// CHECK-NEXT: return %[[Y]]
func.func @shift_mask(%s: tensor<3x3xf32>) -> tensor<3x3xf32> {
  %zeros = mpc.constant dense<0.0> : tensor<3xf32>
  %idx = mpc.constant dense<[[1], [2]]> : tensor<2x1xi64>
  %ones = mpc.constant dense<1.0> : tensor<2xf32>
  %ids = mpc.scatter_nd %zeros, %idx, %ones : (tensor<3xf32>, tensor<2x1xi64>, tensor<2xf32>) -> tensor<3xf32>
  %rs = mpc.constant dense<[3, 1]> : tensor<2xi64>
  %cs = mpc.constant dense<[1, 3]> : tensor<2xi64>
  %r = mpc.reshape %ids, %rs : (tensor<3xf32>, tensor<2xi64>) -> tensor<3x1xf32>
  %c = mpc.reshape %ids, %cs : (tensor<3xf32>, tensor<2xi64>) -> tensor<1x3xf32>
  %d = mpc.sub %r, %c : (tensor<3x1xf32>, tensor<1x3xf32>) -> tensor<3x3xf32>
  %z = mpc.constant dense<0.0> : tensor<f32>
  %same = mpc.equal %d, %z : (tensor<3x3xf32>, tensor<f32>) -> tensor<3x3xi1>
  %fill = mpc.constant dense<-100.0> : tensor<f32>
  %m = mpc.where %same, %z, %fill : (tensor<3x3xi1>, tensor<f32>, tensor<f32>) -> tensor<3x3xf32>
  %y = mpc.add %s, %m : (tensor<3x3xf32>, tensor<3x3xf32>) -> tensor<3x3xf32>
  return %y : tensor<3x3xf32>
}

// A broadcast at the edge stays, its input folded: the constant is the
// small table, not its [8, 4] copy. So does a value over max-bytes
// (max-bytes=16 below; the [2, 4] f32 product is 32 bytes).
// CHECK-LABEL: func.func @broadcast_edge
// CHECK: %[[T:.*]] = mpc.constant dense<{{\[}}[2.000000e+00, 4.000000e+00, 6.000000e+00, 8.000000e+00]]> : tensor<1x4xf32>
// CHECK: %[[E:.*]] = mpc.expand %[[T]], %{{.*}} : (tensor<1x4xf32>, tensor<2xi64>) -> tensor<8x4xf32>
// CHECK: mpc.add %arg0, %[[E]]
// SMALL-LABEL: func.func @broadcast_edge
// SMALL: mpc.constant dense<{{\[}}[2.000000e+00, 4.000000e+00, 6.000000e+00, 8.000000e+00]]> : tensor<1x4xf32>
// SMALL-LABEL: func.func @over_max_bytes
// SMALL: %[[P:.*]] = mpc.mul
// SMALL: mpc.add %arg0, %[[P]]
// Nor is one computed on the way to a small result.
// SMALL-LABEL: func.func @large_on_the_way
// SMALL: mpc.mul
// SMALL: mpc.reduce_max
// CHECK-LABEL: func.func @large_on_the_way
// CHECK: %[[M:.*]] = mpc.constant dense<1.600000e+01> : tensor<f32>
// CHECK-NEXT: mpc.add %arg0, %[[M]]
func.func @broadcast_edge(%x: tensor<8x4xf32>) -> tensor<8x4xf32> {
  %a = mpc.constant dense<[[1.0, 2.0, 3.0, 4.0]]> : tensor<1x4xf32>
  %two = mpc.constant dense<2.0> : tensor<f32>
  %t = mpc.mul %a, %two : (tensor<1x4xf32>, tensor<f32>) -> tensor<1x4xf32>
  %shape = mpc.constant dense<[8, 4]> : tensor<2xi64>
  %e = mpc.expand %t, %shape : (tensor<1x4xf32>, tensor<2xi64>) -> tensor<8x4xf32>
  %y = mpc.add %x, %e : (tensor<8x4xf32>, tensor<8x4xf32>) -> tensor<8x4xf32>
  return %y : tensor<8x4xf32>
}

func.func @over_max_bytes(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %a = mpc.constant dense<[[1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0]]> : tensor<2x4xf32>
  %two = mpc.constant dense<2.0> : tensor<f32>
  %p = mpc.mul %a, %two : (tensor<2x4xf32>, tensor<f32>) -> tensor<2x4xf32>
  %y = mpc.add %x, %p : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  return %y : tensor<2x4xf32>
}

func.func @large_on_the_way(%x: tensor<f32>) -> tensor<f32> {
  %a = mpc.constant dense<[[1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0]]> : tensor<2x4xf32>
  %two = mpc.constant dense<2.0> : tensor<f32>
  %p = mpc.mul %a, %two : (tensor<2x4xf32>, tensor<f32>) -> tensor<2x4xf32>
  %m = mpc.reduce_max %p {keepdims = false} : (tensor<2x4xf32>) -> tensor<f32>
  %y = mpc.add %x, %m : (tensor<f32>, tensor<f32>) -> tensor<f32>
  return %y : tensor<f32>
}

// Left as written: a product and a float sum of constants (their
// accumulation order is the backend's), a random draw, and what reads
// them or an argument.
// CHECK-LABEL: func.func @not_folded
// CHECK: mpc.matmul
// CHECK: mpc.reduce_sum
// CHECK: mpc.random
// CHECK: mpc.neg %arg0
// CHECK: mpc.add
func.func @not_folded(%x: tensor<2x2xf32>, %step: tensor<2xi64>) -> (tensor<2x2xf32>, tensor<f32>, tensor<2x2xf32>) {
  %a = mpc.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
  %m = mpc.matmul %a, %a : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
  %s = mpc.reduce_sum %a {keepdims = false} : (tensor<2x2xf32>) -> tensor<f32>
  %r = mpc.random like %a step %step {a = 0.0 : f32, b = 1.0 : f32, distribution = "uniform", dtype = f32, stream = 7 : i64} : (tensor<2x2xf32>, tensor<2xi64>) -> tensor<2x2xf32>
  %n = mpc.neg %x : (tensor<2x2xf32>) -> tensor<2x2xf32>
  %y = mpc.add %n, %r : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
  return %m, %s, %y : tensor<2x2xf32>, tensor<f32>, tensor<2x2xf32>
}

// One result of a Split read outside, the other by a folded op: both
// folded; the Split and its input gone.
// CHECK-LABEL: func.func @split_parts
// CHECK-NOT: mpc.split
// CHECK-DAG: mpc.constant dense<{{\[}}[1, 2]]> : tensor<1x2xi64>
// CHECK-DAG: mpc.constant dense<{{\[}}[-3, -4]]> : tensor<1x2xi64>
func.func @split_parts() -> (tensor<1x2xi64>, tensor<1x2xi64>) {
  %a = mpc.constant dense<[[1, 2], [3, 4]]> : tensor<2x2xi64>
  %p:2 = mpc.split %a {axis = 0 : i64, num_outputs = 2 : i64} : (tensor<2x2xi64>) -> (tensor<1x2xi64>, tensor<1x2xi64>)
  %n = mpc.neg %p#1 : (tensor<1x2xi64>) -> tensor<1x2xi64>
  return %p#0, %n : tensor<1x2xi64>, tensor<1x2xi64>
}
