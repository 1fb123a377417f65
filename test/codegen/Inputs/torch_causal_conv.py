"""Compares `mpc grad`'s gradients of causal_conv.onnx (make_composed_ops.py
--causal-conv) with torch's: the same loss written with F.conv1d over the
past state and the input concatenated, groups = channels, SiLU, and the
last k - 1 steps as the state.

usage: torch_causal_conv.py DIR (holding causal_conv.<name>.npy and the
grads in DIR/grad)
"""
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

d = sys.argv[1]
t = {n: torch.tensor(np.load(os.path.join(d, f"causal_conv.{n}.npy")),
                     dtype=torch.float64, requires_grad=n not in ("R", "R2"))
     for n in ("x", "w", "b", "past", "R", "R2")}
padded = torch.cat([t["past"], t["x"]], 2)
y = F.silu(F.conv1d(padded, t["w"], t["b"], groups=t["x"].shape[1]))
state = padded[:, :, padded.shape[2] - (t["w"].shape[2] - 1):]
((y * t["R"]).sum() + (state * t["R2"]).sum()).backward()
for n in ("x", "w", "b", "past"):
    got = np.load(os.path.join(d, "grad", n + ".npy")).astype(np.float64)
    want = t[n].grad.numpy()
    err = np.abs(got - want).max() / np.abs(want).max()
    print(f"{n}: relative error {err:.1e} {'ok' if err < 1e-5 else 'FAIL'}")
