"""Damages PLAN (a plan.txt) so that the step after a reduction fused into
a later GEMM reads the reduction's result before that GEMM computes it.

usage: read_before_fused.py PLAN
"""
import re
import sys

path = sys.argv[1]
lines = open(path).read().split("\n")
steps = [i for i, l in enumerate(lines) if l.startswith("step ")]
for n, at in enumerate(steps):
    end = steps[n + 1] if n + 1 < len(steps) else len(lines)
    fused = [re.search(r"library-fused-into=(\d+)", l) for l in lines[at:end]]
    fused = [m for m in fused if m]
    if fused and int(fused[0].group(1)) > n + 1:
        result = lines[at].split()[4]
        reader = lines[steps[n + 1]].split()
        reader[3] = ",".join([result] + reader[3].split(",")[1:])
        lines[steps[n + 1]] = " ".join(reader)
        open(path, "w").write("\n".join(lines))
        sys.exit(0)
sys.exit("no reduction fused into a later GEMM")
