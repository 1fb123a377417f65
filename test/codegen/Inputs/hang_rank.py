"""Two ranks of `mpc train ARGS...`; rank 1 is stopped (SIGSTOP) once rank
0 has trained 20 steps. Prints whether rank 0 exited within 15 s, and
its last line.

usage: hang_rank.py MPC WORKDIR ARGS...
"""
import os
import signal
import socket
import subprocess
import sys
import time

mpc, work, args = sys.argv[1], sys.argv[2], sys.argv[3:]
model = os.path.join(os.path.dirname(__file__), "..", "..", "..", "examples",
                     "mlp.onnx")
os.makedirs(work, exist_ok=True)
with socket.socket() as s:
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
logs = [os.path.join(work, f"rank{r}.log") for r in (0, 1)]
procs = []
for r in (0, 1):
    env = dict(os.environ, RANK=str(r), WORLD_SIZE="2", LOCAL_RANK=str(r),
               MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port),
               MPC_FAKE_NCCL_DIR=work)
    procs.append(subprocess.Popen(
        [mpc, "train", model, "--steps", "10000000", "--collective-timeout",
         "2"] + args, env=env, stdout=open(logs[r], "w"),
        stderr=subprocess.STDOUT))
end = time.time() + 120
while time.time() < end and "step 20/" not in open(logs[0]).read():
    time.sleep(0.1)
procs[1].send_signal(signal.SIGSTOP)
start = time.time()
code = procs[0].wait(timeout=120)
print(f"rank 0 exit {code} within 15 s: {time.time() - start < 15}")
print(open(logs[0]).read().strip().splitlines()[-1])
procs[1].kill()
procs[1].wait()
