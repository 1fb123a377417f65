"""split_folds.onnx: reductions long enough for the CUDA fold kernels to
split over blocks (runtime/cuda/FoldOps.h), and one they do not split.

usage: make_split_folds.py OUT_DIR
"""
import sys
import numpy as np, onnx
from onnx import helper, numpy_helper, TensorProto
out = sys.argv[1]
mk = helper.make_node
def save(name, nodes, ins, outs, inits=()):
    g = helper.make_graph(nodes, name,
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in ins],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in outs], list(inits))
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)]), f"{out}/{name}.onnx")
axes = lambda n, v: numpy_helper.from_array(np.array(v, np.int64), n)
# A scalar of 98304 elements (12 blocks), row means of 40000 (4 a row),
# row maxima of 20000 (2), and a loss as attention steps write it
# (sum(y * t) over 24576: the product fused into the split fold).
save("split_folds", [
    mk("ReduceSum", ["x"], ["total"], keepdims=0),
    mk("ReduceMean", ["r", "a1"], ["means"], keepdims=0),
    mk("ReduceMax", ["m", "a1"], ["maxima"], keepdims=0),
    mk("Mul", ["y", "t"], ["yt"]),
    mk("ReduceSum", ["yt"], ["loss"], keepdims=0),
    mk("ReduceLogSumExp", ["r", "a1"], ["lse"], keepdims=0),
], [("x", [2, 3, 16384]), ("r", [2, 40000]), ("m", [3, 20000]),
    ("y", [4, 6144]), ("t", [4, 6144])],
   [("total", []), ("means", [2]), ("maxima", [3]), ("loss", []), ("lse", [2])],
   [axes("a1", [1])])
