"""Writes gather_rows.onnx: scores = Gather(x @ W reshaped [N,3,10], [1, 1],
axis=1) flattened @ W2, with a softmax cross-entropy loss. In fp16 the
Gather follows its fp16 input, so its gradient is a scatter-add into an
fp16 tensor with a repeated index.

usage: make_gather_rows.py OUT.onnx
"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

rng = np.random.default_rng(0)
inits = [
    numpy_helper.from_array(rng.standard_normal((8, 30)).astype(np.float32) * 0.3, "W"),
    numpy_helper.from_array(rng.standard_normal((20, 10)).astype(np.float32) * 0.3, "W2"),
    numpy_helper.from_array(np.array([4, 3, 10], np.int64), "shape3"),
    numpy_helper.from_array(np.array([4, 20], np.int64), "shape2"),
    numpy_helper.from_array(np.array([1, 1], np.int64), "pick"),
]
nodes = [
    helper.make_node("MatMul", ["x", "W"], ["h"], name="proj"),
    helper.make_node("Reshape", ["h", "shape3"], ["h3"], name="split_heads"),
    helper.make_node("Gather", ["h3", "pick"], ["g"], name="pick_rows", axis=1),
    helper.make_node("Reshape", ["g", "shape2"], ["g2"], name="flatten"),
    helper.make_node("MatMul", ["g2", "W2"], ["scores"], name="head"),
    helper.make_node("SoftmaxCrossEntropyLoss", ["scores", "labels"], ["loss"],
                     name="loss"),
]
graph = helper.make_graph(
    nodes, "gather_rows",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 8]),
     helper.make_tensor_value_info("labels", TensorProto.INT64, [4])],
    [helper.make_tensor_value_info("loss", TensorProto.FLOAT, [])], inits)
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
onnx.checker.check_model(model)
onnx.save(model, sys.argv[1])
