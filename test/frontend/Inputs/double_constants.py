"""Writes DIR/double-cast.onnx (a float64 Constant read only by Cast to
FLOAT, as torch exports GPT-NeoX's rotary scalars), DIR/double-half.onnx
(the same Constant cast to FLOAT16 first), DIR/x.npy and onnxruntime's
output of the first, DIR/y_ort.npy.

usage: double_constants.py DIR
"""
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper as nh

d = sys.argv[1]
c = h.make_node("Constant", [], ["c"],
                value=nh.from_array(np.array([0.1, 1e40, -2.5], np.float64)))
io = ([h.make_tensor_value_info("x", T.FLOAT, [3])],
      [h.make_tensor_value_info("y", T.FLOAT, [3])])
for name, casts in (("double-cast", [h.make_node("Cast", ["c"], ["cf"], to=T.FLOAT)]),
                    ("double-half", [h.make_node("Cast", ["c"], ["ch"], to=T.FLOAT16),
                                     h.make_node("Cast", ["ch"], ["cf"], to=T.FLOAT)])):
    g = h.make_graph([c] + casts + [h.make_node("Mul", ["x", "cf"], ["y"])], name, *io)
    onnx.save(h.make_model(g, opset_imports=[h.make_opsetid("", 17)]), f"{d}/{name}.onnx")
x = np.array([1, 2, 3], np.float32)
np.save(f"{d}/x.npy", x)
np.save(f"{d}/y_ort.npy", ort.InferenceSession(f"{d}/double-cast.onnx").run(None, {"x": x})[0])
