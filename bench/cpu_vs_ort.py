#!/usr/bin/env python3
"""CPU backend speed: `mpc run` against onnxruntime (CPU EP) on the same
models, inputs and thread count. Exports the models with torch (Debian's
python3-torch), times each engine's inference step (median of --repeat runs
after a warm-up; mpc's import and planning are not timed), and writes a
Markdown table.

usage: bench/cpu_vs_ort.py [--mpc build/bin/mpc] [--batch 64] [--threads 2]
                           [--repeat 20] [--write docs/performance.md]
"""
import argparse
import datetime
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx
import onnxruntime as ort

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
from model_inputs import random_inputs  # noqa: E402
sys.path.insert(0, os.path.join(ROOT, "bench"))
from report import cpu_name, write_section  # noqa: E402
MODELS = ["mlp", "lenet", "resnet18", "transformer", "gpt"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mpc", default=os.path.join(ROOT, "build/bin/mpc"))
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--write")
    a = ap.parse_args()
    work = tempfile.mkdtemp()
    subprocess.run(["/usr/bin/python3",
                    os.path.join(ROOT, "scripts/export_torch_models.py"), work,
                    "--only", ",".join(MODELS)], check=True,
                   stderr=subprocess.DEVNULL)
    rows = []
    for name in MODELS:
        path = os.path.join(work, name + ".onnx")
        model = onnx.load(path)
        feeds, args = random_inputs(model, a.batch, work, name,
                                    np.random.default_rng(0))
        out = subprocess.run([a.mpc, "run", path, "--threads", str(a.threads),
                              "--repeat", str(a.repeat)] + args, check=True,
                             capture_output=True, text=True).stdout
        mpc_ms = float(re.search(r"time: median ([0-9.]+) ms", out).group(1))
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = a.threads
        opts.inter_op_num_threads = 1
        opts.log_severity_level = 3
        sess = ort.InferenceSession(path, opts,
                                    providers=["CPUExecutionProvider"])
        sess.run(None, feeds)
        times = []
        for _ in range(a.repeat):
            t = time.perf_counter()
            sess.run(None, feeds)
            times.append((time.perf_counter() - t) * 1e3)
        ort_ms = statistics.median(times)
        rows.append((name, mpc_ms, ort_ms))
        print(f"{name:12s} mpc {mpc_ms:9.3f} ms  onnxruntime {ort_ms:9.3f} ms"
              f"  ratio {mpc_ms / ort_ms:5.2f}x", flush=True)
    if a.write:
        cpu = cpu_name()
        lines = [
            "## CPU backend vs onnxruntime (inference, fp32)",
            "",
            f"Measured {datetime.date.today()} on {cpu}, "
            f"{a.threads} threads for both engines, batch {a.batch}, median "
            f"of {a.repeat} runs after a warm-up. onnxruntime "
            f"{ort.__version__} (CPU EP). Models: torch exports with their "
            "loss (scripts/export_torch_models.py); ResNet-18 at 64x64.",
            "",
            "Command: `python3 bench/cpu_vs_ort.py --batch "
            f"{a.batch} --threads {a.threads} --write docs/performance.md`",
            "",
            "| model | mpc run (ms) | onnxruntime (ms) | mpc / ort |",
            "|---|---|---|---|",
        ] + [f"| {n} | {m:.3f} | {o:.3f} | {m / o:.2f}x |" for n, m, o in rows]
        write_section(a.write, "## CPU backend vs onnxruntime",
                      "\n".join(lines) + "\n")


if __name__ == "__main__":
    sys.exit(main())
