"""Reads `mpc train --tensorboard` event files with TensorBoard's own
reader (EventAccumulator, which checks every record's CRC32C) and compares
each scalar, step by step, with what --metrics wrote for the same run.

usage: check_tensorboard.py TBDIR METRICS.jsonl LR
"""
import json
import math
import sys

from tensorboard.backend.event_processing import event_accumulator

tb_dir, metrics_path, lr = sys.argv[1], sys.argv[2], float(sys.argv[3])
acc = event_accumulator.EventAccumulator(tb_dir)
acc.Reload()
tags = sorted(acc.Tags()["scalars"])
print("tags:", " ".join(tags))
metrics = [json.loads(line) for line in open(metrics_path)]
scalars = {t: {e.step: e.value for e in acc.Scalars(t)} for t in tags}
skipped, bad = 0, 0
for m in metrics:
    s = m["step"]
    skipped += m["skipped"]
    want = {"loss": m["loss"], "loss_scale": m["loss_scale"],
            "grad_underflow": m["grad_underflow"],
            "grad_overflow": m["grad_overflow"], "skipped_steps": skipped,
            "learning_rate": m.get("lr", lr)}
    if "grad_norm" in m:  # --clip-grad-norm
        want["grad_norm"] = m["grad_norm"]
    if "ema_decay" in m:  # --ema-warmup
        want["ema_decay"] = m["ema_decay"]
    if "eval_loss" in m:  # --eval-data: its steps alone
        want["eval_loss"] = m["eval_loss"]
    for tag, value in want.items():
        got = scalars[tag].get(s)
        # Event scalars are float32; a skipped step's norm is inf or NaN
        # (null in --metrics).
        if value is None:
            if got is None or math.isfinite(got):
                print(f"step {s} {tag}: event {got}, metrics null")
                bad += 1
        elif got is None or not math.isclose(got, value, rel_tol=1e-6,
                                             abs_tol=1e-30):
            print(f"step {s} {tag}: event {got}, metrics {value}")
            bad += 1
    if not scalars["samples_per_second"].get(s, 0) > 0:
        print(f"step {s}: samples_per_second missing or not positive")
        bad += 1
evaluated = [m["step"] for m in metrics if "eval_loss" in m]
if sorted(scalars.get("eval_loss", {})) != evaluated:
    print(f"eval_loss at steps {sorted(scalars.get('eval_loss', {}))}, "
          f"--metrics has it at {evaluated}")
    bad += 1
print(f"steps: {len(metrics)}; every scalar of every step matches --metrics:"
      f" {'yes' if bad == 0 else 'NO'}")
sys.exit(1 if bad else 0)
