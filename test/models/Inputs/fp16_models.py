"""Hugging Face exports converted to FP16 by `mpc convert` (--keep-io-types:
the Softmax kept FP32 between casts, the masks saturated to FP16's
lowest), then run as half-precision models. Per model it prints:

- `attention N softmax M causal C`: the fused attentions in the IR `mpc
  compile --emit mlir` writes, the softmaxes left, the causal ones;
- `loss vs onnxruntime E`: `mpc run`'s loss (fused attention) against
  onnxruntime's on the same converted model (its unfused ops), relative;
- `gradients vs torch E`: `mpc grad`'s (fused attention) against the FP32
  model's torch gradients (the .grads.npz), worst per-parameter max|a - b|
  / max|b| (not below 1e-3 of the largest gradient); the same measure of
  --fuse-attention=false's printed before it;
- with --device cuda: `cuda loss vs onnxruntime E`: `mpc run --device cuda`
  on the compiled artifact (the tests run it on the CUDA driver double).

Fails when a bound is exceeded.

usage: fp16_models.py MPC WORKDIR INPUTS NAME... [--rtol-loss R]
       [--rtol-grad R] [--cuda NAME,..]
"""
import argparse
import glob
import os
import subprocess
import sys

import numpy as np
import onnxruntime as ort

ap = argparse.ArgumentParser()
ap.add_argument("mpc")
ap.add_argument("workdir")
ap.add_argument("inputs")
ap.add_argument("names", nargs="+")
ap.add_argument("--rtol-loss", type=float, default=2e-3)
ap.add_argument("--rtol-grad", type=float, default=3e-2)
ap.add_argument("--cuda", default="")
a = ap.parse_args()


def mpc(*args):
    subprocess.run([a.mpc, *args], check=True, stdout=subprocess.DEVNULL)


def grad_error(got_dir, want):
    """Worst max|got - want| / max|want| over `want` (name -> array). A
    tied embedding that a Gather reads in FP32 and a MatMul in FP16 stays
    one weight behind a Cast, its gradient the sum of both uses (torch's)."""
    floor = 1e-3 * max(float(np.abs(w).max()) for w in want.values())
    worst = 0.0
    for name, w in want.items():
        g = np.load(os.path.join(got_dir, name + ".npy")).astype(np.float64)
        w = w.astype(np.float64)
        worst = max(worst, float(np.abs(g - w).max() / max(np.abs(w).max(), floor)))
    return worst


failed = False


def report(name, what, err, bound):
    global failed
    ok = err <= bound
    failed |= not ok
    print(f"{name}: {what} {err:.1e} {'ok' if ok else 'FAIL'} (bound {bound:g})")


for name in a.names:
    src = os.path.join(a.inputs, name + ".onnx")
    model = os.path.join(a.workdir, name + ".fp16.onnx")
    mpc("convert", src, "--precision", "fp16", "--keep-io-types", "-o", model)
    ir = os.path.join(a.workdir, name + ".fp16.mlir")
    mpc("compile", model, "--emit", "mlir", "-o", ir)
    lines = open(ir).read().splitlines()
    fused = [l for l in lines if "mpc.attention %" in l]
    print(f"{name}: attention {len(fused)} softmax "
          f"{sum('mpc.softmax %' in l for l in lines)} causal "
          f"{sum('causal = true' in l for l in fused)}")

    feeds = {os.path.basename(f)[len(name) + 1:-4]: np.load(f)
             for f in glob.glob(os.path.join(a.inputs, name + ".*.npy"))}
    opts = ort.SessionOptions()
    opts.log_severity_level = 3
    sess = ort.InferenceSession(model, opts, providers=["CPUExecutionProvider"])
    wanted = {i.name for i in sess.get_inputs()}
    feeds = {k: v for k, v in feeds.items() if k in wanted}
    want = float(sess.run(["loss"], feeds)[0])
    args = sum((["--input", f"{k}={os.path.join(a.inputs, f'{name}.{k}.npy')}"]
                for k in feeds), [])

    out = os.path.join(a.workdir, name + ".run")
    mpc("run", model, "--output-dir", out, *args)
    got = float(np.load(os.path.join(out, "loss.npy")))
    report(name, "loss vs onnxruntime", abs(got - want) / abs(want), a.rtol_loss)

    # Gradients against torch's of the FP32 model; the unfused ops' for
    # comparison (not bounded: FP16 scores and probabilities make them the
    # less accurate of the two).
    ref = dict(np.load(os.path.join(a.inputs, name + ".grads.npz")))
    fused_dir = os.path.join(a.workdir, name + ".grads")
    unfused_dir = os.path.join(a.workdir, name + ".grads-unfused")
    mpc("grad", model, "--output-dir", fused_dir, *args)
    mpc("grad", model, "--fuse-attention=false", "--output-dir", unfused_dir, *args)
    print(f"{name}: gradients vs torch, unfused {grad_error(unfused_dir, ref):.1e}")
    report(name, "gradients vs torch", grad_error(fused_dir, ref), a.rtol_grad)

    if name in a.cuda.split(","):
        artifact = os.path.join(a.workdir, name + ".artifact")
        mpc("compile", model, "-o", artifact)
        out = os.path.join(a.workdir, name + ".cuda")
        mpc("run", artifact, "--device", "cuda", "--output-dir", out, *args)
        got = float(np.load(os.path.join(out, "loss.npy")))
        report(name, "cuda loss vs onnxruntime", abs(got - want) / abs(want), a.rtol_loss)
sys.exit(1 if failed else 0)
