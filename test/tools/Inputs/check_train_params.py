"""Checks a --train-params run against the full run of the same step:
`mpc grad --train-params` wrote exactly the matching gradients, equal to the
full run's (gradients flow through the fixed parameters unchanged); one
`mpc train` SGD step changed exactly those parameters, each by -lr times
its gradient, and left the others bit for bit.

usage: check_train_params.py FULL_GRAD_DIR PART_GRAD_DIR MODEL TRAINED LR
"""
import os
import sys

import numpy as np
import onnx
from onnx import numpy_helper

full, part, model, trained, lr = sys.argv[1:6]
lr = np.float32(lr)
wrote = sorted(f[:-4] for f in os.listdir(part))
print("gradients written:", " ".join(wrote))
bad = 0
for name in wrote:
    a, b = np.load(os.path.join(full, name + ".npy")), \
        np.load(os.path.join(part, name + ".npy"))
    if not np.array_equal(a, b):
        print(f"{name}: gradient differs from the full run by "
              f"{np.abs(a - b).max():.3g}")
        bad += 1
before = {t.name: numpy_helper.to_array(t)
          for t in onnx.load(model).graph.initializer}
after = {t.name: numpy_helper.to_array(t)
         for t in onnx.load(trained).graph.initializer}
changed = []
for name, w in before.items():
    if name in wrote:
        g = np.load(os.path.join(part, name + ".npy"))
        want = w - lr * g
        if not np.allclose(after[name], want, rtol=0, atol=1e-7):
            print(f"{name}: not w - lr * g")
            bad += 1
        changed.append(name)
    elif not np.array_equal(after[name], w):
        print(f"{name}: changed although not trained")
        bad += 1
print("updated:", " ".join(sorted(changed)), "; every other parameter "
      "unchanged:", "yes" if bad == 0 else "NO")
sys.exit(1 if bad else 0)
