"""Writes models whose splits and concats fuse into elementwise chains
(codegen/CudaFusion.cpp) into OUT_DIR, each x [4, 8] -> scores [4, 10]
with a softmax cross-entropy loss:

gates.onnx: an LSTM cell's gates, x @ W [4, 64] split into four [4, 16]
along the last axis: i, f, o sigmoids and g tanh, c = f * c0 + i * g,
h = o * tanh(c), h @ W2. The forward chain reads the four gates at their
offsets in x @ W; the backward's Concat of the four gate gradients is the
last step of one chain, storing each at its offset.
gates_rec.onnx: the same gates of x @ W + h0 @ R (h0 [4, 16], R [16, 64]
learned), an LSTM step's: the chain computes the sum once a gate from
both products at the gate's offsets, launching nothing for the Add.
gates_col.onnx: the gates of x @ W + s, s a learned column [4, 1]:
the column read at offset 0 for every gate (stride 0 along the split).
glu_odd.onnx: a GLU over halves of 5 (x @ W [4, 10], a * sigmoid(b)):
offsets of 5 elements, no vector path.
rows_glu.onnx: x @ W reshaped [8, 6] split along axis 0 into two [4, 6]
(contiguous halves 24 elements apart): a * sigmoid(b).
stacked.onnx: a = x @ W1, b = tanh(a) @ W2, both [4, 32], stacked by
Concat along axis 0 (runs of 256 bytes in fp16, 512 in FP32) and reshaped
[4, 64] for the scores: the Concat launches nothing, the two GEMMs write
their results where it would.
stacks.onnx: torch.stack's form, nested: a = x @ W1, b = tanh(a) @ W2,
c = tanh(b) @ W3, s = Concat(Unsqueeze(a), Unsqueeze(b)) [2, 4, 32], then
Concat(s, Unsqueeze(c)) [3, 4, 32], reshaped [4, 96]: both concats in
place, the GEMMs writing a, b and c where the outer one puts them.
halves.onnx (no loss): x [4, 32] split into two [4, 16], outputs relu(a)
and sigmoid(b), each read by its own step (siblings in one chain).
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

out = sys.argv[1]
rng = np.random.default_rng(5)


def weight(name, shape, scale=0.5):
    return numpy_helper.from_array(
        (scale * rng.standard_normal(shape)).astype(np.float32), name)


def ints(name, values):
    return numpy_helper.from_array(np.array(values, np.int64), name)


def save(name, nodes, inits):
    graph = helper.make_graph(
        nodes + [helper.make_node("SoftmaxCrossEntropyLoss",
                                  ["scores", "labels"], ["loss"], name="loss")],
        name,
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 8]),
         helper.make_tensor_value_info("labels", TensorProto.INT64, [4])],
        [helper.make_tensor_value_info("loss", TensorProto.FLOAT, [])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    onnx.checker.check_model(model)
    onnx.save(model, os.path.join(out, name + ".onnx"))


N = helper.make_node
# An LSTM cell on gate pre-activations z [4, 64], scored by h @ W2.
CELL = [
    N("Split", ["z"], ["zi", "zf", "zo", "zg"], axis=-1, num_outputs=4),
    N("Sigmoid", ["zi"], ["i"]), N("Sigmoid", ["zf"], ["f"]),
    N("Sigmoid", ["zo"], ["o"]), N("Tanh", ["zg"], ["g"]),
    N("Mul", ["f", "c0"], ["fc"]), N("Mul", ["i", "g"], ["ig"]),
    N("Add", ["fc", "ig"], ["c"]), N("Tanh", ["c"], ["tc"]),
    N("Mul", ["o", "tc"], ["h"]),
    N("MatMul", ["h", "W2"], ["scores"]),
]
save("gates", [N("MatMul", ["x", "W"], ["z"])] + CELL,
     [weight("W", (8, 64)), weight("c0", (4, 16)), weight("W2", (16, 10))])
save("gates_rec", [
    N("MatMul", ["x", "W"], ["xw"]), N("MatMul", ["h0", "R"], ["hr"]),
    N("Add", ["xw", "hr"], ["z"])] + CELL,
    [weight("W", (8, 64)), weight("h0", (4, 16)), weight("R", (16, 64)),
     weight("c0", (4, 16)), weight("W2", (16, 10))])
save("gates_col", [
    N("MatMul", ["x", "W"], ["xw"]), N("Add", ["xw", "s"], ["z"])] + CELL,
    [weight("W", (8, 64)), weight("s", (4, 1)), weight("c0", (4, 16)),
     weight("W2", (16, 10))])
save("glu_odd", [
    N("MatMul", ["x", "W"], ["z"]),
    N("Split", ["z"], ["a", "b"], axis=1, num_outputs=2),
    N("Sigmoid", ["b"], ["sb"]), N("Mul", ["a", "sb"], ["h"]),
    N("MatMul", ["h", "W2"], ["scores"]),
], [weight("W", (8, 10)), weight("W2", (5, 10))])
save("rows_glu", [
    N("MatMul", ["x", "W"], ["z"]),
    N("Reshape", ["z", "rows"], ["zr"]),
    N("Split", ["zr"], ["a", "b"], axis=0, num_outputs=2),
    N("Sigmoid", ["b"], ["sb"]), N("Mul", ["a", "sb"], ["h"]),
    N("MatMul", ["h", "W2"], ["scores"]),
], [weight("W", (8, 12)), ints("rows", [8, 6]), weight("W2", (6, 10))])
save("stacked", [
    N("MatMul", ["x", "W1"], ["a"]), N("Tanh", ["a"], ["ta"]),
    N("MatMul", ["ta", "W2"], ["b"]),
    N("Concat", ["a", "b"], ["ab"], axis=0),
    N("Reshape", ["ab", "rows"], ["y"]),
    N("MatMul", ["y", "W3"], ["scores"]),
], [weight("W1", (8, 32)), weight("W2", (32, 32)), ints("rows", [4, 64]),
    weight("W3", (64, 10))])
save("stacks", [
    N("MatMul", ["x", "W1"], ["a"]), N("Tanh", ["a"], ["ta"]),
    N("MatMul", ["ta", "W2"], ["b"]), N("Tanh", ["b"], ["tb"]),
    N("MatMul", ["tb", "W3"], ["c"]),
    N("Unsqueeze", ["a", "zero"], ["ua"]), N("Unsqueeze", ["b", "zero"], ["ub"]),
    N("Unsqueeze", ["c", "zero"], ["uc"]),
    N("Concat", ["ua", "ub"], ["s"], axis=0),
    N("Concat", ["s", "uc"], ["abc"], axis=0),
    N("Reshape", ["abc", "rows"], ["y"]),
    N("MatMul", ["y", "W4"], ["scores"]),
], [weight("W1", (8, 32)), weight("W2", (32, 32)), weight("W3", (32, 32)),
    ints("zero", [0]), ints("rows", [4, 96]), weight("W4", (96, 10))])

halves = helper.make_graph(
    [N("Split", ["x"], ["a", "b"], axis=1, num_outputs=2),
     N("Relu", ["a"], ["ya"]), N("Sigmoid", ["b"], ["yb"])], "halves",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 32])],
    [helper.make_tensor_value_info(n, TensorProto.FLOAT, [4, 16])
     for n in ("ya", "yb")])
model = helper.make_model(halves, opset_imports=[helper.make_opsetid("", 18)])
onnx.checker.check_model(model)
onnx.save(model, os.path.join(out, "halves.onnx"))
