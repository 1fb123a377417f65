"""Compares `mpc grad`'s output directory with reference gradients (an
.npz of parameter name -> array): per parameter max|got - want| /
max|want|, not below 1e-3 of the largest gradient (a gradient zero in
exact arithmetic is rounding noise on both sides). Every reference
gradient must be there.

usage: compare_grads.py REF.npz GRADS_DIR --rtol R
"""
import os
import sys

import numpy as np

ref = np.load(sys.argv[1])
out = sys.argv[2]
rtol = float(sys.argv[sys.argv.index("--rtol") + 1])
floor = 1e-3 * max(float(np.abs(ref[n]).max()) for n in ref.files)
worst = 0.0
for name in sorted(ref.files):
    path = os.path.join(out, name + ".npy")
    if not os.path.exists(path):
        print(f"{name}: MISSING")
        sys.exit(1)
    got, want = np.load(path), ref[name]
    err = float(np.abs(got - want).max() / max(np.abs(want).max(), floor))
    worst = max(worst, err)
print(f"{len(ref.files)} gradients, worst relative error {worst:.2e} "
      f"{'ok' if worst <= rtol else 'FAIL'} (bound {rtol:g})")
sys.exit(0 if worst <= rtol else 1)
