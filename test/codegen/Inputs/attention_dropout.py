"""Attention with dropout between softmax and V, as torch exports it in
training mode (Softmax -> Dropout(ratio, training_mode=True) -> MatMul),
fused by mpc-fuse-attention into mpc.attention with the mask redrawn, not
stored. The reference is float64 NumPy with the mask drawn by the Philox
of dropout_masks.py (written from the paper, checked against Random123's
known answers): the probability (b, h, i, j) is kept when its word at
index ((b H + h) Sq + i) Skv + j clears the threshold, the mask that
mpc.dropout on the unfused softmax draws.

The model: q, k, v (and a trainable additive bias) are initializers, the
input is `target`, outputs y and loss = sum(y * target); one SGD step at
lr 1 (step 0, the mask `mpc run` draws too) moves each initializer by
minus its gradient.

usage: attention_dropout.py make DIR
       attention_dropout.py check-forward DIR CASE Y.npy --rtol R
       attention_dropout.py check-grads DIR CASE TRAINED.onnx --rtol R
       attention_dropout.py check-steps DIR CASE METRICS.jsonl --rtol R

check-steps reads the losses of a run at lr 0 (the weights never move):
step s's loss is sum(y * target) with the mask of step s, so the losses
show that each step draws its own mask.
"""
import json
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "../../models/Inputs"))
from dropout_masks import mask  # noqa: E402

# name: (q shape, k shape, v shape, ratio, causal, trainable bias)
CASES = {
    # Even key count: the mma kernels draw a lane's pair of keys at once.
    "causal_40": ((1, 3, 40, 32), (1, 3, 40, 32), (1, 3, 40, 32), 0.2, True, False),
    # Odd key count: a draw per probability; the bias's gradient redraws
    # the mask through an mpc.dropout of dy v^T.
    "bias_33": ((1, 2, 24, 64), (1, 2, 33, 64), (1, 2, 33, 64), 0.3, False, True),
    # Head size 160: past 128, Q from a shared tile in the forward and
    # dQ's query blocks, dK and dV in key blocks of their own.
    "wide_160": ((1, 2, 20, 160), (1, 2, 20, 160), (1, 2, 20, 160), 0.1, False, False),
    # Head size 128: the backward's FlashAttention-2 layout (two key tiles
    # of 128, three query tiles of 64), four lanes' draws shared.
    "causal_152_d128": ((1, 2, 152, 128), (1, 2, 152, 128), (1, 2, 152, 128), 0.1, True, False),
    # Head size 40, computed on 48 (zero past each row).
    "causal_90_d40": ((1, 2, 90, 40), (1, 2, 90, 40), (1, 2, 90, 40), 0.2, True, False),
    # Grouped-query heads (4 q heads on 2), K and V repeated as Hugging
    # Face's repeat_kv writes it (Unsqueeze, Expand, Reshape): fused on the
    # two heads, each key block drawing the masks of both its q heads.
    "gqa_causal_72": ((1, 4, 72, 64), (1, 2, 72, 64), (1, 2, 72, 64), 0.2, True, False),
}


def repeated(x, qheads):
    """K or V with each head repeated for the q heads it serves."""
    return np.repeat(x, qheads // x.shape[1], axis=1)
DROPPED = "probs_dropped"  # the Dropout's output: its stream's name


def make(d):
    rng = np.random.default_rng(11)
    for name, (qs, ks, vs, ratio, causal, bias) in CASES.items():
        init = {n: rng.standard_normal(s).astype(np.float32)
                for n, s in (("q", qs), ("k", ks), ("v", vs))}
        sq, skv = qs[2], ks[2]
        init["scale"] = np.array(1 / np.sqrt(qs[3]), np.float32)
        init["ratio"] = np.array(ratio, np.float32)
        init["training"] = np.array(True)
        kk, vv = "k", "v"
        nodes = []
        if ks[1] != qs[1]:  # repeat_kv
            rep = qs[1] // ks[1]
            init["heads_axis"] = np.array([2], np.int64)
            init["rep"] = np.array([1, 1, rep, 1, 1], np.int64)
            for x, dim in (("k", ks[3]), ("v", vs[3])):
                init[f"{x}_shape"] = np.array([0, qs[1], -1, dim], np.int64)
                nodes += [helper.make_node("Unsqueeze", [x, "heads_axis"], [f"{x}_u"]),
                          helper.make_node("Expand", [f"{x}_u", "rep"], [f"{x}_e"]),
                          helper.make_node("Reshape", [f"{x}_e", f"{x}_shape"], [f"{x}_r"])]
            kk, vv = "k_r", "v_r"
        nodes += [helper.make_node("Transpose", [kk], ["kt"], perm=[0, 1, 3, 2]),
                 helper.make_node("MatMul", ["q", "kt"], ["qk"]),
                 helper.make_node("Mul", ["qk", "scale"], ["scores"])]
        last = "scores"
        if causal:
            init["future"] = np.triu(np.ones((sq, skv), bool), 1 + skv - sq)
            init["neg_inf"] = np.array(-np.inf, np.float32)
            nodes.append(helper.make_node("Where", ["future", "neg_inf", last],
                                          ["masked"]))
            last = "masked"
        if bias:
            init["bias"] = rng.standard_normal((sq, skv)).astype(np.float32)
            nodes.append(helper.make_node("Add", [last, "bias"], ["biased"]))
            last = "biased"
        yshape = list(qs[:3]) + [vs[3]]
        nodes += [helper.make_node("Softmax", [last], ["probs"], axis=-1),
                  helper.make_node("Dropout", ["probs", "ratio", "training"],
                                   [DROPPED]),
                  helper.make_node("MatMul", [DROPPED, vv], ["y"]),
                  helper.make_node("Mul", ["y", "target"], ["yt"]),
                  helper.make_node("ReduceSum", ["yt"], ["loss"], keepdims=0)]
        g = helper.make_graph(
            nodes, name,
            [helper.make_tensor_value_info("target", TensorProto.FLOAT, yshape)],
            [helper.make_tensor_value_info("loss", TensorProto.FLOAT, []),
             helper.make_tensor_value_info("y", TensorProto.FLOAT, yshape)],
            [numpy_helper.from_array(v, n) for n, v in init.items()])
        onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]),
                  f"{d}/{name}.onnx")
        np.save(f"{d}/{name}.target.npy",
                (1e-3 * rng.standard_normal(yshape)).astype(np.float32))


def initializers(path):
    return {t.name: numpy_helper.to_array(t)
            for t in onnx.load(path).graph.initializer}


def forward(name, w, step=0):
    """y and what the backward needs, in float64."""
    qs, ks, _, ratio, causal, bias = CASES[name]
    q, k, v = (w[n].astype(np.float64) for n in "qkv")
    k, v = repeated(k, qs[1]), repeated(v, qs[1])
    scale = np.float64(np.float32(1 / np.sqrt(qs[3])))
    s = scale * q @ np.swapaxes(k, -1, -2)
    if causal:
        s = np.where(w["future"], -np.inf, s)
    if bias:
        s = s + w["bias"]
    p = np.exp(s - s.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    keep = mask(p.size, DROPPED, step, np.float32(ratio)).reshape(p.shape)
    z = keep / (1 - np.float64(np.float32(ratio)))
    return (p * z) @ v, p, z, scale


def check_forward(d, name, y_path, rtol):
    w = initializers(f"{d}/{name}.onnx")
    want = forward(name, w)[0]
    got = np.load(y_path).astype(np.float64)
    err = float(np.max(np.abs(got - want)) / np.max(np.abs(want)))
    good = err <= rtol
    print(f"{name} y: {err:.2e} {'ok' if good else 'FAIL'}")
    sys.exit(0 if good else 1)


def check_grads(d, name, trained, rtol):
    before = initializers(f"{d}/{name}.onnx")
    after = initializers(trained)
    y, p, z, scale = forward(name, before)
    q, k, v = (before[n].astype(np.float64) for n in "qkv")
    heads = k.shape[1]
    k, v = repeated(k, q.shape[1]), repeated(v, q.shape[1])
    dy = np.load(f"{d}/{name}.target.npy").astype(np.float64)
    dp = dy @ np.swapaxes(v, -1, -2)
    ds = p * (dp * z - (dy * y).sum(-1, keepdims=True))

    def summed(x):  # a K or V head's gradient: the sum over its q heads
        return x.reshape(x.shape[0], heads, -1, *x.shape[2:]).sum(2)
    want = {"q": scale * ds @ k, "k": summed(scale * np.swapaxes(ds, -1, -2) @ q),
            "v": summed(np.swapaxes(p * z, -1, -2) @ dy)}
    if CASES[name][5]:
        want["bias"] = ds.sum(axis=(0, 1))
    ok = True
    for n, g in want.items():
        got = before[n].astype(np.float64) - after[n].astype(np.float64)  # lr 1
        err = float(np.max(np.abs(got - g)) / np.max(np.abs(g)))
        good = err <= rtol
        ok &= good
        print(f"{name} d{n}: {err:.2e} {'ok' if good else 'FAIL'}")
    sys.exit(0 if ok else 1)


def check_steps(d, name, metrics, rtol):
    w = initializers(f"{d}/{name}.onnx")
    target = np.load(f"{d}/{name}.target.npy").astype(np.float64)
    got = [json.loads(line)["loss"] for line in open(metrics)]
    want = [float((forward(name, w, s)[0] * target).sum()) for s in range(len(got))]
    err = max(abs(g - x) / abs(x) for g, x in zip(got, want))
    distinct = len(set(np.round(want, 12)))
    good = err <= rtol and distinct == len(want) > 1
    print(f"{name}: {len(got)} steps, {distinct} distinct masks, "
          f"{err:.2e} {'ok' if good else 'FAIL'}")
    sys.exit(0 if good else 1)


if __name__ == "__main__":
    rtol = float(sys.argv[sys.argv.index("--rtol") + 1]) if "--rtol" in sys.argv else 0
    if sys.argv[1] == "make":
        make(sys.argv[2])
    elif sys.argv[1] == "check-forward":
        check_forward(sys.argv[2], sys.argv[3], sys.argv[4], rtol)
    elif sys.argv[1] == "check-steps":
        check_steps(sys.argv[2], sys.argv[3], sys.argv[4], rtol)
    else:
        check_grads(sys.argv[2], sys.argv[3], sys.argv[4], rtol)
