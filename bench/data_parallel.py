"""Data-parallel CPU ranks: mpc (gloo) against PyTorch DDP (gloo), side by side.

usage: data_parallel.py [--mpc build/bin/mpc] [--steps 200] [--write docs/performance.md]

The digits MLP (examples/mlp.onnx: 64-128-64-10, SGD) at a global batch of
256: one process, then 2 ranks x 128 on this machine, for mpc train (under
mpc launch) and for torch.nn.parallel.DistributedDataParallel with the gloo
backend (torchrun's environment, Debian's torch). The time per step is the
difference between a run of 2N and a run of N steps over N (start-up and
compilation cancel out); mpc's own metrics add the communication share
(comm_ms) of its steps. Each rank gets an equal share of the cores
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
    k = s % n
    rows = slice((k * world + rank) * batch, (k * world + rank + 1) * batch)
    loss = torch.nn.functional.cross_entropy(ddp(x[rows]), y[rows])
    opt.zero_grad()
    loss.backward()
    opt.step()
dist.destroy_process_group()
'''


sys.path.insert(0, os.path.join(ROOT, "bench"))
from report import cpu_name, write_section  # noqa: E402


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def timed(cmds):
    """Starts the commands (env, argv) together; seconds until all end."""
    start = time.perf_counter()
    procs = [subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE) for env, argv in cmds]
    for p in procs:
        _, err = p.communicate()
        if p.returncode:
            sys.exit(f"failed: {err.decode()[-2000:]}")
    return time.perf_counter() - start


def mpc_run(mpc, work, ranks, batch, steps):
    metrics = os.path.join(work, f"m{ranks}.jsonl")
    argv = [mpc, "train", os.path.join(ROOT, "examples", "mlp.onnx"),
            "--data", "x=" + os.path.join(work, "x.npy"),
            "--data", "labels=" + os.path.join(work, "y.npy"),
            "--batch", str(batch), "--steps", str(steps), "--no-shuffle",
            "--optimizer", "sgd", "--metrics", metrics]
    if ranks > 1:
        argv = [mpc, "launch", "--nproc", str(ranks), "--"] + argv
    return timed([(dict(os.environ), argv)]), metrics


def torch_run(work, ranks, batch, steps):
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
    return timed(cmds)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mpc", default=os.path.join(ROOT, "build", "bin", "mpc"))
    ap.add_argument("--steps", type=int, default=200)
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
        env_threads = os.environ.get("MPC_NUM_THREADS")
        if ranks == 1 and env_threads is None:
            os.environ["MPC_NUM_THREADS"] = str(os.cpu_count())
        t1, _ = mpc_run(args.mpc, work, ranks, batch, n)
        t2, metrics = mpc_run(args.mpc, work, ranks, batch, 2 * n)
        if env_threads is None:
            os.environ.pop("MPC_NUM_THREADS", None)
        mpc_ms = (t2 - t1) / n * 1e3
        comm = ""
        if ranks > 1:
            recs = [json.loads(line) for line in open(metrics)][n:]
            comm = f"{sum(r['comm_ms'] for r in recs) / len(recs):.3f}"
        u1 = torch_run(work, ranks, batch, n)
        u2 = torch_run(work, ranks, batch, 2 * n)
        torch_ms = (u2 - u1) / n * 1e3
        rows.append((ranks, batch, mpc_ms, comm, torch_ms))
        print(f"{ranks} rank(s) x {batch}: mpc {mpc_ms:.3f} ms/step "
              f"(comm {comm or '-'}), torch DDP {torch_ms:.3f} ms/step",
              flush=True)

    torch_version = subprocess.run(
        [TORCH_PYTHON, "-c", "import torch; print(torch.__version__)"],
        capture_output=True, text=True).stdout.strip()
    table = ["| ranks x batch | mpc (ms/step) | of which comm (ms) | "
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
        f"{n} steps timed (a {2 * n}-step run minus a {n}-step run). "
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
