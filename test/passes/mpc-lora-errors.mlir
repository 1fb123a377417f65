// RUN: mpc-opt %s -split-input-file -mpc-lora="rank=2 targets=emb" -verify-diagnostics
// RUN: not mpc-opt %s -split-input-file -mpc-lora="rank=2 targets=nothing" 2>&1 | FileCheck %s --check-prefix=NONE
// RUN: not mpc-opt %s -split-input-file -mpc-lora="rank=0" 2>&1 | FileCheck %s --check-prefix=RANK

// A named target read otherwise (an embedding, a tied head's Gather) is
// refused at that reader: a merged weight would change what it reads.
mpc.param @emb trainable : tensor<10x4xf32> = dense<1.0> : tensor<10x4xf32>
func.func @g(%ids: tensor<3xi64> {mpc.input = "ids"}, %emb: tensor<10x4xf32> {mpc.param = @emb}) -> tensor<3x4xf32> {
  // expected-error @+1 {{lora: parameter @emb is read here by mpc.gather, not as a linear layer's weight (LoRA adapts the weights only linear layers read)}}
  %e = mpc.gather %emb, %ids {axis = 0 : i64} : (tensor<10x4xf32>, tensor<3xi64>) -> tensor<3x4xf32>
  return %e : tensor<3x4xf32>
}

// -----

// Targets that match no linear weight are refused, not a silent no-op.
// NONE: lora: targets 'nothing' match no parameter read only by linear layers as their weight
// RANK: lora: the rank must be at least 1, got 0
mpc.param @emb trainable : tensor<4x4xf32> = dense<1.0> : tensor<4x4xf32>
func.func @h(%x: tensor<3x4xf32> {mpc.input = "x"}, %emb: tensor<4x4xf32> {mpc.param = @emb}) -> tensor<3x4xf32> {
  %y = mpc.matmul %x, %emb : (tensor<3x4xf32>, tensor<4x4xf32>) -> tensor<3x4xf32>
  return %y : tensor<3x4xf32>
}
