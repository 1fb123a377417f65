"""Runs ONNX backend node tests through the emitted CUDA kernels on the host:
every test whose model `mpc compile --no-nvcc` accepts (fp32 artifact; the
rest stop with a one-line error), its input_*.pb as .npy, kernels.cu built
with cuda_host_shim.h (the distinct kernels of 48 tests in one host
library), mpc-emulate-artifact against the CPU backend (which
scripts/conformance.py checks against the tests' expected outputs). Prints
the failures and a summary; exit 1 if any emulated test differs by more
than 1e-5 (fp16/bf16: two ulps) or fewer than --min tests ran. With
--precision fp16/bf16 only artifacts with a low-precision kernel count. Tests with inputs .npy cannot
hold for mpc (bf16) are left out.

usage: emulate_node_tests.py TOOLS_DIR CXX SRC WORK DATA_DIR [--min N]
           [--precision fp32|fp16|bf16] [TEST...]
"""
import argparse
import concurrent.futures
import glob
import os
import re
import subprocess
import sys

import numpy as np
import onnx
from onnx import numpy_helper

ap = argparse.ArgumentParser()
for a in ("tools", "cxx", "src", "work", "data"):
    ap.add_argument(a)
ap.add_argument("--min", type=int, default=0)
ap.add_argument("--precision", default="fp32")
ap.add_argument("tests", nargs="*")
a = ap.parse_args()
mpc = os.path.join(a.tools, "mpc")
from host_emulation import RTOL, build_libraries, differences, precompile_shim, run_emulated, ulps  # noqa: E402
rtol = RTOL[a.precision]
NPY_TYPES = [np.dtype(t) for t in
             (np.float32, np.float16, np.int64, np.int32, np.bool_)]


def prepare(test):
    """None when mpc compile refuses the model (or, with --precision, it
    has no low-precision kernel), else (test, artifact, NAME=FILE args)."""
    path = os.path.join(a.data, test)
    model = onnx.load(os.path.join(path, "model.onnx"))
    art = os.path.join(a.work, test)
    inits = {i.name for i in model.graph.initializer}
    names = [i.name for i in model.graph.input if i.name not in inits]
    cmd = [mpc, "compile", os.path.join(path, "model.onnx"), "-o", art,
           "--no-nvcc", "--precision", a.precision]
    p = subprocess.run(cmd, capture_output=True, text=True)
    frozen = set()
    if p.returncode and "must be a constant" in p.stderr:
        # Inputs mpc needs as constants (Resize's scales): the test's data.
        for idx, name in enumerate(names[1:], start=1):
            pb = os.path.join(path, "test_data_set_0", f"input_{idx}.pb")
            if os.path.exists(pb):
                cmd += ["--freeze", f"{name}={pb}"]
                frozen.add(name)
        p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode:
        return None
    kernels = open(os.path.join(art, "kernels.cu")).read()
    if a.precision != "fp32" and not re.search(r"(__half|__nv_bfloat16) \*__restrict__", kernels):
        return None  # nothing low precision: the fp32 run covers it
    pbs = sorted(glob.glob(os.path.join(path, "test_data_set_0", "input_*.pb")),
                 key=lambda p: int(re.search(r"(\d+)\.pb$", p).group(1)))
    args = []
    for name, pb in zip(names, pbs):
        if name in frozen:
            continue
        t = onnx.TensorProto()
        t.ParseFromString(open(pb, "rb").read())
        value = numpy_helper.to_array(t)
        if value.dtype not in NPY_TYPES:  # bf16 comes back as uint16
            return None
        npy = os.path.join(art, f"in.{len(args)}.npy")
        np.save(npy, value)
        args.append(f"{name}={npy}")
    return test, art, args


def run_test(item, lib):
    test, art, args = item
    run = run_emulated(a.tools, art, lib, args)
    if run.returncode:
        return False, f"{test}: FAIL ({run.stderr.strip()})", False
    diffs = differences(run.stdout)
    ok = bool(diffs) and max(diffs) <= rtol
    exact = all(u == 0 for u in ulps(run.stdout))
    return ok, (f"{test}: {len(diffs)} outputs within {max(diffs or [0]):.2e} "
                f"of the CPU backend {'ok' if ok else 'FAIL'}"), exact


shim = precompile_shim(a.cxx, a.src, a.work)
tests = a.tests or sorted(os.listdir(a.data))
BATCH = 48  # tests a host library takes
with concurrent.futures.ThreadPoolExecutor(os.cpu_count() or 2) as pool:
    items = [r for r in pool.map(prepare, tests) if r is not None]
    batches = [[art for _, art, _ in items[i:i + BATCH]]
               for i in range(0, len(items), BATCH)]
    try:
        libs = build_libraries(a.cxx, a.src, shim, batches, a.work)
    except ValueError as e:  # artifacts with unlike preludes
        sys.exit(str(e))
    results = list(pool.map(run_test, items,
                            [libs[i // BATCH] for i in range(len(items))]))
failed = [line for ok, line, _ in results if not ok]
exact = sum(1 for _, _, e in results if e)
for line in failed:
    print(line)
ok = not failed and len(results) >= a.min
print(f"node tests emulated ({a.precision}): {len(results)}; within {rtol:.3g} "
      f"of the CPU backend: "
      f"{len(results) - len(failed)}; " + ("all ok" if ok else "FAIL") +
      f"; bit for bit: {exact}")
sys.exit(0 if ok else 1)
