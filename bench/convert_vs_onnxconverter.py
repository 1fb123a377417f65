#!/usr/bin/env python3
"""`mpc convert` against onnxconverter-common's float16 converter on the
same FP32 models: Cast nodes, output error against the FP32 model (both run
by onnxruntime's CPU EP on the same seeded inputs), conversion time (file
to file, including loading and saving; mpc's time includes starting the
process), and onnx.checker's full check. Both keep FP32 graph inputs and
outputs (--keep-io-types / keep_io_types=True).

usage: bench/convert_vs_onnxconverter.py [--mpc build/bin/mpc] [--batch 4]
                                         [--write docs/performance.md]
"""
import argparse
import datetime
import os
import re
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx
import onnxruntime as ort
from onnxconverter_common import float16

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
from model_inputs import random_inputs  # noqa: E402
sys.path.insert(0, os.path.join(ROOT, "bench"))
from report import cpu_name, write_section  # noqa: E402

MODELS = ["mlp", "lenet", "resnet18", "transformer", "gpt"]
# The exports carry their loss; the inference variant keeps only this
# output (onnxconverter-common cannot convert the loss ops).
PREDICTION = {"gpt": "logp"}


def inference_variant(src, dst, name):
    m = onnx.load(src)
    keep = PREDICTION.get(name, "logits")
    inputs = [i.name for i in m.graph.input if i.name not in
              ("labels", "targets")]
    onnx.utils.extract_model(src, dst, inputs, [keep])


def run(path, feeds):
    s = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    return s.run(None, feeds)


def errors(outs, ref):
    """Max abs and max relative (to each output's largest magnitude)
    difference over float outputs."""
    ab = rel = 0.0
    for o, r in zip(outs, ref):
        if r.dtype.kind != "f":
            continue
        d = np.abs(o.astype(np.float64) - r)
        ab = max(ab, float(d.max()))
        rel = max(rel, float(d.max() / max(np.abs(r).max(), 1e-30)))
    return ab, rel


def casts(path):
    return sum(n.op_type == "Cast" for n in onnx.load(path).graph.node)


def checked(path):
    try:
        onnx.checker.check_model(onnx.load(path), full_check=True)
        return "yes"
    except Exception as e:  # noqa: BLE001 - report any checker failure
        return "no: " + str(e).splitlines()[0][:60]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mpc", default=os.path.join(ROOT, "build/bin/mpc"))
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--write")
    a = ap.parse_args()
    work = tempfile.mkdtemp(prefix="mpc-convert-bench-")
    subprocess.run(["/usr/bin/python3", os.path.join(ROOT, "scripts",
                    "export_torch_models.py"), work, "--only",
                    ",".join(MODELS)], check=True, capture_output=True)
    rng = np.random.default_rng(0)
    rows = []
    variants = []
    for name in MODELS:
        src = os.path.join(work, name + ".onnx")
        inf = os.path.join(work, name + ".inference.onnx")
        inference_variant(src, inf, name)
        variants += [(name + " (with loss)", src), (name, inf)]
    for name, src in variants:
        feeds, _ = random_inputs(onnx.load(src), a.batch, work,
                                 os.path.basename(src), rng)
        ref = run(src, feeds)
        mine = src.replace(".onnx", ".mpc.onnx")
        theirs = src.replace(".onnx", ".occ.onnx")
        t_mpc, t_occ, t_inproc = [], [], []
        for _ in range(a.repeat):
            t = time.perf_counter()
            out = subprocess.run([a.mpc, "convert", src, "-o", mine,
                                  "--keep-io-types"], check=True,
                                 capture_output=True, text=True).stdout
            t_mpc.append(time.perf_counter() - t)
            # mpc's own time: load, classify, rewrite, save (no start-up).
            t_inproc.append(float(re.search(r"([0-9.]+) s$", out.strip())
                                  .group(1)))
            t = time.perf_counter()
            m = float16.convert_float_to_float16(onnx.load(src),
                                                 keep_io_types=True)
            onnx.save(m, theirs)
            t_occ.append(time.perf_counter() - t)
        base = casts(src)
        row = {"model": name}
        for tag, path, secs in (("mpc", mine, t_mpc), ("occ", theirs, t_occ)):
            try:
                ab, rel = errors(run(path, feeds), ref)
            except Exception as e:  # noqa: BLE001 - an invalid model
                ab = rel = float("nan")
                print(f"{name} {tag}: onnxruntime failed: {e}", file=sys.stderr)
            row[tag] = (casts(path) - base, ab, rel, min(secs), checked(path))
        row["inproc"] = min(t_inproc)
        rows.append(row)
        m, o = row["mpc"], row["occ"]
        print(f"{name:24s} casts mpc {m[0]:3d} occ {o[0]:3d} | max abs err "
              f"mpc {m[1]:.3g} occ {o[1]:.3g} | rel mpc {m[2]:.3g} occ "
              f"{o[2]:.3g} | time mpc {m[3]:.3f} s (in-process "
              f"{row['inproc']:.3f} s) occ {o[3]:.3f} s "
              f"({o[3] / m[3]:.1f}x) | checker mpc {m[4]} occ {o[4]}",
              flush=True)
    if a.write:
        import onnxconverter_common
        lines = [
            "## mpc convert vs onnxconverter-common (fp16)",
            "",
            f"Measured {datetime.date.today()} on {cpu_name()}. "
            f"onnxconverter-common {onnxconverter_common.__version__} "
            f"(`convert_float_to_float16`, keep_io_types=True), onnxruntime "
            f"{ort.__version__} CPU EP, batch {a.batch}, seeded inputs "
            "(scripts/model_inputs.py). Casts: Cast nodes added to the model. "
            "Errors: outputs of the converted model against the FP32 model, "
            "max absolute and max relative to each output's largest "
            "magnitude. Time: best of "
            f"{a.repeat}, file to file; for mpc both the whole process "
            "(start-up included) and its in-process time (load, classify, "
            "rewrite, save), which is what a library call would cost. "
            "\"failed\": onnxruntime refuses the converted model.",
            "",
            "Command: `python3 bench/convert_vs_onnxconverter.py --write "
            "docs/performance.md`",
            "",
            "| model | casts mpc / occ | max abs err mpc / occ | max rel err "
            "mpc / occ | time mpc process / in-process / occ (s) | occ / mpc "
            "in-process | full check mpc / occ |",
            "|---|---|---|---|---|---|---|",
        ]
        for r in rows:
            m, o = r["mpc"], r["occ"]
            err = lambda v: "failed" if v != v else f"{v:.3g}"
            lines.append(
                f"| {r['model']} | {m[0]} / {o[0]} | {err(m[1])} / "
                f"{err(o[1])} | {err(m[2])} / {err(o[2])} | {m[3]:.3f} / "
                f"{r['inproc']:.3f} / {o[3]:.3f} | "
                f"{o[3] / max(r['inproc'], 1e-4):.1f}x | {m[4]} / "
                f"{o[4].split(':')[0]} |")
        write_section(a.write, "## mpc convert vs onnxconverter-common",
                      "\n".join(lines) + "\n")


if __name__ == "__main__":
    sys.exit(main())
