"""Reads a train step's plan.txt and prints, per kind of output, how many
its applied-only steps compute (runtime/AppliedOnly.h): those a
micro-batch that does not end its accumulation group skips. The
accumulators must be computed every micro-batch; the updates (weights,
optimizer state, weight copies, the clipping norm) only on the last.

usage: applied_only_steps.py PLAN_TXT
"""
import sys

outputs, producer, applied_only = {}, {}, set()
step = -1
for line in open(sys.argv[1]):
    f = line.split()
    if not f:
        continue
    if f[0] == "output":
        outputs[f[1]] = int(f[2])
    elif f[0] == "step":
        step += 1
        if f[4] != "-":
            for v in f[4].split(","):
                producer[int(v)] = step
    elif f[0] == "applied-only":
        applied_only.add(step)


def skipped(name):
    return producer.get(outputs[name]) in applied_only


accums = [n for n in outputs
          if n.startswith("mpc.accum.") and n != "mpc.accum.found_inf"]
every = [n for n in accums if not skipped(n)]
print(f"accumulations (mpc.accum.*): {len(every)} computed every micro-batch"
      + ("" if len(every) == len(accums) else
         f", {len(accums) - len(every)} NOT"))
for prefix in ("mpc.new.", "mpc.opt.", "mpc.half.", "mpc.ema.",
               "mpc.grad_norm"):
    names = [n for n in outputs if n.startswith(prefix)]
    if names:
        print(f"{prefix}{'*' if prefix.endswith('.') else ''}: "
              f"{sum(map(skipped, names))} of {len(names)} computed only on "
              f"a group's last micro-batch")
