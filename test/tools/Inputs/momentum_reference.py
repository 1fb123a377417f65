"""NumPy reference for the TrainingInfoProto model of
test/frontend/Inputs/training_info_model.py trained by its own algorithm:
loss = sum(X @ W); dW = X^T 1; V starts at 0 (initialization graph, not the
initializer's ones); ONNX Momentum with R 0.1, alpha 0.9, T = 0 (so beta =
1): V = 0.9 V + dW, W = W - 0.1 V. Batches in file order. Compares each
step's loss with mpc's --metrics and the final W with the -o model.

usage: momentum_reference.py X.npy BATCH STEPS METRICS.jsonl TRAINED.onnx
"""
import json
import sys

import numpy as np
import onnx
from onnx import numpy_helper

x = np.load(sys.argv[1]).astype(np.float64)
batch, steps = int(sys.argv[2]), int(sys.argv[3])
mine = [json.loads(l)["loss"] for l in open(sys.argv[4])]
trained = {i.name: numpy_helper.to_array(i)
           for i in onnx.load(sys.argv[5]).graph.initializer}
W, V = np.eye(2), np.zeros((2, 2))
ref = []
per_epoch = len(x) // batch
for s in range(steps):
    xb = x[(s % per_epoch) * batch:(s % per_epoch + 1) * batch]
    ref.append((xb @ W).sum())
    dW = xb.T @ np.ones((batch, 2))
    V = 0.9 * V + dW
    W = W - 0.1 * V
loss_err = max(abs(a - b) / max(abs(b), 1e-6) for a, b in zip(mine, ref))
w_err = np.abs(trained["W"] - W).max() / np.abs(W).max()
v_err = np.abs(trained["V"] - V).max() / np.abs(V).max()
print(f"steps {len(mine)}; max relative loss difference {loss_err:.2e}; "
      f"W {w_err:.2e}; V {v_err:.2e}")
ok = len(mine) == steps and max(loss_err, w_err, v_err) < 1e-5
print("ok" if ok else "FAIL")
sys.exit(0 if ok else 1)
