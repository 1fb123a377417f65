"""Fails when an op `mpc ops --details` lists was run by no test on a backend
that claims it: every op on the CPU backend, and on CUDA every op whose
CUDA column is a kernel, a fusable expression or an alias. The backends
record what they ran in MPC_TRACE_OPS (runtime/OpTrace.h); the lit suite
sets it to build/test/op-trace.

usage: check_op_coverage.py MPC TRACE_DIR
"""
import glob
import os
import subprocess
import sys

mpc, trace = sys.argv[1:3]
lines = subprocess.run([mpc, "ops", "--details"], capture_output=True,
                       text=True, check=True).stdout.splitlines()[1:]
claims = {"cpu": set(), "cuda": set()}
for line in lines:
    fields = line.split()
    op, cuda = fields[0], " ".join(fields[4:])
    claims["cpu"].add(op)
    if cuda.split()[0] in ("kernel", "fusable", "alias"):
        claims["cuda"].add(op)
ran = {"cpu": set(), "cuda": set()}
files = glob.glob(os.path.join(trace, "*.txt"))
for path in files:
    backend = os.path.basename(path).split("-")[0]
    ran.setdefault(backend, set()).update(open(path).read().split())
if not files:
    sys.exit(f"check_op_coverage: no traces in {trace}; did the suite run "
             "with MPC_TRACE_OPS set?")
missing = {b: sorted(claims[b] - ran[b]) for b in claims}
for b in claims:
    print(f"{b}: {len(claims[b]) - len(missing[b])} of {len(claims[b])} ops "
          f"run by a test" + (f"; none runs: {' '.join(missing[b])}"
                              if missing[b] else ""))
sys.exit(1 if any(missing.values()) else 0)
