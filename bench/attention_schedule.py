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

A second table sets `--attention-rows 64` beside 128 (both longest
first), at equal work per score product: its best case, as a fragment
read then feeds one mma.sync instead of two.

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
    free = [0] * SLOTS  # (main() sets SLOTS per kernel)
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
    acc = re.search(r"prologue=attention_grad_\w+_keys prologue-grid=\d+,(\d+),(\d+)", text)
    rec = re.search(r"kernel=attention_grad_[0-9a-f]+ grid=\d+,(\d+),(\d+)", text)
    if acc:
        return int(fwd.group(1)), "accumulate", int(acc.group(1))
    return int(fwd.group(1)), "recompute", int(rec.group(1))


def step_blocks(mpc, work, s, d, rows):
    """Per kernel of the causal step at `rows` rows a block: (name, blocks,
    costs head by head, costs longest first, slots); a cost is in score
    products (query x key x products), comparable across `rows`."""
    onnx_path = os.path.join(work, f"causal_{s}_{d}.onnx")
    art = os.path.join(work, f"causal_{s}_{d}_rows{rows}")
    model(onnx_path, s, d)
    subprocess.run([mpc, "compile", onnx_path, "-o", art, "--train", "--precision",
                    "fp16", "--optimizer", "sgd", "--arch", "sm_90",
                    "--attention-rows", str(rows)], check=True, stdout=subprocess.DEVNULL)
    fx, kind, bx = grids(os.path.join(art, "plan.txt"))
    # Blocks an SM: two at 128 rows (254-255 registers), three at 64 up to
    # head size 64 (168 registers), two past it.
    slots = SLOTS if rows == 128 or d > 64 else 3 * 132
    key_rows = 128 if d <= 64 and rows == 128 else 64
    key_tiles = -(-s // key_rows)
    fwd = lambda job: -(-min(s, (fx - 1 - job) * rows + rows) // 64) * rows * 64 * 2
    out = [("forward", fx * HEADS, ordered(fx, fwd, False), ordered(fx, fwd, True), slots)]
    key_cost = lambda kb, products: (s - kb * key_rows) // 32 * products * key_rows * 32
    if kind == "accumulate":
        split = lambda sp: sum(key_cost(kb, 5) for kb in range(sp, key_tiles, bx))
        out.append(("backward key blocks (dQ partial sums)", bx * HEADS,
                    ordered(bx, split, False), ordered(bx, split, True), slots))
    else:
        # One grid: key blocks (z = 0), then query blocks (z = 1).
        keys = lambda kb: key_cost(kb, 4) if kb < key_tiles else 0
        query = lambda qb: 2 * (qb + 1) * 3 * 64 * 32 if qb * 64 < s else 0
        old = ordered(bx, keys, False) + ordered(bx, query, False)
        new = ordered(bx, keys, True) + ordered(bx, lambda job: query(bx - 1 - job), True)
        out.append(("backward key and query blocks (dQ recomputed)", 2 * bx * HEADS,
                    old, new, SLOTS))
    return out


def main():
    global SLOTS
    mpc, work = sys.argv[1], sys.argv[2]
    os.makedirs(work, exist_ok=True)
    shapes = ((1024, 64), (4096, 64), (1024, 128), (4096, 128))
    print("| causal 2 x 12 heads | kernel | blocks | head by head | longest first | "
          "ideal (work / slots) | head by head / longest first |")
    print("|---|---|---|---|---|---|---|")
    wide = {}
    for s, d in shapes:
        wide[s, d] = step_blocks(mpc, work, s, d, 128)
        for name, blocks, old, new, slots in wide[s, d]:
            SLOTS = slots
            a, b = makespan(old), makespan(new)
            ideal = sum(new) / slots
            print(f"| {s} x d{d} | {name} | {blocks} | {a / ideal:.2f} | "
                  f"{b / ideal:.2f} | 1.00 | {a / b:.2f}x |")
    # --attention-rows 64 against 128, both longest first, at equal work
    # per score product (its best case: a fragment read feeds one mma.sync
    # instead of two). An SM shares its throughput among its blocks, so a
    # slot of an SM holding three runs at 2/3 the speed of one holding two.
    print()
    print("| causal 2 x 12 heads | kernel | blocks at 128 / 64 rows | time at 64 rows "
          "over 128 (equal efficiency a product) |")
    print("|---|---|---|---|")
    for s, d in shapes:
        narrow = step_blocks(mpc, work, s, d, 64)
        for (name, b128, _, new128, slots128), (name64, b64, _, new64, slots64) in zip(
                wide[s, d], narrow):
            SLOTS = slots128
            t128 = makespan(new128)
            SLOTS = slots64
            t64 = makespan(new64) * slots64 / slots128
            label = name if name == name64 else f"{name} / {name64}"
            print(f"| {s} x d{d} | {label} | {b128} / {b64} | {t64 / t128:.2f} |")
        SLOTS = 2 * 132


if __name__ == "__main__":
    main()
