"""Checks --loss-scaler shared against GradScaler's update rule, and that
per-phase scalers differ (the same run otherwise).

usage: check_shared_scaler.py SHARED.jsonl PER_PHASE.jsonl
(dynamic:init=1e6,interval=3, growth 2, backoff 0.5)
"""
import json
import sys


def phases(path):
    recs = [json.loads(line) for line in open(path)]
    return ([r for r in recs if r["phase"] == "d_loss"],
            [r for r in recs if r["phase"] == "g_loss"])


d, g = phases(sys.argv[1])
one = all(a["loss_scale"] == b["loss_scale"] for a, b in zip(d, g))
scale, good, rule, lone = 1e6, 0, True, 0
for a, b in zip(d, g):
    rule &= a["loss_scale"] == scale
    overflow = a["skipped"] or b["skipped"]
    lone += a["skipped"] != b["skipped"]
    if overflow:
        scale, good = scale * 0.5, 0
    else:
        good += 1
        if good == 3:
            scale, good = scale * 2, 0
print(f"shared: both phases at one scale: {one}; GradScaler's rule step by "
      f"step: {rule}; steps where only one phase overflowed: {lone}")
d, g = phases(sys.argv[2])
print("per-phase: scales differ between phases: "
      f"{any(a['loss_scale'] != b['loss_scale'] for a, b in zip(d, g))}")
