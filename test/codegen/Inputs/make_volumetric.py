"""Writes video3d.onnx into OUT_DIR: a small volumetric (video, 3-D U-Net
style) network whose every convolution is 3-D, scored by a softmax
cross-entropy over labels [4]; its parameters also as video3d.<name>.npy
with seeded x [4, 2, 5, 8, 8] and labels (torch_volumetric.py rebuilds it
in torch):

x -> Conv 3x3x3 (6 channels, padded, bias) -> Relu -> MaxPool (1, 2, 2)
  -> Conv 3x3x3 (8, 2 groups, depth stride 2, padded, bias) -> Relu = r
r -> ConvTranspose 2x2x2 stride 2 (6, bias): taps tiling the output
r -> ConvTranspose 3x3x3 stride 2 (3, padded, output_padding 1): taps
     overlapping, cropped, extended
both concatenated (9 channels) -> Conv 2x1x1 dilated 2 in depth (5)
  -> GlobalAveragePool -> Flatten -> Gemm [5, 10] = scores.

usage: make_volumetric.py OUT_DIR
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

out = sys.argv[1]
rng = np.random.default_rng(5)
N = helper.make_node
SHAPES = {"W1": (6, 2, 3, 3, 3), "B1": (6,), "W2": (8, 3, 3, 3, 3), "B2": (8,),
          "T1": (8, 6, 2, 2, 2), "TB1": (6,), "T2": (8, 3, 3, 3, 3),
          "W3": (5, 9, 2, 1, 1), "G": (5, 10), "GB": (10,)}
params = {k: (0.4 * rng.standard_normal(s)).astype(np.float32)
          for k, s in SHAPES.items()}
nodes = [
    N("Conv", ["x", "W1", "B1"], ["c1"], pads=[1] * 6),
    N("Relu", ["c1"], ["r1"]),
    N("MaxPool", ["r1"], ["p1"], kernel_shape=[1, 2, 2], strides=[1, 2, 2]),
    N("Conv", ["p1", "W2", "B2"], ["c2"], group=2, strides=[2, 1, 1],
      pads=[1] * 6),
    N("Relu", ["c2"], ["r"]),
    N("ConvTranspose", ["r", "T1", "TB1"], ["u1"], strides=[2, 2, 2]),
    N("ConvTranspose", ["r", "T2"], ["u2"], strides=[2, 2, 2], pads=[1] * 6,
      output_padding=[1, 1, 1]),
    N("Concat", ["u1", "u2"], ["u"], axis=1),
    N("Conv", ["u", "W3"], ["c3"], dilations=[2, 1, 1]),
    N("GlobalAveragePool", ["c3"], ["g"]),
    N("Flatten", ["g"], ["f"]),
    N("Gemm", ["f", "G", "GB"], ["scores"]),
    N("SoftmaxCrossEntropyLoss", ["scores", "labels"], ["loss"]),
]
graph = helper.make_graph(
    nodes, "video3d",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 2, 5, 8, 8]),
     helper.make_tensor_value_info("labels", TensorProto.INT64, [4])],
    [helper.make_tensor_value_info("loss", TensorProto.FLOAT, [])],
    [numpy_helper.from_array(v, k) for k, v in params.items()])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
onnx.checker.check_model(model)
onnx.save(model, os.path.join(out, "video3d.onnx"))
params["x"] = rng.standard_normal((4, 2, 5, 8, 8)).astype(np.float32)
params["labels"] = rng.integers(0, 10, 4).astype(np.int64)
for k, v in params.items():
    np.save(os.path.join(out, f"video3d.{k}.npy"), v)
