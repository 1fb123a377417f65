"""Runs each model with `mpc run` and with onnxruntime (CPU) on the same
seeded random inputs and prints, per output, the normwise relative error
max|mpc - ort| / max|ort|. Fails when one exceeds --rtol.

usage: compare_ort.py MPC WORKDIR --rtol R [--device cuda] MODEL.onnx...
(--device cuda: `mpc compile`, then `mpc run --device cuda` on the
artifact; the tests run it on the CUDA driver double)
"""
import argparse
import os
import subprocess
import sys

import numpy as np
import onnx
import onnxruntime as ort

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "../../../scripts"))
from model_inputs import random_inputs  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("mpc")
ap.add_argument("workdir")
ap.add_argument("models", nargs="+")
ap.add_argument("--rtol", type=float, default=1e-5)
ap.add_argument("--batch", type=int, default=4)
ap.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
a = ap.parse_args()

rng = np.random.default_rng(0)
worst = 0.0
for path in a.models:
    name = os.path.splitext(os.path.basename(path))[0]
    model = onnx.load(path)
    feeds, args = random_inputs(model, a.batch, a.workdir, name, rng)
    out = os.path.join(a.workdir, name + ".out")
    run = path
    if a.device == "cuda":
        run = os.path.join(a.workdir, name + ".artifact")
        subprocess.run([a.mpc, "compile", path, "-o", run], check=True,
                       stdout=subprocess.DEVNULL)
    subprocess.run([a.mpc, "run", run, "--device", a.device, "--output-dir", out]
                   + args, check=True, stdout=subprocess.DEVNULL)
    opts = ort.SessionOptions()
    opts.log_severity_level = 3
    sess = ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"])
    names = [o.name for o in sess.get_outputs()]
    for oname, want in zip(names, sess.run(None, feeds)):
        got = np.load(os.path.join(out, oname.replace("/", "_") + ".npy"))
        assert got.shape == want.shape, (name, oname, got.shape, want.shape)
        scale = max(np.abs(want).max(), 1e-30)
        err = float(np.abs(got.astype(np.float64) - want).max() / scale)
        worst = max(worst, err)
        status = "ok" if err <= a.rtol else "FAIL"
        print(f"{name} {oname}: relative error {err:.2e} {status}")
print(f"worst relative error {worst:.2e} (bound {a.rtol:g})")
sys.exit(0 if worst <= a.rtol else 1)
