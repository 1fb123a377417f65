"""Writes .npy inputs for a train-step artifact (mpc compile --train) and
prints them as NAME=FILE arguments: the data batch (x random in [0, 1),
labels in [0, 10)), then the step state at step 1: loss scale 65536, no
good steps yet, the first-step flag, Adam's step size and bias correction
for lr (a third of lr where a schedule makes it an input), and zero
optimizer state (the fp16 weight copies are the
runtime's to derive); under gradient accumulation a group's last
micro-batch (mpc.accum.apply) over accumulators holding earlier ones'
gradients (random, small), or with --micro one that is neither the
group's first nor its last (the update skipped). SCALE replaces the loss
scale.

usage: train_step_inputs.py ARTIFACT OUT_DIR LR [SCALE] [--micro]
"""
import os
import sys

import numpy as np

micro = "--micro" in sys.argv
argv = [a for a in sys.argv if a != "--micro"]
art, out, lr = argv[1], argv[2], float(argv[3])
scale = float(argv[4]) if len(argv) > 4 else 65536.0
values, inputs = [], []
for line in open(os.path.join(art, "plan.txt")):
    f = line.split()
    if f[0] == "value":
        shape = [] if f[2] == "-" else [int(d) for d in f[2].split(",")]
        values.append((f[1], shape))
    elif f[0] == "input":
        inputs.append((f[1], int(f[2])))
rng = np.random.default_rng(0)
np_type = {"f32": np.float32, "i64": np.int64, "i1": np.bool_}
args = []
for name, vid in inputs:
    dtype, shape = values[vid]
    if name.startswith("mpc.half."):
        continue  # the weight copies: cast from the masters by the runtime
    if name == "x":
        v = rng.random(shape, dtype=np.float32)
    elif name == "labels":
        v = rng.integers(0, 10, shape)
    elif name == "mpc.loss_scale":
        v = np.array(scale, np.float32)
    elif name == "mpc.opt.first":
        v = np.array(True)
    elif name == "mpc.opt.lr":  # under a schedule: some step's rate
        v = np.array(lr / 3, np.float32)
    elif name == "mpc.opt.step_size":
        v = np.array(np.float32(lr) / (1 - np.float64(np.float32(0.9))), np.float32)
    elif name == "mpc.accum.apply":
        v = np.array(not micro)
    elif name == "mpc.accum.first":
        v = np.array(False)
    elif name.startswith("mpc.accum.") and name != "mpc.accum.found_inf":
        v = rng.normal(0, 1e-3, shape).astype(np.float32)
    elif name == "mpc.opt.bc2_sqrt":
        v = np.array(np.sqrt(1 - np.float64(np.float32(0.999))), np.float32)
    else:  # good-step counter, optimizer state: zeros
        v = np.zeros(shape, np_type[dtype])
    path = os.path.join(out, name.replace("/", "_") + ".npy")
    np.save(path, v.astype(np_type[dtype]))
    args.append(f"{name}={path}")
print(" ".join(args))
