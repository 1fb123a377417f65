"""Writes models for ops whose ONNX backend node tests use an element type
mpc does not support (CumSum's are all double): the same cases in float32
and int64, for compare_ort.py to run against onnxruntime.

usage: make_op_models.py OUT_DIR
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

out = sys.argv[1]
for elem, file in ((TensorProto.FLOAT, "cumsum"), (TensorProto.INT64, "cumsum_int64")):
    nodes, outputs = [], []
    for axis in (0, 1, -1):
        for exclusive in (0, 1):
            for reverse in (0, 1):
                name = f"cumsum_a{axis}_e{exclusive}_r{reverse}".replace("-", "m")
                nodes.append(helper.make_node("CumSum", ["x", f"axis{axis}"],
                                              [name], exclusive=exclusive,
                                              reverse=reverse))
                outputs.append(helper.make_tensor_value_info(name, elem, [4, 5]))
    inits = [numpy_helper.from_array(np.array(a, np.int64), f"axis{a}")
             for a in (0, 1, -1)]
    graph = helper.make_graph(nodes, "cumsum",
                              [helper.make_tensor_value_info("x", elem, [4, 5])],
                              outputs, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model, full_check=True)
    onnx.save(model, os.path.join(out, file + ".onnx"))
