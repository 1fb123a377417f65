"""Reference for test/tools/Inputs/two_algorithms_model.py trained by its
own two algorithms: onnx's reference Adam (onnx.reference's _apply_adam,
bias correction from T > 0) on loss = sum((X W)^2), T += 1, then W *= 0.99
and C += T, in float64. Compares each step's loss with mpc's --metrics and
W, V, H, T, C with the -o model.

usage: two_algorithms_reference.py X.npy BATCH STEPS METRICS.jsonl TRAINED.onnx
"""
import json
import sys

import numpy as np
import onnx
from onnx import numpy_helper
from onnx.reference.ops.aionnx_preview_training.op_adam import _apply_adam

x = np.load(sys.argv[1]).astype(np.float64)
batch, steps = int(sys.argv[2]), int(sys.argv[3])
mine = [json.loads(l)["loss"] for l in open(sys.argv[4])]
got = {i.name: numpy_helper.to_array(i)
       for i in onnx.load(sys.argv[5]).graph.initializer}
W = np.array([[1.0, 0.5], [-0.5, 1.0]])
V, H, T, C = np.zeros((2, 2)), np.zeros((2, 2)), 0, 0
ref = []
per_epoch = len(x) // batch
for s in range(steps):
    xb = x[(s % per_epoch) * batch:(s % per_epoch + 1) * batch]
    y = xb @ W
    ref.append((y * y).sum())
    dW = xb.T @ (2 * y)
    W, V, H = _apply_adam(0.05, T, W, dW, V, H, 0.0, 0.0, 0.9, 0.999, 1e-6)
    T += 1
    W = W * 0.99
    C += T
loss_err = max(abs(a - b) / max(abs(b), 1e-6) for a, b in zip(mine, ref))
errs = {n: np.abs(got[n] - r).max() / max(np.abs(r).max(), 1e-30)
        for n, r in (("W", W), ("V", V), ("H", H))}
print(f"steps {len(mine)}; max relative loss difference {loss_err:.2e}; " +
      "; ".join(f"{n} {e:.2e}" for n, e in errs.items()) +
      f"; T {int(got['T'])} (want {T}, {got['T'].dtype}); "
      f"C {int(got['C'])} (want {C})")
ok = (len(mine) == steps and max(loss_err, *errs.values()) < 1e-4 and
      got["T"].dtype == np.int64 and int(got["T"]) == T and int(got["C"]) == C)
print("ok" if ok else "FAIL")
sys.exit(0 if ok else 1)
