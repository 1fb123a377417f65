"""Writes small models for the emulation test into OUT_DIR:

gather_rows.onnx: scores = Gather(x @ W reshaped [N,3,10], [1, 1], axis=1)
flattened @ W2, with a softmax cross-entropy loss. In fp16 the Gather
follows its fp16 input, so its gradient is a scatter-add into an fp16
tensor with a repeated index.

embed_rows.onnx: 300 constant token ids (repeats, negatives counted from
the end, four rows of the 64-row table never picked) gather an FP32
table, whose mean row joins x @ W: the table's gradient is the embedding
scatter-add (its CUDA prologue ranks the tokens over two tiles of 256).

gap_relu.onnx: x @ W reshaped [N,3,4,4], Relu, GlobalAveragePool, @ W2,
softmax cross-entropy. The backward's Expand (of the pooled gradient) and
the Relu gradient fuse into one CUDA kernel.

smooth_act.onnx: x @ W, Mish, Atan, Softplus, @ W2, softmax cross-entropy
(opset 18): the smooth activations' kernels and gradients.

pick_elements.onnx: x @ W [4, 30], GatherElements along axis 1 with
repeated indices -> scores [4, 10]: its gradient is a scatter-add
(gather_elements_grad).

wide_classes.onnx: x @ W over 300 classes, softmax cross-entropy: the
loss and its gradient take a warp per row (classes of 64 or more).
wide_rows.onnx: the same over 36 rows, so a train step's loss rows span
five blocks.

vocab_rows.onnx: 3000 classes over 6 rows: more than a warp holds in
registers, so the loss's rows kernel takes a block per row.

seq_linear.onnx: x reshaped [4, 2, 4] (a batch of 2-token sequences)
through two linears exported as torch does (MatMul, then Add of the bias)
with a Relu between, flattened to scores [4, 10]: the weight gradients are
single GEMMs over all 8 rows, and cuBLASLt's BGRADA computes each bias
gradient with its weight's.

seq_linear_b3.onnx: seq_linear with biases shaped [1, 1, N], which
mpc-fold-linear-bias leaves as MatMul and Add: the bias gradient is
reduced before its weight gradient's GEMM in the step order and fused
into it all the same.

seq_gelu.onnx: the same sequence through a linear of 16 features, GPT-2's
tanh GELU spelled out as Hugging Face's gelu_new exports it (Pow, Tanh...),
and a second linear: mpc-fuse-decomposed makes it one gelu, mpc-fold-
linear-bias makes each linear one Gemm, and cuBLASLt's GELU_AUX_BIAS and
DGELU epilogues compute the GELU and its gradient with their GEMMs.

leaky_mlp.onnx: x through a Gemm, LeakyRelu (alpha 0.1) and a Gemm: the
LeakyRelu's gradient (greater, mul, where) is an elementwise chain, one
kernel.

bn_gap.onnx: x @ W reshaped [N,3,4,4], BatchNormalization in training
mode, Relu, GlobalAveragePool, @ W2: the batch norm's three gradients in
one kernel a channel (batch_norm_grad).

bn_res.onnx: a residual block on x @ W reshaped [N,2,3,4]: r1 =
Relu(BN1(h)), then Relu(BN2(r1) + r1), GlobalAveragePool, @ W2: the
CUDA backend runs BN1 with its Relu, BN2 with the residual Add and its
Relu, and takes BN1's Relu gradient in BN1's gradient kernel. Its maps
of 12 elements take the batch norm kernels' scalar path in fp16 (bn_gap's
of 16, the 16-byte one).

bn_wide.onnx: bn_res with maps of 8 x 769: at batch 4 a channel of 24608
elements is split over three blocks (partial sums in a prologue; the last
block's share is shorter), 16-byte accesses in fp16 and fp32.

seq_first_attention.onnx: multi-head attention sequence-first (as
nn.MultiheadAttention without batch_first): x @ W as [4 positions, 2
sequences, 3 x 32], Split into Q, K and V, each [4, 2 x 2 heads, 16]
transposed to [4 heads, 4, 16], softmax(Q K^T / 4) V, back to [4, 64], @
W2. Its heads merge two dims the QKV buffer strides apart (sequences 96
apart, heads 16), which CUDA attention addresses in place.

seq_first_attention_d40.onnx: the same with 2 x 2 heads of 40 (a multiple
of 8, not 16: the mma kernels compute on 48 columns).

int_paths.onnx: 64-bit integers no float can hold (2^40 + odd), gathered by
a runtime index, padded with such a constant, argmax-ed, and cast to int32
from values above 2^24; and a float input cast to int64. Every output is
an integer the emulation compares exactly.

data_moves.onnx: x @ W reshaped [4, 3, 32], then Transpose keeping the
last dim, Slice of a middle run of it, Pad back with a constant 0.5,
Split along axis 1 and Concat the parts swapped, @ W2: every copy moves
16 bytes a thread in fp16 and fp32 (runs of 8 or 16 elements, aligned).

residual_norms.onnx, residual_norms_narrow.onnx: residual Adds feeding
RMS and layer norms in rows of 64 (a warp a row, 16-byte accesses) and 40
(a thread a row): h0 = x @ W0, r1 = h0 + h0 @ W1, n1 = RMSNorm(r1), r2 =
r1 + n1 @ W2 (pre-norm: r1 read again after its norm), n2 = LayerNorm(r2),
n3 = LayerNorm(n2 + n2 @ W3) (post-norm: n2 read by the GEMM and the
residual, so its gradient is a sum), @ W4.

label_smoothing.onnx: x @ W over 10 classes, LogSoftmax read by the NLL
loss and by the smoothing term: loss = 0.9 nll - 0.1 mean(logp). The
log-softmax and NLL stay separate ops (mpc-fuse-cross-entropy leaves
log-probabilities read elsewhere), so their CUDA kernels run.

conv_res.onnx, conv_wide.onnx: a ResNet stem and block in small (2 and 32
channels); conv_tall.onnx: conv_wide on 32x32 images. conv_gan.onnx: a GAN of convolutions with outputs d_loss and
g_loss and inputs x (images) and z (noise), for `mpc train --phase`.

usage: make_small_models.py OUT_DIR
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

out = sys.argv[1]
rng = np.random.default_rng(0)


def weight(name, shape):
    return numpy_helper.from_array(
        rng.standard_normal(shape).astype(np.float32) * 0.3, name)


def ints(name, values):
    return numpy_helper.from_array(np.array(values, np.int64), name)


def save(name, nodes, inits, opset=17, rows=4):
    graph = helper.make_graph(
        nodes + [helper.make_node("SoftmaxCrossEntropyLoss",
                                  ["scores", "labels"], ["loss"], name="loss")],
        name,
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [rows, 8]),
         helper.make_tensor_value_info("labels", TensorProto.INT64, [rows])],
        [helper.make_tensor_value_info("loss", TensorProto.FLOAT, [])], inits)
    model = helper.make_model(graph,
                              opset_imports=[helper.make_opsetid("", opset)])
    onnx.checker.check_model(model)
    onnx.save(model, os.path.join(out, name + ".onnx"))


save("gather_rows", [
    helper.make_node("MatMul", ["x", "W"], ["h"], name="proj"),
    helper.make_node("Reshape", ["h", "shape3"], ["h3"], name="split_heads"),
    helper.make_node("Gather", ["h3", "pick"], ["g"], name="pick_rows", axis=1),
    helper.make_node("Reshape", ["g", "shape2"], ["g2"], name="flatten"),
    helper.make_node("MatMul", ["g2", "W2"], ["scores"], name="head"),
], [weight("W", (8, 30)), weight("W2", (20, 10)), ints("shape3", [4, 3, 10]),
    ints("shape2", [4, 20]), ints("pick", [1, 1])])

save("pick_elements", [
    helper.make_node("MatMul", ["x", "W"], ["h"], name="proj"),
    helper.make_node("GatherElements", ["h", "pick"], ["scores"],
                     name="pick", axis=1),
], [weight("W", (8, 30)),
    ints("pick", [[(3 * r + 7 * c) % 30 if c < 8 else 5 for c in range(10)]
                  for r in range(4)])])

save("wide_classes", [
    helper.make_node("MatMul", ["x", "W"], ["scores"], name="head"),
], [weight("W", (8, 300))])
save("wide_rows", [
    helper.make_node("MatMul", ["x", "W"], ["scores"], name="head"),
], [weight("W", (8, 300))], rows=36)

save("gap_relu", [
    helper.make_node("MatMul", ["x", "W"], ["h"], name="proj"),
    helper.make_node("Reshape", ["h", "shape4"], ["h4"], name="to_image"),
    helper.make_node("Relu", ["h4"], ["r"], name="relu"),
    helper.make_node("GlobalAveragePool", ["r"], ["p"], name="pool"),
    helper.make_node("Reshape", ["p", "shape2"], ["p2"], name="flatten"),
    helper.make_node("MatMul", ["p2", "W2"], ["scores"], name="head"),
], [weight("W", (8, 48)), weight("W2", (3, 10)), ints("shape4", [4, 3, 4, 4]),
    ints("shape2", [4, 3])])

save("bn_gap", [
    helper.make_node("MatMul", ["x", "W"], ["h"], name="proj"),
    helper.make_node("Reshape", ["h", "shape4"], ["h4"], name="to_image"),
    helper.make_node("BatchNormalization", ["h4", "gamma", "beta", "mean", "var"],
                     ["n", "running_mean", "running_var"], name="bn",
                     training_mode=1),
    helper.make_node("Relu", ["n"], ["r"], name="relu"),
    helper.make_node("GlobalAveragePool", ["r"], ["p"], name="pool"),
    helper.make_node("Reshape", ["p", "shape2"], ["p2"], name="flatten"),
    helper.make_node("MatMul", ["p2", "W2"], ["scores"], name="head"),
], [weight("W", (8, 48)), weight("W2", (3, 10)), ints("shape4", [4, 3, 4, 4]),
    ints("shape2", [4, 3]), numpy_helper.from_array(
        np.array([1.0, 0.5, 2.0], np.float32), "gamma"),
    numpy_helper.from_array(np.array([0.1, -0.2, 0.0], np.float32), "beta"),
    numpy_helper.from_array(np.zeros(3, np.float32), "mean"),
    numpy_helper.from_array(np.ones(3, np.float32), "var")], opset=15)

bn_params = lambda k: [numpy_helper.from_array(np.array(v, np.float32), n + k)
                       for n, v in (("gamma", [1.0, 0.5]), ("beta", [0.1, -0.2]),
                                    ("mean", [0.0] * 2), ("var", [1.0] * 2))]
bn_node = lambda k, x, y: helper.make_node(
    "BatchNormalization", [x] + [n + k for n in ("gamma", "beta", "mean", "var")],
    [y, "running_mean" + k, "running_var" + k], name="bn" + k, training_mode=1)
def residual_block(name, maps):
    """x @ W reshaped [4, 2, *maps], Relu(BN1), Relu(BN2(r1) + r1), pooled,
    @ W2."""
    size = 2 * int(np.prod(maps))
    save(name, [
        helper.make_node("MatMul", ["x", "W"], ["h"], name="proj"),
        helper.make_node("Reshape", ["h", "shape4"], ["h4"], name="to_image"),
        bn_node("1", "h4", "n1"),
        helper.make_node("Relu", ["n1"], ["r1"], name="relu1"),
        bn_node("2", "r1", "n2"),
        helper.make_node("Add", ["n2", "r1"], ["s"], name="residual"),
        helper.make_node("Relu", ["s"], ["r2"], name="relu2"),
        helper.make_node("GlobalAveragePool", ["r2"], ["p"], name="pool"),
        helper.make_node("Reshape", ["p", "shape2"], ["p2"], name="flatten"),
        helper.make_node("MatMul", ["p2", "W2"], ["scores"], name="head"),
    ], [weight("W", (8, size)), weight("W2", (2, 10)),
        ints("shape4", [4, 2] + list(maps)), ints("shape2", [4, 2])] +
        bn_params("1") + bn_params("2"), opset=15)


residual_block("bn_res", (3, 4))

# A ResNet stem and basic block in small: convolutions, training batch
# norms, a max pool and a residual Add (what mpc-channels-last runs NHWC).
# No convolution bias: before a batch norm its gradient is a sum that
# cancels to nothing, whose rounding no two backends share.
def conv_block():
    """The nodes of conv_res and conv_wide: image, Conv, BN, Relu, MaxPool,
    Conv, BN, the residual Add, Relu, global pooling, head."""
    return [
        helper.make_node("MatMul", ["x", "W"], ["h"], name="proj"),
        helper.make_node("Reshape", ["h", "image"], ["img"], name="to_image"),
        helper.make_node("Conv", ["img", "K1"], ["c1"], name="conv1",
                         pads=[1, 1, 1, 1]),
        bn_node("1", "c1", "n1"),
        helper.make_node("Relu", ["n1"], ["r1"], name="relu1"),
        helper.make_node("MaxPool", ["r1"], ["p"], name="pool", kernel_shape=[3, 3],
                         strides=[2, 2], pads=[1, 1, 1, 1]),
        helper.make_node("Conv", ["p", "K2"], ["c2"], name="conv2",
                         pads=[1, 1, 1, 1]),
        bn_node("2", "c2", "n2"),
        helper.make_node("Add", ["n2", "p"], ["s"], name="residual"),
        helper.make_node("Relu", ["s"], ["r2"], name="relu2"),
        helper.make_node("GlobalAveragePool", ["r2"], ["g"], name="gap"),
        helper.make_node("Reshape", ["g", "flat"], ["g2"], name="flatten"),
        helper.make_node("MatMul", ["g2", "W2"], ["scores"], name="head"),
    ]


save("conv_res", conv_block(),
     [weight("W", (8, 108)), ints("image", [4, 3, 6, 6]),
      weight("K1", (2, 3, 3, 3)), weight("K2", (2, 2, 3, 3)),
      ints("flat", [4, 2]), weight("W2", (2, 10))] + bn_params("1") +
     bn_params("2"), opset=15)

save("smooth_act", [
    helper.make_node("MatMul", ["x", "W"], ["h"], name="proj"),
    helper.make_node("Mish", ["h"], ["m"], name="mish"),
    helper.make_node("Atan", ["m"], ["a"], name="atan"),
    helper.make_node("Softplus", ["a"], ["s"], name="softplus"),
    helper.make_node("MatMul", ["s", "W2"], ["scores"], name="head"),
], [weight("W", (8, 16)), weight("W2", (16, 10))], opset=18)

def seq_linear(name, bias_shape):
    """x as a batch of 2-token sequences through MatMul + Add, Relu, MatMul +
    Add (a bias of N elements shaped `bias_shape(N)`), flattened."""
    save(name, [
        helper.make_node("Reshape", ["x", "shape3"], ["x3"], name="to_tokens"),
        helper.make_node("MatMul", ["x3", "W"], ["h"], name="fc/MatMul"),
        helper.make_node("Add", ["h", "b"], ["hb"], name="fc/Add"),
        helper.make_node("Relu", ["hb"], ["r"], name="relu"),
        helper.make_node("MatMul", ["r", "W2"], ["o"], name="out/MatMul"),
        helper.make_node("Add", ["o", "b2"], ["ob"], name="out/Add"),
        helper.make_node("Reshape", ["ob", "shape2"], ["scores"],
                         name="flatten"),
    ], [weight("W", (4, 12)), weight("b", bias_shape(12)),
        weight("W2", (12, 5)), weight("b2", bias_shape(5)),
        ints("shape3", [4, 2, 4]), ints("shape2", [4, 10])])


seq_linear("seq_linear", lambda n: (n,))
seq_linear("seq_linear_b3", lambda n: (1, 1, n))


save("leaky_mlp", [
    helper.make_node("Gemm", ["x", "W", "b"], ["h"], name="fc"),
    helper.make_node("LeakyRelu", ["h"], ["a"], name="act", alpha=0.1),
    helper.make_node("Gemm", ["a", "W2"], ["scores"], name="head"),
], [weight("W", (8, 16)), weight("b", (16,)), weight("W2", (16, 10))])


def const(name, value):
    return numpy_helper.from_array(np.array(value, np.float32), name)


save("seq_gelu", [
    helper.make_node("Reshape", ["x", "shape3"], ["x3"], name="to_tokens"),
    helper.make_node("MatMul", ["x3", "W"], ["h"], name="fc/MatMul"),
    helper.make_node("Add", ["b", "h"], ["z"], name="fc/Add"),
    helper.make_node("Mul", ["half", "z"], ["zh"], name="gelu/half"),
    helper.make_node("Pow", ["z", "three"], ["z3"], name="gelu/cube"),
    helper.make_node("Mul", ["c", "z3"], ["cz3"], name="gelu/c"),
    helper.make_node("Add", ["z", "cz3"], ["poly"], name="gelu/poly"),
    helper.make_node("Mul", ["k", "poly"], ["u"], name="gelu/k"),
    helper.make_node("Tanh", ["u"], ["t"], name="gelu/tanh"),
    helper.make_node("Add", ["one", "t"], ["onet"], name="gelu/one"),
    helper.make_node("Mul", ["zh", "onet"], ["g"], name="gelu/out"),
    helper.make_node("MatMul", ["g", "W2"], ["o"], name="out/MatMul"),
    helper.make_node("Add", ["o", "b2"], ["ob"], name="out/Add"),
    helper.make_node("Reshape", ["ob", "shape2"], ["scores"], name="flatten"),
], [weight("W", (4, 16)), weight("b", (16,)), weight("W2", (16, 5)),
    weight("b2", (5,)), ints("shape3", [4, 2, 4]), ints("shape2", [4, 10]),
    const("half", 0.5), const("three", 3.0), const("c", 0.044715),
    const("k", np.sqrt(2 / np.pi)), const("one", 1.0)])

big40 = (2 ** 40 + 12345 * np.arange(30, dtype=np.int64) * 3 + 1).reshape(10, 3)
big30 = (2 ** 30 + 777 * np.arange(30, dtype=np.int64) * 5 + 3).reshape(10, 3)
int_graph = helper.make_graph([
    helper.make_node("Gather", ["big40", "pick"], ["g40"], name="gather40"),
    helper.make_node("Pad", ["g40", "pads", "fill"], ["padded"], name="pad"),
    helper.make_node("ArgMax", ["g40"], ["amax"], name="argmax", axis=1),
    helper.make_node("Gather", ["big30", "pick"], ["g30"], name="gather30"),
    helper.make_node("Cast", ["g30"], ["as_i32"], name="narrow",
                     to=TensorProto.INT32),
    helper.make_node("Cast", ["x"], ["as_i64"], name="truncate",
                     to=TensorProto.INT64),
], "int_paths",
    [helper.make_tensor_value_info("pick", TensorProto.INT64, [4]),
     helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 8])],
    [helper.make_tensor_value_info("padded", TensorProto.INT64, [4, 5]),
     helper.make_tensor_value_info("amax", TensorProto.INT64, [4, 1]),
     helper.make_tensor_value_info("as_i32", TensorProto.INT32, [4, 3]),
     helper.make_tensor_value_info("as_i64", TensorProto.INT64, [4, 8])],
    [numpy_helper.from_array(big40, "big40"),
     numpy_helper.from_array(big30, "big30"),
     ints("pads", [0, 1, 0, 1]),
     numpy_helper.from_array(np.array(2 ** 41 + 3, np.int64), "fill")])
int_model = helper.make_model(int_graph,
                              opset_imports=[helper.make_opsetid("", 17)])
onnx.checker.check_model(int_model)
onnx.save(int_model, os.path.join(out, "int_paths.onnx"))

# Last, so the models above keep their weights (one generator).
residual_block("bn_wide", (8, 769))
save("data_moves", [
    helper.make_node("MatMul", ["x", "W"], ["h"], name="proj"),
    helper.make_node("Reshape", ["h", "shape3"], ["h3"], name="to_rows"),
    helper.make_node("Transpose", ["h3"], ["t"], name="swap", perm=[1, 0, 2]),
    helper.make_node("Slice", ["t", "starts", "ends", "axes"], ["s"],
                     name="middle"),
    helper.make_node("Pad", ["s", "pads", "half"], ["p"], name="pad"),
    helper.make_node("Split", ["p", "parts"], ["p1", "p2"], name="split",
                     axis=1),
    helper.make_node("Concat", ["p2", "p1"], ["c"], name="swap_parts", axis=1),
    helper.make_node("Reshape", ["c", "shape2"], ["c2"], name="flatten"),
    helper.make_node("MatMul", ["c2", "W2"], ["scores"], name="head"),
], [weight("W", (8, 96)), weight("W2", (96, 10)), ints("shape3", [4, 3, 32]),
    ints("starts", [8]), ints("ends", [24]), ints("axes", [2]),
    ints("pads", [0, 0, 8, 0, 0, 8]), ints("parts", [1, 3]),
    numpy_helper.from_array(np.array(0.5, np.float32), "half"),
    ints("shape2", [4, 96])], opset=18)
# Sequence-first multi-head attention (nn.MultiheadAttention without
# batch_first): 4 positions x 2 sequences, 2 heads of 16.
def seq_first_nodes(divisor):
    """seq_first_attention's nodes, the scores divided by `divisor`."""
    return [
        helper.make_node("MatMul", ["x", "W"], ["h"], name="in_proj"),
        helper.make_node("Reshape", ["h", "sbe"], ["h3"], name="to_sbe"),
        helper.make_node("Split", ["h3", "thirds"], ["q0", "k0", "v0"],
                         name="qkv", axis=2),
        *[n for z in "qkv" for n in (
            helper.make_node("Reshape", [z + "0", "heads"], [z + "1"],
                             name=z + "_heads"),
            helper.make_node("Transpose", [z + "1"], [z], name=z + "_first",
                             perm=[1, 0, 2]))],
        helper.make_node("Transpose", ["k"], ["kt"], name="k_t", perm=[0, 2, 1]),
        helper.make_node("MatMul", ["q", "kt"], ["qk"], name="scores_mm"),
        helper.make_node("Div", ["qk", divisor], ["qks"], name="scale"),
        helper.make_node("Softmax", ["qks"], ["att"], name="softmax", axis=-1),
        helper.make_node("MatMul", ["att", "v"], ["y"], name="att_v"),
        helper.make_node("Transpose", ["y"], ["y1"], name="y_back", perm=[1, 0, 2]),
        helper.make_node("Reshape", ["y1", "rows"], ["y2"], name="y_rows"),
        helper.make_node("MatMul", ["y2", "W2"], ["scores"], name="head"),
    ]


save("seq_first_attention", seq_first_nodes("four"),
     [weight("W", (8, 192)), weight("W2", (64, 10)), ints("sbe", [4, 2, 96]),
      ints("thirds", [32, 32, 32]), ints("heads", [4, 4, 16]),
      numpy_helper.from_array(np.array(4.0, np.float32), "four"),
      ints("rows", [4, 64])], opset=18)

# conv_res with 32 channels: its second filter (32x32x3x3, 9216 elements)
# is large enough for `--weights seed:N` to draw it. Its own generator, so
# the models above keep their weights.
wide = np.random.default_rng(7)
wide_w = lambda name, shape: numpy_helper.from_array(
    (wide.standard_normal(shape) * 0.3).astype(np.float32), name)
wide_bn = lambda k: [numpy_helper.from_array(np.full(32, v, np.float32), n + k)
                     for n, v in (("gamma", 1.0), ("beta", 0.1), ("mean", 0.0),
                                  ("var", 1.0))]
save("conv_wide", conv_block(),
     [wide_w("W", (8, 108)), ints("image", [4, 3, 6, 6]),
      wide_w("K1", (32, 3, 3, 3)), wide_w("K2", (32, 32, 3, 3)),
      ints("flat", [4, 32]), wide_w("W2", (32, 10))] + wide_bn("1") +
     wide_bn("2"), opset=15)
# conv_wide on 32x32 images: channels last, each batch norm's 32
# channels are one block's lanes and its rows split over blocks (16 at
# batch 4 after conv1, 4 after the pool), fewer than a block's row
# threads, so the main kernels share the partial sums among rows.
save("conv_tall", conv_block(),
     [wide_w("W", (8, 3072)), ints("image", [4, 3, 32, 32]),
      wide_w("K1", (32, 3, 3, 3)), wide_w("K2", (32, 32, 3, 3)),
      ints("flat", [4, 32]), wide_w("W2", (32, 10))] + wide_bn("1") +
     wide_bn("2"), opset=15)


# A GAN of convolutions (`mpc train --phase` under --layout nhwc): the
# generator maps noise z [4, 8] to a 3x6x6 image (MatMul, Conv, Tanh); the
# discriminator (Conv, LeakyRelu, flatten, MatMul) scores x and the fake
# with the same weights; d_loss = mean softplus(-D(x)) + mean softplus(D(G(z))),
# g_loss = mean softplus(-D(G(z))). Its own generator.
gan = np.random.default_rng(11)
gan_w = lambda name, shape: numpy_helper.from_array(
    (gan.standard_normal(shape) * 0.3).astype(np.float32), name)


def discriminator(img, tag):
    return [
        helper.make_node("Conv", [img, "D.K"], [f"dc_{tag}"], name=f"D.conv_{tag}",
                         pads=[1, 1, 1, 1]),
        helper.make_node("LeakyRelu", [f"dc_{tag}"], [f"da_{tag}"],
                         name=f"D.act_{tag}", alpha=0.2),
        helper.make_node("Reshape", [f"da_{tag}", "flat144"], [f"df_{tag}"],
                         name=f"D.flatten_{tag}"),
        helper.make_node("MatMul", [f"df_{tag}", "D.W"], [f"d_{tag}"],
                         name=f"D.score_{tag}"),
    ]


def mean_softplus(v, negate, out):
    src = v
    nodes = []
    if negate:
        nodes.append(helper.make_node("Neg", [v], [v + "_neg"], name=out + "_neg"))
        src = v + "_neg"
    return nodes + [
        helper.make_node("Softplus", [src], [out + "_sp"], name=out + "_softplus"),
        helper.make_node("ReduceMean", [out + "_sp"], [out], name=out + "_mean",
                         keepdims=0),
    ]


gan_graph = helper.make_graph(
    [helper.make_node("MatMul", ["z", "G.W"], ["gh"], name="G.proj"),
     helper.make_node("Reshape", ["gh", "image"], ["gi"], name="G.to_image"),
     helper.make_node("Conv", ["gi", "G.K"], ["gc"], name="G.conv",
                      pads=[1, 1, 1, 1]),
     helper.make_node("Tanh", ["gc"], ["fake"], name="G.tanh")] +
    discriminator("x", "real") + discriminator("fake", "fake") +
    mean_softplus("d_real", True, "d_real_loss") +
    mean_softplus("d_fake", False, "d_fake_loss") +
    mean_softplus("d_fake", True, "g_loss") +
    [helper.make_node("Add", ["d_real_loss", "d_fake_loss"], ["d_loss"],
                      name="d_loss")],
    "conv_gan",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 3, 6, 6]),
     helper.make_tensor_value_info("z", TensorProto.FLOAT, [4, 8])],
    [helper.make_tensor_value_info("d_loss", TensorProto.FLOAT, []),
     helper.make_tensor_value_info("g_loss", TensorProto.FLOAT, [])],
    [gan_w("G.W", (8, 108)), ints("image", [4, 3, 6, 6]),
     gan_w("G.K", (3, 3, 3, 3)), gan_w("D.K", (4, 3, 3, 3)),
     ints("flat144", [4, 144]), gan_w("D.W", (144, 1))])
gan_model = helper.make_model(gan_graph,
                              opset_imports=[helper.make_opsetid("", 17)])
onnx.checker.check_model(gan_model)
onnx.save(gan_model, os.path.join(out, "conv_gan.onnx"))


# Residual Adds into norms (see the docstring). Its own generator.
res = np.random.default_rng(13)


def residual_norms(name, d):
    w = lambda n, shape, scale: numpy_helper.from_array(
        (res.standard_normal(shape) * scale).astype(np.float32), n)
    near1 = lambda n: numpy_helper.from_array(
        (1 + 0.1 * res.standard_normal(d)).astype(np.float32), n)
    mm = lambda a, b, o: helper.make_node("MatMul", [a, b], [o], name=o)
    add = lambda a, b, o: helper.make_node("Add", [a, b], [o], name=o)
    save(name, [
        mm("x", "W0", "h0"), mm("h0", "W1", "h1"), add("h0", "h1", "r1"),
        helper.make_node("RMSNormalization", ["r1", "s"], ["n1"], name="rms",
                         axis=-1, epsilon=1e-3),
        mm("n1", "W2", "h2"), add("r1", "h2", "r2"),
        helper.make_node("LayerNormalization", ["r2", "g", "b"], ["n2"],
                         name="ln", axis=-1, epsilon=1e-3),
        mm("n2", "W3", "h3"), add("n2", "h3", "r3"),
        helper.make_node("LayerNormalization", ["r3", "g2", "b2"], ["n3"],
                         name="post_ln", axis=-1, epsilon=1e-3),
        mm("n3", "W4", "scores"),
    ], [w("W0", (8, d), 0.3), w("W1", (d, d), 0.1), near1("s"),
        w("W2", (d, d), 0.1), near1("g"), w("b", (d,), 0.1),
        w("W3", (d, d), 0.1), near1("g2"), w("b2", (d,), 0.1),
        w("W4", (d, 10), 0.3)], opset=23)


residual_norms("residual_norms", 64)
residual_norms("residual_norms_narrow", 40)


# Label smoothing (see the docstring). Its own generator.
smooth = np.random.default_rng(17)
smooth_graph = helper.make_graph(
    [helper.make_node("MatMul", ["x", "W"], ["scores"], name="head"),
     helper.make_node("LogSoftmax", ["scores"], ["logp"], name="log_softmax",
                      axis=1),
     helper.make_node("NegativeLogLikelihoodLoss", ["logp", "labels"], ["nll"],
                      name="nll"),
     helper.make_node("ReduceMean", ["logp"], ["mean_logp"], name="smooth",
                      keepdims=0),
     helper.make_node("Mul", ["nll", "keep"], ["a"], name="keep_nll"),
     helper.make_node("Mul", ["mean_logp", "spread"], ["b"], name="spread_mean"),
     helper.make_node("Sub", ["a", "b"], ["loss"], name="loss")],
    "label_smoothing",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 8]),
     helper.make_tensor_value_info("labels", TensorProto.INT64, [4])],
    [helper.make_tensor_value_info("loss", TensorProto.FLOAT, [])],
    [numpy_helper.from_array(
        (smooth.standard_normal((8, 10)) * 0.3).astype(np.float32), "W"),
     const("keep", 0.9), const("spread", 0.1)])
smooth_model = helper.make_model(smooth_graph,
                                 opset_imports=[helper.make_opsetid("", 17)])
onnx.checker.check_model(smooth_model)
onnx.save(smooth_model, os.path.join(out, "label_smoothing.onnx"))
# (After the others: its weights come from the same generator.)
save("vocab_rows", [
    helper.make_node("MatMul", ["x", "W"], ["scores"], name="head"),
], [weight("W", (8, 3000))], rows=6)

# Last: the models above keep the weights they were drawn before it.
save("embed_rows", [
    helper.make_node("Gather", ["E", "ids"], ["e"], name="embed", axis=0),
    helper.make_node("ReduceMean", ["e"], ["r"], name="mean", axes=[0]),
    helper.make_node("MatMul", ["x", "W"], ["h"], name="proj"),
    helper.make_node("Add", ["h", "r"], ["h2"], name="join"),
    helper.make_node("MatMul", ["h2", "W2"], ["scores"], name="head"),
], [weight("E", (64, 8)), weight("W", (8, 8)), weight("W2", (8, 10)),
    ints("ids", [(7 * i) % 60 - 10 for i in range(300)])])

# seq_first_attention with heads of 40 (Stable Diffusion's head size, a
# multiple of 8, not 16): [4 positions, 2 sequences, 3 x 80] split into
# 2 x 2 heads of 40 a position; the mma kernels compute on 48 columns,
# reading and writing the 40 of each head in place. Its own generator.
heads40 = np.random.default_rng(8)
save("seq_first_attention_d40", seq_first_nodes("root"),
     [numpy_helper.from_array(
          (heads40.standard_normal((8, 480)) * 0.3).astype(np.float32), "W"),
      numpy_helper.from_array(
          (heads40.standard_normal((160, 10)) * 0.3).astype(np.float32), "W2"),
      ints("sbe", [4, 2, 240]), ints("thirds", [80, 80, 80]),
      ints("heads", [4, 4, 40]),
      numpy_helper.from_array(np.array(40 ** 0.5, np.float32), "root"),
      ints("rows", [4, 160])], opset=18)
