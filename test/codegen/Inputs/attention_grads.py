"""Gradients of the fused attention (the tensor-core backward kernel) as
one SGD step shows them: q, k and v are a model's initializers, the loss
is sum(Attention(q, k, v) * target) (target scaled by 1e-3 so the loss
scale keeps it in fp16), and after `mpc train ... --steps 1 --optimizer
sgd --lr 1 -o trained.onnx` each initializer has moved by minus its
gradient. `check` compares that with a float64 NumPy backward on the
fp16-rounded q, k and v (normwise per tensor), and where the cases add a
mask, the mask's too: an initializer, so trained, a learned bias (Swin's,
T5's), whose gradient the backward's key blocks write as dS.

`shapes` writes models for plans only (no values checked): q = k = v =
x W at real sizes (H heads x S tokens x 64, from a [16, 64] weight, so
the files stay small), heads_H_S.onnx.

usage: attention_grads.py make DIR
       attention_grads.py shapes DIR H:S [H:S ...]
       attention_grads.py check DIR CASE TRAINED.onnx --rtol R [--fp32]
(--fp32: the reference on the FP32 q, k and v, for a step trained in FP32)
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from attention_forms import attention_attrs, band  # noqa: E402 (shared with the forward's)

# name: (q shape, k shape, v shape, causal, with an additive mask)
CASES = {
    "causal_40": ((1, 3, 40, 32), (1, 3, 40, 32), (1, 3, 40, 32), 1, False),
    "causal_offset": ((1, 2, 24, 64), (1, 2, 56, 64), (1, 2, 56, 64), 1, False),
    "mask_33": ((1, 2, 33, 64), (1, 2, 33, 64), (1, 2, 33, 64), 0, True),
    "value_48": ((1, 2, 20, 32), (1, 2, 36, 32), (1, 2, 36, 48), 0, False),
    "head_128": ((1, 2, 40, 128), (1, 2, 40, 128), (1, 2, 40, 128), 1, False),
    # Several key tiles of 64 a split of the dQ partial sums.
    "causal_200": ((1, 2, 200, 32), (1, 2, 200, 32), (1, 2, 200, 32), 1, False),
    "mask_160_d128": ((1, 1, 160, 128), (1, 1, 160, 128), (1, 1, 160, 128), 0, True),
    # Past head size 64, FlashAttention-2's layout: three key tiles of 128
    # over five query tiles of 64, causal; head size 96 (dQ's warps 4 x 2)
    # with a value head size of 128 and more keys than queries.
    "causal_300_d128": ((1, 2, 300, 128), (1, 2, 300, 128), (1, 2, 300, 128), 1, False),
    "offset_d96": ((1, 1, 72, 96), (1, 1, 200, 96), (1, 1, 200, 128), 1, False),
    # Head sizes that are multiples of 8, not 16, computed rounded up to
    # 16 (zero past the rows): Stable Diffusion's 40 over several tiles;
    # 72 with a value head of 56 and a mask; 120 and 88 (128 and 96: the
    # 8-warp layout past 64, dK and dV stored by halves); 8.
    "causal_d40": ((1, 2, 150, 40), (1, 2, 150, 40), (1, 2, 150, 40), 1, False),
    "mask_d72": ((1, 1, 50, 72), (1, 1, 90, 72), (1, 1, 90, 56), 0, True),
    "causal_d120": ((1, 1, 140, 120), (1, 1, 140, 120), (1, 1, 140, 88), 1, False),
    "head_8": ((1, 3, 33, 8), (1, 3, 33, 8), (1, 3, 33, 8), 0, False),
    # Past head size 128 (Stable Diffusion 1.x's 160, Gemma's 256): dK and
    # dV in key blocks of their own, dQ's query blocks reading Q and dO
    # from shared tiles; causal over three key tiles of 64 and three
    # query blocks; 256 with a value head of 200 (208) and a mask.
    "causal_d160": ((1, 2, 150, 160), (1, 2, 150, 160), (1, 2, 150, 160), 1, False),
    "mask_d256": ((1, 1, 70, 256), (1, 1, 90, 256), (1, 1, 90, 200), 0, True),
    # Sliding windows (WINDOWS: ONNX Attention-25's left and right window
    # sizes, -1 for none): causal with a left window of 50 over two key
    # blocks of 128 and seven query tiles; both windows beside a mask at
    # head size 96 (the 8-warp layout) with more keys than queries; causal
    # with a left window at head size 160.
    "window_causal": ((1, 2, 200, 64), (1, 2, 200, 64), (1, 2, 200, 64), 1, False),
    "window_both_d96": ((1, 1, 120, 96), (1, 1, 160, 96), (1, 1, 160, 96), 0, True),
    "window_d160": ((1, 1, 150, 160), (1, 1, 150, 160), (1, 1, 150, 160), 1, False),
    # Grouped-query heads: 4 q heads on 2 causal over two key blocks (each
    # K and V head's key blocks walk both its q heads' queries); 6 on 2
    # with a mask at head size 128 (the 8-warp layout); 4 on 1 at 160.
    "gqa_causal": ((1, 4, 150, 64), (1, 2, 150, 64), (1, 2, 150, 64), 1, False),
    "gqa_mask_d128": ((1, 6, 60, 128), (1, 2, 90, 128), (1, 2, 90, 128), 0, True),
    "gqa_d160": ((1, 4, 70, 160), (1, 1, 70, 160), (1, 1, 70, 160), 1, False),
    # A softcap (Gemma 2's): causal over two key blocks; with a mask at
    # head size 96 (the 8-warp layout); at head size 160.
    "softcap_causal": ((1, 2, 150, 64), (1, 2, 150, 64), (1, 2, 150, 64), 1, False),
    "softcap_mask_d96": ((1, 1, 70, 96), (1, 1, 90, 96), (1, 1, 90, 96), 0, True),
    "softcap_d160": ((1, 1, 80, 160), (1, 1, 80, 160), (1, 1, 80, 160), 1, False),
    # Gemma 2's global layers: head size 256, 2 q heads a K and V head,
    # causal, a softcap; three key blocks of 64 (of 16 queries a tile
    # where SMs have 100 KiB).
    "gemma_d256": ((1, 2, 150, 256), (1, 1, 150, 256), (1, 1, 150, 256), 1, False),
    # A trained bias under a causal band (T5's decoder): the key blocks
    # skip the tiles the band hides, whose dS a prologue zeroes (last: the
    # cases before draw the same values).
    "causal_mask": ((1, 2, 150, 64), (1, 2, 150, 64), (1, 2, 150, 64), 1, True),
    # Smaller forms of causal_d160 (one head) and gemma_d256 (80 tokens:
    # two key blocks, five query tiles of 16) for racecheck.test, whose
    # instrumented runs cost some 30 times the plain ones.
    "causal_d160_1h": ((1, 1, 150, 160), (1, 1, 150, 160), (1, 1, 150, 160), 1, False),
    "gemma_d256_80": ((1, 2, 80, 256), (1, 1, 80, 256), (1, 1, 80, 256), 1, False),
}
WINDOWS = {"window_causal": (50, -1), "window_both_d96": (24, 16),
           "window_d160": (40, -1)}
SOFTCAP = {"softcap_causal": 2.0, "softcap_mask_d96": 1.5, "softcap_d160": 2.5,
           "gemma_d256": 2.0, "gemma_d256_80": 2.0}


def make(d):
    rng = np.random.default_rng(5)
    for name, (qs, ks, vs, causal, masked) in CASES.items():
        init = {n: rng.standard_normal(s).astype(np.float32)
                for n, s in (("q", qs), ("k", ks), ("v", vs))}
        if masked:
            init["mask"] = rng.standard_normal((qs[2], ks[2])).astype(np.float32)
        ins = ["q", "k", "v"] + (["mask"] if masked else [])
        yshape = list(qs[:3]) + [vs[3]]
        attrs = attention_attrs(WINDOWS.get(name), SOFTCAP.get(name))
        nodes = [helper.make_node("Attention", ins, ["y"], is_causal=causal, **attrs),
                 helper.make_node("Mul", ["y", "target"], ["yt"]),
                 helper.make_node("ReduceSum", ["yt"], ["loss"], keepdims=0)]
        g = helper.make_graph(
            nodes, name,
            [helper.make_tensor_value_info("target", TensorProto.FLOAT, yshape)],
            [helper.make_tensor_value_info("loss", TensorProto.FLOAT, [])],
            [numpy_helper.from_array(v, n) for n, v in init.items()])
        opset = 25 if name in WINDOWS else 23
        onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)]),
                  f"{d}/{name}.onnx")
        np.save(f"{d}/{name}.target.npy",
                (1e-3 * rng.standard_normal(yshape)).astype(np.float32))


def shapes(d, specs):
    w = np.random.default_rng(6).standard_normal((16, 64)).astype(np.float32)
    for spec in specs:
        h, n = (int(v) for v in spec.split(":"))
        nodes = [helper.make_node("MatMul", ["x", "w"], ["q"]),
                 helper.make_node("Attention", ["q", "q", "q"], ["y"], is_causal=1),
                 helper.make_node("ReduceSum", ["y"], ["loss"], keepdims=0)]
        g = helper.make_graph(
            nodes, f"heads_{h}_{n}",
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, h, n, 16])],
            [helper.make_tensor_value_info("loss", TensorProto.FLOAT, [])],
            [numpy_helper.from_array(w, "w")])
        onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 23)]),
                  f"{d}/heads_{h}_{n}.onnx")


def reference(name, w, target, fp32=False):
    _, _, _, causal, masked = CASES[name]
    q, k, v = (w[n].astype(np.float32 if fp32 else np.float16).astype(np.float64)
               for n in "qkv")
    scale = 1 / np.sqrt(q.shape[-1])
    rep = q.shape[-3] // k.shape[-3]  # grouped-query: q head h reads h // rep
    k, v = np.repeat(k, rep, axis=-3), np.repeat(v, rep, axis=-3)
    s = scale * q @ np.swapaxes(k, -1, -2)
    cap = SOFTCAP.get(name, 0.0)
    slope = 1.0
    if cap:
        t = np.tanh(s / cap)
        s, slope = cap * t, 1 - t * t
    if masked:
        s = s + w["mask"]
    seen = band(causal, *WINDOWS.get(name, (-1, -1)), *s.shape[-2:])
    s = np.where(seen, s, -np.inf)
    m = s.max(-1, keepdims=True)
    dead = m == -np.inf  # no key seen: p = 0 (ONNX's rule)
    p = np.where(dead, 0.0, np.exp(s - np.where(dead, 0.0, m)))
    p /= np.where(dead, 1.0, p.sum(-1, keepdims=True))
    dy = target.astype(np.float64)
    dv = np.swapaxes(p, -1, -2) @ dy
    dp = dy @ np.swapaxes(v, -1, -2)
    dbiased = p * (dp - (dp * p).sum(-1, keepdims=True))  # d loss / d (s + mask)
    ds = slope * dbiased
    def heads(x):  # a K or V head's gradient: the sum over its q heads
        return x.reshape(x.shape[:-3] + (-1, rep) + x.shape[-2:]).sum(-3)
    want = {"q": scale * ds @ k, "k": heads(scale * np.swapaxes(ds, -1, -2) @ q),
            "v": heads(dv)}
    if masked:  # the trained [Sq, Skv] mask: dS summed over batch and heads
        want["mask"] = dbiased.reshape((-1,) + dbiased.shape[-2:]).sum(0)
    return want


def check(d, name, trained, rtol, fp32=False):
    before = {t.name: numpy_helper.to_array(t) for t in onnx.load(f"{d}/{name}.onnx").graph.initializer}
    after = {t.name: numpy_helper.to_array(t) for t in onnx.load(trained).graph.initializer}
    want = reference(name, before, np.load(f"{d}/{name}.target.npy"), fp32)
    ok = True
    for n in want:
        got = before[n].astype(np.float64) - after[n].astype(np.float64)  # lr 1
        err = float(np.max(np.abs(got - want[n])) / np.max(np.abs(want[n])))
        good = err <= rtol
        ok &= good
        print(f"{name} d{n}: {err:.2e} {'ok' if good else 'FAIL'}")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    if sys.argv[1] == "make":
        make(sys.argv[2])
    elif sys.argv[1] == "shapes":
        shapes(sys.argv[2], sys.argv[3:])
    else:
        check(sys.argv[2], sys.argv[3], sys.argv[4], float(sys.argv[sys.argv.index("--rtol") + 1]),
              "--fp32" in sys.argv)
