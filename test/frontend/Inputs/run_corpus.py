"""Runs `MPC import` on every model of the given corpus directories and
checks each fails cleanly: exit code 1, exactly one stderr line, starting
with "mpc: error:". Prints a summary line; exits 1 on any failure."""
import glob
import os
import subprocess
import sys

mpc, dirs = sys.argv[1], sys.argv[2:]
files = sorted(f for d in dirs for f in glob.glob(os.path.join(d, "*"))
               if f.endswith((".onnx", ".onnxtxt")))
env = dict(os.environ, ASAN_OPTIONS="detect_leaks=0:abort_on_error=0",
           UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1")
failures = 0
for f in files:
    p = subprocess.run([mpc, "import", f], capture_output=True, text=True,
                       env=env, timeout=60)
    lines = p.stderr.strip().splitlines()
    if p.returncode != 1 or len(lines) != 1 or not lines[0].startswith(
            "mpc: error:"):
        failures += 1
        print(f"FAIL {f}: exit {p.returncode}\n{p.stderr}")
print(f"corpus: {len(files)} files, {failures} failures")
sys.exit(1 if failures else 0)
