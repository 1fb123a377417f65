"""Damages PLAN (a plan.txt) around a gelu_grad step fused into its GEMM
(DGELU): the first step with a kernel after it reads the GEMM's result
too (in its gemm record as well, when it is a GEMM step), which the
library never writes when it takes the epilogue.

usage: corrupt_gelu_fusion.py PLAN
"""
import re
import sys

path = sys.argv[1]
lines = open(path).read().split("\n")
steps = [i for i, l in enumerate(lines) if l.startswith("step ")] + [len(lines)]
block = lambda n: lines[steps[n]:steps[n + 1]]
for n in range(len(steps) - 1):
    if (lines[steps[n]].startswith("step gelu_grad ") and
            any("library-fused-into=" in l for l in block(n))):
        grad = lines[steps[n]].split()[3].split(",")[0]
        r = n + 1
        while any(" alias=" in l for l in block(r)):
            r += 1
        reader = lines[steps[r]].split()
        ins = reader[3].split(",")
        old, ins[0] = ins[0], grad
        reader[3] = ",".join(ins)
        lines[steps[r]] = " ".join(reader)
        for i in range(steps[r] + 1, steps[r + 1]):
            m = re.search(r"gemm=((?:[^,]+,){9})([^,]+),", lines[i])
            if m and m.group(2) == old:
                lines[i] = lines[i][:m.start(2)] + grad + lines[i][m.end(2):]
        open(path, "w").write("\n".join(lines))
        sys.exit(0)
sys.exit("no gelu_grad step fused into its GEMM")
