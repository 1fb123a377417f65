// RUN: mpc-opt %s -mpc-ema=decay=0.9 -split-input-file -verify-diagnostics

// An average of weights no step updates would never move: refused.
// expected-error @+1 {{ema: no train step with updates (run mpc-autodiff and mpc-optimizer first)}}
module {
  func.func @forward(%x: tensor<3xf32>) -> tensor<3xf32> {
    return %x : tensor<3xf32>
  }
}
