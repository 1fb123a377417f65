"""LoRA fine-tuning (`mpc train --lora-rank`) of the digits MLP
(examples/mlp.onnx: three Gemms with transB, ReLUs, mean softmax
cross-entropy) against a float64 NumPy run of the same steps: adapters A
[in, r], B [r, out] on each weight, the layer's result plus
(alpha / r) x A B, the base weights and biases frozen, AdamW or SGD with
momentum on the adapters alone (torch's updates). The adapters' starting
values are read from a run at rate 0 (B starts at zero, so the first step
is the model's own). Prints per run (--runs
NAME:PRECISION:DEVICE:OPTIMIZER:MODEL...):

- `losses vs reference E`: per-step losses (--metrics), relative;
- `adapters vs reference E`: the checkpoint's A and B, worst per tensor
  of ||a - b|| / ||b|| (low-precision runs train with momentum: Adam's
  normalised step turns FP16's rounding of the adapters' small gradients
  into errors of the step's size);
- `base frozen: N of N`: the checkpoint's weights and biases are the
  model's, bit for bit (and keep its type);
- `merged vs reference E`: `-o`'s weights against W + (alpha / r) A B of
  the reference, relative in the update; for an FP16 model, whose merged
  weights stay FP16, `merged vs its adapters' merge N FP16 spacings`
  (the run's own adapters, held to the reference's above);
- `onnxruntime loss on merged vs reference E`: the written model's loss
  on the data, by onnxruntime, against the reference's final parameters
  computed as LoRA computes them (so the merge is the adapters' model).

usage: lora_training.py MPC WORKDIR --runs NAME:PRECISION:DEVICE:OPTIMIZER:MODEL...
"""
import argparse
import json
import os
import subprocess
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import numpy_helper

from mlp_reference import LAYERS as layers, loss_and_grads, write_data

ap = argparse.ArgumentParser()
ap.add_argument("mpc")
ap.add_argument("workdir")
ap.add_argument("--runs", nargs="+", required=True)
ap.add_argument("--steps", type=int, default=12)
ap.add_argument("--batch", type=int, default=16)
ap.add_argument("--rank", type=int, default=4)
ap.add_argument("--alpha", type=float, default=8.0)
ap.add_argument("--lr", type=float, default=1e-2)
ap.add_argument("--wd", type=float, default=0.01)
a = ap.parse_args()
w = a.workdir
s = a.alpha / a.rank

x, y = write_data(w, a.steps * a.batch, seed=5)


def forward(p, ad, xb, yb, grads=True):
    return loss_and_grads(p, xb, yb, adapters=ad, scale=s, grads=grads)


def mpc_train(model, out, precision, device, optimizer, lr, steps):
    subprocess.run(
        [a.mpc, "train", model, "--precision", precision, "--device", device,
         "--data", "x=" + os.path.join(w, "x.npy"),
         "--data", "labels=" + os.path.join(w, "y.npy"),
         "--batch", str(a.batch), "--steps", str(steps), "--no-shuffle",
         "--optimizer", optimizer, "--lr", str(lr), "--momentum", "0.9",
         "--weight-decay", str(a.wd if optimizer == "adamw" else 0),
         "--lora-rank", str(a.rank), "--lora-alpha", str(a.alpha),
         "--checkpoint", os.path.join(out, "ck"),
         "--metrics", os.path.join(out, "metrics.jsonl"),
         "-o", os.path.join(out, "merged.onnx")],
        check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def ck(out, name):
    return np.load(os.path.join(out, "ck", f"param.{name}.npy"))


def rel(got, want):
    return float(np.linalg.norm(got - want) / max(np.linalg.norm(want), 1e-30))


failed = False


def report(what, err, bound):
    global failed
    ok = err <= bound
    failed |= not ok
    print(f"{what} {err:.1e} {'ok' if ok else 'FAIL'} (bound {bound:g})")


for spec in a.runs:
    name, precision, device, optimizer, model = spec.split(":", 4)
    init = {i.name: numpy_helper.to_array(i)
            for i in onnx.load(model).graph.initializer}
    p = {k: v.astype(np.float64) for k, v in init.items()}
    out = os.path.join(w, name)
    mpc_train(model, out + "-start", precision, device, optimizer, 0.0, 1)
    ad = {l + "." + m: ck(out + "-start", f"{l}.weight.lora_{m}").astype(np.float64)
          for l in layers for m in "AB"}
    assert all(not ad[l + ".B"].any() for l in layers), "B starts at zero"
    m1 = {k: np.zeros_like(v) for k, v in ad.items()}
    m2 = {k: np.zeros_like(v) for k, v in ad.items()}
    losses = []
    for t in range(1, a.steps + 1):
        sl = slice((t - 1) * a.batch, t * a.batch)
        loss, g = forward(p, ad, x[sl], y[sl])
        losses.append(loss)
        for k in ad:
            if optimizer == "momentum":  # torch.optim.SGD(momentum=0.9)
                m1[k] = g[k] if t == 1 else 0.9 * m1[k] + g[k]
                ad[k] = ad[k] - a.lr * m1[k]
                continue
            m1[k] = 0.9 * m1[k] + 0.1 * g[k]
            m2[k] = 0.999 * m2[k] + 0.001 * g[k] ** 2
            ad[k] = ad[k] * (1 - a.lr * a.wd) - a.lr * (
                m1[k] / (1 - 0.9 ** t)) / (np.sqrt(m2[k] / (1 - 0.999 ** t)) + 1e-8)
    mpc_train(model, out, precision, device, optimizer, a.lr, a.steps)
    # FP32 compute (an FP32 model without --precision) to FP32's rounding.
    tight = precision == "fp32" and init[layers[0] + ".weight"].dtype == np.float32
    got = [json.loads(l)["loss"] for l in open(os.path.join(out, "metrics.jsonl"))]
    report(f"{name}: losses vs reference",
           max(abs(g_ - r) / r for g_, r in zip(got, losses)),
           1e-5 if tight else 3e-3)
    report(f"{name}: adapters vs reference",
           max(rel(ck(out, f"{l}.weight.lora_{m}"), ad[l + "." + m])
               for l in layers for m in "AB"), 1e-4 if tight else 3e-2)
    frozen = sum(ck(out, k).dtype == init[k].dtype and
                 np.array_equal(ck(out, k), init[k]) for k in init)
    failed |= frozen != len(init)
    print(f"{name}: base frozen: {frozen} of {len(init)}")
    merged = {i.name: numpy_helper.to_array(i) for i in
              onnx.load(os.path.join(out, "merged.onnx")).graph.initializer}
    want = dict(p)
    for l in layers:
        want[l + ".weight"] = p[l + ".weight"] + s * (ad[l + ".A"] @ ad[l + ".B"]).T
    types = all(merged[k].dtype == init[k].dtype for k in init)
    failed |= not types
    weights = [l + ".weight" for l in layers]
    if init[weights[0]].dtype == np.float16:
        # Stored rounded: W + s A B of the run's own adapters (held to the
        # reference's above), rounded to FP16, within one spacing (the sum
        # is rounded to FP32 first).
        ulps = 0.0
        for l in layers:
            own = (p[l + ".weight"] + s * (ck(out, l + ".weight.lora_A") @
                                           ck(out, l + ".weight.lora_B")).T)
            own = own.astype(np.float16)
            ulps = max(ulps, float(np.max(
                np.abs(merged[l + ".weight"].astype(np.float64) - own) /
                np.spacing(np.abs(own)))))
        failed |= ulps > 1
        print(f"{name}: merged vs its adapters' merge {ulps:g} FP16 spacings "
              f"{'ok' if ulps <= 1 and types else 'FAIL'} (bound 1)")
    else:
        report(f"{name}: merged vs reference" + ("" if types else " (TYPES CHANGED)"),
               max(rel(merged[k].astype(np.float64) - p[k], want[k] - p[k])
                   for k in weights), 1e-4 if tight else 3e-2)
    session = ort.InferenceSession(os.path.join(out, "merged.onnx"),
                                   providers=["CPUExecutionProvider"])
    ort_loss = float(session.run(["loss"], {"x": x, "labels": y})[0])
    ref_loss, _ = forward(p, ad, x, y, grads=False)
    report(f"{name}: onnxruntime loss on merged vs reference",
           abs(ort_loss - ref_loss) / ref_loss, 1e-5 if tight else 3e-3)
sys.exit(1 if failed else 0)
