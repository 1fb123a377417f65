"""A model stored in FP16 trains with FP32 master weights: the digits MLP
(examples/mlp.onnx) converted by `mpc convert --precision fp16`, trained
by `mpc train` with SGD at a rate whose updates lie below FP16's spacing
of the weights, against a float64 run of the same steps in NumPy (FP16
weights each step, rounded from FP64 masters). Prints, for each --device:

- `losses vs reference E`: the per-step losses (--metrics), relative;
- `masters' updates vs reference E`: the FP32 masters in the checkpoint
  minus the initial weights, against the reference's, worst per tensor
  of ||a - b|| / ||b|| (a norm, not the largest element: a ReLU input
  within FP16's rounding of zero flips one sample's share of a weight);
- `written weights: N of N FP16, rounded from the masters`: `-o` keeps the
  model's FP16 initializers, each the master rounded to nearest even;

and once `fp16 weights updated in place: E`: the same measure for FP16
weights updated directly (pure FP16 training), which must lose most of
the updates (the test is in the regime where masters matter).

usage: half_model_training.py MPC WORKDIR MODEL [--device cpu,cuda]
"""
import argparse
import json
import os
import subprocess
import sys

import numpy as np
import onnx
from onnx import numpy_helper

from mlp_reference import PARAMS, loss_and_grads, write_data

ap = argparse.ArgumentParser()
ap.add_argument("mpc")
ap.add_argument("workdir")
ap.add_argument("model")
ap.add_argument("--device", default="cpu")
ap.add_argument("--steps", type=int, default=30)
ap.add_argument("--batch", type=int, default=32)
ap.add_argument("--lr", type=float, default=2e-3)
ap.add_argument("--rtol-loss", type=float, default=2e-3)
ap.add_argument("--rtol-update", type=float, default=3e-2)
a = ap.parse_args()
w = a.workdir

half = os.path.join(w, "mlp16.onnx")
subprocess.run([a.mpc, "convert", a.model, "--precision", "fp16",
                "--keep-io-types", "-o", half], check=True,
               stdout=subprocess.DEVNULL)
init = {i.name: numpy_helper.to_array(i)
        for i in onnx.load(half).graph.initializer}
names = PARAMS
assert all(init[n].dtype == np.float16 for n in names), "convert kept FP32"

x, y = write_data(w, a.steps * a.batch, seed=3)


def grads(p, xb, yb):
    return loss_and_grads(p, xb, yb, half_input=True)


def f16(v):
    return v.astype(np.float16).astype(np.float64)


start = {n: init[n].astype(np.float64) for n in names}
master, naive, losses = dict(start), dict(start), []
for s in range(a.steps):
    xb, yb = x[s * a.batch:(s + 1) * a.batch], y[s * a.batch:(s + 1) * a.batch]
    loss, g = grads({n: f16(master[n]) for n in names}, xb, yb)
    losses.append(loss)
    master = {n: master[n] - a.lr * g[n] for n in names}
    _, g = grads(naive, xb, yb)
    naive = {n: f16(naive[n] - a.lr * g[n]) for n in names}


def update_error(final):
    worst = 0.0
    for n in names:
        want = master[n] - start[n]
        got = final[n].astype(np.float64) - start[n]
        worst = max(worst, float(np.linalg.norm(got - want) / np.linalg.norm(want)))
    return worst


failed = False


def report(what, err, ok):
    global failed
    failed |= not ok
    print(f"{what} {err:.1e} {'ok' if ok else 'FAIL'}")


for device in a.device.split(","):
    out = os.path.join(w, device)
    trained = os.path.join(out, "trained.onnx")
    subprocess.run(
        [a.mpc, "train", half, "--device", device,
         "--data", "x=" + os.path.join(w, "x.npy"),
         "--data", "labels=" + os.path.join(w, "y.npy"),
         "--batch", str(a.batch), "--steps", str(a.steps), "--no-shuffle",
         "--optimizer", "sgd", "--lr", str(a.lr), "--loss-scale", "static:1024",
         "--checkpoint", os.path.join(out, "ck"),
         "--metrics", os.path.join(out, "metrics.jsonl"), "-o", trained],
        check=True, stdout=subprocess.DEVNULL)
    got = [json.loads(l)["loss"] for l in open(os.path.join(out, "metrics.jsonl"))]
    err = max(abs(g - r) / abs(r) for g, r in zip(got, losses))
    report(f"{device}: losses vs reference",
           err, len(got) == a.steps and err <= a.rtol_loss)
    masters = {n: np.load(os.path.join(out, "ck", f"param.{n}.npy"))
               for n in names}
    assert all(m.dtype == np.float32 for m in masters.values())
    err = update_error(masters)
    report(f"{device}: masters' updates vs reference", err, err <= a.rtol_update)
    written = {i.name: numpy_helper.to_array(i)
               for i in onnx.load(trained).graph.initializer}
    rounded = sum(written[n].dtype == np.float16 and
                  np.array_equal(written[n], masters[n].astype(np.float16))
                  for n in names)
    moved = sum(not np.array_equal(written[n], init[n]) for n in names)
    failed |= rounded != len(names) or moved != len(names)
    print(f"{device}: written weights: {rounded} of {len(names)} FP16, "
          f"rounded from the masters; {moved} changed")

err = update_error(naive)
report("fp16 weights updated in place:", err, err >= 0.5)
sys.exit(1 if failed else 0)
