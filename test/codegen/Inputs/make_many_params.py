"""Writes many_params.onnx into OUT_DIR, a model whose train step's
gradient norm (mpc.global_norm) spans several multi-tensor launches:
h = x @ W [64, 4608] (294912 elements: more than a launch's 1024 blocks
of 256 threads take in one pass), plus 40 biases [4608] one after the
other, times a scalar s [1] (fewer elements than a 16-byte vector holds),
and the loss mean(h * h): 42 gradients of one type, two launches of up
to 32.

usage: make_many_params.py OUT_DIR
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

out = sys.argv[1]
rng = np.random.default_rng(0)
width, biases = 4608, 40
inits = [numpy_helper.from_array(
    (rng.standard_normal((64, width)) * 0.05).astype(np.float32), "W")]
nodes = [helper.make_node("MatMul", ["x", "W"], ["h0"])]
for i in range(biases):
    inits.append(numpy_helper.from_array(
        (rng.standard_normal(width) * 0.1).astype(np.float32), f"b{i}"))
    nodes.append(helper.make_node("Add", [f"h{i}", f"b{i}"], [f"h{i + 1}"]))
inits.append(numpy_helper.from_array(np.array([0.7], np.float32), "s"))
nodes += [helper.make_node("Mul", [f"h{biases}", "s"], ["y"]),
          helper.make_node("Mul", ["y", "y"], ["sq"]),
          helper.make_node("ReduceMean", ["sq"], ["loss"], keepdims=0)]
graph = helper.make_graph(
    nodes, "many_params",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 64])],
    [helper.make_tensor_value_info("loss", TensorProto.FLOAT, [])], inits)
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
onnx.checker.check_model(model)
onnx.save(model, os.path.join(out, "many_params.onnx"))
