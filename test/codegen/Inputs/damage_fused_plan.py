"""Damages PLAN (a plan.txt) around a step a GEMM's library call computes
(library-fused-into=): the first step with a kernel after it (a reshape,
an alias, reads nothing) gets a new first input, in its gemm record as
well when it is a GEMM step (the record names its operands).

  read-before: a reduction fused into a later GEMM; the reader takes the
               reduction's result, before that GEMM computes it.
  gelu-shared: a gelu_grad fused into its GEMM (DGELU); the reader takes
               the GEMM's result too, which the library never writes.

usage: damage_fused_plan.py PLAN read-before|gelu-shared
"""
import re
import sys

path, mode = sys.argv[1], sys.argv[2]
lines = open(path).read().split("\n")
steps = [i for i, l in enumerate(lines) if l.startswith("step ")] + [len(lines)]


def block(n):
    return lines[steps[n]:steps[n + 1]]


def fused_into(n):
    m = [re.search(r"library-fused-into=(\d+)", l) for l in block(n)]
    m = [x for x in m if x]
    return int(m[0].group(1)) if m else -1


def feed_next_kernel(n, value):
    r = n + 1
    while any(" alias=" in l for l in block(r)):
        r += 1
    reader = lines[steps[r]].split()
    ins = reader[3].split(",")
    old, ins[0] = ins[0], value
    reader[3] = ",".join(ins)
    lines[steps[r]] = " ".join(reader)
    for i in range(steps[r] + 1, steps[r + 1]):
        m = re.search(r"gemm=((?:[^,]+,){9})([^,]+),", lines[i])
        if m and m.group(2) == old:
            lines[i] = lines[i][:m.start(2)] + value + lines[i][m.end(2):]


for n in range(len(steps) - 1):
    head = lines[steps[n]].split()
    if mode == "read-before" and fused_into(n) > n + 1:
        feed_next_kernel(n, head[4])  # the reduction's result
    elif (mode == "gelu-shared" and head[1] == "gelu_grad" and
          fused_into(n) >= 0):
        feed_next_kernel(n, head[3].split(",")[0])  # the GEMM's result
    else:
        continue
    open(path, "w").write("\n".join(lines))
    sys.exit(0)
sys.exit(f"no step for {mode}")
