//===- MpcOps.td - all mpc ops ----------------------------*- tablegen -*-===//

#ifndef MPC_OPS_TD
#define MPC_OPS_TD

include "ir/ElementwiseOps.td"
include "ir/LinalgOps.td"
include "ir/NnOps.td"
include "ir/ShapeOps.td"
include "ir/TrainingOps.td"
include "ir/GradOps.td"
include "ir/MixedPrecisionOps.td"

#endif // MPC_OPS_TD
