"""3-D convolutions and transposed convolutions, and 1-D transposed ones,
as ONNX node tests (a model.onnx and test_data_set_0/{input,output}_*.pb
each), their expected outputs onnxruntime's, for scripts/conformance.py
(mpc's CPU backend against them) and emulate_node_tests.py (the CUDA
kernels against the CPU backend). mpc runs them as 2-D ones: the 3-D forms
(mpc-conv3d-as-2d) cover the depth taps' slicing (strides, dilations,
asymmetric pads, groups, auto_pad) and the transposed convolution's
placing of its taps (kernel == stride, a reshape; overlapping, spread and
summed; cropped by pads, extended by output_padding; dilated); the 1-D
transposed ones (mpc-window1d-as-2d) HiFi-GAN's upsampling (kernel 2x the
stride, padded) and a grouped one with output_padding.

usage: conv_1d_3d_cases.py DIR
"""
import os
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

# name: (op, x shape, w shape, bias, attributes)
CASES = {
    "conv3d_basic": ("Conv", (2, 3, 5, 6, 6), (4, 3, 3, 3, 3), True, {}),
    "conv3d_strided_padded": ("Conv", (1, 4, 7, 9, 8), (6, 2, 3, 3, 2), True,
                              dict(strides=[2, 2, 1], pads=[1, 1, 0, 1, 1, 1],
                                   group=2)),
    "conv3d_dilated": ("Conv", (1, 2, 9, 7, 7), (3, 2, 2, 3, 3), False,
                       dict(dilations=[3, 1, 2], pads=[0, 2, 1, 2, 1, 1])),
    "conv3d_depthwise": ("Conv", (2, 4, 4, 5, 5), (4, 1, 3, 3, 3), True,
                         dict(group=4, pads=[1, 1, 1, 1, 1, 1])),
    "conv3d_same_upper": ("Conv", (1, 2, 5, 6, 7), (3, 2, 2, 3, 2), False,
                          dict(auto_pad="SAME_UPPER", strides=[2, 1, 2])),
    "conv3d_point": ("Conv", (2, 6, 3, 4, 4), (5, 6, 1, 1, 1), True,
                     dict(strides=[1, 2, 2])),
    "conv_transpose3d_tiled": ("ConvTranspose", (1, 4, 3, 4, 5),
                               (4, 3, 2, 2, 2), True, dict(strides=[2, 2, 2])),
    "conv_transpose3d_tiled_cropped": ("ConvTranspose", (2, 2, 3, 3, 3),
                                       (2, 2, 2, 2, 2), True,
                                       dict(strides=[2, 2, 2],
                                            pads=[1, 0, 0, 0, 1, 1])),
    "conv_transpose3d_overlap": ("ConvTranspose", (1, 4, 3, 4, 4),
                                 (4, 1, 4, 3, 3), True,
                                 dict(strides=[2, 2, 2], pads=[1, 1, 1, 1, 1, 1],
                                      group=2, output_padding=[1, 1, 0])),
    "conv_transpose3d_dilated": ("ConvTranspose", (1, 2, 4, 3, 3),
                                 (2, 3, 3, 2, 2), False,
                                 dict(strides=[3, 1, 2], dilations=[2, 1, 1],
                                      pads=[2, 0, 0, 0, 1, 1])),
    "conv_transpose3d_unit": ("ConvTranspose", (2, 3, 4, 4, 3),
                              (3, 2, 3, 3, 3), True, {}),
    "conv_transpose1d_hifigan": ("ConvTranspose", (2, 8, 12), (8, 4, 16),
                                 True, dict(strides=[8], pads=[4, 4])),
    "conv_transpose1d_grouped": ("ConvTranspose", (1, 6, 7), (6, 2, 3),
                                 False, dict(strides=[2], group=3,
                                             output_padding=[1], dilations=[2])),
}


def write(d, name, op, xs, ws, bias, attrs, rng):
    x = rng.standard_normal(xs).astype(np.float32)
    w = (0.5 * rng.standard_normal(ws)).astype(np.float32)
    m = ws[0] if op == "Conv" else ws[1] * attrs.get("group", 1)
    feeds = {"x": x, "w": w}
    if bias:
        feeds["b"] = rng.standard_normal(m).astype(np.float32)
    node = helper.make_node(op, list(feeds), ["y"], **attrs)
    graph = helper.make_graph(
        [node], name,
        [helper.make_tensor_value_info(k, TensorProto.FLOAT, v.shape)
         for k, v in feeds.items()],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    y = ort.InferenceSession(model.SerializeToString(),
                             providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    model.graph.output[0].CopyFrom(
        helper.make_tensor_value_info("y", TensorProto.FLOAT, y.shape))
    path = os.path.join(d, "test_" + name)
    os.makedirs(os.path.join(path, "test_data_set_0"), exist_ok=True)
    onnx.save(model, os.path.join(path, "model.onnx"))
    for i, v in enumerate(feeds.values()):
        with open(os.path.join(path, "test_data_set_0", f"input_{i}.pb"), "wb") as f:
            f.write(numpy_helper.from_array(v).SerializeToString())
    with open(os.path.join(path, "test_data_set_0", "output_0.pb"), "wb") as f:
        f.write(numpy_helper.from_array(y, "y").SerializeToString())


def main():
    rng = np.random.default_rng(3)
    for name, (op, xs, ws, bias, attrs) in CASES.items():
        write(sys.argv[1], name, op, xs, ws, bias, attrs, rng)
    print(len(CASES), "cases")


if __name__ == "__main__":
    main()
