"""Damages PLAN (a plan.txt) so that the first step with a kernel after a
reduction fused into a later GEMM reads the reduction's result before that
GEMM computes it (a reshape between them reads nothing: an alias).

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
        r = n + 1
        while any(" alias=" in l for l in lines[steps[r]:steps[r + 1]]):
            r += 1
        # The reader's first input becomes the result (in its gemm record
        # too, when it is a GEMM step: the record names its operands).
        reader = lines[steps[r]].split()
        ins = reader[3].split(",")
        old, ins[0] = ins[0], result
        reader[3] = ",".join(ins)
        lines[steps[r]] = " ".join(reader)
        for i in range(steps[r] + 1, steps[r + 1]):
            m = re.search(r"gemm=((?:[^,]+,){9})([^,]+),", lines[i])
            if m and m.group(2) == old:
                lines[i] = (lines[i][:m.start(2)] + result +
                            lines[i][m.end(2):])
        open(path, "w").write("\n".join(lines))
        sys.exit(0)
sys.exit("no reduction fused into a later GEMM")
