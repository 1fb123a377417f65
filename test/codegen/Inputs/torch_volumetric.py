"""Compares `mpc grad`'s gradients of video3d.onnx (make_volumetric.py)
with torch's: the same network written with F.conv3d, F.max_pool3d and
F.conv_transpose3d, in float64.

usage: torch_volumetric.py DIR (holding video3d.<name>.npy and the grads
in DIR/grad)
"""
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

d = sys.argv[1]
names = ("W1", "B1", "W2", "B2", "T1", "TB1", "T2", "W3", "G", "GB")
t = {n: torch.tensor(np.load(os.path.join(d, f"video3d.{n}.npy")),
                     dtype=torch.float64, requires_grad=True) for n in names}
x = torch.tensor(np.load(os.path.join(d, "video3d.x.npy")), dtype=torch.float64)
labels = torch.tensor(np.load(os.path.join(d, "video3d.labels.npy")))
r1 = F.relu(F.conv3d(x, t["W1"], t["B1"], padding=1))
p1 = F.max_pool3d(r1, (1, 2, 2), (1, 2, 2))
r = F.relu(F.conv3d(p1, t["W2"], t["B2"], stride=(2, 1, 1), padding=1, groups=2))
u1 = F.conv_transpose3d(r, t["T1"], t["TB1"], stride=2)
u2 = F.conv_transpose3d(r, t["T2"], stride=2, padding=1, output_padding=1)
c3 = F.conv3d(torch.cat([u1, u2], 1), t["W3"], dilation=(2, 1, 1))
scores = c3.mean((2, 3, 4)) @ t["G"] + t["GB"]
F.cross_entropy(scores, labels).backward()
for n in names:
    got = np.load(os.path.join(d, "grad", n + ".npy")).astype(np.float64)
    want = t[n].grad.numpy()
    err = np.abs(got - want).max() / np.abs(want).max()
    print(f"{n}: relative error {err:.1e} {'ok' if err < 1e-5 else 'FAIL'}")
