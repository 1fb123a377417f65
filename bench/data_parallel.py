"""Data-parallel CPU ranks: mpc (gloo) against PyTorch DDP (gloo), side by side.

usage: data_parallel.py [--mpc build/bin/mpc] [--steps 200] [--write docs/performance.md]

The digits MLP (examples/mlp.onnx: 64-128-64-10, SGD) at a global batch of
256: one process, then 2 ranks x 128 on this machine, for mpc train (under
mpc launch) and for torch.nn.parallel.DistributedDataParallel with the gloo
backend (torchrun's environment, Debian's torch). The time per step is
the mean after 20 warm-up steps, measured in the process (mpc's metrics,
step_ms and its communication share comm_ms; rank 0's clock in the torch
script). Each rank gets an equal share of the cores
(MPC_NUM_THREADS / torch.set_num_threads), as mpc launch and torchrun do.
"""
import argparse
import datetime
import json
import os
import socket
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TORCH_PYTHON = "/usr/bin/python3"  # Debian's python3-torch

TORCH_RANK = r'''
import os, sys, time, numpy as np, torch, torch.distributed as dist
steps, batch = int(sys.argv[1]), int(sys.argv[2])
torch.set_num_threads(int(os.environ["THREADS"]))
dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(),
                            torch.nn.Linear(128, 64), torch.nn.ReLU(),
                            torch.nn.Linear(64, 10))
ddp = torch.nn.parallel.DistributedDataParallel(model) if world > 1 else model
opt = torch.optim.SGD(ddp.parameters(), lr=0.01)
x = torch.from_numpy(np.load(os.environ["X"]))
y = torch.from_numpy(np.load(os.environ["Y"]))
n = x.shape[0] // (batch * world)
for s in range(steps):
    if s == 20:  # after warm-up, with the ranks in step
        dist.barrier()
        start = time.perf_counter()
    k = s % n
    rows = slice((k * world + rank) * batch, (k * world + rank + 1) * batch)
    loss = torch.nn.functional.cross_entropy(ddp(x[rows]), y[rows])
    opt.zero_grad()
    loss.backward()
    opt.step()
if rank == 0:
    print((time.perf_counter() - start) / (steps - 20) * 1e3)
dist.destroy_process_group()
'''


sys.path.insert(0, os.path.join(ROOT, "bench"))
from report import cpu_name, write_section  # noqa: E402


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_all(cmds):
    """Runs the commands (env, argv) together; the first one's stdout."""
    procs = [subprocess.Popen(argv, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
             for env, argv in cmds]
    outs = []
    for p in procs:
        out, err = p.communicate()
        if p.returncode:
            sys.exit(f"failed: {err[-2000:]}")
        outs.append(out)
    return outs[0]


def mpc_run(mpc, work, ranks, batch, steps):
    """ms per step after 20 warm-up steps (mean), and the comm share."""
    metrics = os.path.join(work, f"m{ranks}.jsonl")
    argv = [mpc, "train", os.path.join(ROOT, "examples", "mlp.onnx"),
            "--data", "x=" + os.path.join(work, "x.npy"),
            "--data", "labels=" + os.path.join(work, "y.npy"),
            "--batch", str(batch), "--steps", str(steps), "--no-shuffle",
            "--optimizer", "sgd", "--metrics", metrics]
    env = dict(os.environ)
    if ranks > 1:
        argv = [mpc, "launch", "--nproc", str(ranks), "--"] + argv
    else:
        env.setdefault("MPC_NUM_THREADS", str(os.cpu_count()))
    run_all([(env, argv)])
    recs = [json.loads(line) for line in open(metrics)][20:]
    step = sum(r["step_ms"] for r in recs) / len(recs)
    comm = sum(r.get("comm_ms", 0) for r in recs) / len(recs)
    return step, comm if ranks > 1 else None


def torch_run(work, ranks, batch, steps):
    """ms per step after 20 warm-up steps, as rank 0 measures it."""
    script = os.path.join(work, "ddp_rank.py")
    with open(script, "w") as f:
        f.write(TORCH_RANK)
    port = free_port()
    cmds = []
    for r in range(ranks):
        env = dict(os.environ, RANK=str(r), WORLD_SIZE=str(ranks),
                   MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port),
                   THREADS=str(max(1, os.cpu_count() // ranks)),
                   X=os.path.join(work, "x.npy"), Y=os.path.join(work, "y.npy"))
        cmds.append((env, [TORCH_PYTHON, script, str(steps), str(batch)]))
    return float(run_all(cmds))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mpc", default=os.path.join(ROOT, "build", "bin", "mpc"))
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--global-batch", type=int, default=256)
    ap.add_argument("--write")
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="mpc-dp-bench-")
    from sklearn.datasets import load_digits
    import numpy as np
    d = load_digits()
    np.save(os.path.join(work, "x.npy"), (d.data / 16.0).astype(np.float32))
    np.save(os.path.join(work, "y.npy"), d.target.astype(np.int64))

    n = args.steps
    rows = []
    for ranks in (1, 2):
        batch = args.global_batch // ranks
        mpc_ms, comm = mpc_run(args.mpc, work, ranks, batch, n)
        torch_ms = torch_run(work, ranks, batch, n)
        comm = f"{comm:.3f}" if comm is not None else ""
        rows.append((ranks, batch, mpc_ms, comm, torch_ms))
        print(f"{ranks} rank(s) x {batch}: mpc {mpc_ms:.3f} ms/step "
              f"(comm {comm or '-'}), torch DDP {torch_ms:.3f} ms/step",
              flush=True)

    torch_version = subprocess.run(
        [TORCH_PYTHON, "-c", "import torch; print(torch.__version__)"],
        capture_output=True, text=True).stdout.strip()
    table = ["| ranks x batch | mpc (ms/step) | mpc in collectives (ms, partly overlapped) | "
             "torch DDP (ms/step) | mpc / torch |", "|---|---|---|---|---|"]
    for ranks, batch, mpc_ms, comm, torch_ms in rows:
        table.append(f"| {ranks} x {batch} | {mpc_ms:.3f} | {comm or '-'} | "
                     f"{torch_ms:.3f} | {mpc_ms / torch_ms:.2f}x |")
    speedup = rows[0][2] / rows[1][2]
    tspeed = rows[0][4] / rows[1][4]
    section = "\n".join([
        "## Data-parallel CPU ranks vs PyTorch DDP (gloo)",
        "",
        f"Measured {datetime.date.today()} on {cpu_name()}, "
        f"{os.cpu_count()} cores shared by the ranks, the digits MLP "
        f"(64-128-64-10, SGD), global batch {args.global_batch}, "
        f"mean time per step over {n - 20} steps after 20 of warm-up. "
        f"torch {torch_version} (Debian), gloo backend, DDP's default 25 MB "
        "buckets; mpc 25 MiB buckets (one here).",
        "",
        f"Command: `python3 bench/data_parallel.py --write docs/performance.md`",
        "",
        *table,
        "",
        f"Scaling 1 -> 2 ranks: mpc {speedup:.2f}x, torch DDP {tspeed:.2f}x "
        "(on 2 cores the ranks only split the cores a single process "
        "already used; the numbers show the cost of the collectives, not a "
        "speed-up).",
        ""])
    print(section)
    if args.write:
        write_section(args.write, "## Data-parallel CPU ranks vs PyTorch DDP (gloo)",
                        section)

if __name__ == "__main__":
    main()
