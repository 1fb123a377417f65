"""Attention shapes for the tensor-core attention kernel, as ONNX
Attention-23 models with FP32 inputs (compiled with --precision fp16 or
bf16, so the fused kernel runs in that type): sequence lengths that are
no multiple of the tiles, causal with more keys than queries, an additive
mask (the bias path), head size 128, a value head size other than the
query's (query and key 48: three 16-dim steps, the last loaded by a
two-tile ldmatrix), and head sizes past 128 (160, 200, 256: Q's
fragments from a 64-row shared tile).

`make DIR` writes DIR/<case>.onnx and DIR/<case>/in/*.npy.
`check DIR CASE OUTDIR --rtol R` compares OUTDIR/y.npy with a float64
NumPy attention on the same inputs (normwise: max|got - ref| / max|ref|).
"""
import os
import sys

import numpy as np

# name: (q shape, k shape, v shape, causal, mask shape or None)
CASES = {
    "causal_40": ((2, 3, 40, 32), (2, 3, 40, 32), (2, 3, 40, 32), 1, None),
    "causal_offset": ((1, 2, 24, 64), (1, 2, 56, 64), (1, 2, 56, 64), 1, None),
    # Head size 128: Q's tile in shared memory on sm_80/sm_90, 32-key
    # tiles, five (the last partial), so buffers are refilled.
    "mask_d128": ((1, 2, 33, 128), (1, 2, 150, 128), (1, 2, 150, 128), 0, (33, 150)),
    # Past head size 64, blocks of 128 queries reading Q from shared
    # memory: two (causal: the second first), the last partial; 7 steps
    # of 16 dims (the last by a two-tile ldmatrix), a value head size of 80.
    "causal_d112": ((1, 2, 200, 112), (1, 2, 200, 112), (1, 2, 200, 80), 1, None),
    "qk_48": ((2, 2, 20, 48), (2, 2, 36, 48), (2, 2, 36, 32), 0, None),
    "wide_160": ((1, 2, 24, 160), (1, 2, 40, 160), (1, 2, 40, 160), 1, None),
    # Whole 64-key tiles that every row of a warp sees (no mask applied)
    # beside the diagonal's and the last partial one.
    "causal_long": ((1, 1, 80, 32), (1, 1, 130, 32), (1, 1, 130, 32), 1, None),
    # Blocks of 128 queries (two 16-row tiles a warp at head size 64):
    # several blocks, the last partial, its second tiles past the end.
    "causal_300": ((1, 2, 300, 64), (1, 2, 300, 64), (1, 2, 300, 64), 1, None),
    "mask_200": ((1, 1, 200, 64), (1, 1, 150, 64), (1, 1, 150, 64), 0, (200, 150)),
    # Head sizes that are multiples of 8, not 16 (Stable Diffusion's 40;
    # 72 with a value head of 24): computed on 48, 80 and 32, zero past
    # the rows.
    "causal_d40": ((2, 2, 70, 40), (2, 2, 70, 40), (2, 2, 70, 40), 1, None),
    "mask_d72": ((1, 2, 50, 72), (1, 2, 90, 72), (1, 2, 90, 24), 0, (50, 90)),
    # Past head size 128: one row tile a warp, Q from a 64-row shared
    # tile; 256 causal over several key tiles and two query blocks, 200
    # (208) with a value head of 136 (144) and a mask.
    "causal_d256": ((1, 2, 100, 256), (1, 2, 100, 256), (1, 2, 100, 256), 1, None),
    "mask_d200": ((1, 1, 40, 200), (1, 1, 90, 200), (1, 1, 90, 136), 0, (40, 90)),
    # Rows no multiple of 16 bytes: the SIMT kernel.
    "head_36": ((1, 2, 20, 36), (1, 2, 20, 36), (1, 2, 20, 36), 1, None),
    # Sliding windows (WINDOWS: ONNX Attention-25's left and right window
    # sizes, -1 for none): causal with a left window of 40 over three
    # 64-key tiles (Mistral's local attention); both windows beside a mask
    # with more keys than queries at head size 128; a right window alone
    # at head size 40.
    "window_causal": ((1, 2, 150, 64), (1, 2, 150, 64), (1, 2, 150, 64), 1, None),
    "window_both_d128": ((1, 1, 100, 128), (1, 1, 180, 128), (1, 1, 180, 96), 0, (100, 180)),
    "window_right_d40": ((2, 1, 70, 40), (2, 1, 70, 40), (2, 1, 70, 40), 0, None),
    # Grouped-query heads (K and V heads fewer than Q's, each serving a
    # group: Llama 3, Mistral, Gemma): 4 q heads on 2, causal over two
    # query blocks; 8 on 2 with a mask at head size 128, two batches.
    "gqa_causal": ((1, 4, 100, 64), (1, 2, 100, 64), (1, 2, 100, 64), 1, None),
    "gqa_mask_d128": ((2, 8, 40, 128), (2, 2, 70, 128), (2, 2, 70, 96), 0, (40, 70)),
    # A softcap (Gemma 2's logit cap, c tanh(s / c) on the scaled scores):
    # causal at head size 64, and beside a mask at head size 128.
    "softcap_causal": ((1, 2, 100, 64), (1, 2, 100, 64), (1, 2, 100, 64), 1, None),
    "softcap_mask_d128": ((1, 2, 40, 128), (1, 2, 70, 128), (1, 2, 70, 128), 0, (40, 70)),
}
WINDOWS = {"window_causal": (40, -1), "window_both_d128": (30, 20),
           "window_right_d40": (-1, 10)}
SOFTCAP = {"softcap_causal": 2.0, "softcap_mask_d128": 1.5}


def visible(name, sq, skv):
    """Keys query i sees (ONNX's alignment without a past: d = i - j)."""
    return band(CASES[name][3], *WINDOWS.get(name, (-1, -1)), sq, skv)


def attention_attrs(window, softcap):
    """ONNX Attention's window sizes (a (left, right) pair) and softcap,
    where given. attention_grads.py's models too."""
    attrs = {}
    if window:
        attrs.update(left_window_size=window[0], right_window_size=window[1])
    if softcap:
        attrs["softcap"] = softcap
    return attrs


def band(causal, left, right, sq, skv):
    """ONNX Attention's causal and sliding-window mask without a past
    (-1: no window): key j is seen by query i where d = i - j is >= 0
    (causal), <= left, >= -right. attention_grads.py's reference too."""
    d = np.arange(sq)[:, None] - np.arange(skv)[None, :]
    ok = np.ones((sq, skv), bool)
    if causal:
        ok &= d >= 0
    if left >= 0:
        ok &= d <= left
    if right >= 0:
        ok &= d >= -right
    return ok


def model(name):
    # (onnx only to build the model: `check` runs without its 0.3 s import.)
    from onnx import TensorProto, helper
    q, k, v, causal, mask = CASES[name]
    f = TensorProto.FLOAT
    vi = helper.make_tensor_value_info
    ins = ["q", "k", "v"] + (["mask"] if mask else [])
    node = helper.make_node("Attention", ins, ["y"], is_causal=causal,
                            **attention_attrs(WINDOWS.get(name), SOFTCAP.get(name)))
    inputs = [vi("q", f, q), vi("k", f, k), vi("v", f, v)]
    if mask:
        inputs.append(vi("mask", f, mask))
    g = helper.make_graph([node], name, inputs,
                          [vi("y", f, list(q[:3]) + [v[3]])])
    return helper.make_model(
        g, opset_imports=[helper.make_opsetid("", 25 if name in WINDOWS else 23)])


def reference(name, x):
    _, _, _, causal, mask = CASES[name]
    q, k, v = (x[n].astype(np.float64) for n in "qkv")
    rep = q.shape[-3] // k.shape[-3]  # grouped-query: q head h reads h // rep
    k, v = np.repeat(k, rep, axis=-3), np.repeat(v, rep, axis=-3)
    s = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
    if name in SOFTCAP:
        s = SOFTCAP[name] * np.tanh(s / SOFTCAP[name])
    if mask:
        s = s + x["mask"]
    # ONNX's is_causal: key j visible to query i when j <= i (top-left).
    s = np.where(visible(name, *s.shape[-2:]), s, -np.inf)
    m = s.max(-1, keepdims=True)
    dead = m == -np.inf  # no key seen: y = 0 (ONNX's rule)
    p = np.where(dead, 0.0, np.exp(s - np.where(dead, 0.0, m)))
    return (p / np.where(dead, 1.0, p.sum(-1, keepdims=True))) @ v


def make(d):
    rng = np.random.default_rng(3)
    for name in CASES:
        m = model(name)
        with open(f"{d}/{name}.onnx", "wb") as f:
            f.write(m.SerializeToString())
        os.makedirs(f"{d}/{name}/in", exist_ok=True)
        for i in m.graph.input:
            shape = [x.dim_value for x in i.type.tensor_type.shape.dim]
            v = rng.standard_normal(shape).astype(np.float32)
            np.save(f"{d}/{name}/in/{i.name}.npy", v if i.name != "mask" else 2 * v)


def check(d, name, out, rtol):
    x = {n: np.load(f"{d}/{name}/in/{n}.npy") for n in ("q", "k", "v", "mask")
         if os.path.exists(f"{d}/{name}/in/{n}.npy")}
    ref = reference(name, x)
    got = np.load(f"{out}/y.npy").astype(np.float64)
    err = float(np.max(np.abs(got - ref)) / np.max(np.abs(ref))) if got.shape == ref.shape else np.inf
    print(f"{name}: {err:.2e} {'ok' if err <= rtol else 'FAIL'}")
    sys.exit(0 if err <= rtol else 1)


if __name__ == "__main__":
    if sys.argv[1] == "make":
        make(sys.argv[2])
    else:
        check(sys.argv[2], sys.argv[3], sys.argv[4], float(sys.argv[sys.argv.index("--rtol") + 1]))
