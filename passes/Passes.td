//===- Passes.td - mpc pass declarations -------------------*- tablegen -*-===//

#ifndef MPC_PASSES_TD
#define MPC_PASSES_TD

include "mlir/Pass/PassBase.td"

def SpecializeShapes : Pass<"mpc-specialize-shapes", "::mlir::ModuleOp"> {
  let summary = "Bind the batch dimension, fold ONNX shape arithmetic, refine types";
  let description = [{
    Optionally binds the dynamic leading dimension of every function argument
    that is a graph input (`mpc.input`) to `batch`, then walks each function
    in order folding constant shape arithmetic (Shape -> Gather -> Concat ->
    Reshape chains, ConstantOfShape, Range...) and re-inferring result types,
    and finally updates function result types. With all input shapes bound,
    every type becomes static.

    Before (`batch=4`):
    ```mlir
    func.func @f(%x: tensor<?x8xf32> {mpc.input = "x"}) -> tensor<?x2x4xf32> {
      %s = mpc.shape %x : (tensor<?x8xf32>) -> tensor<2xi64>
      ...
    ```
    After: `%x: tensor<4x8xf32>`, `%s` is an `mpc.constant`, and the result
    is `tensor<4x2x4xf32>`.
  }];
  let options = [
    Option<"batch", "batch", "int64_t", /*default=*/"0",
           "Bind dynamic leading input dimensions to this size (0: keep)">
  ];
  let dependentDialects = ["::mlir::mpc::MpcDialect"];
}

def Autodiff : Pass<"mpc-autodiff", "::mlir::ModuleOp"> {
  let summary = "Build a train-step function returning parameter gradients";
  let description = [{
    Clones the entry function (`mpc.entry`) into `@<name>_train_step`, which
    returns the forward results followed by d(loss)/d(param) for every
    trainable `mpc.param` argument (result attribute `mpc.gradient = @p`),
    by a reverse sweep with one gradient rule per op (passes/GradientRules).
    The loss is the result named by `loss`, else the first f32 scalar.

    Before:
    ```mlir
    func.func @f(%x: tensor<4x3xf32> {mpc.input = "x"},
                 %w: tensor<2x3xf32> {mpc.param = @w}) -> tensor<f32>
    ```
    After, additionally:
    ```mlir
    func.func @f_train_step(...) -> (tensor<f32>,
                                     tensor<2x3xf32> {mpc.gradient = @w})
    ```
  }];
  let options = [
    Option<"loss", "loss", "std::string", /*default=*/"\"\"",
           "Name (mpc.output) of the loss result">
  ];
  let dependentDialects = ["::mlir::mpc::MpcDialect"];
}

def LowerGradient : Pass<"mpc-lower-gradient", "::mlir::ModuleOp"> {
  let summary = "Replace ONNX Gradient ops by their reverse-mode computation";
  let description = [{
    An `mpc.gradient` whose `y` is computed in the same function (it has a
    `target` operand) becomes the reverse sweep from the target to its `xs`
    operands, built with the same rules as `mpc-autodiff`; gradients of xs
    that y does not depend on are zeros.

    Before:
    ```mlir
    %c = mpc.add %a, %b : ...
    %da, %db = mpc.gradient %a, %b target %c {xs = ["a", "b"], y = "c", zs = []} : ...
    ```
    After: `%da` and `%db` are the ones-seeded gradients of `%c`.
  }];
  let dependentDialects = ["::mlir::mpc::MpcDialect"];
}

#endif // MPC_PASSES_TD
