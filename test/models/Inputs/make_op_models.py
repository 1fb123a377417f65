"""Writes models for compare_ort.py to run against onnxruntime: CumSum
(whose ONNX backend node tests are all double, which mpc does not
support) and CumProd in float32 and int64; ScatterND and ScatterElements with every
reduction, integer arithmetic and reductions, Tile, GatherND and OneHot,
for their CUDA kernels; Einsum in the forms models write; TensorScatter,
LinearAttention, Scan and Loop.

usage: make_op_models.py OUT_DIR
"""
import itertools
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

out = sys.argv[1]
# CumProd (opset 26) likewise: 7 of its 9 node tests are double.
for (op, opset), (elem, suffix) in itertools.product(
        (("CumSum", 17), ("CumProd", 26)),
        ((TensorProto.FLOAT, ""), (TensorProto.INT64, "_int64"))):
    file = op.lower() + suffix
    nodes, outputs = [], []
    for axis in (0, 1, -1):
        for exclusive in (0, 1):
            for reverse in (0, 1):
                name = f"{op.lower()}_a{axis}_e{exclusive}_r{reverse}".replace("-", "m")
                nodes.append(helper.make_node(op, ["x", f"axis{axis}"],
                                              [name], exclusive=exclusive,
                                              reverse=reverse))
                outputs.append(helper.make_tensor_value_info(name, elem, [4, 5]))
    inits = [numpy_helper.from_array(np.array(a, np.int64), f"axis{a}")
             for a in (0, 1, -1)]
    graph = helper.make_graph(nodes, op.lower(),
                              [helper.make_tensor_value_info("x", elem, [4, 5])],
                              outputs, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8 if opset <= 18 else 10
    onnx.checker.check_model(model, full_check=True)
    onnx.save(model, os.path.join(out, file + ".onnx"))

# ScatterND (opset 18: every reduction), tuples of one index (rows) and of
# two (elements), negative indices, float32 and int64.
for elem, file in ((TensorProto.FLOAT, "scatternd"), (TensorProto.INT64, "scatternd_int64")):
    nodes, outputs, inits = [], [], []
    inits.append(numpy_helper.from_array(np.array([[0], [-2], [3]], np.int64), "rows"))
    inits.append(numpy_helper.from_array(np.array([[1, 2], [4, 0], [0, 2]], np.int64), "cells"))
    for red in ("none", "add", "mul", "max", "min"):
        nodes.append(helper.make_node("ScatterND", ["x", "rows", "u_rows"], [f"rows_{red}"],
                                      reduction=red))
        nodes.append(helper.make_node("ScatterND", ["x", "cells", "u_cells"], [f"cells_{red}"],
                                      reduction=red))
        outputs += [helper.make_tensor_value_info(f"rows_{red}", elem, [5, 3]),
                    helper.make_tensor_value_info(f"cells_{red}", elem, [5, 3])]
    graph = helper.make_graph(nodes, file,
                              [helper.make_tensor_value_info("x", elem, [5, 3]),
                               helper.make_tensor_value_info("u_rows", elem, [3, 3]),
                               helper.make_tensor_value_info("u_cells", elem, [3])],
                              outputs, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 8
    onnx.checker.check_model(model, full_check=True)
    onnx.save(model, os.path.join(out, file + ".onnx"))

# ScatterElements (opset 18: every reduction) along each axis, negative
# and int32 indices; repeated indices (a column each) under the
# reductions; float32 and int64.
I64 = np.int64
scatter_cases = [  # name, axis, indices, updates
    ("none_a0", 0, np.array([[2, 0, -3], [1, 3, 4]], I64), "u_23"),
    ("none_a1", 1, np.array([[2, 0, -2], [1, -1, 0]], I64), "u_23"),
    ("none_am2", -2, np.array([[4, 0], [-2, 2], [1, 3]], I64), "u_32"),
    ("none_am1_i32", -1, np.array([[0, 1, 2], [2, 0, 1]], np.int32), "u_23")]
for red in ("add", "mul", "max", "min"):
    scatter_cases += [(f"{red}_a0", 0, np.array([[2, 0, 4], [2, 0, -1]], I64), "u_23"),
                      (f"{red}_a1", 1, np.array([[1, 1, 0], [2, -1, 2]], I64), "u_23")]
for elem, file in ((TensorProto.FLOAT, "scatter_elements"),
                   (TensorProto.INT64, "scatter_elements_int64")):
    nodes, outputs, inits = [], [], []
    for name, axis, ix, u in scatter_cases:
        inits.append(numpy_helper.from_array(ix, "ix_" + name))
        red = name.split("_")[0]
        nodes.append(helper.make_node("ScatterElements", ["x", "ix_" + name, u], [name],
                                      axis=axis, reduction=red))
        outputs.append(helper.make_tensor_value_info(name, elem, [5, 3]))
    graph = helper.make_graph(nodes, file,
                              [helper.make_tensor_value_info("x", elem, [5, 3]),
                               helper.make_tensor_value_info("u_23", elem, [2, 3]),
                               helper.make_tensor_value_info("u_32", elem, [3, 2])],
                              outputs, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 8
    onnx.checker.check_model(model, full_check=True)
    onnx.save(model, os.path.join(out, file + ".onnx"))

# Integer arithmetic on int64, broadcasting: a - 5 in [-5, 5), divisors
# 1..5 and their negations (no division by zero).
nodes = [helper.make_node("Sub", ["a", "five"], ["s"]),
         helper.make_node("Mod", ["b", "five"], ["bm"]),
         helper.make_node("Add", ["bm", "one"], ["d"]),
         helper.make_node("Neg", ["d"], ["nd"])]
outs = {"add": ("Add", ["s", "b"], {}), "sub": ("Sub", ["s", "b"], {}),
        "mul": ("Mul", ["s", "b"], {}), "div": ("Div", ["s", "d"], {}),
        "div_neg": ("Div", ["s", "nd"], {}), "mod": ("Mod", ["s", "d"], {}),
        "mod_neg": ("Mod", ["s", "nd"], {}), "fmod_neg": ("Mod", ["s", "nd"], {"fmod": 1}),
        "max": ("Max", ["s", "b"], {}), "min": ("Min", ["s", "b"], {}),
        "neg": ("Neg", ["s"], {}), "abs": ("Abs", ["s"], {}),
        "where": ("Where", ["c", "s", "b"], {})}
for name, (op, ins, attrs) in outs.items():
    nodes.append(helper.make_node(op, ins, [name], **attrs))
I = TensorProto.INT64
graph = helper.make_graph(
    nodes, "integer_arithmetic",
    [helper.make_tensor_value_info("a", I, [3, 4]), helper.make_tensor_value_info("b", I, [4]),
     helper.make_tensor_value_info("c", TensorProto.BOOL, [3, 1])],
    [helper.make_tensor_value_info(n, I, [3, 4]) for n in outs],
    [numpy_helper.from_array(np.array(5, np.int64), "five"),
     numpy_helper.from_array(np.array(1, np.int64), "one")])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
model.ir_version = 8
onnx.checker.check_model(model, full_check=True)
onnx.save(model, os.path.join(out, "integer_arithmetic.onnx"))

# Tile, GatherND (batch_dims 0 and 1, negative indices) and OneHot
# (axes -1 and 0, negative and out-of-range indices), for their CUDA
# kernels.
F = TensorProto.FLOAT
nodes = [helper.make_node("Tile", ["x", "reps"], ["tile"]),
         helper.make_node("GatherND", ["x", "tuples"], ["gather_nd"]),
         helper.make_node("GatherND", ["x", "rows"], ["gather_nd_batch"], batch_dims=1),
         helper.make_node("OneHot", ["hot", "depth", "onoff"], ["one_hot"]),
         helper.make_node("OneHot", ["hot", "depth", "onoff"], ["one_hot_axis0"], axis=0)]
graph = helper.make_graph(
    nodes, "index_ops",
    [helper.make_tensor_value_info("x", F, [2, 3, 4])],
    [helper.make_tensor_value_info("tile", F, [4, 3, 8]),
     helper.make_tensor_value_info("gather_nd", F, [3, 4]),
     helper.make_tensor_value_info("gather_nd_batch", F, [2, 4]),
     helper.make_tensor_value_info("one_hot", F, [2, 3, 5]),
     helper.make_tensor_value_info("one_hot_axis0", F, [5, 2, 3])],
    [numpy_helper.from_array(np.array([2, 1, 2], np.int64), "reps"),
     numpy_helper.from_array(np.array([[0, 1], [1, -1], [-2, 0]], np.int64), "tuples"),
     numpy_helper.from_array(np.array([[2], [-3]], np.int64), "rows"),
     numpy_helper.from_array(np.array([[0, 4, -1], [2, 7, -6]], np.int64), "hot"),
     numpy_helper.from_array(np.array(5, np.int64), "depth"),
     numpy_helper.from_array(np.array([-0.5, 2.0], np.float32), "onoff")])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
model.ir_version = 8
onnx.checker.check_model(model, full_check=True)
onnx.save(model, os.path.join(out, "index_ops.onnx"))

# Integer reductions (mBART counts its tokens with one), over one axis,
# all axes and two, with and without keepdims.
I = TensorProto.INT64
nodes, outputs = [helper.make_node("Sub", ["a", "five"], ["s"])], []
for op in ("ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceSumSquare"):
    for axes, keep, shape in (([1], 0, [2, 4]), ([0, 2], 1, [1, 3, 1]), (None, 0, [])):
        name = f"{op}_{'_'.join(map(str, axes)) if axes else 'all'}_{keep}".lower()
        ins = ["s"] + ([f"axes_{'_'.join(map(str, axes))}"] if axes else [])
        nodes.append(helper.make_node(op, ins, [name], keepdims=keep))
        outputs.append(helper.make_tensor_value_info(name, I, shape))
graph = helper.make_graph(
    nodes, "integer_reduce", [helper.make_tensor_value_info("a", I, [2, 3, 4])], outputs,
    [numpy_helper.from_array(np.array(5, np.int64), "five"),
     numpy_helper.from_array(np.array([1], np.int64), "axes_1"),
     numpy_helper.from_array(np.array([0, 2], np.int64), "axes_0_2")])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
model.ir_version = 8
onnx.checker.check_model(model, full_check=True)
onnx.save(model, os.path.join(out, "integer_reduce.onnx"))

# 1-D convolutions (Whisper's, wav2vec2's), which run as 2-D ones of
# height 1 (mpc-window1d-as-2d): padded with a stride and a bias, grouped and
# dilated.
nodes = [helper.make_node("Conv", ["seq", "w1", "b1"], ["conv_strided"], pads=[1, 1],
                          strides=[2], kernel_shape=[3]),
         helper.make_node("Conv", ["seq", "w2"], ["conv_grouped"], pads=[2, 2],
                          dilations=[2], group=2, kernel_shape=[3])]
rng = np.random.default_rng(1)
graph = helper.make_graph(
    nodes, "conv1d", [helper.make_tensor_value_info("seq", F, [2, 4, 10])],
    [helper.make_tensor_value_info("conv_strided", F, [2, 6, 5]),
     helper.make_tensor_value_info("conv_grouped", F, [2, 6, 10])],
    [numpy_helper.from_array(rng.standard_normal((6, 4, 3)).astype(np.float32), "w1"),
     numpy_helper.from_array(rng.standard_normal(6).astype(np.float32), "b1"),
     numpy_helper.from_array(rng.standard_normal((6, 2, 3)).astype(np.float32), "w2")])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
model.ir_version = 8
onnx.checker.check_model(model, full_check=True)
onnx.save(model, os.path.join(out, "conv1d.onnx"))

# Einsum (imported as diagonals, sums and batched MatMuls): its backend node
# tests are double but for three; here float32, the forms models write
# (batched and attention-shaped products, Funnel's bind,bjnd->bnij),
# transposes, sums, diagonals, traces, implicit outputs, three operands,
# an ellipsis that broadcasts, outer and elementwise products.
rng = np.random.default_rng(2)
shapes = {"a": [2, 3, 4], "b": [2, 4, 5], "m": [3, 4], "u": [5], "w": [5],
          "d": [3, 5, 5], "q": [2, 3, 4, 5], "k": [2, 6, 4, 5], "p": [2, 4, 3, 6],
          "x": [3, 4], "y": [4, 6], "z": [6, 2], "e1": [2, 1, 3, 4], "e2": [1, 5, 4, 2],
          "s": [4, 4]}
cases = [("batch_matmul", "bij, bjk -> bik", "ab", [2, 3, 5]),
         ("transpose", "ij->ji", "m", [4, 3]),
         ("row_sum", "ij->i", "m", [3]),
         ("inner", "i,i", "uw", []),
         ("batch_diagonal", "...ii->...i", "d", [3, 5]),
         ("scores", "bind,bjnd->bnij", "qk", [2, 4, 3, 6]),
         ("context", "bnij,bjnd->bind", "pk", [2, 3, 4, 5]),
         ("chain", "ij,jk,kl->il", "xyz", [3, 2]),
         ("broadcast", "...ij,...jk", "e1e2", [2, 5, 3, 2]),
         ("trace", "ii", "s", []),
         ("hadamard", "ij,ij->ij", "mm", [3, 4]),
         ("outer", "i,j->ij", "uw", [5, 5])]
nodes, outputs, used = [], [], []
for name, eq, ins, shape in cases:
    names = ["e1", "e2"] if ins == "e1e2" else list(ins)
    used += [n for n in names if n not in used]
    nodes.append(helper.make_node("Einsum", names, ["einsum_" + name], equation=eq))
    outputs.append(helper.make_tensor_value_info("einsum_" + name, F, shape))
graph = helper.make_graph(nodes, "einsum",
                          [helper.make_tensor_value_info(n, F, shapes[n]) for n in used],
                          outputs)
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
model.ir_version = 8
onnx.checker.check_model(model, full_check=True)
onnx.save(model, os.path.join(out, "einsum.onnx"))

# Attention written with einsum over three batch labels (torchvision's
# MaxViT: [b, g, h, i, d] x [b, g, h, j, d], a relative position bias,
# softmax, then the values): mpc-fuse-attention's form once imported.
q5 = [2, 3, 2, 4, 8]
nodes = [helper.make_node("Mul", ["q", "scale"], ["qs"]),
         helper.make_node("Einsum", ["qs", "k"], ["scores"], equation="bghid,bghjd->bghij"),
         helper.make_node("Add", ["scores", "bias"], ["biased"]),
         helper.make_node("Softmax", ["biased"], ["probs"], axis=-1),
         helper.make_node("Einsum", ["probs", "v"], ["y"], equation="bghij,bghjd->bghid")]
graph = helper.make_graph(
    nodes, "einsum_attention",
    [helper.make_tensor_value_info(n, F, q5) for n in "qkv"] +
    [helper.make_tensor_value_info("bias", F, [2, 4, 4])],
    [helper.make_tensor_value_info("y", F, q5)],
    [numpy_helper.from_array(np.array(0.35, np.float32), "scale")])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
model.ir_version = 8
onnx.checker.check_model(model, full_check=True)
onnx.save(model, os.path.join(out, "einsum_attention.onnx"))

# TensorScatter (opset 24, a KV cache's update): linear from per-batch
# positions, circular wrapping past the cache's end, no write_indices (all
# at 0), and a 3-D cache along axis 1.
F = TensorProto.FLOAT
nodes = [helper.make_node("TensorScatter", ["cache", "update", "at"], ["linear"]),
         helper.make_node("TensorScatter", ["cache", "update", "wrap"],
                          ["circular"], mode="circular"),
         helper.make_node("TensorScatter", ["cache", "one"], ["at_zero"]),
         helper.make_node("TensorScatter", ["cache3", "update3", "at"],
                          ["axis1"], axis=1)]
graph = helper.make_graph(
    nodes, "tensorscatter",
    [helper.make_tensor_value_info("cache", F, [2, 3, 6, 4]),
     helper.make_tensor_value_info("update", F, [2, 3, 3, 4]),
     helper.make_tensor_value_info("one", F, [2, 3, 1, 4]),
     helper.make_tensor_value_info("cache3", F, [2, 5, 4]),
     helper.make_tensor_value_info("update3", F, [2, 2, 4])],
    [helper.make_tensor_value_info("linear", F, [2, 3, 6, 4]),
     helper.make_tensor_value_info("circular", F, [2, 3, 6, 4]),
     helper.make_tensor_value_info("at_zero", F, [2, 3, 6, 4]),
     helper.make_tensor_value_info("axis1", F, [2, 5, 4])],
    [numpy_helper.from_array(np.array([1, 3], np.int64), "at"),
     numpy_helper.from_array(np.array([5, 2], np.int64), "wrap")])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 24)])
model.ir_version = 10
onnx.checker.check_model(model, full_check=True)
onnx.save(model, os.path.join(out, "tensorscatter.onnx"))

# LinearAttention (opset 27): the linear rule with two q heads per kv
# head, and gated_delta from a past state with per-head decays and one beta
# for all heads, over 3 tokens (one chunk); gated_delta and delta over 10
# tokens in chunks of 4 (the last one partial), and gated with decays per
# key dimension (token by token).
nodes = [helper.make_node("LinearAttention", ["q", "k", "v"], ["linear", "linear_state"],
                          q_num_heads=4, kv_num_heads=2, update_rule="linear"),
         helper.make_node("LinearAttention", ["k", "k", "v", "state", "g", "b"],
                          ["gated_delta", "gated_delta_state"], q_num_heads=2,
                          kv_num_heads=2, scale=0.5),
         helper.make_node("LinearAttention", ["lq", "lk", "lv", "state", "lg", "lb"],
                          ["chunked", "chunked_state"], q_num_heads=4,
                          kv_num_heads=2, chunk_size=4),
         helper.make_node("LinearAttention", ["lk", "lk", "lv", "", "", "lb"],
                          ["chunked_delta", "chunked_delta_state"], q_num_heads=2,
                          kv_num_heads=2, chunk_size=4, update_rule="delta"),
         helper.make_node("LinearAttention", ["lk", "lk", "lv", "state", "lgk"],
                          ["per_key", "per_key_state"], q_num_heads=2,
                          kv_num_heads=2, update_rule="gated")]
graph = helper.make_graph(
    nodes, "linear_attention",
    [helper.make_tensor_value_info("q", F, [2, 3, 16]),
     helper.make_tensor_value_info("k", F, [2, 3, 8]),
     helper.make_tensor_value_info("v", F, [2, 3, 6]),
     helper.make_tensor_value_info("state", F, [2, 2, 4, 3]),
     helper.make_tensor_value_info("g", F, [2, 3, 2]),
     helper.make_tensor_value_info("b", F, [2, 3, 1]),
     helper.make_tensor_value_info("lq", F, [2, 10, 16]),
     helper.make_tensor_value_info("lk", F, [2, 10, 8]),
     helper.make_tensor_value_info("lv", F, [2, 10, 6]),
     helper.make_tensor_value_info("lg", F, [2, 10, 2]),
     helper.make_tensor_value_info("lgk", F, [2, 10, 8]),
     helper.make_tensor_value_info("lb", F, [2, 10, 2])],
    [helper.make_tensor_value_info("linear", F, [2, 3, 12]),
     helper.make_tensor_value_info("linear_state", F, [2, 2, 4, 3]),
     helper.make_tensor_value_info("gated_delta", F, [2, 3, 6]),
     helper.make_tensor_value_info("gated_delta_state", F, [2, 2, 4, 3]),
     helper.make_tensor_value_info("chunked", F, [2, 10, 12]),
     helper.make_tensor_value_info("chunked_state", F, [2, 2, 4, 3]),
     helper.make_tensor_value_info("chunked_delta", F, [2, 10, 6]),
     helper.make_tensor_value_info("chunked_delta_state", F, [2, 2, 4, 3]),
     helper.make_tensor_value_info("per_key", F, [2, 10, 6]),
     helper.make_tensor_value_info("per_key_state", F, [2, 2, 4, 3])])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 27)])
model.ir_version = 10
onnx.checker.check_model(model, full_check=True)
onnx.save(model, os.path.join(out, "linear_attention.onnx"))

# Scan (opset 16), unrolled: an RNN cell h = tanh(h * a + x_t) reading `a`
# from the enclosing graph, its input read backwards along axis 1, one
# output stacked along axis 1 and one in reverse; a cumulative sum beside
# it (two states, two scan inputs).
body = onnx.parser.parse_graph("""
cell (float[3] h, float[3] s, float[3] xt, float[3] yt) => (float[3] h2, float[3] s2, float[3] out, float[3] rev) {
    ha = Mul (h, a)
    pre = Add (ha, xt)
    h2 = Tanh (pre)
    s2 = Add (s, yt)
    out = Identity (h2)
    rev = Mul (h2, yt)
}""")
nodes = [helper.make_node("Scan", ["h0", "s0", "x", "y"], ["h_last", "s_last", "hs", "rs"],
                          body=body, num_scan_inputs=2, scan_input_axes=[1, 0],
                          scan_input_directions=[1, 0], scan_output_axes=[1, 0],
                          scan_output_directions=[0, 1])]
graph = helper.make_graph(
    nodes, "scan",
    [helper.make_tensor_value_info("h0", F, [3]),
     helper.make_tensor_value_info("s0", F, [3]),
     helper.make_tensor_value_info("x", F, [3, 4]),
     helper.make_tensor_value_info("y", F, [4, 3])],
    [helper.make_tensor_value_info("h_last", F, [3]),
     helper.make_tensor_value_info("s_last", F, [3]),
     helper.make_tensor_value_info("hs", F, [3, 4]),
     helper.make_tensor_value_info("rs", F, [4, 3])],
    [numpy_helper.from_array(np.array([0.5, -0.7, 1.2], np.float32), "a")])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 16)])
model.ir_version = 8
onnx.checker.check_model(model, full_check=True)
onnx.save(model, os.path.join(out, "scan.onnx"))

# Loop, unrolled: its trip count a shape's size (4), a carried RNN state
# h = tanh(h * a + x[i]) reading x and a from the enclosing graph and
# stacking h; a second loop stopped by its condition (i < 2) before its
# trip count of 10, summing rows.
loop_body = onnx.parser.parse_graph("""
step (int64 i, bool c, float[3] h) => (bool c2, float[3] h2, float[3] hs) {
    c2 = Identity (c)
    row = Gather <axis = 0> (x, i)
    ha = Mul (h, a)
    pre = Add (ha, row)
    h2 = Tanh (pre)
    hs = Identity (h2)
}""")
until_body = onnx.parser.parse_graph("""
step (int64 i, bool c, float[3] s) => (bool c2, float[3] s2) {
    two = Constant <value = int64 {2}> ()
    c2 = Less (i, two)
    row = Gather <axis = 0> (x, i)
    s2 = Add (s, row)
}""")
nodes = [helper.make_node("Shape", ["x"], ["xs"], end=1),
         helper.make_node("Squeeze", ["xs"], ["n"]),
         helper.make_node("Loop", ["n", "", "h0"], ["h_last", "hs"], body=loop_body),
         helper.make_node("Loop", ["ten", "yes", "h0"], ["s_last"], body=until_body)]
graph = helper.make_graph(
    nodes, "loop",
    [helper.make_tensor_value_info("h0", F, [3]),
     helper.make_tensor_value_info("x", F, [4, 3])],
    [helper.make_tensor_value_info("h_last", F, [3]),
     helper.make_tensor_value_info("hs", F, [4, 3]),
     helper.make_tensor_value_info("s_last", F, [3])],
    [numpy_helper.from_array(np.array([0.5, -0.7, 1.2], np.float32), "a"),
     numpy_helper.from_array(np.array(10, np.int64), "ten"),
     numpy_helper.from_array(np.array(True), "yes")])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 16)])
model.ir_version = 8
onnx.checker.check_model(model, full_check=True)
onnx.save(model, os.path.join(out, "loop.onnx"))
