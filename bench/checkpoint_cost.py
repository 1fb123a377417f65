"""What activation checkpointing (--checkpoint-blocks) saves and costs,
measured without a GPU: the fp16 AdamW train step of the test GPT 12
blocks deep (scripts/export_torch_models.py gpt_l12) compiled without and
with `--checkpoint-blocks 'blocks\\.[0-9]+'`, the whole blocks recomputed
and with `--checkpoint-save products` (`mpc compile --train --no-nvcc`)
at several batches; from the artifacts' summaries, the memory plan (the
arena of what the step computes), the kernel launches and the FLOPs.

usage: python3 bench/checkpoint_cost.py [--batches 16,64,256]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
from cuda_structure import MPC, export_zoo  # noqa: E402


def compile_step(model, out, batch, extra):
    subprocess.run([MPC, "compile", model, "-o", out, "--precision", "fp16",
                    "--batch", str(batch), "--train", "--optimizer", "adamw",
                    "--lr", "0.001", "--no-nvcc"] + extra, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return json.load(open(os.path.join(out, "summary.json")))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--batches", default="16,64,256")
    a = ap.parse_args()
    work = tempfile.mkdtemp()
    export_zoo(work, ["gpt_l12"])
    model = os.path.join(work, "gpt_l12.onnx")
    mib = lambda b: f"{b / 2 ** 20:.2f}"
    print("| sequences of 16 tokens | memory plan MiB: plain / all "
          "recomputed / products saved | launches | GFLOP a step |\n"
          "|---|---|---|---|")
    blocks = ["--checkpoint-blocks", r"blocks\.[0-9]+"]
    for batch in map(int, a.batches.split(",")):
        p = compile_step(model, os.path.join(work, f"p{batch}"), batch, [])
        c = compile_step(model, os.path.join(work, f"c{batch}"), batch, blocks)
        s = compile_step(model, os.path.join(work, f"s{batch}"), batch,
                         blocks + ["--checkpoint-save", "products"])
        mem = lambda x: (f"{mib(x['memory_plan_bytes'])} "
                         f"({100 * x['memory_plan_bytes'] / p['memory_plan_bytes']:.0f}%)")
        flops = lambda x: (f"{x['flops'] / 1e9:.3f} "
                           f"(+{100 * (x['flops'] / p['flops'] - 1):.1f}%)")
        print(f"| {batch} | {mib(p['memory_plan_bytes'])} / {mem(c)} / {mem(s)} "
              f"| {len(p['launches'])} / {len(c['launches'])} / {len(s['launches'])} "
              f"| {p['flops'] / 1e9:.3f} / {flops(c)} / {flops(s)} |")


if __name__ == "__main__":
    main()
