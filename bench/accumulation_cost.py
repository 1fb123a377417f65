"""What gradient accumulation costs a micro-batch on the GPU, measured
without one: the fp16 AdamW train step (clipping at 1, dynamic loss
scaling) of each model compiled with `--grad-accumulation 1` and `4`
(`mpc compile --train --no-nvcc`); from the artifacts' plans, the kernel
launches and the bytes every launched kernel's arguments take (each read
or written once: bench/cuda_structure.py's floor on DRAM traffic) on a
group's last micro-batch and on the others, which skip the steps only the
update needs (runtime/AppliedOnly.h), and the memory plan.

usage: python3 bench/accumulation_cost.py [--batch 8]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
from cuda_structure import (MPC, ROOT, export_zoo, kernel_traffic,  # noqa: E402
                            read_plan)


def applied_only(plan_path):
    """Indexes of the steps plan.txt marks `applied-only`."""
    marked, step = set(), -1
    for line in open(plan_path):
        if line.startswith("step "):
            step += 1
        elif line.strip() == "applied-only":
            marked.add(step)
    return marked


def compile_step(model, out, batch, groups):
    subprocess.run([MPC, "compile", model, "-o", out, "--precision", "fp16",
                    "--batch", str(batch), "--train", "--optimizer", "adamw",
                    "--lr", "0.001", "--clip-grad-norm", "1", "--no-nvcc",
                    "--grad-accumulation", str(groups)],
                   check=True, stdout=subprocess.DEVNULL)
    summary = json.load(open(os.path.join(out, "summary.json")))
    plan_path = os.path.join(out, "plan.txt")
    plan = read_plan(plan_path)
    params = sum(plan["values"][v] // 4 for name, v in plan["inputs"].items()
                 if not name.startswith(("mpc.", "x", "labels", "ids")))
    skipped = applied_only(plan_path)
    micro = dict(plan, steps=[s for i, s in enumerate(plan["steps"])
                              if i not in skipped])
    return (len(summary["launches"]), summary["launches_micro_batch"],
            kernel_traffic(plan), kernel_traffic(micro),
            summary["memory_plan_bytes"], params)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--batch", type=int, default=8)
    a = ap.parse_args()
    work = tempfile.mkdtemp()
    export_zoo(work, ["gpt_train"])
    mib = lambda b: f"{b / 2 ** 20:.2f}"
    print("| model, micro-batch | launches, N = 1 | N = 4: last / others "
          "| kernel-argument MiB, N = 1 | N = 4: last / others | memory plan "
          "MiB, N = 1 -> 4 |\n|---|---|---|---|---|---|")
    for name, path in (("digits MLP", os.path.join(ROOT, "examples", "mlp.onnx")),
                       ("test GPT", os.path.join(work, "gpt_train.onnx"))):
        k1, _, t1, _, m1, _ = compile_step(path, os.path.join(work, name + "1"),
                                           a.batch, 1)
        k4, k4m, t4, t4m, m4, _ = compile_step(
            path, os.path.join(work, name + "4"), a.batch, 4)
        print(f"| {name}, {a.batch} rows | {k1} | {k4} / {k4m} | {mib(t1)} | "
              f"{mib(t4)} / {mib(t4m)} | {mib(m1)} -> {mib(m4)} |")


if __name__ == "__main__":
    main()
