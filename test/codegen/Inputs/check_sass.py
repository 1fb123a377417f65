"""Disassembles an artifact's device code (kernels*.fatbin: the kernel
cache's modules) with cuobjdump -sass and checks
tensor-core use per kernel and architecture: every GEMM/conv kernel the
artifact lists as tensor-core (summary.json) contains HMMA or HGMMA on every
architecture, and no fp32 GEMM kernel does. An instruction counts when its
name (after an optional predicate) starts with HMMA or HGMMA; HFMA2.MMA is
an ordinary-core instruction.

With --opcodes OP,OP...: prints, per kernel and architecture, how many
instructions start with each OP (e.g. FFMA,FMUL,FADD) instead.

With --only REGEX (a kernel name's start): counts only the launched kernels
it matches, disassembling only the images that hold them (each image costs
cuobjdump about a second, whatever its size), and fails when it matches
none. With --arch SM (e.g. sm_90): that architecture's code only.

With --local: checks from cuobjdump -res-usage that no kernel has a stack
frame or local memory (what ptxas spills, or an array it could not keep in
registers); prints each that has, then a summary, and fails if any has.

usage: check_sass.py ARTIFACT_DIR [--opcodes OP,OP... | --local] [--only REGEX] [--arch SM]
"""
import argparse
import glob
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile

ap = argparse.ArgumentParser()
ap.add_argument("dir")
mode = ap.add_mutually_exclusive_group()
mode.add_argument("--opcodes")
mode.add_argument("--local", action="store_true")
ap.add_argument("--only")
ap.add_argument("--arch")
args = ap.parse_args()
d = args.dir
summary = json.load(open(f"{d}/summary.json"))
images = sorted(glob.glob(f"{d}/kernels*.fatbin"))
if not images:
    sys.exit(f"{d} has no device code (kernels*.fatbin)")
# Our kernels: the distinct ones and what the steps launch (prologues).
launched = set(summary["kernels"]) | set(summary.get("launches", []))


def cuobjdump(*args):
    """cuobjdump's output, its lines stripped; exits on failure."""
    out = subprocess.run(["cuobjdump", *args], capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"cuobjdump failed: {out.stderr.strip()}")
    return [line.strip() for line in out.stdout.splitlines()]


def functions(image):
    """The functions an image holds, from its resource usage (fast)."""
    return {t[len("Function "):].rstrip(":")
            for t in cuobjdump("-res-usage", image) if t.startswith("Function ")}


def disassembly(image, arch_args):
    """cuobjdump -sass of IMAGE. Each cubin costs nvdisasm ~0.4 s of start-up
    whatever its size, and the tests disassemble the same images (the
    kernel cache's modules) many times: with SASS_CACHE (lit sets it, a
    directory emptied at each run) an image's text is kept under its
    content's hash, written whole before it is visible (tests run in
    parallel)."""
    cache = os.environ.get("SASS_CACHE")
    if not cache:
        return cuobjdump("-sass", *arch_args, image)
    key = hashlib.sha256(open(image, "rb").read() +
                         " ".join(arch_args).encode()).hexdigest()
    path = os.path.join(cache, key + ".sass")
    if os.path.exists(path):
        return open(path).read().split("\n")
    lines = cuobjdump("-sass", *arch_args, image)
    os.makedirs(cache, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=cache)
    with os.fdopen(fd, "w") as f:
        f.write("\n".join(lines))
    os.replace(tmp, path)
    return lines


if args.only:
    launched = {k for k in launched if re.match(args.only, k)}
    if not launched:
        sys.exit(f"no kernel of {d} matches {args.only}")
if args.local:
    ours, frames, arch, fn = launched, {}, "cubin", None
    for image in images:
        for t in cuobjdump("-res-usage", image):
            if t.startswith("arch = "):
                arch = t.split("=")[1].strip()
            elif t.startswith("Function "):
                fn = t[len("Function "):].rstrip(":")
            elif fn in ours and t.startswith("REG:"):
                use = dict(f.split(":", 1) for f in t.split())
                frames[(fn, arch)] = (int(use["STACK"]), int(use["LOCAL"]))
    bad = sorted((k, a, f) for (k, a), f in frames.items() if sum(f))
    for k, a, (stack, local) in bad:
        print(f"{k} {a}: STACK={stack} LOCAL={local}")
    archs = sorted({a for (k, a) in frames})
    print(f"{len({k for (k, a) in frames})} kernels on {','.join(archs)}: " +
          (f"{len(bad)} use local memory" if bad else "no local memory"))
    sys.exit(1 if bad else 0)
sass = []
one_arch = ["-arch", args.arch] if args.arch else []
for image in images:
    if not args.only or functions(image) & launched:
        sass += disassembly(image, one_arch)
opcodes = args.opcodes.split(",") if args.opcodes else []
matchers = [(op, re.compile(re.escape(op) + r"\b")) for op in opcodes]
ops = {}  # (kernel, arch) -> {opcode: count}
counts, arch, fn = {}, None, None
for t in sass:
    if t.startswith("arch = "):
        arch = t.split("=")[1].strip()
    elif t.startswith("Function : "):
        fn = t.split(":", 1)[1].strip()
        counts.setdefault(fn, {}).setdefault(arch, 0)
    elif fn and t.startswith("/*"):
        insn = re.sub(r"^/\*[0-9a-f]+\*/\s*", "", t)
        if insn.startswith("@"):
            insn = insn.split(None, 1)[1] if " " in insn else ""
        if re.match(r"(HMMA|HGMMA)", insn):
            counts[fn][arch] += 1
        if matchers and fn in launched:
            c = ops.setdefault((fn, arch), {o: 0 for o in opcodes})
            for op, m in matchers:
                if m.match(insn):
                    c[op] += 1
if opcodes:
    for (k, a), c in sorted(ops.items()):
        if k in launched:
            print(f"{k} {a}: " + " ".join(f"{o}={c[o]}" for o in opcodes))
    sys.exit(0)
# A cached module can hold other models' kernels too: only ours count.
counts = {k: v for k, v in counts.items() if k in set(summary["kernels"])}
archs = sorted({a for c in counts.values() for a in c})
ok = True
for k in summary["tensor_core_gemm_kernels"]:
    have = [counts.get(k, {}).get(a, 0) for a in archs]
    good = all(n > 0 for n in have)
    ok &= good
    print(f"{k}: HMMA {' '.join(f'{a}={n}' for a, n in zip(archs, have))} "
          f"{'ok' if good else 'MISSING'}")
for k in summary["fp32_gemm_kernels"]:
    have = [counts.get(k, {}).get(a, 0) for a in archs]
    good = not any(have)
    ok &= good
    print(f"{k} (fp32): HMMA {' '.join(f'{a}={n}' for a, n in zip(archs, have))} "
          f"{'ok' if good else 'UNEXPECTED'}")
print(f"{summary['precision']} {','.join(archs)}: "
      f"{len(summary['tensor_core_gemm_kernels'])} tensor-core GEMM kernels, "
      f"{len(summary['fp32_gemm_kernels'])} fp32 GEMM kernels, "
      f"{len(counts)} kernels in all: {'ok' if ok else 'FAIL'}")
sys.exit(0 if ok else 1)
