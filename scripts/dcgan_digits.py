#!/usr/bin/env python3
"""A DCGAN on the 8x8 digits, trained by `mpc train --phase` in a given
precision, with a quality score.

The model is a torch export: generator z(16) -> Linear -> 64x2x2 ->
ConvTranspose(4, stride 2) -> 32x4x4 -> LeakyRelu -> ConvTranspose ->
1x8x8 -> Sigmoid; discriminator Conv(4, stride 2) -> LeakyRelu -> Conv ->
LeakyRelu -> Linear; BCE-with-logits losses d_loss and g_loss (as torch
exports them: Sigmoid, Log). A phase trains the discriminator on d_loss,
then one the generator on g_loss, with Adam (betas 0.5/0.999 as DCGAN's;
lr 2e-3 for this small net). The noise is a data input:
a fixed bank of normal vectors, shuffled with the images.

Score: a logistic-regression digit classifier (scikit-learn) fit on the
real digits; its class probabilities are the features. The Frechet
distance between the features of 500 generated and 500 real digits, and
the number of the ten classes the generated digits cover (argmax).

usage: dcgan_digits.py MPC WORKDIR [--steps N] [--precisions fp32,fp16,bf16]
                        [--seeds 0,1,...,15] [--check]
"""
import argparse
import json
import os
import subprocess
import sys

import numpy as np

here = os.path.dirname(os.path.abspath(__file__))


def export(d, seed):
    """Runs under the Python that has torch (Debian's /usr/bin/python3)."""
    import torch
    from torch import nn
    torch.manual_seed(seed)

    class Gen(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(16, 64 * 2 * 2)
            self.up = nn.Sequential(
                nn.LeakyReLU(0.2), nn.ConvTranspose2d(64, 32, 4, 2, 1),
                nn.LeakyReLU(0.2), nn.ConvTranspose2d(32, 1, 4, 2, 1),
                nn.Sigmoid())

        def forward(self, z):
            return self.up(self.fc(z).reshape(-1, 64, 2, 2))

    class Gan(nn.Module):
        def __init__(self):
            super().__init__()
            self.G = Gen()
            self.D = nn.Sequential(
                nn.Conv2d(1, 32, 4, 2, 1), nn.LeakyReLU(0.2),
                nn.Conv2d(32, 64, 4, 2, 1), nn.LeakyReLU(0.2),
                nn.Flatten(), nn.Linear(256, 1))

        def forward(self, x, z):
            bce = nn.functional.binary_cross_entropy_with_logits
            real = self.D(x.reshape(-1, 1, 8, 8))
            images = self.G(z)
            fake = self.D(images)
            ones = torch.ones_like(real)
            # The generated images too: mpc train --samples shows them.
            return (bce(real, ones) + bce(fake, 0 * ones), bce(fake, ones),
                    images)

    m = Gan()
    torch.onnx.export(m, (torch.zeros(32, 64), torch.zeros(32, 16)),
                      f"{d}/dcgan.onnx", input_names=["x", "z"],
                      output_names=["d_loss", "g_loss", "fake"],
                      opset_version=13)
    torch.onnx.export(m.G, (torch.zeros(500, 16),), f"{d}/generator.onnx",
                      input_names=["z"], output_names=["image"],
                      opset_version=13)


def frechet(a, b):
    import warnings
    from scipy import linalg
    ma, mb = a.mean(0), b.mean(0)
    ca, cb = np.cov(a, rowvar=False), np.cov(b, rowvar=False)
    with warnings.catch_warnings():
        # A collapsed generator's covariance is singular; the distance is
        # still defined (and large).
        warnings.simplefilter("ignore")
        root = linalg.sqrtm(ca @ cb).real
    return float(((ma - mb) ** 2).sum() + np.trace(ca + cb - 2 * root))


def score(d, trained, clf, real_features):
    import onnx
    import onnxruntime as ort
    from onnx import numpy_helper
    gen = onnx.load(f"{d}/generator.onnx")
    # The trained model names the generator's weights "G.<name>"; its own
    # export names them "<name>".
    weights = {t.name: t for t in onnx.load(trained).graph.initializer}
    for t in gen.graph.initializer:
        src = weights.get("G." + t.name)
        if src is not None:
            t.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(src), t.name))
    z = np.random.default_rng(123).standard_normal((500, 16)).astype(np.float32)
    images = ort.InferenceSession(gen.SerializeToString(), providers=[
        "CPUExecutionProvider"]).run(None, {"z": z})[0].reshape(500, 64)
    if not np.isfinite(images).all():
        return float("inf"), 0
    p = clf.predict_proba(images)
    return frechet(p, real_features), len(set(p.argmax(1)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mpc")
    ap.add_argument("work")
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--precisions", default="fp32,fp16,bf16")
    ap.add_argument("--seeds", default=",".join(map(str, range(16))))
    ap.add_argument("--torch-python", default="/usr/bin/python3",
                    help="a Python with torch, for the export (Debian's)")
    ap.add_argument("--export-only", action="store_true")
    ap.add_argument("--check", action="store_true",
                    help="fail unless every run's losses are finite and its "
                         "Frechet distance is below the untrained generator's")
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    if a.export_only:
        for seed in a.seeds.split(","):
            os.makedirs(f"{a.work}/seed{seed}", exist_ok=True)
            export(f"{a.work}/seed{seed}", int(seed))
        return
    from sklearn.datasets import load_digits
    from sklearn.linear_model import LogisticRegression
    x, y = load_digits(return_X_y=True)
    x = (x / 16.0).astype(np.float32)
    clf = LogisticRegression(max_iter=2000).fit(x, y)
    real = clf.predict_proba(x[np.random.default_rng(7).permutation(len(x))[:500]])
    np.save(f"{a.work}/x.npy", x)
    np.save(f"{a.work}/z.npy", np.random.default_rng(9).standard_normal(
        (len(x), 16)).astype(np.float32))
    # The export needs torch: Debian's Python has it.
    subprocess.run([a.torch_python, __file__, a.mpc, a.work, "--export-only",
                    "--seeds", a.seeds], check=True)
    other = clf.predict_proba(x[np.random.default_rng(8).permutation(len(x))[:500]])
    base, base_classes = score(f"{a.work}/seed{a.seeds.split(',')[0]}",
                               f"{a.work}/seed{a.seeds.split(',')[0]}/dcgan.onnx",
                               clf, real)
    print(f"scale: real vs real digits {frechet(other, real):.3f}; the "
          f"untrained generator {base:.3f} ({base_classes}/10 classes)")
    results = {}
    for prec in a.precisions.split(","):
        for seed in a.seeds.split(","):
            d = f"{a.work}/seed{seed}"
            out = f"{d}/trained-{prec}.onnx"
            cmd = [a.mpc, "train", f"{d}/dcgan.onnx", "--data", f"x={a.work}/x.npy",
                   "--data", f"z={a.work}/z.npy", "--batch", "32", "--steps",
                   str(a.steps), "--seed", seed, "--optimizer", "adam",
                   "--adam-betas", "0.5,0.999", "--lr", "0.002",
                   "--precision", prec, "--phase", r"loss=d_loss,params=D\..*",
                   "--phase", r"loss=g_loss,params=G\..*", "--metrics",
                   f"{d}/{prec}.jsonl", "-o", out]
            p = subprocess.run(cmd, capture_output=True, text=True)
            if p.returncode:
                print(f"{prec} seed {seed}: mpc train failed: {p.stderr.strip()}")
                sys.exit(1)
            rows = [json.loads(l) for l in open(f"{d}/{prec}.jsonl")]
            finite = all(r["loss"] is not None for r in rows)
            fd, classes = score(d, out, clf, real)
            results[(prec, seed)] = fd
            # Finite, and better than where it started: the generator learned.
            failed = not finite or not fd < base
            print(f"{prec} seed {seed}: {a.steps} steps, losses "
                  f"{'finite' if finite else 'NOT FINITE'}; Frechet distance "
                  f"{fd:.3f}; classes covered {classes}/10"
                  f"{'  FAIL' if failed else ''}")
            if failed and a.check:
                sys.exit(1)
    # A GAN's score varies a lot between seeds (some collapse in every
    # precision): compare the distributions, not one seed.
    fp32 = [v for (p, s), v in results.items() if p == "fp32"]
    for prec in a.precisions.split(","):
        vals = np.array([v for (p, s), v in results.items() if p == prec])
        q1, med, q3 = np.quantile(vals, [0.25, 0.5, 0.75])
        line = (f"{prec}: Frechet distance median {med:.3f} (quartiles "
                f"{q1:.3f}..{q3:.3f}), mean {vals.mean():.3f}, "
                f"{int((vals > 0.9).sum())} of {len(vals)} collapsed (> 0.9)")
        if fp32 and prec != "fp32":
            inside = ((vals >= min(fp32)) & (vals <= max(fp32))).sum()
            line += (f"; {inside} of {len(vals)} inside the fp32 seeds' span "
                     f"{min(fp32):.3f}..{max(fp32):.3f}")
            try:
                from scipy.stats import mannwhitneyu
                line += (f"; Mann-Whitney vs fp32 p = "
                         f"{mannwhitneyu(vals, fp32).pvalue:.2f}")
            except ImportError:
                pass
        print(line)


if __name__ == "__main__":
    main()
