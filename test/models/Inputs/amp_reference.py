"""Independent NumPy reference for mixed-precision training of the MLP
64-128-64-10 with its cross-entropy loss (examples/mlp.onnx): the numerics
contract written out op by op (operands rounded to fp16/bf16, products
accumulated in FP32 and rounded once, loss in FP32, backward seeded with
the loss scale, gradients unscaled in FP32). Compares `mpc run` and
`mpc grad` outputs against it, and checks that the bound separates low
precision from FP32 (so the test would catch an FP32 computation).

usage: amp_reference.py MODEL X.npy Y.npy RUN_DIR GRAD_DIR --precision fp16|bf16
       [--scale S]
"""
import argparse
import os
import sys

import numpy as np
import onnx
from onnx import numpy_helper

ap = argparse.ArgumentParser()
ap.add_argument("model")
ap.add_argument("x")
ap.add_argument("y")
ap.add_argument("run_dir")
ap.add_argument("grad_dir")
ap.add_argument("--precision", required=True)
ap.add_argument("--scale", type=float, default=1.0)
a = ap.parse_args()


def round_bf16(v):
    """FP32 -> bfloat16 (round to nearest even) -> FP32."""
    b = np.ascontiguousarray(v, np.float32).view(np.uint32).astype(np.uint64)
    b = (b + 0x7FFF + ((b >> 16) & 1)) & 0xFFFF0000
    return b.astype(np.uint32).view(np.float32)


if a.precision == "fp16":
    r = lambda v: np.asarray(v, np.float32).astype(np.float16).astype(np.float32)
    rtol = 2.0 ** -9  # two fp16 ulps
else:
    r = round_bf16
    rtol = 2.0 ** -6  # two bf16 ulps

W = {i.name: numpy_helper.to_array(i) for i in onnx.load(a.model).graph.initializer}
x, y = np.load(a.x), np.load(a.y)
n = len(y)


def forward_backward(r, S):
    w = [r(W[f"model.{k}.weight"]) for k in (0, 2, 4)]
    b = [r(W[f"model.{k}.bias"]) for k in (0, 2, 4)]
    acts, pre = [r(x)], []
    for i in range(3):
        p = r(acts[-1] @ w[i].T + b[i])
        pre.append(p)
        acts.append(np.maximum(p, 0) if i < 2 else p)
    logits = acts[-1]
    z = logits.astype(np.float64)
    logp = z - z.max(1, keepdims=True)
    logp -= np.log(np.exp(logp).sum(1, keepdims=True))
    loss = -logp[np.arange(n), y].mean()
    d = np.exp(logp)
    d[np.arange(n), y] -= 1
    d = r((S * d / n).astype(np.float32))
    grads = {}
    for i in (2, 1, 0):
        grads[f"model.{2 * i}.weight"] = r(d.T @ acts[i]) / np.float32(S)
        grads[f"model.{2 * i}.bias"] = r(d.sum(0, dtype=np.float64)) / np.float32(S)
        if i:
            d = r(d @ w[i])
            d = np.where(pre[i - 1] > 0, d, 0).astype(np.float32)
    return logits, loss, grads


logits, loss, grads = forward_backward(r, a.scale)
_, _, grads32 = forward_backward(lambda v: np.asarray(v, np.float32), 1.0)

ok, separation = True, 0.0


def check(name, got, want, want32):
    global ok, separation
    err = np.abs(got - want)
    bound = rtol * np.abs(want) + 1e-12
    worst = float((err / bound).max())
    sep = float((np.abs(want32 - want) / bound).max())
    separation = max(separation, sep)
    ok &= worst <= 1
    print(f"{name:16s} max err/bound {worst:.3f}  fp32 err/bound {sep:.1f}  "
          f"{'ok' if worst <= 1 else 'FAIL'}")


got_logits = np.load(os.path.join(a.run_dir, "logits.npy"))
check("logits", got_logits, logits,
      forward_backward(lambda v: np.asarray(v, np.float32), 1.0)[0])
for name in sorted(grads):
    check(name, np.load(os.path.join(a.grad_dir, name + ".npy")), grads[name],
          grads32[name])
# The same bounds must reject the FP32 results: the test discriminates.
print(f"fp32 results exceed the bound by up to {separation:.1f}x")
ok &= separation > 1
print("ok" if ok else "FAIL")
sys.exit(0 if ok else 1)
