#!/usr/bin/env python3
"""Trains each model in fp32, fp16 (dynamic loss scaling) and bf16 with the
same steps, data order and seed, and compares test accuracy (the trained FP32
master weights, run by onnxruntime) against fp32.

usage: precision_accuracy.py MPC DATA_DIR OUT_DIR MODEL.onnx[:STEPS:OPT:LR]...
       [--max-drop POINTS] [--markdown]
Exit status 1 when a low-precision run is more than --max-drop accuracy
points below fp32.
"""
import argparse
import json
import os
import subprocess
import sys

import numpy as np
import onnxruntime as ort


def accuracy(model, x, y):
    s = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    logits = s.run(["logits"], {"x": x, "labels": y})[0]
    return 100.0 * float((logits.argmax(1) == y).mean())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mpc")
    ap.add_argument("data")
    ap.add_argument("out")
    ap.add_argument("models", nargs="+")
    ap.add_argument("--max-drop", type=float, default=0.5)
    ap.add_argument("--markdown", action="store_true")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    d = lambda n: os.path.join(a.data, f"digits_{n}.npy")
    tx, ty = np.load(d("test_x")), np.load(d("test_y"))
    rows, ok = [], True
    for spec in a.models:
        path, steps, opt, lr = (spec.split(":") + ["300", "adam", "0.003"])[:4]
        name = os.path.splitext(os.path.basename(path))[0]
        acc = {}
        for p in ("fp32", "fp16", "bf16"):
            out = os.path.join(a.out, f"{name}-{p}")
            cmd = [a.mpc, "train", path, "--data", "x=" + d("train_x"),
                   "--data", "labels=" + d("train_y"), "--steps", steps,
                   "--batch", "64", "--optimizer", opt, "--lr", lr,
                   "--seed", "0", "--precision", p, "--metrics",
                   out + ".jsonl", "-o", out + ".onnx"]
            subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
            log = [json.loads(l) for l in open(out + ".jsonl")]
            acc[p] = (accuracy(out + ".onnx", tx, ty), log[-1]["loss"],
                      sum(r["skipped"] for r in log),
                      sum(r["grad_underflow"] for r in log))
        for p in ("fp16", "bf16"):
            drop = acc["fp32"][0] - acc[p][0]
            ok &= drop <= a.max_drop
        rows.append((name, steps, opt, lr, acc))
    if a.markdown:
        print("| model | steps, optimizer, lr | fp32 acc | fp16 acc "
              "(skipped steps) | bf16 acc | final loss fp32 / fp16 / bf16 |")
        print("|---|---|---|---|---|---|")
    for name, steps, opt, lr, acc in rows:
        f = lambda p: f"{acc[p][0]:.2f}"
        if a.markdown:
            print(f"| {name} | {steps}, {opt}, {lr} | {f('fp32')} | "
                  f"{f('fp16')} ({acc['fp16'][2]}) | {f('bf16')} | "
                  f"{acc['fp32'][1]:.4f} / {acc['fp16'][1]:.4f} / "
                  f"{acc['bf16'][1]:.4f} |")
        else:
            print(f"{name}: test accuracy fp32 {f('fp32')}, fp16 {f('fp16')} "
                  f"(skipped {acc['fp16'][2]}), bf16 {f('bf16')}; max drop "
                  f"{max(acc['fp32'][0] - acc[p][0] for p in ('fp16', 'bf16')):.2f} "
                  f"points (bound {a.max_drop})")
    print("ok" if ok else "FAIL: a low-precision run lost more than "
          f"{a.max_drop} points")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
