"""Writes models that train through the ops mpc imports as their ONNX
definitions (frontend/NormImporters.cpp, SelectionImporters.cpp) into
OUT_DIR, each scored by a softmax cross-entropy loss over labels [4]:

lrn_cnn.onnx: x [4, 3, 8, 8] -> Conv 3x3 (6 channels) -> Relu -> LRN
(size 5) -> LpPool (p 2, 2x2, stride 2) -> MeanVarianceNormalization ->
Shrink (lambd 0.1, bias 0.05) -> Flatten -> Gemm [96, 10]: AlexNet's and
GoogLeNet's local response normalization, an L2 pool.
reverse_seq.onnx: x [4, 5, 6] read as (batch, time, features) ->
ReverseSequence (lengths 5, 3, 1, 4 along time) -> MatMul [6, 10] ->
LpNormalization (L2, last axis) -> ReduceMean over time -> s, scores = s
+ s * Hardmax(s): a bidirectional model's backward pass over padded
sequences, normalized embeddings, and a hard selection (no gradient of
its own).
pool1d.onnx: x [4, 3, 12] -> Conv1d (k 3, 6 channels) -> Relu -> MaxPool1d
(2, stride 2) -> LpPool1d (p 2, k 3, padded) -> AveragePool1d (2, stride 2)
-> Flatten -> Gemm [18, 10]: pools over sequences, run as 2-D ones of
height 1 (mpc-window1d-as-2d) with their gradients.
stn.onnx (opset 20): a spatial transformer: theta [4, 2, 3] = x flattened
@ W [64, 6] + the identity's (1, 0, 0, 0, 1, 0), AffineGrid [4, 1, 6, 6],
GridSample of x (bilinear, zeros), Conv 3x3 -> Relu -> Flatten -> Gemm
[64, 10]: both the image's and theta's gradients train.
unpool_fold.onnx (opset 18): x [4, 2, 4, 4] -> Conv 1x1 -> MaxPool (2,
stride 2, with indices) -> Relu -> MaxUnpool at the indices -> viewed
[4, 8, 4] -> Col2Im (2x2 blocks, overlapping, into 3x3) -> CenterCropPad
(axes 2, 3 to 4 x 2) -> Flatten -> Gemm [16, 10]: SegNet's unpooling,
torch's F.fold.
cum_prod.onnx (opset 26): x [4, 6] @ W [6, 10] -> h; scores = exclusive
CumProd(Sigmoid(h)) + reverse CumProd(1 + Tanh(h) / 2), along the classes.
linear_attention.onnx (opset 27): Gated DeltaNet's recurrence over 3
tokens, 2 heads, its decays and betas from x (LinearAttentionImporter.cpp's
chunked form; its fp16 step once read a split part that a fused kernel
had not stored, codegen/CudaFusion.cpp's readThroughCast).
dcn.onnx (opset 19): DCNv2: x [4, 2, 6, 6], offsets [4, 18, 6, 6] from a
3x3 Conv of x (weights x 0.3) and a mask from the Sigmoid of another,
DeformConv 3x3 (4 filters, padded, a bias) -> Relu -> Flatten -> Gemm
[144, 10]: X's, the filters', the offsets' and the mask's gradients.
With --causal-conv: causal_conv.onnx (opset 27), whose loss is
sum(y * R) + sum(state * R2) for (y, state) = CausalConvWithState(x, w,
b, past, activation silu), x [2, 3, 6], w [3, 1, 4], b [3], past
[2, 3, 3] all learned: the gradients test/codegen/Inputs/torch_causal_conv.py
compares with torch's conv1d (onnxruntime has no kernel for the op).
With --lrn-large: lrn_large.onnx, a 1x1 identity Conv [8 channels] and LRN
(size 5, alpha 1e-4) over x [2, 8, 3, 3], and lrn_large_x.npy, normal
values times 1500 (squares far past fp16's range).
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

out = sys.argv[1]
rng = np.random.default_rng(11)
N = helper.make_node


def weight(name, shape, scale=0.5):
    return numpy_helper.from_array(
        (scale * rng.standard_normal(shape)).astype(np.float32), name)


def save(name, x_shape, nodes, inits, opset=18):
    graph = helper.make_graph(
        nodes + [N("SoftmaxCrossEntropyLoss", ["scores", "labels"], ["loss"],
                   name="loss")],
        name,
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape),
         helper.make_tensor_value_info("labels", TensorProto.INT64, [4])],
        [helper.make_tensor_value_info("loss", TensorProto.FLOAT, [])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    onnx.checker.check_model(model)
    onnx.save(model, os.path.join(out, name + ".onnx"))


if "--causal-conv" in sys.argv:
    inits = [weight("x", (2, 3, 6), 1.0), weight("w", (3, 1, 4)),
             weight("b", (3,)), weight("past", (2, 3, 3), 1.0),
             weight("R", (2, 3, 6), 1.0), weight("R2", (2, 3, 3), 1.0)]
    graph = helper.make_graph(
        [N("CausalConvWithState", ["x", "w", "b", "past"], ["y", "state"],
           activation="silu"),
         N("Mul", ["y", "R"], ["yr"]), N("Mul", ["state", "R2"], ["sr"]),
         N("ReduceSum", ["yr"], ["ly"], keepdims=0),
         N("ReduceSum", ["sr"], ["ls"], keepdims=0),
         N("Add", ["ly", "ls"], ["loss"])],
        "causal_conv", [],
        [helper.make_tensor_value_info("loss", TensorProto.FLOAT, [])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 27)])
    onnx.save(model, os.path.join(out, "causal_conv.onnx"))
    for t in inits:
        np.save(os.path.join(out, "causal_conv." + t.name + ".npy"),
                numpy_helper.to_array(t))
    sys.exit(0)

if "--lrn-large" in sys.argv:
    eye = numpy_helper.from_array(np.eye(8, dtype=np.float32).reshape(8, 8, 1, 1), "W")
    graph = helper.make_graph(
        [N("Conv", ["x", "W"], ["c"]),
         N("LRN", ["c"], ["y"], size=5, alpha=1e-4, beta=0.75, bias=1.0)],
        "lrn_large",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 8, 3, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 8, 3, 3])],
        [eye])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    onnx.checker.check_model(model)
    onnx.save(model, os.path.join(out, "lrn_large.onnx"))
    np.save(os.path.join(out, "lrn_large_x.npy"),
            (1500 * rng.standard_normal((2, 8, 3, 3))).astype(np.float32))
    sys.exit(0)

save("lrn_cnn", [4, 3, 8, 8], [
    N("Conv", ["x", "W1"], ["c"], pads=[1, 1, 1, 1]),
    N("Relu", ["c"], ["r"]),
    N("LRN", ["r"], ["n"], size=5, alpha=0.2, beta=0.75, bias=1.0),
    N("LpPool", ["n"], ["p"], kernel_shape=[2, 2], strides=[2, 2], p=2),
    N("MeanVarianceNormalization", ["p"], ["m"]),
    N("Shrink", ["m"], ["s"], lambd=0.1, bias=0.05),
    N("Flatten", ["s"], ["f"]),
    N("Gemm", ["f", "W2"], ["scores"]),
], [weight("W1", (6, 3, 3, 3)), weight("W2", (96, 10), 0.2)])

save("reverse_seq", [4, 5, 6], [
    N("ReverseSequence", ["x", "lens"], ["xr"], batch_axis=0, time_axis=1),
    N("MatMul", ["xr", "W"], ["h"]),
    N("LpNormalization", ["h"], ["hn"], axis=-1, p=2),
    N("ReduceMean", ["hn", "time"], ["s"], keepdims=0),
    N("Hardmax", ["s"], ["top"]),
    N("Mul", ["s", "top"], ["st"]),
    N("Add", ["s", "st"], ["scores"]),
], [weight("W", (6, 10)), numpy_helper.from_array(
    np.array([5, 3, 1, 4], np.int64), "lens"),
    numpy_helper.from_array(np.array([1], np.int64), "time")])

save("pool1d", [4, 3, 12], [
    N("Conv", ["x", "W1"], ["c"], pads=[1, 1]),
    N("Relu", ["c"], ["r"]),
    N("MaxPool", ["r"], ["m"], kernel_shape=[2], strides=[2]),
    N("LpPool", ["m"], ["l"], kernel_shape=[3], pads=[1, 1], p=2),
    N("AveragePool", ["l"], ["a"], kernel_shape=[2], strides=[2]),
    N("Flatten", ["a"], ["f"]),
    N("Gemm", ["f", "W2"], ["scores"]),
], [weight("W1", (6, 3, 3)), weight("W2", (18, 10), 0.3)])

save("stn", [4, 1, 8, 8], [
    N("Flatten", ["x"], ["xf"]),
    N("Gemm", ["xf", "Wt", "bt"], ["t"]),
    N("Reshape", ["t", "theta_shape"], ["theta"]),
    N("AffineGrid", ["theta", "size"], ["grid"]),
    N("GridSample", ["x", "grid"], ["s"]),
    N("Conv", ["s", "W1"], ["c"]),
    N("Relu", ["c"], ["r"]),
    N("Flatten", ["r"], ["f"]),
    N("Gemm", ["f", "W2"], ["scores"]),
], [weight("Wt", (64, 6), 0.05),
    numpy_helper.from_array(np.array([1, 0, 0, 0, 1, 0], np.float32), "bt"),
    numpy_helper.from_array(np.array([4, 2, 3], np.int64), "theta_shape"),
    numpy_helper.from_array(np.array([4, 1, 6, 6], np.int64), "size"),
    weight("W1", (4, 1, 3, 3)), weight("W2", (64, 10), 0.2)], opset=20)

save("unpool_fold", [4, 2, 4, 4], [
    N("Conv", ["x", "W1"], ["c"]),
    N("MaxPool", ["c"], ["p", "idx"], kernel_shape=[2, 2], strides=[2, 2]),
    N("Relu", ["p"], ["r"]),
    N("MaxUnpool", ["r", "idx"], ["u"], kernel_shape=[2, 2], strides=[2, 2]),
    N("Reshape", ["u", "cols"], ["uc"]),
    N("Col2Im", ["uc", "image", "block"], ["im"]),
    N("CenterCropPad", ["im", "crop"], ["cc"], axes=[2, 3]),
    N("Flatten", ["cc"], ["f"]),
    N("Gemm", ["f", "W2"], ["scores"]),
], [weight("W1", (2, 2, 1, 1)),
    numpy_helper.from_array(np.array([4, 8, 4], np.int64), "cols"),
    numpy_helper.from_array(np.array([3, 3], np.int64), "image"),
    numpy_helper.from_array(np.array([2, 2], np.int64), "block"),
    numpy_helper.from_array(np.array([4, 2], np.int64), "crop"),
    weight("W2", (16, 10), 0.3)])

save("dcn", [4, 2, 6, 6], [
    N("Conv", ["x", "Wo"], ["off"], pads=[1, 1, 1, 1]),
    N("Conv", ["x", "Wm"], ["ml"], pads=[1, 1, 1, 1]),
    N("Sigmoid", ["ml"], ["mask"]),
    N("DeformConv", ["x", "Wd", "off", "bd", "mask"], ["d"],
      pads=[1, 1, 1, 1]),
    N("Relu", ["d"], ["r"]),
    N("Flatten", ["r"], ["f"]),
    N("Gemm", ["f", "W2"], ["scores"]),
], [weight("Wo", (18, 2, 3, 3), 0.3), weight("Wm", (9, 2, 3, 3)),
    weight("Wd", (4, 2, 3, 3)), weight("bd", (4,)),
    weight("W2", (144, 10), 0.1)], opset=19)

# CumProd (opset 26): a survival chain (the chance of reaching step i,
# exclusive) and a reverse product of gains in (0.5, 1.5).
save("cum_prod", [4, 6], [
    N("MatMul", ["x", "W"], ["h"]),
    N("Sigmoid", ["h"], ["p"]),
    N("CumProd", ["p", "axis"], ["reach"], exclusive=1),
    N("Tanh", ["h"], ["t"]),
    N("Mul", ["t", "half"], ["t2"]),
    N("Add", ["t2", "one"], ["gain"]),
    N("CumProd", ["gain", "axis"], ["gains"], reverse=1),
    N("Add", ["reach", "gains"], ["scores"]),
], [weight("W", (6, 10)), numpy_helper.from_array(np.array(1, np.int64), "axis"),
    numpy_helper.from_array(np.float32(0.5), "half"),
    numpy_helper.from_array(np.float32(1), "one")], opset=26)

# LinearAttention (opset 27, Gated DeltaNet's rule, its recurrence
# unrolled): q, k, v [4, 3 tokens, 2 heads of 2] from x, per-head decays
# -softplus and betas sigmoid of projections of x, the output through a
# Gemm to the classes.
save("linear_attention", [4, 6], [
    N("MatMul", ["x", "Wq"], ["q2"]), N("Reshape", ["q2", "qkv"], ["q"]),
    N("MatMul", ["x", "Wk"], ["k2"]), N("Reshape", ["k2", "qkv"], ["k"]),
    N("MatMul", ["x", "Wv"], ["v2"]), N("Reshape", ["v2", "qkv"], ["v"]),
    N("MatMul", ["x", "Wg"], ["g2"]), N("Reshape", ["g2", "per_head"], ["g3"]),
    N("Softplus", ["g3"], ["sp"]), N("Neg", ["sp"], ["g"]),
    N("MatMul", ["x", "Wb"], ["b2"]), N("Reshape", ["b2", "one_beta"], ["b3"]),
    N("Sigmoid", ["b3"], ["b"]),
    N("LinearAttention", ["q", "k", "v", "", "g", "b"], ["y", "state"],
      q_num_heads=2, kv_num_heads=2),
    N("Reshape", ["y", "flat"], ["yf"]),
    N("MatMul", ["yf", "Wo"], ["scores"]),
], [weight("Wq", (6, 12)), weight("Wk", (6, 12)), weight("Wv", (6, 12)),
    weight("Wg", (6, 6)), weight("Wb", (6, 3)), weight("Wo", (12, 10)),
    numpy_helper.from_array(np.array([4, 3, 4], np.int64), "qkv"),
    numpy_helper.from_array(np.array([4, 3, 2], np.int64), "per_head"),
    numpy_helper.from_array(np.array([4, 3, 1], np.int64), "one_beta"),
    numpy_helper.from_array(np.array([4, 12], np.int64), "flat")], opset=27)
