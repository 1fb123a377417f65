"""Writes plan-only batch norm models at ResNet-50's sizes into OUT_DIR:
bn_HW_C.onnx, x [32, C, HW, HW] -> 1x1 Conv -> BatchNormalization
(training mode) -> ReduceSum, for 56 x 56 x 256 and 7 x 7 x 2048 (the
weights are one C x C filter, so the files stay small).

usage: make_bn_shapes.py OUT_DIR
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

out = sys.argv[1]
rng = np.random.default_rng(0)
for hw, c in ((56, 256), (7, 2048)):
    inits = [numpy_helper.from_array(
                 (0.05 * rng.standard_normal((c, c, 1, 1))).astype(np.float32), "K"),
             numpy_helper.from_array(np.ones(c, np.float32), "g"),
             numpy_helper.from_array(np.zeros(c, np.float32), "b"),
             numpy_helper.from_array(np.zeros(c, np.float32), "rm"),
             numpy_helper.from_array(np.ones(c, np.float32), "rv")]
    nodes = [helper.make_node("Conv", ["x", "K"], ["h"]),
             helper.make_node("BatchNormalization", ["h", "g", "b", "rm", "rv"],
                              ["y", "orm", "orv"], training_mode=1),
             helper.make_node("ReduceSum", ["y"], ["loss"], keepdims=0)]
    graph = helper.make_graph(
        nodes, f"bn_{hw}_{c}",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [32, c, hw, hw])],
        [helper.make_tensor_value_info("loss", TensorProto.FLOAT, [])], inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 15)]),
              os.path.join(out, f"bn_{hw}_{c}.onnx"))
