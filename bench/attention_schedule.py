"""How the order of attention's blocks shapes a causal step's time, by a
model of the GPU's block scheduler (no GPU needed).

A GPU starts a grid's blocks in linear order (x fastest) on the first
free slot. A causal block's work depends on where it sits: a forward
block of late queries sees more keys, a key block of early keys sees more
queries. This compiles causal attention train steps (fp16, 2 x 12 heads,
q = k = v = x W) with `mpc compile`, reads the attention kernels' grids
from plan.txt, and replays the scheduler over them: blocks in mpc's order
(heads along x, jobs along y: the longest blocks first over all heads)
against head by head (jobs along x, each head's blocks in turn, the
order before 2026-12-04). A block's cost is its tile products (forward:
64-key tiles of its 128 queries; key blocks: 32-query tiles of its keys
times 4 products, 5 with dQ's partial sums; query blocks: 32-key tiles of
64 queries times 3). Slots: 2 blocks an SM (the kernels' registers) x 132
SMs (H100, H200).

usage: attention_schedule.py MPC WORKDIR
"""
import heapq
import os
import re
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

SLOTS = 2 * 132
HEADS = 24  # batch 2 x 12 heads


def makespan(costs):
    """Blocks in order onto the first free of SLOTS slots."""
    free = [0] * SLOTS
    end = 0
    for c in costs:
        t = heapq.heappop(free) + c
        end = max(end, t)
        heapq.heappush(free, t)
    return end


def ordered(x_blocks, cost_of_job, heavy_first):
    """Costs in launch order of a grid (x_blocks, HEADS): job per block."""
    if heavy_first:
        return [cost_of_job(lin // HEADS) for lin in range(x_blocks * HEADS)]
    return [cost_of_job(x) for _ in range(HEADS) for x in range(x_blocks)]


def model(path, s, d):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 12, s, 16])
    w = numpy_helper.from_array(np.ones((16, d), np.float32) * 0.01, "w")
    mk = helper.make_node
    nodes = [mk("MatMul", ["x", "w"], ["q"]),
             mk("Attention", ["q", "q", "q"], ["y"], is_causal=1),
             mk("ReduceSum", ["y"], ["loss"], keepdims=0)]
    g = helper.make_graph(nodes, "causal", [x],
                          [helper.make_tensor_value_info("loss", TensorProto.FLOAT, [])],
                          [w])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 23)]), path)


def grids(plan):
    """(forward x blocks, backward kind, its x blocks) from plan.txt."""
    text = open(plan).read()
    # Heads along x, the blocks' jobs along y.
    fwd = re.search(r"kernel=attention_[0-9a-f]+ grid=\d+,(\d+),", text)
    acc = re.search(r"kernel=attention_grad_\w+ .*prologue-grid=\d+,(\d+),(\d+)", text)
    rec = re.search(r"kernel=attention_grad_[0-9a-f]+ grid=\d+,(\d+),(\d+)", text)
    if acc:
        return int(fwd.group(1)), "accumulate", int(acc.group(1))
    return int(fwd.group(1)), "recompute", int(rec.group(1))


def main():
    mpc, work = sys.argv[1], sys.argv[2]
    os.makedirs(work, exist_ok=True)
    print("| causal 2 x 12 heads | kernel | blocks | head by head | longest first | "
          "ideal (work / slots) | head by head / longest first |")
    print("|---|---|---|---|---|---|---|")
    for s, d in ((1024, 64), (4096, 64), (1024, 128), (4096, 128)):
        onnx_path = os.path.join(work, f"causal_{s}_{d}.onnx")
        art = os.path.join(work, f"causal_{s}_{d}")
        model(onnx_path, s, d)
        subprocess.run([mpc, "compile", onnx_path, "-o", art, "--train",
                        "--precision", "fp16", "--optimizer", "sgd",
                        "--arch", "sm_90"], check=True, stdout=subprocess.DEVNULL)
        fx, kind, bx = grids(os.path.join(art, "plan.txt"))
        key_rows = 128 if d <= 64 else 64
        key_tiles = -(-s // key_rows)
        fwd = lambda job: -(-min(s, (fx - 1 - job) * 128 + 128) // 64)
        rows = [("forward", fx * HEADS, ordered(fx, fwd, False), ordered(fx, fwd, True))]
        key_cost = lambda kb, products: (s - kb * key_rows) // 32 * products * key_rows * 32
        if kind == "accumulate":
            split = lambda sp: sum(key_cost(kb, 5) for kb in range(sp, key_tiles, bx))
            rows.append(("backward key blocks (dQ partial sums)", bx * HEADS,
                         ordered(bx, split, False), ordered(bx, split, True)))
        else:
            # One grid: key blocks (z = 0), then query blocks (z = 1).
            keys = lambda kb: key_cost(kb, 4) if kb < key_tiles else 0
            query = lambda qb: 2 * (qb + 1) * 3 * 64 * 32 if qb * 64 < s else 0
            old = ordered(bx, keys, False) + ordered(bx, query, False)
            new = ordered(bx, keys, True) + ordered(bx, lambda job: query(bx - 1 - job), True)
            rows.append(("backward key and query blocks (dQ recomputed)", 2 * bx * HEADS,
                         old, new))
        for name, blocks, old, new in rows:
            a, b = makespan(old), makespan(new)
            ideal = sum(new) / SLOTS
            print(f"| {s} x d{d} | {name} | {blocks} | {a / ideal:.2f} | "
                  f"{b / ideal:.2f} | 1.00 | {a / b:.2f}x |")


if __name__ == "__main__":
    main()
