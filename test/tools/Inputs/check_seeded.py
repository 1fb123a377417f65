"""The mean and std an artifact compiled with --weights seed:N records for
each seeded parameter, against NumPy's of the model's initializer (float64),
and the size of its weights.bin. A parameter stored in FP16/BF16 records
that type (`:f16`), and the statistics are those of its stored values.

With --draws OUT.onnx: also writes the model with each seeded
initializer replaced by NumPy's own computation of the draws
(runtime/SeededWeights.h: splitmix64 over FNV-1a of the name, uniform on
mean +- sqrt(3) std, rounded to float32 and then to the stored type), for
onnxruntime to run beside mpc's seeded run.

usage: check_seeded.py MODEL.onnx ARTIFACT_DIR [--draws OUT.onnx]
"""
import argparse
import os

import ml_dtypes
import numpy as np
import onnx
from onnx import numpy_helper

ap = argparse.ArgumentParser()
ap.add_argument("model")
ap.add_argument("art")
ap.add_argument("--draws")
args = ap.parse_args()
M64 = (1 << 64) - 1
GOLDEN = np.uint64(0x9E3779B97F4A7C15)


def fnv1a64(name):
    h = 0xCBF29CE484222325
    for c in name.encode():
        h = ((h ^ c) * 0x100000001B3) & M64
    return h


def draws(name, shape, dtype, seed, mean, std):
    """The runtime's draws for parameter NAME, computed independently."""
    i = np.arange(int(np.prod(shape)), dtype=np.uint64)
    x = np.uint64(seed ^ fnv1a64(name)) + i * GOLDEN + GOLDEN  # splitmix64
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    x = x ^ (x >> np.uint64(31))
    u = (x >> np.uint64(40)).astype(np.float64) / 16777216.0
    w = (mean + std * 1.7320508075688772 * (2.0 * u - 1.0)).astype(np.float32)
    return w.astype(dtype).reshape(shape)


model = onnx.load(args.model)
inits = {t.name: t for t in model.graph.initializer}
drawn = {}
for line in open(os.path.join(args.art, "plan.txt")):
    f = line.split()
    if f[0] != "param" or not f[4].startswith("seed="):
        continue
    seed, mean, std, *stored = f[4][5:].split(":")
    stored_values = numpy_helper.to_array(inits[f[1]])
    want = stored_values.astype(np.float64)
    ok = (abs(float.fromhex(mean) - want.mean()) <= 1e-9 + 1e-6 * abs(want.mean())
          and abs(float.fromhex(std) - want.std()) <= 1e-6 * want.std())
    kind = stored[0] if stored else "f32"
    ok &= kind == {np.dtype(np.float32): "f32", np.dtype(np.float16): "f16",
                   np.dtype(ml_dtypes.bfloat16): "bf16"}.get(stored_values.dtype)
    print(f"{f[1]}: {kind}, mean and std as exported {'ok' if ok else 'FAIL'}")
    drawn[f[1]] = draws(f[1], stored_values.shape, stored_values.dtype, int(seed),
                        float.fromhex(mean), float.fromhex(std))
print("weights.bin", os.path.getsize(os.path.join(args.art, "weights.bin")), "bytes")
if args.draws:
    for t in model.graph.initializer:
        if t.name in drawn:
            t.CopyFrom(numpy_helper.from_array(drawn[t.name], t.name))
    onnx.save(model, args.draws)
