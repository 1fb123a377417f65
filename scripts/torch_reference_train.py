#!/usr/bin/python3
"""PyTorch reference run for `mpc train`: loads the initial weights from the
ONNX model's initializers into the same torch MLP, trains with plain SGD on
the same batches in file order (no shuffling, last partial batch dropped),
and prints one JSON object per step ({"step", "loss"}), the format of
`mpc train --metrics`. Runs under Debian's python3-torch.

usage: torch_reference_train.py MODEL.onnx X.npy Y.npy --steps N --batch B --lr R
       [--optimizer sgd|momentum|nesterov|adam|adamw|adagrad]
       [--momentum M] [--weight-decay W] [--adam-betas B1,B2]
       [--clip-grad-norm MAX]   (clip_grad_norm_; each line gets its
                                 "grad_norm", the norm before clipping)
       [--lr-schedule SPEC]     (mpc's spec as a LambdaLR with Hugging
                                 Face's formulas; each line gets its "lr")
       [--no-weight-decay REGEX] (parameters whose whole name matches in
                                 a param group with weight_decay 0)
       [--grad-accumulation N]  (each step: (loss / N).backward() on N
                                 consecutive batches, then one update; the
                                 line's loss is their mean)
       [--eval-x X --eval-y Y --eval-every K --eval-batch B]
                                (after every K steps and the last, the
                                 "eval_loss" of net.eval() on (X, Y) in
                                 batches of B, weighted by their rows)
       [--ema DECAY [--ema-out FILE.npz]]
                                (torch.optim.swa_utils' EMA: every float
                                 tensor of the state lerped toward the
                                 model's after each update; evaluated as
                                 "eval_loss_ema", saved to FILE.npz)
       [--ema-warmup POWER[,GAMMA] | num-updates]
                                (the decay of update t as diffusers'
                                 EMAModel.get_decay(t) and timm's
                                 ModelEmaV3: 0 at t = 1, then min(DECAY,
                                 1 - (1 + (t - 1) / GAMMA) ** -POWER), or
                                 without use_ema_warmup min(DECAY, t /
                                 (9 + t)); in "ema_decay")
"""
import argparse
import json
import math
import os
import sys

import numpy as np
import onnx
from onnx import numpy_helper
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import export_torch_models as zoo  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("model")
ap.add_argument("x")
ap.add_argument("y")
ap.add_argument("--steps", type=int, default=200)
ap.add_argument("--batch", type=int, default=64)
ap.add_argument("--lr", type=float, default=0.1)
ap.add_argument("--optimizer", default="sgd")
ap.add_argument("--momentum", type=float, default=0.9)
ap.add_argument("--weight-decay", type=float, default=0.0)
ap.add_argument("--adam-betas", default="0.9,0.999")
ap.add_argument("--clip-grad-norm", type=float, default=0.0)
ap.add_argument("--lr-schedule", default="")
ap.add_argument("--grad-accumulation", type=int, default=1)
ap.add_argument("--no-weight-decay", default="")
ap.add_argument("--eval-x")
ap.add_argument("--eval-y")
ap.add_argument("--eval-every", type=int, default=0)
ap.add_argument("--eval-batch", type=int, default=0)
ap.add_argument("--ema", type=float, default=0.0)
ap.add_argument("--ema-out")
ap.add_argument("--ema-warmup")
a = ap.parse_args()

net = zoo.WithCrossEntropy(zoo.Mlp())
inits = {t.name: numpy_helper.to_array(t)
         for t in onnx.load(a.model).graph.initializer}
with torch.no_grad():
    for name, p in net.named_parameters():
        p.copy_(torch.from_numpy(inits[name].copy()))
x, y = torch.from_numpy(np.load(a.x)), torch.from_numpy(np.load(a.y))
params, wd = net.parameters(), a.weight_decay
if a.no_weight_decay:  # Hugging Face's two groups: decay, no_decay
    import re
    exempt = re.compile(f"({a.no_weight_decay})")
    named = list(net.named_parameters())
    params = [{"params": [p for n, p in named if not exempt.fullmatch(n)]},
              {"params": [p for n, p in named if exempt.fullmatch(n)],
               "weight_decay": 0.0}]
betas = tuple(float(b) for b in a.adam_betas.split(","))
opt = {
    "sgd": lambda: torch.optim.SGD(params, lr=a.lr, weight_decay=wd),
    "momentum": lambda: torch.optim.SGD(params, lr=a.lr, momentum=a.momentum,
                                        weight_decay=wd),
    "nesterov": lambda: torch.optim.SGD(params, lr=a.lr, momentum=a.momentum,
                                        nesterov=True, weight_decay=wd),
    "adam": lambda: torch.optim.Adam(params, lr=a.lr, weight_decay=wd,
                                     betas=betas),
    "adamw": lambda: torch.optim.AdamW(params, lr=a.lr, weight_decay=wd,
                                       betas=betas),
    "adagrad": lambda: torch.optim.Adagrad(params, lr=a.lr, weight_decay=wd),
}[a.optimizer]()


def schedule(spec, steps):
    """mpc's --lr-schedule as LambdaLR's lambda (transformers'
    get_linear/cosine_schedule_with_warmup, StepLR), of the step count."""
    kind, *fields = spec.split(",")
    f = dict(kv.split("=") for kv in fields)
    warmup, total = int(f.get("warmup", 0)), int(f.get("total", steps))
    lo, every, gamma = float(f.get("min", 0)), int(f.get("every", 1)), float(f.get("gamma", 0.1))

    def factor(s):
        if s < warmup:
            return s / max(1, warmup)
        span = max(1, total - warmup)
        if kind == "linear":
            return max(0.0, (total - s) / span)
        if kind == "cosine":
            c = max(0.0, 0.5 * (1.0 + math.cos(math.pi * (s - warmup) / span)))
            return c * (1.0 - lo) + lo
        if kind == "step":
            return gamma ** ((s - warmup) // every)
        return 1.0
    return factor


sched = (torch.optim.lr_scheduler.LambdaLR(opt, schedule(a.lr_schedule, a.steps))
         if a.lr_schedule else None)
per_epoch = len(x) // a.batch
n = a.grad_accumulation
# The average starts at the initial weights (AveragedModel copies them).
ema = ({k: v.detach().clone() for k, v in net.state_dict().items()
        if v.is_floating_point()} if a.ema else None)


def held_out_loss(model):
    ex, ey = torch.from_numpy(np.load(a.eval_x)), torch.from_numpy(np.load(a.eval_y))
    b = a.eval_batch or a.batch
    model.eval()
    with torch.no_grad():
        total = sum(float(model(ex[i:i + b], ey[i:i + b])[0]) * len(ex[i:i + b])
                    for i in range(0, len(ex), b))
    model.train()
    return total / len(ex)


for step in range(a.steps):
    opt.zero_grad()
    losses = []
    for j in range(n):
        k = (step * n + j) % per_epoch
        xb, yb = x[k * a.batch:(k + 1) * a.batch], y[k * a.batch:(k + 1) * a.batch]
        loss, _ = net(xb, yb)
        (loss / n if n > 1 else loss).backward()
        losses.append(float(loss))
    line = {"step": step + 1, "loss": sum(losses) / n}
    if sched:
        line["lr"] = opt.param_groups[0]["lr"]
    if a.clip_grad_norm > 0:
        line["grad_norm"] = float(torch.nn.utils.clip_grad_norm_(
            net.parameters(), a.clip_grad_norm))
    opt.step()
    if sched:
        sched.step()
    if ema:
        decay = a.ema
        if a.ema_warmup:  # diffusers' EMAModel.get_decay(step + 1)
            t = max(0, step)
            if a.ema_warmup == "num-updates":
                warm = (1 + t) / (10 + t)
            else:
                power, gamma = ([float(v) for v in a.ema_warmup.split(",")] + [1.0])[:2]
                warm = 1 - (1 + t / gamma) ** -power
            decay = 0.0 if t <= 0 else max(min(warm, a.ema), 0.0)
            line["ema_decay"] = decay
        with torch.no_grad():
            state = net.state_dict()
            for k, v in ema.items():
                v.lerp_(state[k], 1.0 - decay)
    if a.eval_x and ((step + 1) == a.steps or
                     (a.eval_every and (step + 1) % a.eval_every == 0)):
        line["eval_loss"] = held_out_loss(net)
        if ema:
            import copy
            averaged = copy.deepcopy(net)
            averaged.load_state_dict({**averaged.state_dict(), **ema})
            line["eval_loss_ema"] = held_out_loss(averaged)
    print(json.dumps(line))
if ema and a.ema_out:
    np.savez(a.ema_out, **{k: v.numpy() for k, v in ema.items()})
