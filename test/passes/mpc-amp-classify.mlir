// RUN: mpc-opt %s -mpc-amp-classify -verify-diagnostics | FileCheck %s
// RUN: mpc-opt %s -mpc-amp-classify=precision=bf16 -verify-diagnostics | FileCheck %s --check-prefix=BF16
// RUN: mpc-opt %s -mpc-amp-classify="deny=Gemm allow=Softmax keep-fp32=act" -verify-diagnostics | FileCheck %s --check-prefix=OVERRIDE
// RUN: mpc-opt %s -mpc-amp-classify=config=%S/Inputs/amp.cfg -verify-diagnostics | FileCheck %s --check-prefix=OVERRIDE
// RUN: mpc-opt %s -mpc-amp-classify=mixed-type-ops=false -verify-diagnostics | FileCheck %s --check-prefix=NOMIX
// RUN: mpc-opt %s -mpc-amp-classify -verify-diagnostics --mlir-print-debuginfo --mlir-print-local-scope | FileCheck %s --check-prefix=LOC

// allow (gemm) is low; clear (relu) and infer (add) follow their low input;
// deny (softmax) is fp32; the add after softmax follows its fp32 input;
// the reshape of the graph input is exact and feeds only a low gemm, so it
// turns low too (the cast moves above it). Types are not changed here.
// CHECK-LABEL: func.func @mlp
// CHECK: mpc.reshape {{.*}}mpc.amp = "clear (Reshape): exact, and all its users run in fp16", mpc.precision = f16
// CHECK: mpc.gemm {{.*}}mpc.amp = "allow (Gemm): runs on tensor cores with FP32 accumulation", mpc.precision = f16
// CHECK-SAME: -> tensor<2x3xf32>
// CHECK: mpc.relu {{.*}}mpc.amp = "clear (Relu): follows its input from 'fc', computed in fp16", mpc.precision = f16
// CHECK: mpc.add {{.*}}mpc.amp = "infer (Add): follows its input from 'act', computed in fp16", mpc.precision = f16
// CHECK: mpc.softmax {{.*}}mpc.amp = "deny (Softmax): exponentials and a normalising sum need FP32", mpc.precision = f32
// CHECK: mpc.mul {{.*}}mpc.amp = "infer (Mul): follows its input from 'probs', computed in fp32", mpc.precision = f32
// CHECK: mpc.neg {{.*}}mpc.amp = "clear (Neg): no input is computed in low precision", mpc.precision = f32
// CHECK: mpc.sin {{.*}}mpc.amp = "not on the AMP lists, so kept fp32 (the safe default)", mpc.precision = f32
// Shape reads and integer arithmetic are not painted.
// CHECK: mpc.shape %{{[0-9]+}} :
// CHECK-NEXT: mpc.add %{{[0-9]+}}, %{{[0-9]+}} : (tensor<2xi64>
// BF16: mpc.gemm {{.*}}mpc.precision = bf16
// BF16: mpc.add {{.*}}computed in bf16", mpc.precision = bf16
// OVERRIDE: mpc.reshape {{.*}}mpc.amp = "clear (Reshape): no input is computed in low precision", mpc.precision = f32
// OVERRIDE: mpc.gemm {{.*}}mpc.amp = "deny (Gemm, by {{.*}}): forced to fp32", mpc.precision = f32
// OVERRIDE: mpc.relu {{.*}}mpc.amp = "kept fp32 by --amp-keep-fp32", mpc.precision = f32
// OVERRIDE: mpc.softmax {{.*}}mpc.amp = "allow (Softmax, by {{.*}}): forced to low precision", mpc.precision = f16
// LOC: mpc.gemm {{.*}} loc("fc")
func.func @mlp(%x: tensor<2x2x2xf32> {mpc.input = "x"}, %w: tensor<3x4xf32> {mpc.param = @w},
               %b: tensor<3xf32> {mpc.param = @b}) -> (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<3xi64>)
    attributes {mpc.entry} {
  %shape = mpc.constant dense<[2, 4]> : tensor<2xi64>
  %flat = mpc.reshape %x, %shape : (tensor<2x2x2xf32>, tensor<2xi64>) -> tensor<2x4xf32> loc("flat")
  %y = mpc.gemm %flat, %w, %b {transB = true} : (tensor<2x4xf32>, tensor<3x4xf32>, tensor<3xf32>) -> tensor<2x3xf32> loc("fc")
  %r = mpc.relu %y : (tensor<2x3xf32>) -> tensor<2x3xf32> loc("act")
  %s = mpc.add %r, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32> loc("shift")
  %p = mpc.softmax %s {axis = 1 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32> loc("probs")
  %q = mpc.mul %p, %r : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32> loc("weighted")
  %n = mpc.neg %b : (tensor<3xf32>) -> tensor<3xf32> loc("negb")
  %t = mpc.sin %q : (tensor<2x3xf32>) -> tensor<2x3xf32> loc("wave")
  %sh = mpc.shape %y : (tensor<2x3xf32>) -> tensor<2xi64> loc("dims")
  %sz = mpc.add %sh, %shape : (tensor<2xi64>, tensor<2xi64>) -> tensor<2xi64> loc("intadd")
  %nb = mpc.add %n, %b : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32> loc("nb")
  %cat = mpc.concat %sz, %shape {axis = 0 : i64} : (tensor<2xi64>, tensor<2xi64>) -> tensor<4xi64> loc("cat")
  %dims = mpc.constant dense<[1, 2, 3]> : tensor<3xi64>
  return %y, %q, %t, %dims : tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<3xi64>
}


// Batch norm follows its data input alone (its scale, bias and statistics
// are FP32 arguments either way): after a low conv it is low, on the FP32
// graph input FP32; mixed-type-ops=false (mpc convert) keeps it FP32.
// CHECK-LABEL: func.func @bn
// CHECK: mpc.batch_norm_train {{.*}}mpc.amp = "infer (BatchNormalization): follows its input from 'conv', computed in fp16 (statistics and parameters in fp32)", mpc.precision = f16
// CHECK: mpc.batch_norm {{.*}}mpc.amp = "infer (BatchNormalization): no input is computed in low precision", mpc.precision = f32
// NOMIX-LABEL: func.func @bn
// NOMIX: mpc.batch_norm_train {{.*}}mpc.amp = "infer (BatchNormalization): kept fp32 by mixed-type-ops=false (its parameters are FP32)", mpc.precision = f32
// NOMIX: mpc.batch_norm {{.*}}mpc.amp = "infer (BatchNormalization): kept fp32 by mixed-type-ops=false (its parameters are FP32)", mpc.precision = f32
func.func @bn(%x: tensor<2x3x4x4xf32>, %w: tensor<3x3x1x1xf32>, %s: tensor<3xf32>)
    -> (tensor<2x3x4x4xf32>, tensor<3xf32>, tensor<3xf32>, tensor<2x3x4x4xf32>) {
  %c = mpc.conv %x, %w : (tensor<2x3x4x4xf32>, tensor<3x3x1x1xf32>) -> tensor<2x3x4x4xf32> loc("conv")
  %y, %rm, %rv = mpc.batch_norm_train %c, %s, %s, %s, %s : (tensor<2x3x4x4xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> (tensor<2x3x4x4xf32>, tensor<3xf32>, tensor<3xf32>) loc("bn")
  %z = mpc.batch_norm %x, %s, %s, %s, %s : (tensor<2x3x4x4xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<2x3x4x4xf32> loc("bn_in")
  return %y, %rm, %rv, %z : tensor<2x3x4x4xf32>, tensor<3xf32>, tensor<3xf32>, tensor<2x3x4x4xf32>
}

// A concat of parameters alone (mpc-merge-sibling-linears' biases) is read
// as a parameter is: the bias Add follows the low GEMM. An embedding
// lookup is not (its indices are data): the residual Add reading it
// follows it into fp32.
// CHECK-LABEL: func.func @weight_concat
// CHECK: mpc.concat {{.*}}mpc.amp = "clear (Concat): exact, and all its users run in fp16", mpc.precision = f16
// CHECK: mpc.add {{.*}}mpc.amp = "infer (Add): follows its input from 'qkv', computed in fp16", mpc.precision = f16
// CHECK: mpc.gather {{.*}}mpc.precision = f32
// CHECK: mpc.add {{.*}}mpc.amp = "infer (Add): follows its input from 'embed', computed in fp32", mpc.precision = f32
func.func @weight_concat(%x: tensor<4x8xf32>, %w: tensor<8x12xf32>, %bq: tensor<4xf32> {mpc.param = @bq}, %bk: tensor<8xf32> {mpc.param = @bk}, %tokens: tensor<4xi64>, %table: tensor<10x12xf32> {mpc.param = @table}) -> (tensor<4x12xf32>, tensor<4x12xf32>) {
  %m = mpc.matmul %x, %w : (tensor<4x8xf32>, tensor<8x12xf32>) -> tensor<4x12xf32> loc("qkv")
  %b = mpc.concat %bq, %bk {axis = 0 : i64} : (tensor<4xf32>, tensor<8xf32>) -> tensor<12xf32> loc("biases")
  %y = mpc.add %m, %b : (tensor<4x12xf32>, tensor<12xf32>) -> tensor<4x12xf32> loc("bias")
  %e = mpc.gather %table, %tokens {axis = 0 : i64} : (tensor<10x12xf32>, tensor<4xi64>) -> tensor<4x12xf32> loc("embed")
  %r = mpc.add %e, %m : (tensor<4x12xf32>, tensor<4x12xf32>) -> tensor<4x12xf32> loc("residual")
  return %y, %r : tensor<4x12xf32>, tensor<4x12xf32>
}
