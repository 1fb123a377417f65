"""Checks `mpc train --ema-output` against the average's definition: given
the model before training and the models after each of steps 1..k (runs of
1..k steps: the same steps, as training is deterministic), the average
after k steps is e_k = e_(k-1) + (1 - decay) (w_k - e_(k-1)), e_0 the
initial weights, for every float initializer (batch norm's running
statistics too), computed here in float64.

With --warmup POWER[,GAMMA] the decay of step t is diffusers' EMAModel
get_decay with use_ema_warmup (timm's ModelEmaV3): min(DECAY, 1 - (1 +
(t - 1) / GAMMA)^-POWER), GAMMA 1 unless given; with --warmup num-updates
its default: 0 at t = 1, else min(DECAY, t / (9 + t)).

usage: ema_chain.py DECAY INITIAL.onnx STEP1.onnx ... STEPk.onnx AVERAGE.onnx --rtol R
                   [--only REGEX]  (the initializers averaged: a GAN phase's;
                                    the others must be as they started)
                   [--warmup POWER[,GAMMA] | --warmup num-updates]
"""
import re
import sys

import numpy as np
import onnx
from onnx import numpy_helper

args = sys.argv[1:]
only = re.compile(args[args.index("--only") + 1] if "--only" in args else ".*")
rtol = float(args[args.index("--rtol") + 1])
warmup = args[args.index("--warmup") + 1] if "--warmup" in args else None
args = args[:min(i for i, a in enumerate(args) if a.startswith("--"))]
decay, initial, steps, average = float(args[0]), args[1], args[2:-1], args[-1]


def decay_at(t):
    """The decay of step t (1-based)."""
    if warmup is None:
        return decay
    if warmup == "num-updates":
        return 0.0 if t == 1 else min(decay, t / (9.0 + t))
    power, gamma = (float(x) for x in (warmup + ",1").split(",")[:2])
    return min(decay, 1.0 - (1.0 + (t - 1) / gamma) ** -power)


def floats(path):
    return {i.name: numpy_helper.to_array(i).astype(np.float64)
            for i in onnx.load(path).graph.initializer
            if numpy_helper.to_array(i).dtype.kind == "f"}


start = floats(initial)
e = {k: v for k, v in start.items() if only.fullmatch(k)}
for t, path in enumerate(steps, 1):
    w = floats(path)
    e = {k: v + (1.0 - decay_at(t)) * (w[k] - v) for k, v in e.items()}
got = floats(average)
kept = [k for k in start if k not in e and not np.array_equal(got[k], start[k])]
if kept:
    print(f"not averaged but changed: {kept} FAIL")
    sys.exit(1)
worst, moved = 0.0, 0
for k, want in e.items():
    worst = max(worst, float(np.abs(got[k] - want).max() /
                             max(np.abs(want).max(), 1e-30)))
    moved += not np.array_equal(got[k], start[k])
print(f"{len(e)} tensors ({moved} moved), {len(steps)} steps: worst "
      f"relative error {worst:.2e} {'ok' if worst <= rtol else 'FAIL'} "
      f"(bound {rtol:g})")
sys.exit(0 if worst <= rtol else 1)
