"""Holds the malformed corpus against onnx.checker, the independent reference
for what a valid model is. Every file must be rejected by mpc (exit 1) and
named in malformed.test; the files onnx.checker accepts are printed, sorted,
so the test pins exactly which rejections are mpc's own (unsupported ops and
types, limits, checks onnx.checker lacks) rather than invalid ONNX.

usage: checker_agrees.py MPC CORPUS_DIR MALFORMED_TEST
"""
import glob
import os
import subprocess
import sys

import onnx

mpc, corpus, listing = [os.path.abspath(a) for a in sys.argv[1:4]]
listed = open(listing).read()
corpus = os.path.abspath(corpus)
os.chdir(corpus)  # the checker resolves external data from here
accepted, problems = [], []
files = sorted(glob.glob("*.onnx"))
for f in files:
    name = f[:-len(".onnx")]
    if f"%S/malformed/{f} " not in listed:
        problems.append(f"{f} has no case in malformed.test")
    p = subprocess.run([mpc, "import", f, "-o", os.devnull],
                       capture_output=True, text=True, timeout=60)
    if p.returncode != 1:
        problems.append(f"{f}: mpc exited {p.returncode}")
    try:
        model = onnx.load(f, load_external_data=False)
        onnx.checker.check_model(model, full_check=True)
        accepted.append(name)
    except Exception:  # any rejection: parse error, checker or inference
        pass
print(f"corpus: {len(files)} files; onnx.checker rejects "
      f"{len(files) - len(accepted)}")
print("onnx.checker accepts:", " ".join(accepted))
for p in problems:
    print("FAIL", p)
sys.exit(1 if problems or len(files) < 50 else 0)
