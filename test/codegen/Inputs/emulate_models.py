"""Compiles each MODEL:PRECISION[:OPTIMIZER] with `mpc compile --no-nvcc`
(with an optimizer: `--train`, the whole train step), builds the
artifacts' distinct kernels for the host with cuda_host_shim.h (a library
for a batch of artifacts), runs each with
mpc-emulate-artifact on seeded inputs and checks every output against the
CPU backend (largest difference relative to the output's magnitude).

usage: emulate_models.py TOOLS_DIR CXX SRC WORK MODEL:PREC[:OPTIMIZER[:FLAG=V..]]...

FLAG=V fields are more `mpc compile` flags (`layout=nhwc`: --layout=nhwc),
except `scale=S`: the train step's loss scale at step 1 (65536 without;
a tiny one flushes gradients to zero, so the underflow counts compare),
`micro=1`: under --grad-accumulation a micro-batch that does not end
its group, so both sides skip the update's steps (runtime/AppliedOnly.h),
and `ulps=OUTPUT`: also prints that output's largest distance in ulps.
"""
import os
import re
import subprocess
import sys

import numpy as np
import onnx

tools, cxx, src, work = sys.argv[1:5]
specs = sys.argv[5:]
sys.path.insert(0, os.path.join(src, "scripts"))
from model_inputs import random_inputs  # noqa: E402
from host_emulation import (RTOL, build_libraries, differences,  # noqa: E402
                            precompile_shim, run_emulated, split_kernels)

rng = np.random.default_rng(0)
shim = precompile_shim(cxx, src, work)
runs = []  # (printed name, prec, optimizer, flags, scale, artifact, args)
for spec in specs:
    path, prec, *opt = spec.split(":")
    scale = [o.split("=")[1] for o in opt[1:] if o.startswith("scale=")]
    micro = ["--micro"] if "micro=1" in opt[1:] else []
    shown = [o.split("=")[1] for o in opt[1:] if o.startswith("ulps=")]
    flags = [f for o in opt[1:]
             if not o.startswith(("scale=", "micro=", "ulps="))
             for f in ("--" + o.split("=", 1)[0], o.split("=", 1)[1])]
    opt = opt[:1]
    name = os.path.splitext(os.path.basename(path))[0]
    tag = f"{name}-{prec}" + (f"-train-{opt[0]}" if opt else "") + \
        "".join("-" + f for f in flags[1::2] + [f"scale{v}" for v in scale]) + \
        ("-micro" if micro else "")
    art = os.path.join(work, tag)
    train = ["--train", "--optimizer", opt[0], "--lr", "0.01"] if opt else []
    subprocess.run([os.path.join(tools, "mpc"), "compile", path, "-o", art,
                    "--precision", prec, "--batch", "4", "--no-nvcc"] + train +
                   [f"{k}={v}" for k, v in zip(flags[::2], flags[1::2])],
                   check=True, stdout=subprocess.DEVNULL)
    if opt:  # data, loss-scale and optimizer state at step 1
        os.makedirs(art + "-in", exist_ok=True)
        args = subprocess.run(
            [sys.executable, os.path.join(src, "test/codegen/Inputs/train_step_inputs.py"),
             art, art + "-in", "0.01", *scale, *micro], check=True,
            capture_output=True,
            text=True).stdout.split()
    else:
        _, args = random_inputs(onnx.load(path), 4, work, name, rng)
    runs.append((name, prec, opt, flags, scale, art,
                 [a for a in args if a != "--input"], shown))

# Artifacts with one prelude (the precision and flags can change it) share
# host libraries, BATCH artifacts each.
BATCH = 12
groups = {}
for r in runs:
    groups.setdefault(split_kernels(r[5])[0], []).append(r[5])
batches = [g[i:i + BATCH] for g in groups.values()
           for i in range(0, len(g), BATCH)]
libs = build_libraries(cxx, src, shim, batches, work)
lib_of = {art: lib for b, lib in zip(batches, libs) for art in b}

ok_all = True
for name, prec, opt, flags, scale, art, args, shown in runs:
    tag = os.path.basename(art)
    run = run_emulated(tools, art, lib_of[art], args)
    if run.returncode:
        sys.exit(f"{tag}: {run.stderr.strip()}")
    out = run.stdout
    kernels = re.search(r"(\d+) kernels emulated", out).group(1)
    diffs = differences(out)
    flushed = re.search(r"gradient underflow: (\d+) emulated, (\d+) on the "
                        r"CPU backend", out)
    ok = diffs and max(diffs) <= RTOL[prec] and flushed[1] == flushed[2]
    ok_all &= bool(ok)
    apart = "".join(
        f"; {o} {m[1] if m else 'missing'} ulps apart"
        for o in shown
        for m in [re.search(re.escape(o) + r": max ulps (-?\d+)", out)])
    print(f"{name} {prec}{' train ' + opt[0] if opt else ''}"
          f"{''.join(' ' + f for f in flags[1::2])}"
          f"{''.join(' scale ' + v for v in scale)}"
          f"{' micro' if tag.endswith('-micro') else ''}: {kernels} "
          f"kernels emulated; outputs within "
          f"{max(diffs):.2e} of the CPU backend"
          + (f", {flushed[1]} gradients flushed (CPU backend {flushed[2]})"
             if opt else "") + apart + f" {'ok' if ok else 'FAIL'}")
print("all ok" if ok_all else "FAIL")
sys.exit(0 if ok_all else 1)
