#!/usr/bin/env python3
"""Where a lit test's time goes: runs each RUN line of the bash script lit
writes for it (MPC_LIT_EXTERNAL=1 lit build/test/.../NAME.test leaves it
at Output/NAME.test.script) and prints its CPU and wall seconds, slowest
first. The environment is the tests' (lit.cfg.py writes it to
BUILD_DIR/test/lit-environment.json in that mode); the emulated kernels'
host-build cache and the kernel cache start empty, as in CI.

usage: time_test_lines.py BUILD_DIR SCRIPT [--top N]
"""
import argparse
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import time

ap = argparse.ArgumentParser()
ap.add_argument("build")
ap.add_argument("script")
ap.add_argument("--top", type=int, default=20)
args = ap.parse_args()
build = os.path.abspath(args.build)
scratch = tempfile.mkdtemp(prefix="time-test-lines-")
saved = f"{build}/test/lit-environment.json"
if not os.path.exists(saved):
    sys.exit(f"time_test_lines.py: no {saved}: run the test with MPC_LIT_EXTERNAL=1 lit first")
env = json.load(open(saved))
env.update(XDG_CACHE_HOME=f"{scratch}/cache", MPC_FAKE_CUDA_CACHE=f"{scratch}/fake-cuda-cache", SASS_CACHE=f"{scratch}/sass-cache",
           MPC_FAKE_CUDA_BUILD_LOG=f"{scratch}/fake-cuda-cache.log",
           MPC_TRACE_OPS=f"{scratch}/op-trace")
os.makedirs(env["MPC_TRACE_OPS"])
rows = []
for line in open(args.script).read().split("\n"):
    line = line.strip().removeprefix("set -o pipefail;set -x;").removesuffix("&&")
    if not line:
        continue
    at = re.search(r"RUN: at line (\d+)", line)
    before, start = resource.getrusage(resource.RUSAGE_CHILDREN), time.time()
    rc = subprocess.run(["bash", "-c", "set -o pipefail; " + line], env=env,
                        capture_output=True).returncode
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    command = re.sub(r".*\{   ", "", line).replace(build + "/", "")
    rows.append((cpu, time.time() - start, at.group(1) if at else "?", rc, command))
print(f"{sum(r[0] for r in rows):.1f} s CPU, {sum(r[1] for r in rows):.1f} s wall, {len(rows)} lines")
for cpu, wall, at, rc, command in sorted(rows, reverse=True)[:args.top]:
    print(f"{cpu:6.1f} {wall:6.1f}  line {at:>4}{'' if rc == 0 else f' (exit {rc})'}  {command[:160]}")
