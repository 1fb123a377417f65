"""Writes a train step through both norm gradients (mpc.norm_grad) on rows
of COLS (300: a warp each; 3000: a block each), h = x * w; ln =
LayerNorm(h, g, b); y = RMSNorm(ln, s); loss = sum(y * r); and its batch
x.npy, r.npy.

usage: norm_train.py DIR [COLS]"""
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper

d = sys.argv[1]
C = int(sys.argv[2]) if len(sys.argv) > 2 else 300
rng = np.random.default_rng(5)
F = TensorProto.FLOAT
p = lambda name, v: numpy_helper.from_array(v.astype(np.float32), name)
inits = [p("w", 1 + 0.1 * rng.standard_normal(C)),
         p("g", 1 + 0.1 * rng.standard_normal(C)),
         p("b", 0.1 * rng.standard_normal(C)),
         p("s", 1 + 0.1 * rng.standard_normal(C))]
nodes = [helper.make_node("Mul", ["x", "w"], ["h"]),
         helper.make_node("LayerNormalization", ["h", "g", "b"], ["ln"],
                          axis=-1, epsilon=1e-3),
         helper.make_node("RMSNormalization", ["ln", "s"], ["y"], axis=-1,
                          epsilon=1e-3),
         helper.make_node("Mul", ["y", "r"], ["yr"]),
         helper.make_node("ReduceSum", ["yr"], ["loss"], keepdims=0)]
g = helper.make_graph(nodes, "norm_train",
                      [helper.make_tensor_value_info("x", F, [5, C]),
                       helper.make_tensor_value_info("r", F, [5, C])],
                      [helper.make_tensor_value_info("loss", F, [])], inits)
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 23)])
m.ir_version = 10
open(f"{d}/norm_train.onnx", "wb").write(m.SerializeToString())
np.save(f"{d}/x.npy", (3 * rng.standard_normal((5, C))).astype(np.float32))
np.save(f"{d}/r.npy", rng.standard_normal((5, C)).astype(np.float32))
