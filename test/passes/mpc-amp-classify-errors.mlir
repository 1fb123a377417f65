// RUN: mpc-opt %s -mpc-amp-classify=precision=f8 -verify-diagnostics
// RUN: not mpc-opt %s -mpc-amp-classify=allow=Matmul 2>&1 | FileCheck %s --check-prefix=UNKNOWN
// RUN: not mpc-opt %s -mpc-amp-classify=keep-fp32=nosuch 2>&1 | FileCheck %s --check-prefix=KEEP
// RUN: not mpc-opt %s -mpc-amp-classify=config=%S/Inputs/amp-bad.cfg 2>&1 | FileCheck %s --check-prefix=CONFIG
// RUN: not mpc-opt %s -mpc-amp-classify=config=%S/Inputs/no-such.cfg 2>&1 | FileCheck %s --check-prefix=MISSING
// UNKNOWN: unknown op 'Matmul' in --amp-allow (ONNX op types with an AMP class, e.g. MatMul, Softmax)
// KEEP: error: --amp-keep-fp32: no node named 'nosuch'
// CONFIG: amp-bad.cfg:2: expected 'allow = ...', 'deny = ...' or 'keep-fp32 = ...', got 'fp32 = Softmax'
// MISSING: cannot read AMP config '{{.*}}no-such.cfg'

// expected-error @+1 {{precision must be f16 or bf16, got 'f8'}}
module {
  func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {
    %c = mpc.relu %a : (tensor<4xf32>) -> tensor<4xf32>
    return %c : tensor<4xf32>
  }
}
