"""The mean and std an artifact compiled with --weights seed:N records for
each seeded parameter, against NumPy's of the model's initializer (float64),
and the size of its weights.bin.

usage: check_seeded.py MODEL.onnx ARTIFACT_DIR
"""
import os
import sys

import numpy as np
import onnx
from onnx import numpy_helper

model, art = sys.argv[1], sys.argv[2]
inits = {t.name: numpy_helper.to_array(t).astype(np.float64)
         for t in onnx.load(model).graph.initializer}
for line in open(os.path.join(art, "plan.txt")):
    f = line.split()
    if f[0] != "param" or not f[4].startswith("seed="):
        continue
    _, mean, std = f[4][5:].split(":")
    want = inits[f[1]]
    ok = (abs(float.fromhex(mean) - want.mean()) <= 1e-9 + 1e-6 * abs(want.mean())
          and abs(float.fromhex(std) - want.std()) <= 1e-6 * want.std())
    print(f"{f[1]}: mean and std as exported {'ok' if ok else 'FAIL'}")
print("weights.bin", os.path.getsize(os.path.join(art, "weights.bin")), "bytes")
