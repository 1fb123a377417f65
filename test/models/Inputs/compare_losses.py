"""Compares two --metrics JSONL files step by step and, given a trained
model and test data, prints its test accuracy (onnxruntime).

usage: compare_losses.py MPC.jsonl REF.jsonl --rtol R [--also FIELD ...]
                         [--model M --x X --y Y]
--also FIELD compares that field of each step too (grad_norm), within R;
it may be given more than once; a field only some steps have (eval_loss)
must be on the same steps in both.
"""
import argparse
import json
import sys

import numpy as np

ap = argparse.ArgumentParser()
ap.add_argument("mine")
ap.add_argument("ref")
ap.add_argument("--rtol", type=float, default=1e-4)
ap.add_argument("--also", action="append", default=[])
ap.add_argument("--model")
ap.add_argument("--x")
ap.add_argument("--y")
a = ap.parse_args()
mine = [json.loads(l)["loss"] for l in open(a.mine)]
ref = [json.loads(l)["loss"] for l in open(a.ref)]
assert len(mine) == len(ref), (len(mine), len(ref))
err = max(abs(m - r) / abs(r) for m, r in zip(mine, ref))
print(f"steps: {len(mine)}; first loss {mine[0]:.6f}, last {mine[-1]:.6f}")
print(f"max relative loss difference {err:.2e} "
      f"{'ok' if err <= a.rtol else 'FAIL'} (bound {a.rtol:g})")
for field in a.also:
    # Steps that have the field (eval_loss: the evaluating steps) must be
    # the same steps in both, and at least one.
    mine = [json.loads(l).get(field) for l in open(a.mine)]
    ref = [json.loads(l).get(field) for l in open(a.ref)]
    steps = [i + 1 for i, r in enumerate(ref) if r is not None]
    assert steps and steps == [i + 1 for i, m in enumerate(mine) if m is not None], \
        (field, steps, mine)
    pairs = [(m, r) for m, r in zip(mine, ref) if r is not None]
    also = max(abs(m - r) / abs(r) if r else abs(m) for m, r in pairs)
    print(f"max relative {field} difference {also:.2e} "
          f"{'ok' if also <= a.rtol else 'FAIL'}")
    err = max(err, also)
if a.model:
    import onnxruntime as ort
    s = ort.InferenceSession(a.model, providers=["CPUExecutionProvider"])
    x, y = np.load(a.x), np.load(a.y)
    logits = s.run(["logits"], {"x": x, "labels": y})[0]
    print(f"test accuracy {(logits.argmax(1) == y).mean():.4f}")
sys.exit(0 if err <= a.rtol else 1)
