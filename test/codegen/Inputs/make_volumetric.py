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

With --deep: video_deep.onnx, ten 3x3x3 convolutions with Tanh (3 -> 32,
four 32 -> 32, 32 -> 64 with stride 2, four 64 -> 64) over clips [2, 3,
8, 16, 16], GlobalAveragePool and a Gemm (He-initialized), and video_deep.x.npy and
.labels.npy: a network deep enough that rebuilding its columns for the
filter gradients (mpc-recompute-columns) pays. (Tanh, not ReLU: ten layers
of ReLU over fp16 flip a few units between two summation orders, and the
emulated step is compared with the CPU backend's within two ulps.)

usage: make_volumetric.py OUT_DIR [--deep]
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
if "--deep" in sys.argv:
    chans = [(32, 3, 1)] + [(32, 32, 1)] * 4 + [(64, 32, 2)] + [(64, 64, 1)] * 4
    inits, nodes, x = [], [], "x"
    for i, (m, c, s) in enumerate(chans):
        inits.append(numpy_helper.from_array(
            (np.sqrt(2.0 / (27 * c)) * rng.standard_normal((m, c, 3, 3, 3))).astype(np.float32),
            f"W{i}"))
        nodes += [N("Conv", [x, f"W{i}"], [f"c{i}"], pads=[1] * 6, strides=[s] * 3),
                  N("Tanh", [f"c{i}"], [f"r{i}"])]
        x = f"r{i}"
    inits.append(numpy_helper.from_array(
        (0.1 * rng.standard_normal((64, 10))).astype(np.float32), "G"))
    nodes += [N("GlobalAveragePool", [x], ["g"]), N("Flatten", ["g"], ["f"]),
              N("Gemm", ["f", "G"], ["scores"]),
              N("SoftmaxCrossEntropyLoss", ["scores", "labels"], ["loss"])]
    graph = helper.make_graph(
        nodes, "video_deep",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 8, 16, 16]),
         helper.make_tensor_value_info("labels", TensorProto.INT64, [2])],
        [helper.make_tensor_value_info("loss", TensorProto.FLOAT, [])], inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]),
              os.path.join(out, "video_deep.onnx"))
    np.save(os.path.join(out, "video_deep.x.npy"),
            rng.standard_normal((2, 3, 8, 16, 16)).astype(np.float32))
    np.save(os.path.join(out, "video_deep.labels.npy"), np.array([3, 7], np.int64))
    sys.exit(0)
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
