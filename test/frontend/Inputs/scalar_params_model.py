"""Writes a model with three float scalar initializers: `m.logit_scale`
and `0.alpha`, named as torch names a module's parameter (CLIP's learned
temperature; nn.Sequential's first module's), and `onnx::Div_7`, named as
torch names a constant it folded. The loss is
sum(X * exp(m.logit_scale) * 0.alpha / onnx::Div_7), 0.alpha = 1.

usage: scalar_params_model.py OUT.onnx
"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

nodes = [helper.make_node("Exp", ["m.logit_scale"], ["E"]),
         helper.make_node("Mul", ["X", "E"], ["S"]),
         helper.make_node("Mul", ["S", "0.alpha"], ["A"]),
         helper.make_node("Div", ["A", "onnx::Div_7"], ["Q"]),
         helper.make_node("ReduceSum", ["Q"], ["loss"], keepdims=0)]
graph = helper.make_graph(
    nodes, "scalars", [helper.make_tensor_value_info("X", TensorProto.FLOAT, [2, 3])],
    [helper.make_tensor_value_info("loss", TensorProto.FLOAT, [])],
    [numpy_helper.from_array(np.array(0.5, np.float32), "m.logit_scale"),
     numpy_helper.from_array(np.array(1.0, np.float32), "0.alpha"),
     numpy_helper.from_array(np.array(4.0, np.float32), "onnx::Div_7")])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
model.ir_version = 8
onnx.checker.check_model(model, full_check=True)
onnx.save(model, sys.argv[1])
