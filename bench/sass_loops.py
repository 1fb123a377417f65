"""The main loops of CUDA kernels, read from their SASS (no GPU): for each
kernel a name matches, each loop (a backward branch) that issues tensor-core
products, with its static instruction count, the instructions of its fast
path (where the loop body holds an if/else, the shorter arm: mpc's kernels
compute a tile that no mask touches on one arm and a masked tile on the
other), and its counts of the instructions that bound attention kernels.

usage: sass_loops.py IMAGE REGEX [--json]
  IMAGE: a cubin or fatbin (cuobjdump -sass reads both); REGEX: searched
  in the kernels' mangled names.
"""
import collections
import json
import re
import subprocess
import sys

# The counts reported: tensor-core products, shared-memory traffic,
# global traffic, transcendental ops, barriers.
KINDS = {"HMMA": "mma", "LDSM": "ldmatrix", "LDS": "lds", "STS": "sts",
         "LDGSTS": "cp.async", "LDG": "ldg", "STG": "stg", "REDG": "red",
         "RED": "red", "ATOMG": "atom", "MUFU": "mufu", "BAR": "bar"}


def disassemble(image):
    """{kernel: [(address, instruction text)]} of every kernel in IMAGE."""
    out = subprocess.run(["cuobjdump", "-sass", image], capture_output=True,
                         text=True)
    if out.returncode != 0:
        sys.exit(f"sass_loops.py: cuobjdump failed on {image}: "
                 f"{out.stderr.strip()}")
    code, cur = collections.OrderedDict(), None
    for line in out.stdout.splitlines():
        m = re.match(r"\s*Function : (\S+)", line)
        if m:
            cur = m.group(1)
            code[cur] = []
            continue
        m = re.match(r"\s*/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;", line)
        if m and cur:
            code[cur].append((int(m.group(1), 16), m.group(2)))
    return code


def opcode(text):
    """The opcode's base name: no predicate, no modifiers."""
    text = re.sub(r"^@!?U?P[T0-9]+\s+", "", text)
    return text.split()[0].split(".")[0]


def branch_target(text):
    m = re.search(r"\bBRA\b(?:\s+!?U?P[T0-9]+,)?\s+(0x[0-9a-f]+)", text)
    return int(m.group(1), 16) if m else None


def loops(ins):
    """Each loop's body, [lo, hi] (backward branch at hi to lo), innermost
    first for equal bodies."""
    found = []
    for addr, text in ins:
        t = branch_target(text)
        if t is not None and t < addr:
            found.append((t, addr))
    return sorted(found, key=lambda r: r[1] - r[0])


def fast_path(body):
    """Instructions on the body's fast path: each if/else (a forward
    conditional branch to t whose instruction before t is an unconditional
    branch over the else arm) runs its shorter arm."""
    at = {a: i for i, (a, _) in enumerate(body)}
    skipped = 0
    i = 0
    while i < len(body):
        addr, text = body[i]
        t = branch_target(text)
        conditional = text.startswith("@")
        if t is not None and conditional and t > addr and t in at:
            j = at[t]
            prev = body[j - 1][1]
            end = branch_target(prev)
            if end is not None and not prev.startswith("@") and end > t:
                k = at.get(end, len(body))
                then_arm, else_arm = j - 1 - i, k - j  # (then: and its BRA)
                skipped += max(then_arm, else_arm)
                i = k
                continue
        i += 1
    return len(body) - skipped


def report(code, pattern):
    rows = []
    for name, ins in code.items():
        if not re.search(pattern, name):
            continue
        for lo, hi in loops(ins):
            body = [(a, t) for a, t in ins if lo <= a <= hi]
            ops = collections.Counter(opcode(t) for _, t in body)
            if ops["HMMA"] < 16:
                continue
            if any(r["kernel"] == name and r["mma"] == ops["HMMA"] and
                   lo <= r["lo"] and r["hi"] <= hi for r in rows):
                continue  # an outer loop around one already counted
            row = {"kernel": name, "lo": lo, "hi": hi, "static": len(body),
                   "fast": fast_path(body)}
            for op, kind in KINDS.items():
                row[kind] = row.get(kind, 0) + ops[op]
            rows.append(row)
    return rows


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    if len(args) != 2:
        sys.exit(__doc__)
    rows = report(disassemble(args[0]), args[1])
    if not rows:
        sys.exit(f"sass_loops.py: no kernel matching {args[1]!r} in {args[0]} "
                 "has a loop of tensor-core products")
    if "--json" in sys.argv:
        print(json.dumps(rows))
        return
    for r in rows:
        counts = ", ".join(f"{k} {r[k]}" for k in dict.fromkeys(KINDS.values()) if r[k])
        print(f"{r['kernel'][:90]} loop {r['lo']:#x}-{r['hi']:#x}: "
              f"{r['static']} instructions, {r['fast']} on the fast path; {counts}")


if __name__ == "__main__":
    main()
