//===- MpcInterfaces.td - mpc op interfaces ----------------*- tablegen -*-===//

#ifndef MPC_INTERFACES_TD
#define MPC_INTERFACES_TD

include "mlir/IR/OpBase.td"

def Mpc_GradientOpInterface : OpInterface<"GradientOpInterface"> {
  let cppNamespace = "::mlir::mpc";
  let description = [{
    An op's reverse-mode rule, used by `mpc-autodiff` and
    `mpc-lower-gradient`. The rules are attached as external models, a file
    per op family (passes/gradients/), so an op's rule lives with its
    family's, not in a switch over every op; `mpc ops` lists the ops that
    have one.
  }];
  let methods = [
    InterfaceMethod<[{
        Given the gradients of the op's results (null where a result has
        none), builds at `b`'s insertion point the gradients of its
        operands into `operandGrads` (sized to the operands, null where no
        gradient flows, e.g. integer labels). `wanted` says which operands
        depend on what is differentiated: a rule may skip the others'
        (work only they need, such as attention's bias gradient). Fails
        with a diagnostic on the op for forms without a rule.
      }],
      "::llvm::LogicalResult", "buildGradients",
      (ins "::mlir::OpBuilder &":$b,
           "::llvm::ArrayRef<::mlir::Value>":$resultGrads,
           "::llvm::ArrayRef<bool>":$wanted,
           "::llvm::SmallVectorImpl<::mlir::Value> &":$operandGrads)>,
  ];
}

#endif // MPC_INTERFACES_TD
