"""make_npy.py OUT.npy DTYPE DIM... : a seeded random array (for run tests)."""
import sys

import numpy as np

out, dtype, dims = sys.argv[1], sys.argv[2], [int(d) for d in sys.argv[3:]]
rng = np.random.default_rng(0)
if dtype.startswith("int"):
    a = rng.integers(0, 10, dims).astype(dtype)
else:
    a = rng.standard_normal(dims).astype(dtype)
np.save(out, a)
