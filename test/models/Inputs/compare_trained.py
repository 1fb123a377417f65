"""Compares the initializers of a trained model (`mpc train -o`) with a
reference state (an .npz of name -> array, e.g. torch's state_dict after
the same steps): per tensor max|got - want| / max|want|. Every reference
tensor must be in the model.

usage: compare_trained.py MODEL.onnx REF.npz --rtol R
"""
import sys

import numpy as np
import onnx
from onnx import numpy_helper

model = onnx.load(sys.argv[1])
ref = np.load(sys.argv[2])
rtol = float(sys.argv[sys.argv.index("--rtol") + 1])
got = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
worst = 0.0
for name in sorted(ref.files):
    if name not in got:
        print(f"{name}: MISSING")
        sys.exit(1)
    want = ref[name]
    err = float(np.abs(got[name] - want).max() / max(np.abs(want).max(), 1e-30))
    worst = max(worst, err)
print(f"{len(ref.files)} tensors, worst relative error {worst:.2e} "
      f"{'ok' if worst <= rtol else 'FAIL'} (bound {rtol:g})")
sys.exit(0 if worst <= rtol else 1)
