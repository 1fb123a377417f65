"""Convolution forms for the cuDNN path, as one model trained one SGD
step: a grouped, strided, dilated, padded convolution feeding a second one
with a bias, a third with a bias and a Relu (so every forward, filter
gradient and data gradient but the first's runs), and a fourth with
asymmetric padding (which cuDNN's legacy API cannot take: mpc's kernels).
Initializers are the weights; the loss is sum(y * target).

`make-transpose` writes a DCGAN-like pair of ConvTransposes instead: a
grouped, strided one with output padding and no bias (cuDNN's data
gradient runs it forward), then one with a bias (mpc's kernel).

usage: conv_forms.py make DIR
       conv_forms.py make-transpose DIR
       conv_forms.py compare A.onnx B.onnx --rtol R   (the initializers)
"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def make(d):
    rng = np.random.default_rng(11)
    w = lambda *s: numpy_helper.from_array((0.3 * rng.standard_normal(s)).astype(np.float32))
    inits = [w(8, 2, 3, 3), w(6, 8, 3, 3), w(6, 6, 2, 2), w(6), w(6, 6, 3, 3),
             w(6)]
    for t, n in zip(inits, ["w1", "w2", "w3", "b2", "w4", "b4"]):
        t.name = n
    nodes = [
        helper.make_node("Conv", ["x", "w1"], ["a"], group=2, strides=[2, 2],
                         dilations=[2, 2], pads=[1, 1, 1, 1]),
        helper.make_node("Conv", ["a", "w2", "b2"], ["b"], pads=[1, 1, 1, 1]),
        helper.make_node("Conv", ["b", "w4", "b4"], ["c"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c"], ["r"]),
        helper.make_node("Conv", ["r", "w3"], ["y"], pads=[0, 0, 1, 1]),
        helper.make_node("Mul", ["y", "target"], ["yt"]),
        helper.make_node("ReduceSum", ["yt"], ["loss"], keepdims=0),
    ]
    g = helper.make_graph(
        nodes, "conv_forms",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4, 13, 11]),
         helper.make_tensor_value_info("target", TensorProto.FLOAT, [2, 6, 6, 5])],
        [helper.make_tensor_value_info("loss", TensorProto.FLOAT, [])], inits)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]),
              f"{d}/conv_forms.onnx")
    np.save(f"{d}/x.npy", rng.standard_normal((2, 4, 13, 11)).astype(np.float32))
    np.save(f"{d}/target.npy", (0.01 * rng.standard_normal((2, 6, 6, 5))).astype(np.float32))


def make_transpose(d):
    rng = np.random.default_rng(12)
    w = lambda *s: numpy_helper.from_array((0.3 * rng.standard_normal(s)).astype(np.float32))
    inits = [w(8, 3, 3, 3), w(6, 2, 4, 4), w(2)]
    for t, n in zip(inits, ["t1", "t2", "tb"]):
        t.name = n
    nodes = [
        helper.make_node("ConvTranspose", ["z", "t1"], ["a"], group=2,
                         strides=[2, 2], pads=[1, 1, 1, 1],
                         output_padding=[1, 1]),
        helper.make_node("ConvTranspose", ["a", "t2", "tb"], ["y"],
                         strides=[2, 2], pads=[1, 1, 1, 1]),
        helper.make_node("Mul", ["y", "target"], ["yt"]),
        helper.make_node("ReduceSum", ["yt"], ["loss"], keepdims=0),
    ]
    g = helper.make_graph(
        nodes, "conv_transpose_forms",
        [helper.make_tensor_value_info("z", TensorProto.FLOAT, [2, 8, 4, 4]),
         helper.make_tensor_value_info("target", TensorProto.FLOAT, [2, 2, 16, 16])],
        [helper.make_tensor_value_info("loss", TensorProto.FLOAT, [])], inits)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]),
              f"{d}/conv_transpose.onnx")
    np.save(f"{d}/z.npy", rng.standard_normal((2, 8, 4, 4)).astype(np.float32))
    np.save(f"{d}/ttarget.npy", (0.01 * rng.standard_normal((2, 2, 16, 16))).astype(np.float32))


def compare(a, b, rtol):
    before = {t.name: numpy_helper.to_array(t) for t in onnx.load(a).graph.initializer}
    after = {t.name: numpy_helper.to_array(t) for t in onnx.load(b).graph.initializer}
    ok = True
    for n in sorted(before):
        x, y = before[n].astype(np.float64), after[n].astype(np.float64)
        err = float(np.max(np.abs(x - y)) / np.max(np.abs(x)))
        ok &= err <= rtol
        print(f"{n}: {err:.2e} {'ok' if err <= rtol else 'FAIL'}")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    if sys.argv[1] == "make":
        make(sys.argv[2])
    elif sys.argv[1] == "make-transpose":
        make_transpose(sys.argv[2])
    else:
        compare(sys.argv[2], sys.argv[3], float(sys.argv[sys.argv.index("--rtol") + 1]))
