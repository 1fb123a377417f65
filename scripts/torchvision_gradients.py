"""torchvision's classifiers, video and segmentation models as a user
exports them for training (torch.onnx.export in TRAINING mode, opset 17,
with their cross-entropy loss): whether mpc compiles each step for CUDA
(`mpc compile --train --no-nvcc`: launches, memory plan) and how close
`mpc grad`'s gradients (CPU backend, FP32) come to torch's in float64,
next to torch's own FP32 gradients, which is the yardstick: deep batch-norm
networks at small batches are ill-conditioned, torch's FP32 strays from its
float64 by up to 1e-1 on some of them, and mpc should stray no further.
Dropouts are set to 0 (mpc draws its own masks, not torch's).

Needs torch and torchvision (/usr/bin/python3 here: torch 1.13,
torchvision 0.14). Minutes a model on 2 cores; not part of the suite.

usage: torchvision_gradients.py MPC WORK_DIR [MODEL...]
"""
import copy
import os
import subprocess
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torchvision

tv = torchvision.models


class WithLoss(nn.Module):
    def __init__(self, m):
        super().__init__()
        self.m = m

    def forward(self, x, y):
        out = self.m(x)
        if isinstance(out, dict):  # segmentation: pixels averaged
            out = out["out"].mean((2, 3))
        return F.cross_entropy(out, y)


# name: (constructor, input shape: batch 4, images 128 x 128, clips of 4 x 32 x 32)
MODELS = {
    "mobilenet_v2": (lambda: tv.mobilenet_v2(num_classes=10), (4, 3, 128, 128)),
    "mobilenet_v3_small": (lambda: tv.mobilenet_v3_small(num_classes=10), (4, 3, 128, 128)),
    "shufflenet_v2_x0_5": (lambda: tv.shufflenet_v2_x0_5(num_classes=10), (4, 3, 128, 128)),
    "squeezenet1_1": (lambda: tv.squeezenet1_1(num_classes=10), (4, 3, 128, 128)),
    "mnasnet0_5": (lambda: tv.mnasnet0_5(num_classes=10), (4, 3, 128, 128)),
    "googlenet": (lambda: tv.googlenet(num_classes=10, aux_logits=False,
                                       init_weights=True), (4, 3, 128, 128)),
    "densenet121": (lambda: tv.densenet121(num_classes=10), (4, 3, 128, 128)),
    "regnet_x_400mf": (lambda: tv.regnet_x_400mf(num_classes=10), (4, 3, 128, 128)),
    "lraspp_mobilenet_v3": (lambda: tv.segmentation.lraspp_mobilenet_v3_large(
        num_classes=10, weights_backbone=None), (4, 3, 128, 128)),
    "vit": (lambda: tv.VisionTransformer(32, 8, 2, 2, 64, 128, num_classes=10),
            (4, 3, 32, 32)),
    "r3d_18": (lambda: tv.video.r3d_18(num_classes=10), (4, 3, 4, 32, 32)),
    "mc3_18": (lambda: tv.video.mc3_18(num_classes=10), (4, 3, 4, 32, 32)),
    "r2plus1d_18": (lambda: tv.video.r2plus1d_18(num_classes=10), (4, 3, 4, 32, 32)),
}


def worst(got, want):
    """The largest relative error over the parameters (each error relative
    to the parameter's largest gradient; exactly-zero gradients skipped)."""
    w, at = 0.0, ""
    for k, v in want.items():
        scale = np.abs(v).max()
        if scale < 1e-6:
            continue
        e = float(np.abs(got[k] - v).max() / scale)
        if e > w:
            w, at = e, k
    return w, at


def check(mpc, work, name):
    make, shape = MODELS[name]
    torch.manual_seed(0)
    model = WithLoss(make()).train()
    for m in model.modules():
        if isinstance(m, nn.Dropout):
            m.p = 0.0
    rng = np.random.default_rng(1)
    x = rng.standard_normal(shape).astype(np.float32)
    y = rng.integers(0, 10, shape[0]).astype(np.int64)
    path = os.path.join(work, name + ".onnx")
    torch.onnx.export(model, (torch.tensor(x), torch.tensor(y)), path,
                      input_names=["x", "labels"], output_names=["loss"],
                      opset_version=17, do_constant_folding=False,
                      training=torch.onnx.TrainingMode.TRAINING)
    np.save(os.path.join(work, name + ".x.npy"), x)
    np.save(os.path.join(work, name + ".labels.npy"), y)
    compiled = subprocess.run(
        [mpc, "compile", path, "-o", os.path.join(work, name + ".fp16"), "--train",
         "--optimizer", "adam", "--precision", "fp16", "--no-nvcc"],
        capture_output=True, text=True)
    if compiled.returncode:
        print(f"{name}: CUDA compile refused: {compiled.stderr.strip()}", flush=True)
        return False
    stats = compiled.stdout.strip().split(": ", 1)[1].split(", kernels.cu")[0]
    grads = os.path.join(work, name + ".grad")
    subprocess.run([mpc, "grad", path, "--input", f"x={work}/{name}.x.npy",
                    "--input", f"labels={work}/{name}.labels.npy",
                    "--output-dir", grads], check=True, stdout=subprocess.DEVNULL)
    torch_grads = {}
    for dtype in (torch.float32, torch.float64):
        m = copy.deepcopy(model).to(dtype)
        m(torch.tensor(x, dtype=dtype), torch.tensor(y)).backward()
        torch_grads[dtype] = {k: p.grad.double().numpy()
                              for k, p in m.named_parameters()}
    want = torch_grads[torch.float64]
    mine = {k: np.load(os.path.join(grads, k + ".npy")).astype(np.float64)
            for k in want}
    e_mpc, at_mpc = worst(mine, want)
    e_torch, _ = worst(torch_grads[torch.float32], want)
    ok = e_mpc <= max(3 * e_torch, 1e-5)
    print(f"{name} {list(shape)}: {stats}; gradients vs float64: mpc "
          f"{e_mpc:.1e} ({at_mpc}), torch fp32 {e_torch:.1e} "
          f"{'ok' if ok else 'FAIL'}", flush=True)
    return ok


def main():
    mpc, work = sys.argv[1], sys.argv[2]
    os.makedirs(work, exist_ok=True)
    names = sys.argv[3:] or list(MODELS)
    results = [check(mpc, work, n) for n in names]
    print(f"{sum(results)} of {len(results)} ok")
    sys.exit(0 if all(results) else 1)


if __name__ == "__main__":
    main()
