// RUN: mpc-opt %s -mpc-insert-casts -split-input-file | FileCheck %s
// RUN: mpc-opt %s -mpc-insert-casts -split-input-file --mlir-print-debuginfo --mlir-print-local-scope | FileCheck %s --check-prefix=LOC

// One cast per (value, type), right after the value's definition and
// shared by its users; results take the op's precision; a cast back to
// f32 only where an fp32 op reads a low value; function results keep
// their declared types. An unpainted op (shape) reads any type, and a
// cast the retyping made an identity (%bh) disappears.
// CHECK-LABEL: func.func @boundaries
// CHECK-SAME: (%[[X:.*]]: tensor<2x4xf32>, %[[W:.*]]: tensor<3x4xf32>)
// CHECK-NEXT: %[[W16:.*]] = mpc.cast %[[W]] : (tensor<3x4xf32>) -> tensor<3x4xf16>
// CHECK-NEXT: %[[X16:.*]] = mpc.cast %[[X]] : (tensor<2x4xf32>) -> tensor<2x4xf16>
// CHECK-NEXT: %[[A:.*]] = mpc.gemm %[[X16]], %[[W16]] {{.*}} : (tensor<2x4xf16>, tensor<3x4xf16>) -> tensor<2x3xf16>
// CHECK-NEXT: %[[A32:.*]] = mpc.cast %[[A]] : (tensor<2x3xf16>) -> tensor<2x3xf32>
// CHECK-NEXT: %[[B:.*]] = mpc.gemm %[[X16]], %[[W16]] {{.*}} -> tensor<2x3xf16>
// CHECK-NEXT: %[[R:.*]] = mpc.relu %[[A]] {{.*}} : (tensor<2x3xf16>) -> tensor<2x3xf16>
// CHECK-NEXT: %[[R32:.*]] = mpc.cast %[[R]] : (tensor<2x3xf16>) -> tensor<2x3xf32>
// CHECK-NEXT: %[[S:.*]] = mpc.softmax %[[A32]] {{.*}} : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT: %[[E:.*]] = mpc.exp %[[A32]] {{.*}} : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT: %[[SH:.*]] = mpc.shape %[[A]] : (tensor<2x3xf16>) -> tensor<2xi64>
// CHECK-NEXT: return %[[R32]], %[[S]], %[[E]], %[[B]]
// CHECK-SAME: tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf16>
// LOC: mpc.cast %{{.*}} : (tensor<2x3xf16>) -> tensor<2x3xf32> loc("fc1")
func.func @boundaries(%x: tensor<2x4xf32>, %w: tensor<3x4xf32>)
    -> (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf16>) {
  %a = mpc.gemm %x, %w {transB = true, mpc.precision = f16} : (tensor<2x4xf32>, tensor<3x4xf32>) -> tensor<2x3xf32> loc("fc1")
  %b = mpc.gemm %x, %w {transB = true, mpc.precision = f16} : (tensor<2x4xf32>, tensor<3x4xf32>) -> tensor<2x3xf32> loc("fc2")
  %r = mpc.relu %a {mpc.precision = f16} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %s = mpc.softmax %a {axis = 1 : i64, mpc.precision = f32} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %e = mpc.exp %a {mpc.precision = f32} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %sh = mpc.shape %a : (tensor<2x3xf32>) -> tensor<2xi64>
  %bh = mpc.cast %b : (tensor<2x3xf32>) -> tensor<2x3xf16>
  return %r, %s, %e, %bh : tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf16>
}

// -----

// Constants are converted at compile time, not cast at run time; values
// beyond fp16's range saturate to +-65504 and the constant says how many.
// CHECK-LABEL: func.func @constants
// CHECK-NEXT: %[[X16:.*]] = mpc.cast
// CHECK-NEXT: %[[C:.*]] = mpc.constant {mpc.amp = "2 values beyond the range saturated"} dense<[5.000000e-01, 6.550400e+04, -6.550400e+04]> : tensor<3xf16>
// CHECK-NEXT: mpc.add %[[X16]], %[[C]]
// CHECK-NOT: mpc.constant
// CHECK-NOT: mpc.cast
func.func @constants(%x: tensor<3xf32>) -> tensor<3xf16> {
  %c = mpc.constant dense<[0.5, 1.0e6, -7.0e4]> : tensor<3xf32>
  %y = mpc.add %x, %c {mpc.precision = f16} : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %yh = mpc.cast %y : (tensor<3xf32>) -> tensor<3xf16>
  return %yh : tensor<3xf16>
}

// -----

// A cast of an exact widening cast folds: f16 -> f32 -> f16 is the f16
// value itself, and f16 -> f32 -> bf16 casts f16 -> bf16 directly (the
// widening cast, now unused, goes). A narrowing round trip
// (f32 -> f16 -> f32) is an intended rounding and stays.
// CHECK-LABEL: func.func @chains
// CHECK-SAME: (%[[H:.*]]: tensor<4xf16>, %[[F:.*]]: tensor<4xf32>)
// CHECK-NEXT: %[[BF:.*]] = mpc.cast %[[H]] : (tensor<4xf16>) -> tensor<4xbf16>
// CHECK-NEXT: %[[N:.*]] = mpc.cast %[[F]] : (tensor<4xf32>) -> tensor<4xf16>
// CHECK-NEXT: %[[R:.*]] = mpc.cast %[[N]] : (tensor<4xf16>) -> tensor<4xf32>
// CHECK-NEXT: mpc.relu %[[H]] {{.*}} -> tensor<4xf16>
// CHECK: mpc.relu %[[BF]] {{.*}} -> tensor<4xbf16>
// CHECK: mpc.relu %[[R]] {{.*}} -> tensor<4xf32>
func.func @chains(%h: tensor<4xf16>, %f: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %w = mpc.cast %h : (tensor<4xf16>) -> tensor<4xf32>
  %n = mpc.cast %f : (tensor<4xf32>) -> tensor<4xf16>
  %r = mpc.cast %n : (tensor<4xf16>) -> tensor<4xf32>
  %a = mpc.relu %w {mpc.precision = f16} : (tensor<4xf32>) -> tensor<4xf32>
  %b = mpc.relu %w {mpc.precision = bf16} : (tensor<4xf32>) -> tensor<4xf32>
  %c = mpc.relu %r {mpc.precision = f32} : (tensor<4xf32>) -> tensor<4xf32>
  return %a, %b, %c : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}

// -----

// An op with FP32 parameters (batch norm) takes the low type on its data
// operand alone: the scale, bias and statistics are cast to f32 if
// anything (here they are f32 already), y is low, the running statistics
// keep their FP32 type.
// CHECK-LABEL: func.func @fp32_parameters
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x4x4xf32>, %[[S:.*]]: tensor<3xf32>, %[[H:.*]]: tensor<3xf16>)
// CHECK-NEXT: %[[XL:.*]] = mpc.cast %[[X]] : (tensor<2x3x4x4xf32>) -> tensor<2x3x4x4xf16>
// CHECK-NEXT: %[[HW:.*]] = mpc.cast %[[H]] : (tensor<3xf16>) -> tensor<3xf32>
// CHECK-NEXT: mpc.batch_norm_train %[[XL]], %[[S]], %[[HW]], %[[S]], %[[S]] {{.*}}: (tensor<2x3x4x4xf16>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> (tensor<2x3x4x4xf16>, tensor<3xf32>, tensor<3xf32>)
func.func @fp32_parameters(%x: tensor<2x3x4x4xf32>, %s: tensor<3xf32>, %h: tensor<3xf16>)
    -> (tensor<2x3x4x4xf32>, tensor<3xf32>, tensor<3xf32>) {
  %hw = mpc.cast %h : (tensor<3xf16>) -> tensor<3xf32>
  %y, %rm, %rv = mpc.batch_norm_train %x, %s, %hw, %s, %s {mpc.precision = f16} : (tensor<2x3x4x4xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> (tensor<2x3x4x4xf32>, tensor<3xf32>, tensor<3xf32>)
  return %y, %rm, %rv : tensor<2x3x4x4xf32>, tensor<3xf32>, tensor<3xf32>
}

// -----

// Dropout's ratio keeps its own type (ONNX's T1): the data goes fp16, the
// ratio stays the user's FP32 0.1 (its fp16 rounding would move the
// threshold and the scale).
// CHECK-LABEL: func.func @dropout_ratio
// CHECK: %[[X16:.*]] = mpc.cast %arg0 : (tensor<4x8xf32>) -> tensor<4x8xf16>
// CHECK-NOT: mpc.cast
// CHECK: mpc.dropout %[[X16]] ratio %{{.*}} training %{{.*}} : (tensor<4x8xf16>, tensor<f32>, tensor<i1>) -> (tensor<4x8xf16>, tensor<4x8xi1>)
func.func @dropout_ratio(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %r = mpc.constant dense<1.000000e-01> : tensor<f32>
  %t = mpc.constant dense<true> : tensor<i1>
  %y, %m = mpc.dropout %x ratio %r training %t {mpc.precision = f16} : (tensor<4x8xf32>, tensor<f32>, tensor<i1>) -> (tensor<4x8xf32>, tensor<4x8xi1>)
  return %y : tensor<4x8xf32>
}
