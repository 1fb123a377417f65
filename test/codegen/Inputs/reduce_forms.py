"""Inputs and float64 NumPy expectations for reduce_forms.onnxtxt.

`reduce_forms.py inputs DIR` writes the inputs; `reduce_forms.py check DIR`
compares DIR/out (the CUDA backend under emulation) with NumPy and with
DIR/cpu (the CPU backend): reductions to 1e-6 relative, arg max/min and
NaN placement exactly.
"""
import sys

import numpy as np


def inputs(d):
    r = np.random.default_rng(0)
    x = r.standard_normal((3, 6000)).astype(np.float32)
    x[1, 4321] = np.nan
    p = r.standard_normal((6, 10, 7, 7)).astype(np.float32)
    p[2, 3, 4, 5] = np.nan
    # few distinct values: ties everywhere; NaN first in row 1, inside row 2
    a = np.round(r.standard_normal((9, 500)) * 2).astype(np.float32)
    a[1, 0] = np.nan
    a[2, 17] = np.nan
    a[2, 499] = np.nan
    k = r.integers(-(1 << 40), 1 << 40, (6, 40))
    k[3, 5], k[3, 30] = (1 << 40) + 1, (1 << 40) + 2  # beyond float's 2^24
    c = np.round(r.standard_normal((300, 5)) * 2).astype(np.float32)
    arrays = dict(x=x, y=r.standard_normal((64, 100)).astype(np.float32),
                  z=r.standard_normal((5000, 3)).astype(np.float32),
                  h=r.standard_normal((40, 96)).astype(np.float16),
                  q=r.standard_normal((4, 8, 16, 16)).astype(np.float32),
                  p=p, r=r.standard_normal((7, 20)).astype(np.float32),
                  a=a, k=k, c=c)
    for name, v in arrays.items():
        np.save(f"{d}/{name}.npy", v)


def nan_arg(rows, pick, last):
    """ONNX's scan: NaN never wins unless it is first (then index 0)."""
    out = []
    for row in rows:
        if np.isnan(row[0]):
            out.append(0)
            continue
        v = np.where(np.isnan(row), np.inf if pick is np.nanargmin else -np.inf, row)
        out.append(len(v) - 1 - pick(v[::-1]) if last else pick(v))
    return np.array(out)


def check(d):
    L = lambda n: np.load(f"{d}/{n}.npy")
    x, y, z, h, q, p, r, a, k, c = (L(n).astype(np.float64) if n != "k" else L(n)
                                    for n in "x y z h q p r a k c".split())
    want = dict(s=x.sum(1), m=x.max(1), lse=np.log(np.exp(x).sum(1)),
                l2=np.sqrt((x * x).sum(1)), mean=y.mean(), cols=z.sum(0),
                hs=h.sum(1), hm=h.max(1), qs=q.sum((0, 2, 3)),
                gap=p.mean((2, 3), keepdims=True),
                gmp=p.max((2, 3), keepdims=True), rs=r.sum(1))
    for n, w in want.items():
        got = np.load(f"{d}/out/{n}.npy")
        tol = 1e-3 if got.dtype == np.float16 else 1e-6  # one rounding
        ok = np.allclose(got.astype(np.float64), w, rtol=tol, atol=tol,
                         equal_nan=True)
        print(n, "ok" if ok else ("FAIL", got, w))
    exact = dict(amax=nan_arg(a, np.nanargmax, False),
                 amin_last=nan_arg(a, np.nanargmin, True),
                 kmax=k.argmax(1), cmax=c.argmax(0))
    for n, w in exact.items():
        got, cpu = np.load(f"{d}/out/{n}.npy"), np.load(f"{d}/cpu/{n}.npy")
        same = np.array_equal(got, w) and np.array_equal(got, cpu)
        print(n, "ok" if same else ("FAIL", got, cpu, w))


if __name__ == "__main__":
    {"inputs": inputs, "check": check}[sys.argv[1]](sys.argv[2])
