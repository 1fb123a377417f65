#!/usr/bin/python3
"""torch functions as torch.onnx exports them, each applied to a trained
[4, 8] parameter W (and a fixed X), reduced to sum(f(W, X) * R): `mpc grad`
against torch autograd (normwise relative error, bound 1e-4). The forms
that once stopped the import or the gradient: shape arithmetic reduced
(x.numel() as Shape -> ReduceProd), If on a condition that is constant
once shapes are known (torch.diagonal, LocalResponseNorm), EyeLike,
negative-step slices (torch.flip), Tan and the inverse and hyperbolic
functions, booleans on the way to a float (no gradient through them).
Runs under Debian's python3-torch (torch 1.13, opset 17).

usage: torch_functions.py MPC WORKDIR
"""
import os
import subprocess
import sys

import numpy as np
import onnx
import torch
import torch.nn as nn
import torch.nn.functional as F

mpc, work = sys.argv[1], sys.argv[2]
os.makedirs(work, exist_ok=True)

FUNCS = {
    "flip": lambda w, x: torch.flip(w, [1]),
    "flip_strided": lambda w, x: torch.flip(w, [0, 1])[:, 1::2],
    "pad_reflect": lambda w, x: F.pad(w.reshape(1, 4, 8), (2, 2),
                                      mode="reflect"),
    "pad_replicate": lambda w, x: F.pad(w.reshape(1, 4, 8), (2, 1),
                                        mode="replicate"),
    "repeat_interleave": lambda w, x: torch.repeat_interleave(w, 2, dim=1),
    "outer_einsum": lambda w, x: torch.einsum("ij,ik->ijk", w, x),
    "diagonal": lambda w, x: torch.diagonal(w[:, :4]) * 3.0,
    "local_response_norm": lambda w, x: F.local_response_norm(
        w.reshape(1, 8, 2, 2), 3),
    "tan": lambda w, x: torch.tan(w * 0.5),
    "asin": lambda w, x: torch.asin(torch.tanh(w)),
    "acos": lambda w, x: torch.acos(torch.tanh(w)),
    "not_nan_count": lambda w, x: w * (~torch.isnan(w)).float().sum(),
    "sort": lambda w, x: torch.sort(w, dim=1).values,
    "topk_smallest": lambda w, x: torch.topk(w, 3, dim=0, largest=False)[0],
    "pixel_unshuffle": lambda w, x: F.pixel_unshuffle(w.reshape(1, 2, 4, 4), 2),
    "cdist": lambda w, x: torch.cdist(w, x),
    "glu": lambda w, x: F.glu(w, dim=1),
    "kl_div": lambda w, x: F.kl_div(F.log_softmax(w, 1), F.softmax(x, 1),
                                    reduction="batchmean"),
}


class Applied(nn.Module):
    def __init__(self, f):
        super().__init__()
        self.w = nn.Parameter(torch.randn(4, 8))
        self.f = f

    def forward(self, x, r):
        y = self.f(self.w, x)
        return (y * r[: y.numel()].reshape(y.shape)).sum()


worst = 0.0
for name, f in FUNCS.items():
    torch.manual_seed(1)
    m, x, r = Applied(f), torch.randn(4, 8), torch.randn(512)
    m(x, r).backward()
    want = m.w.grad.numpy()
    path = os.path.join(work, name + ".onnx")
    torch.onnx.export(m, (x, r), path, input_names=["x", "r"],
                      output_names=["loss"], opset_version=17,
                      training=torch.onnx.TrainingMode.TRAINING,
                      do_constant_folding=False)
    feeds = []
    inputs = {i.name for i in onnx.load(path).graph.input}
    for n, t in (("x", x), ("r", r)):
        if n in inputs:  # the exporter drops an input f does not read
            np.save(os.path.join(work, f"{name}.{n}.npy"), t.numpy())
            feeds += ["--input", f"{n}={work}/{name}.{n}.npy"]
    out = os.path.join(work, name + ".grads")
    subprocess.run([mpc, "grad", path, "--output-dir", out] + feeds,
                   check=True, stdout=subprocess.DEVNULL)
    got = np.load(os.path.join(out, "w.npy"))
    err = float(np.abs(got - want).max() / max(np.abs(want).max(), 1e-30))
    worst = max(worst, err)
    print(f"{name}: relative error {err:.2e} {'ok' if err <= 1e-4 else 'FAIL'}")
print(f"{len(FUNCS)} functions, worst relative error {worst:.2e}")
sys.exit(0 if worst <= 1e-4 else 1)
