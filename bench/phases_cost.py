"""What phases cost: a DCGAN step in two phases against the same work as two
single-loss steps, on the CPU backend.

usage: phases_cost.py [--mpc build/bin/mpc] [--steps 200] [--write docs/performance.md]

The digits DCGAN of scripts/dcgan_digits.py (batch 32, Adam 0.5/0.999,
fp32 and fp16). `mpc train --phase d_loss/D --phase g_loss/G` runs both
phases each step; the same work as single-loss training is one run of
`--loss-output d_loss --train-params 'D\\..*'` plus one of g_loss/G. The
time per step is mpc's own step_ms (mean after 20 warm-up steps; a
phase's includes slicing the batch and handing its weights on), the three
runs interleaved 5 times, median.
The phases' cost is phases / (D + G) - 1: what handing the updated
weights from one phase's session to the other's and the loop add.
"""
import argparse
import datetime
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))
from report import cpu_name, write_section  # noqa: E402


def step_ms(cmd, metrics, skip=20):
    """Mean step_ms of a run after `skip` warm-up steps, summed over the
    phases of a step (mpc's own clock: a phase's step_ms includes slicing
    the batch and handing its weights to the other phases)."""
    run = subprocess.run(cmd + ["--metrics", metrics], capture_output=True,
                         text=True)
    if run.returncode:
        sys.exit(f"failed: {' '.join(cmd)}\n{run.stderr[-2000:]}")
    recs = [json.loads(line) for line in open(metrics)]
    per_step = {}
    for r in recs:
        per_step[r["step"]] = per_step.get(r["step"], 0) + r["step_ms"]
    times = [v for k, v in sorted(per_step.items())][skip:]
    return sum(times) / len(times)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mpc", default=os.path.join(ROOT, "build", "bin", "mpc"))
    ap.add_argument("--steps", type=int, default=150)
    ap.add_argument("--torch-python", default="/usr/bin/python3")
    ap.add_argument("--write")
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="mpc-phases-bench-")
    subprocess.run([args.torch_python, os.path.join(ROOT, "scripts",
                                                    "dcgan_digits.py"),
                    args.mpc, work, "--export-only", "--seeds", "0"],
                   check=True)
    from sklearn.datasets import load_digits
    x = (load_digits().data / 16.0).astype(np.float32)
    np.save(f"{work}/x.npy", x)
    np.save(f"{work}/z.npy", np.random.default_rng(9).standard_normal(
        (len(x), 16)).astype(np.float32))
    model = f"{work}/seed0/dcgan.onnx"
    rows = []
    for prec in ("fp32", "fp16"):
        base = [args.mpc, "train", model, "--data", f"x={work}/x.npy",
                "--data", f"z={work}/z.npy", "--batch", "32", "--optimizer",
                "adam", "--adam-betas", "0.5,0.999", "--lr", "0.002",
                "--precision", prec, "--steps", str(args.steps)]
        runs = {"phases": base + ["--phase", r"loss=d_loss,params=D\..*",
                                  "--phase", r"loss=g_loss,params=G\..*"],
                "d": base + ["--loss-output", "d_loss", "--train-params",
                             r"D\..*"],
                "g": base + ["--loss-output", "g_loss", "--train-params",
                             r"G\..*"]}
        # Interleaved, 5 rounds, median: the machine's drift hits all three.
        times = {k: [] for k in runs}
        for _ in range(5):
            for k, cmd in runs.items():
                times[k].append(step_ms(cmd, f"{work}/{k}.jsonl"))
        phases, d, g = (sorted(times[k])[2] for k in ("phases", "d", "g"))
        cost = phases / (d + g) - 1
        rows.append((prec, phases, d, g, cost))
        print(f"{prec}: phases {phases:.3f} ms/step, d_loss alone {d:.3f}, "
              f"g_loss alone {g:.3f}: phases cost {100 * cost:+.1f}%",
              flush=True)
    section = "\n".join([
        "## Phases: cost over single-loss steps (CPU backend)",
        "",
        f"Measured {datetime.date.today()} on {cpu_name()}, {os.cpu_count()} "
        "threads, the digits DCGAN of scripts/dcgan_digits.py (batch 32, "
        f"Adam 0.5/0.999), {args.steps} steps. Time per step: mpc's step_ms "
        "(mean after 20 warm-up steps; a phase's includes slicing the batch "
        "and handing its weights to the other phase), the three runs "
        "interleaved 5 times, median. Issue 15's target: phases cost under "
        "5%.",
        "",
        "Command: `python3 bench/phases_cost.py --write docs/performance.md`",
        "",
        "| precision | two phases (ms/step) | d_loss/D alone (ms/step) | "
        "g_loss/G alone (ms/step) | phases cost |",
        "|---|---|---|---|---|",
        *[f"| {p} | {ph:.3f} | {d:.3f} | {g:.3f} | {100 * c:+.1f}% |"
          for p, ph, d, g, c in rows],
        ""])
    print(section)
    if args.write:
        write_section(args.write, "## Phases: cost over single-loss steps",
                      section)


if __name__ == "__main__":
    main()
