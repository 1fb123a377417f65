"""Dropout's masks against an independent Philox4x32-10 (Salmon et al.,
SC 2011), written here from the paper and checked against Random123's
known-answer vectors.

usage: dropout_masks.py kat
       dropout_masks.py model OUT_DIR        (model.onnx, x.npy, expected.json)
       dropout_masks.py check OUT_DIR METRICS.jsonl
       dropout_masks.py forward OUT_DIR      (fwd.onnx, the mask as an output)
       dropout_masks.py check-forward OUT_DIR Y.npy MASK.npy
       dropout_masks.py chained OUT_DIR      (chain_a/b.onnx, the mask unread)
       dropout_masks.py check-chained OUT_DIR NAME Y.npy
       dropout_masks.py norm OUT_DIR         (norm_a/b.onnx: LN(r + dropout(x)))
       dropout_masks.py check-norm OUT_DIR NAME Y.npy

The model: loss = sum(dropout(x * w, 0.25)), trained with lr 0, so w never
moves and each step's loss is the sum of the elements its mask keeps:
the losses read back the mask of every step (runtime/Philox.h's counter
is the step's number).
"""
import json
import os
import sys

import numpy as np

M0, M1, W0, W1 = 0xD2511F53, 0xCD9E8D57, 0x9E3779B9, 0xBB67AE85
RATIO = np.float32(0.25)


def philox(c, k):
    c = list(c)
    k0, k1 = k
    for _ in range(10):
        p0, p1 = M0 * c[0], M1 * c[2]
        c = [((p1 >> 32) ^ c[1] ^ k0) & 0xffffffff, p1 & 0xffffffff,
             ((p0 >> 32) ^ c[3] ^ k1) & 0xffffffff, p0 & 0xffffffff]
        k0, k1 = (k0 + W0) & 0xffffffff, (k1 + W1) & 0xffffffff
    return c


def kat():
    # Random123's kat_vectors for philox4x32_10.
    cases = [((0, 0, 0, 0), (0, 0),
              (0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8)),
             ((0xffffffff,) * 4, (0xffffffff,) * 2,
              (0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd)),
             ((0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344),
              (0xa4093822, 0x299f31d0),
              (0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1))]
    for c, k, want in cases:
        assert tuple(philox(c, k)) == want, (c, k)
    print("philox4x32-10 known answers: ok")


def stream(name):
    h = 2166136261
    for ch in name.encode():
        h = ((h ^ ch) * 16777619) & 0xffffffff
    return h


def mask(n, name, step, ratio=RATIO, seed=0):
    threshold = int(np.float64(ratio) * 2.0 ** 32)
    key = ((seed & 0xffffffff) ^ (seed >> 32), stream(name))
    words = []
    for g in range((n + 3) // 4):
        words += philox((g & 0xffffffff, g >> 32, step & 0xffffffff,
                         step >> 32), key)
    return np.array(words[:n], dtype=np.uint64) >= threshold


def model(out):
    import onnx
    from onnx import TensorProto as T, helper as h, numpy_helper as nh
    rng = np.random.default_rng(0)
    x = rng.uniform(0.5, 1.5, (4, 16)).astype(np.float32)
    w = rng.uniform(0.5, 1.5, 16).astype(np.float32)
    f = T.FLOAT
    g = h.make_graph(
        [h.make_node("Mul", ["x", "w"], ["xw"]),
         h.make_node("Dropout", ["xw", "ratio", "training"], ["dropped"]),
         h.make_node("ReduceSum", ["dropped"], ["loss"], keepdims=0)],
        "g", [h.make_tensor_value_info("x", f, ["batch", 16])],
        [h.make_tensor_value_info("loss", f, [])],
        [nh.from_array(w, "w"), nh.from_array(np.array(RATIO), "ratio"),
         nh.from_array(np.array(True), "training")])
    onnx.save(h.make_model(g, opset_imports=[h.make_opsetid("", 17)]),
              os.path.join(out, "model.onnx"))
    np.save(os.path.join(out, "x.npy"), x)
    scale = np.float32(1) / (np.float32(1) - RATIO)
    xw = (x * w).ravel()
    losses = []
    for step in range(6):
        keep = mask(xw.size, "dropped", step)
        losses.append(float(np.where(keep, xw * scale, 0).sum(dtype=np.float64)))
    json.dump(losses, open(os.path.join(out, "expected.json"), "w"))


def check(out, metrics):
    want = json.load(open(os.path.join(out, "expected.json")))
    got = [json.loads(l)["loss"] for l in open(metrics)]
    assert len(got) == len(want), (len(got), len(want))
    err = max(abs(g - w) / abs(w) for g, w in zip(got, want))
    distinct = len({round(w, 3) for w in want})
    print(f"{len(got)} steps, {distinct} distinct masks, max relative "
          f"difference {err:.1e}: {'ok' if err < 1e-5 else 'FAIL'}")


def forward(out):
    import onnx
    from onnx import TensorProto as T, helper as h, numpy_helper as nh
    g = h.make_graph(
        [h.make_node("Dropout", ["x", "ratio", "training"], ["y", "mask"])],
        "g", [h.make_tensor_value_info("x", T.FLOAT, [6, 10])],
        [h.make_tensor_value_info("y", T.FLOAT, [6, 10]),
         h.make_tensor_value_info("mask", T.BOOL, [6, 10])],
        [nh.from_array(np.array(np.float32(0.3)), "ratio"),
         nh.from_array(np.array(True), "training")])
    onnx.save(h.make_model(g, opset_imports=[h.make_opsetid("", 17)]),
              os.path.join(out, "fwd.onnx"))
    np.save(os.path.join(out, "fx.npy"),
            np.arange(1, 61, dtype=np.float32).reshape(6, 10))


def check_forward(out, y, m):
    x = np.load(os.path.join(out, "fx.npy"))
    keep = mask(60, "y", 0, ratio=np.float32(0.3)).reshape(6, 10)
    scale = np.float32(1) / (np.float32(1) - np.float32(0.3))
    ok = (np.array_equal(np.load(m), keep) and
          np.array_equal(np.load(y), np.where(keep, x * scale, 0)))
    print(f"mask of {keep.size} elements, {keep.sum()} kept: "
          f"{'ok' if ok else 'FAIL'}")


# y = dropout(x * w + 0.5) with the mask unread: the CUDA backend draws
# the keep bits inside the elementwise chain's kernel. a: 96 elements,
# whole Philox groups on the vector path (4 lanes); b: 63, a draw per
# element; c: fp16, 8 lanes (two groups) a vector.
CHAINED = {"a": ((6, 16), (16,), np.float32), "b": ((7, 9), (1,), np.float32),
           "c": ((6, 16), (16,), np.float16)}


def chained(out):
    import onnx
    from onnx import TensorProto as T, helper as h, numpy_helper as nh
    rng = np.random.default_rng(3)
    for name, (shape, wshape, dt) in CHAINED.items():
        t = T.FLOAT16 if dt == np.float16 else T.FLOAT
        g = h.make_graph(
            [h.make_node("Mul", ["x", "w"], ["xw"]),
             h.make_node("Add", ["xw", "half"], ["z"]),
             h.make_node("Dropout", ["z", "ratio", "training"], ["y"])],
            "g", [h.make_tensor_value_info("x", t, list(shape))],
            [h.make_tensor_value_info("y", t, list(shape))],
            [nh.from_array(rng.uniform(0.5, 1.5, wshape).astype(dt), "w"),
             nh.from_array(np.array(dt(0.5)), "half"),
             nh.from_array(np.array(np.float32(0.3)), "ratio"),
             nh.from_array(np.array(True), "training")])
        onnx.save(h.make_model(g, opset_imports=[h.make_opsetid("", 17)]),
                  os.path.join(out, f"chain_{name}.onnx"))
        np.save(os.path.join(out, f"chain_{name}.x.npy"),
                rng.uniform(-2, 2, shape).astype(dt))


def check_chained(out, name, y):
    import onnx
    from onnx import numpy_helper as nh
    m = onnx.load(os.path.join(out, f"chain_{name}.onnx"))
    w = nh.to_array(m.graph.initializer[0])
    x = np.load(os.path.join(out, f"chain_{name}.x.npy"))
    z = x * w + x.dtype.type(0.5)  # fp16 rounds each op as the kernels do
    keep = mask(z.size, "y", 0, ratio=np.float32(0.3)).reshape(z.shape)
    scale = np.float32(1) / (np.float32(1) - np.float32(0.3))
    want = np.where(keep, z.astype(np.float32) * scale, 0).astype(x.dtype)
    ok = np.array_equal(np.load(y), want)
    print(f"chain {name}: {z.size} elements, {keep.sum()} kept: "
          f"{'ok' if ok else 'FAIL'}")


# y = LayerNorm(r + dropout(x)) with the mask unread: the CUDA layer norm
# draws the keep bits as it loads its input (a thread a row of 6: one draw
# an element; a warp a row of 64: whole Philox groups a vector).
NORMS = {"a": (5, 6), "b": (4, 64)}


def norm(out):
    import onnx
    from onnx import TensorProto as T, helper as h, numpy_helper as nh
    rng = np.random.default_rng(4)
    for name, shape in NORMS.items():
        io = lambda n: h.make_tensor_value_info(n, T.FLOAT, list(shape))
        g = h.make_graph(
            [h.make_node("Dropout", ["x", "ratio", "training"], ["d"]),
             h.make_node("Add", ["r", "d"], ["s"]),
             h.make_node("LayerNormalization", ["s", "g", "b"], ["y"],
                         axis=-1, epsilon=1e-5)],
            "g", [io("x"), io("r")], [io("y")],
            [nh.from_array(np.array(np.float32(0.3)), "ratio"),
             nh.from_array(np.array(True), "training"),
             nh.from_array(np.ones(shape[-1], np.float32), "g"),
             nh.from_array(np.zeros(shape[-1], np.float32), "b")])
        onnx.save(h.make_model(g, opset_imports=[h.make_opsetid("", 17)]),
                  os.path.join(out, f"norm_{name}.onnx"))
        for v in "xr":
            np.save(os.path.join(out, f"norm_{name}.{v}.npy"),
                    rng.uniform(-2, 2, shape).astype(np.float32))


def check_norm(out, name, y):
    x, r = (np.load(os.path.join(out, f"norm_{name}.{v}.npy")) for v in "xr")
    keep = mask(x.size, "d", 0, ratio=np.float32(0.3)).reshape(x.shape)
    scale = np.float32(1) / (np.float32(1) - np.float32(0.3))
    s = (r + np.where(keep, x * scale, 0)).astype(np.float64)
    want = (s - s.mean(-1, keepdims=True)) / np.sqrt(s.var(-1, keepdims=True) + 1e-5)
    err = np.abs(np.load(y) - want).max()
    print(f"norm {name}: {x.size} elements, {keep.sum()} kept, max error "
          f"{err:.1e}: {'ok' if err < 1e-5 else 'FAIL'}")


if __name__ == "__main__":
    cmd = sys.argv[1]
    if cmd == "kat":
        kat()
    elif cmd == "model":
        model(sys.argv[2])
    elif cmd == "check":
        check(sys.argv[2], sys.argv[3])
    elif cmd == "forward":
        forward(sys.argv[2])
    elif cmd == "chained":
        chained(sys.argv[2])
    elif cmd == "check-chained":
        check_chained(*sys.argv[2:5])
    elif cmd == "norm":
        norm(sys.argv[2])
    elif cmd == "check-norm":
        check_norm(*sys.argv[2:5])
    else:
        check_forward(*sys.argv[2:5])
