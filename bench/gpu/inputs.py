"""Benchmark inputs that travel as recipes: what a lent GPU machine takes
along is limited (64 MiB with the code), and random inputs do not
compress. `make` draws an array from its own seed with numpy's PCG64
Generator, saves it and appends its recipe (file, seed, kind, shape, dtype,
sha256) to inputs/recipes.txt; `shrink` deletes the files at least
MIN_BYTES large that a recipe makes; `restore`, on the GPU machine, draws
them again and refuses any whose bytes differ from the recorded digest (a
numpy whose streams changed), naming the file.

usage: inputs.py shrink WORK [MIN_BYTES] | inputs.py restore WORK
(make: imported by prepare.sh)
"""
import hashlib
import os
import sys

import numpy as np


def draw(seed, kind, shape, dtype):
    rng = np.random.default_rng(seed)
    if kind.startswith("normal"):  # normal[:SCALE]
        scale = float(kind.split(":")[1]) if ":" in kind else 1.0
        return (scale * rng.standard_normal(shape)).astype(dtype)
    if kind == "uniform":
        return rng.random(shape).astype(dtype)
    lo, hi = (int(v) for v in kind.split(":")[1:])  # ints:LO:HI
    return rng.integers(lo, hi, shape).astype(dtype)


def digest(path):
    return hashlib.sha256(open(path, "rb").read()).hexdigest()


def make(work, name, seed, kind, shape, dtype):
    """Draws and saves inputs/NAME, recording its recipe; returns it."""
    path = os.path.join(work, "inputs", name)
    np.save(path, draw(seed, kind, shape, dtype))
    with open(os.path.join(work, "inputs", "recipes.txt"), "a") as f:
        f.write(f"{name} {seed} {kind} {','.join(map(str, shape))} "
                f"{np.dtype(dtype).name} {digest(path)}\n")
    return np.load(path)


def recipes(work):
    path = os.path.join(work, "inputs", "recipes.txt")
    if not os.path.exists(path):
        return []
    rows = []
    for line in open(path):
        name, seed, kind, shape, dtype, sha = line.split()
        rows.append((name, int(seed), kind,
                     tuple(int(d) for d in shape.split(",") if d), dtype, sha))
    return rows


def main():
    cmd, work = sys.argv[1], sys.argv[2]
    for name, seed, kind, shape, dtype, sha in recipes(work):
        path = os.path.join(work, "inputs", name)
        if cmd == "shrink":  # again after more recipes: those gone stay so
            if os.path.exists(path) and os.path.getsize(path) >= int(
                    sys.argv[3] if len(sys.argv) > 3 else 1 << 20):
                os.remove(path)
        elif not os.path.exists(path):  # restore
            np.save(path, draw(seed, kind, shape, dtype))
            if digest(path) != sha:
                os.remove(path)
                sys.exit(f"inputs.py: {path}: numpy {np.__version__} draws "
                         "other values from its recipe than prepare.sh did")


if __name__ == "__main__":
    main()
