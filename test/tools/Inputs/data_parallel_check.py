"""Data-parallel CPU ranks (gloo) against one process with the global batch.

usage: data_parallel_check.py MPC WORKDIR CHECK

CHECK is one of:
  curves  - 2 and 4 ranks (mpc launch) give the loss curve of one process with
            the global batch (within 1e-6 relative, FP32), bit-identical
            weights on every rank, and rank 0's trained model equal to the
            single process's (within 1e-4, Adam); fp16 with dynamic loss
            scaling and a bf16 wire stay close; a 4-rank checkpoint resumed on 2 ranks
            continues the single process's curve.
  kill    - a rank killed with SIGKILL makes the others exit within seconds
            with one line naming it (run by hand with the torchrun
            environment, and under mpc launch); the last checkpoint stays
            loadable; SIGINT to mpc launch stops every rank.
Prints one line per fact, for FileCheck.
"""
import json
import os
import signal
import socket
import subprocess
import sys
import time

import numpy as np
import onnx
from onnx import numpy_helper

MPC, WORK, CHECK = sys.argv[1], sys.argv[2], sys.argv[3]
ROOT = os.path.join(os.path.dirname(__file__), "..", "..", "..")
MODEL = os.path.join(ROOT, "examples", "mlp.onnx")
os.makedirs(WORK, exist_ok=True)


def digits():
    """The 8x8 digits as the demo uses them (sklearn's copy, no download)."""
    from sklearn.datasets import load_digits
    d = load_digits()
    x = (d.data / 16.0).astype(np.float32)
    y = d.target.astype(np.int64)
    np.save(os.path.join(WORK, "x.npy"), x)
    np.save(os.path.join(WORK, "y.npy"), y)


def data_flags():
    return ["--data", "x=" + os.path.join(WORK, "x.npy"),
            "--data", "labels=" + os.path.join(WORK, "y.npy")]


def train(name, ranks, batch, extra, env=None):
    """mpc train on `ranks` ranks (mpc launch) with per-rank `batch`."""
    metrics = os.path.join(WORK, name + ".jsonl")
    cmd = [MPC, "train", MODEL] + data_flags() + [
        "--batch", str(batch), "--metrics", metrics] + extra
    if ranks > 1:
        cmd = [MPC, "launch", "--nproc", str(ranks), "--"] + cmd
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=300,
                         env=env)
    if run.returncode:
        sys.exit(f"{name}: exit {run.returncode}\n{run.stdout}{run.stderr}")
    return [json.loads(line) for line in open(metrics)], run.stdout


def worst(a, b, key="loss"):
    return max(abs(x[key] - y[key]) / max(abs(x[key]), 1e-30)
               for x, y in zip(a, b))


def weights(path):
    return {t.name: numpy_helper.to_array(t)
            for t in onnx.load(path).graph.initializer}


def curves():
    common = ["--steps", "30", "--optimizer", "adam", "--lr", "0.01",
              "--seed", "5"]
    one, _ = train("one", 1, 64, common + ["-o", os.path.join(WORK, "one.onnx")])
    for ranks in (2, 4):
        out = os.path.join(WORK, f"r{ranks}.onnx")
        many, log = train(f"r{ranks}", ranks, 64 // ranks, common + ["-o", out])
        print(f"{ranks} ranks: {len(many)} steps, loss within 1e-6 relative of "
              f"one process: {worst(one, many) <= 1e-6} "
              f"(worst {worst(one, many):.1e})")
        print(f"{ranks} ranks: weights identical on every rank: "
              f"{f'weights identical on all {ranks} ranks' in log}")
        a, b = weights(os.path.join(WORK, "one.onnx")), weights(out)
        diff = max(float(np.abs(a[k] - b[k]).max()) for k in a)
        # Adam divides by sqrt(v): summation-order differences of 1e-7
        # in the gradients grow to about 1e-5 in the weights in 30 steps.
        print(f"{ranks} ranks: trained model within 1e-4 of one process: "
              f"{diff <= 1e-4}")
        print(f"{ranks} ranks: comm_ms recorded: "
              f"{all(r['comm_ms'] >= 0 and 'step_ms' in r for r in many)}")
    # fp16 with dynamic loss scaling: the unscale sees the averaged
    # gradients, so every rank keeps the same scale and skips the same
    # steps. A rank's fp16 backward runs on its own 32 rows, seeded with
    # scale/32 rather than scale/64: it overflows at other scales than one
    # process would (as in DDP), so the runs agree until such a step.
    half = ["--precision", "fp16", "--loss-scale", "dynamic:init=1e9"]
    one16, _ = train("one16", 1, 64, common + half)
    two16, log = train("two16", 2, 32, common + half)
    same = 0
    while same < len(one16) and (one16[same]["loss_scale"], one16[same]["skipped"]) == \
            (two16[same]["loss_scale"], two16[same]["skipped"]):
        same += 1
    print(f"fp16 2 ranks: weights identical on every rank: "
          f"{'weights identical on all 2 ranks' in log}")
    print(f"fp16 2 ranks: {sum(r['skipped'] for r in two16[:same])} skipped steps "
          f"and loss scales as one process for {same} steps, loss within 1e-5 "
          f"relative there: {worst(one16[:same], two16[:same]) <= 1e-5}")
    print(f"fp16 2 ranks: final loss {two16[-1]['loss']:.2f} "
          f"(one process {one16[-1]['loss']:.2f})")
    wire, _ = train("wire", 2, 32, common + ["--grad-wire", "bf16"])
    print(f"bf16 wire 2 ranks: loss within 5e-2 relative: "
          f"{worst(one, wire) <= 5e-2} and not identical: {worst(one, wire) > 0}")
    # 4 ranks to step 15, then 2 ranks from the checkpoint to step 30.
    ck = os.path.join(WORK, "ck")
    train("part", 4, 16, common[:1] + ["15"] + common[2:] +
          ["--checkpoint", ck, "--checkpoint-every", "5"])
    resumed, log = train("resumed", 2, 32, common +
                         ["--checkpoint", ck, "--resume"])
    print("resumed on 2 ranks: " +
          next(line for line in log.splitlines() if "resumed" in line))
    print(f"resumed on 2 ranks: steps {resumed[0]['step']}-{resumed[-1]['step']} "
          f"within 1e-6 of one process: {worst(one[15:], resumed) <= 1e-6}")


def rank_pids(parent):
    """The children of `parent` with their RANK, from /proc."""
    found = {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            stat = open(f"/proc/{pid}/stat").read()
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            env = open(f"/proc/{pid}/environ", "rb").read().split(b"\0")
        except OSError:
            continue
        if ppid == parent:
            for e in env:
                if e.startswith(b"RANK="):
                    found[int(e[5:])] = int(pid)
    return found


def wait_for(path, text, limit=60):
    end = time.time() + limit
    while time.time() < end:
        if os.path.exists(path) and text in open(path).read():
            return True
        time.sleep(0.1)
    return False


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def two_ranks(cmd, upset):
    """Rank 0 and 1 of `cmd` by hand (torchrun's environment); once rank 0
    has trained 20 steps, `upset(rank 1's process)`. Rank 0's exit code,
    seconds until it exited, and its last line."""
    logs = [os.path.join(WORK, f"k{r}.log") for r in (0, 1)]
    port = free_port()
    procs = []
    for r in (0, 1):
        env = dict(os.environ, RANK=str(r), WORLD_SIZE="2",
                   MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
        procs.append(subprocess.Popen(cmd, env=env, stdout=open(logs[r], "w"),
                                      stderr=subprocess.STDOUT))
    wait_for(logs[0], "step 20/")
    upset(procs[1])
    start = time.time()
    code = procs[0].wait(timeout=120)
    took = time.time() - start
    procs[1].kill()
    procs[1].wait()
    return code, took, open(logs[0]).read().strip().splitlines()[-1]


def named(line):
    """The part of an error line from "rank 0:" to its parenthesis (the
    error comes from the step, its all_reduce or the watchdog)."""
    at = line.find("rank 0:")
    end = line.find(" (", at)
    return line[at:end if end >= 0 else len(line)]


def kill():
    long = ["--steps", "10000000", "--batch", "8", "--collective-timeout", "60"]
    base = [MPC, "train", MODEL] + data_flags() + long
    # By hand, torchrun's environment: rank 1 dies, rank 0 names it.
    code, took, last = two_ranks(base, lambda p: p.kill())
    print(f"by hand: rank 0 exit {code} within 10 s: {took < 10}"
          + ("" if took < 10 else f" ({took:.1f} s)"))
    print(f"by hand: {named(last)}")

    # A hung rank (stopped, its connections open): the others' collective
    # times out (--collective-timeout 3) and they name it.
    hung = [a if a != "60" else "3" for a in base]
    code, took, last = two_ranks(hung,
                                 lambda p: p.send_signal(signal.SIGSTOP))
    print(f"hung: rank 0 exit {code} within 15 s: {took < 15}")
    print(f"hung: {named(last)}")

    # Under mpc launch, with checkpoints every 5 steps: kill rank 1.
    ck = os.path.join(WORK, "kill-ck")
    log = os.path.join(WORK, "launch.log")
    launch = subprocess.Popen(
        [MPC, "launch", "--nproc", "2", "--"] + base +
        ["--checkpoint", ck, "--checkpoint-every", "5"],
        stdout=open(log, "w"), stderr=subprocess.STDOUT)
    wait_for(log, "step 30/")
    os.kill(rank_pids(launch.pid)[1], signal.SIGKILL)
    start = time.time()
    code = launch.wait(timeout=120)
    print(f"launch: exit {code} within 10 s: {time.time() - start < 10}")
    lines = open(log).read().splitlines()  # the processes' in any order
    for line in lines:
        if line.startswith("mpc launch:"):
            print("launch: " + line[:line.find(" (")])
    for line in lines:
        if "rank 0:" in line:  # from the step, its all_reduce, the watchdog
            print("launch: " + named(line))
    resumed = subprocess.run(
        [MPC, "train", MODEL] + data_flags() +
        ["--batch", "16", "--steps", "1", "--checkpoint", ck, "--resume"],
        capture_output=True, text=True)
    print(f"checkpoint after the kill loads: {'resumed from' in resumed.stdout}"
          f" (exit {resumed.returncode})")

    # Ctrl-C on mpc launch stops every rank.
    log = os.path.join(WORK, "ctrl-c.log")
    launch = subprocess.Popen([MPC, "launch", "--nproc", "2", "--"] + base,
                              stdout=open(log, "w"), stderr=subprocess.STDOUT)
    wait_for(log, "step 20/")
    ranks = rank_pids(launch.pid)
    launch.send_signal(signal.SIGINT)
    code = launch.wait(timeout=60)
    alive = [p for p in ranks.values() if os.path.exists(f"/proc/{p}")
             and open(f"/proc/{p}/stat").read().split()[2] != "Z"]
    print(f"ctrl-c: launch exit {code}, ranks left running: {len(alive)}")


digits()
{"curves": curves, "kill": kill}[CHECK]()
