"""Cross-entropy over spatial scores [N, C, d1, ...] (segmentation) for
spatial-losses.test.

  make DIR          losses.onnx (SoftmaxCrossEntropyLoss with class weights
                    and ignore_index, mean, sum and none, its log-probabilities;
                    NegativeLogLikelihoodLoss) and its inputs; seg.onnx (a 1x1
                    convolution's [4, 5, 9, 8] scores against [4, 9, 8]
                    labels, some ignored: 288 rows, over two blocks) and its
                    data
  check DIR OUT     the outputs mpc wrote to OUT against onnxruntime's
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def f32(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def i64(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.INT64, shape)


def save(model, path):
    model.ir_version = 8
    onnx.checker.check_model(model, full_check=True)
    onnx.save(model, path)


def make(d):
    r = np.random.default_rng(7)
    s = (3.0 * r.standard_normal((2, 5, 4, 3))).astype(np.float32)
    labels = r.integers(0, 5, (2, 4, 3))
    labels[0, 1, :] = 1  # ignore_index 1: a row of pixels left out
    lp = np.log(np.abs(r.standard_normal((2, 6, 7))) + 0.1).astype(np.float32)
    nll_labels = r.integers(0, 6, (2, 7))
    np.save(os.path.join(d, "s.npy"), s)
    np.save(os.path.join(d, "labels.npy"), labels)
    np.save(os.path.join(d, "lp.npy"), lp)
    np.save(os.path.join(d, "nll_labels.npy"), nll_labels)
    weights = numpy_helper.from_array(
        np.array([0.5, 1.0, 2.0, 1.5, 0.25], np.float32), "w")
    nodes = [
        helper.make_node("SoftmaxCrossEntropyLoss", ["s", "labels", "w"],
                         ["mean_w", "logp"], ignore_index=1),
        helper.make_node("SoftmaxCrossEntropyLoss", ["s", "labels"], ["sum"],
                         reduction="sum"),
        helper.make_node("SoftmaxCrossEntropyLoss", ["s", "labels"], ["none"],
                         reduction="none", ignore_index=1),
        helper.make_node("NegativeLogLikelihoodLoss", ["lp", "nll_labels"],
                         ["nll_mean"]),
    ]
    graph = helper.make_graph(
        nodes, "spatial_losses",
        [f32("s", [2, 5, 4, 3]), i64("labels", [2, 4, 3]), f32("lp", [2, 6, 7]),
         i64("nll_labels", [2, 7])],
        [f32("mean_w", []), f32("logp", [2, 5, 4, 3]), f32("sum", []),
         f32("none", [2, 4, 3]), f32("nll_mean", [])], [weights])
    save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]),
         os.path.join(d, "losses.onnx"))

    x = r.standard_normal((4, 3, 9, 8)).astype(np.float32)
    y = r.integers(0, 5, (4, 9, 8))
    y[1, :3, :] = -100  # torch's ignore_index
    np.save(os.path.join(d, "x.npy"), x)
    np.save(os.path.join(d, "y.npy"), y)
    inits = [numpy_helper.from_array((0.5 * r.standard_normal((5, 3, 1, 1))).astype(np.float32), "conv.weight"),
             numpy_helper.from_array((0.1 * r.standard_normal(5)).astype(np.float32), "conv.bias")]
    nodes = [helper.make_node("Conv", ["x", "conv.weight", "conv.bias"], ["scores"]),
             helper.make_node("SoftmaxCrossEntropyLoss", ["scores", "y"], ["loss"],
                              ignore_index=-100)]
    graph = helper.make_graph(nodes, "seg", [f32("x", [4, 3, 9, 8]), i64("y", [4, 9, 8])],
                              [f32("loss", [])], inits)
    save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]),
         os.path.join(d, "seg.onnx"))


def check(d, out):
    import onnxruntime as ort
    sess = ort.InferenceSession(os.path.join(d, "losses.onnx"),
                                providers=["CPUExecutionProvider"])
    feeds = {n: np.load(os.path.join(d, n + ".npy"))
             for n in ("s", "labels", "lp", "nll_labels")}
    worst = 0.0
    for o, want in zip(sess.get_outputs(), sess.run(None, feeds)):
        got = np.load(os.path.join(out, o.name + ".npy"))
        err = float(np.abs(got - want).max() / max(np.abs(want).max(), 1e-30))
        worst = max(worst, err)
        print(f"{o.name} {list(want.shape)}: relative error {err:.2e}",
              "ok" if err <= 1e-5 else "FAIL")
    print(f"worst relative error {worst:.2e} (bound 1e-05)")
    return worst <= 1e-5


if __name__ == "__main__":
    if sys.argv[1] == "make":
        make(sys.argv[2])
    else:
        sys.exit(0 if check(sys.argv[2], sys.argv[3]) else 1)
