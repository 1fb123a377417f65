"""Checks for the loss-scaling cases of test/models/loss-scaling.test.

  check_scaling.py inject X.npy OUT.npy ROWS VALUE   rows ROWS (a:b) set to VALUE
  check_scaling.py underflow DIR X_TEST Y_TEST       fp32 / fp16 none / fp16 dynamic
  check_scaling.py overflow METRICS.jsonl STEP MODEL.onnx
"""
import json
import sys

import numpy as np


def metrics(path):
    return [json.loads(l) for l in open(path)]


def accuracy(model, x, y):
    import onnxruntime as ort
    s = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    return 100.0 * float((s.run(["logits"], {"x": x, "labels": y})[0]
                          .argmax(1) == y).mean())


cmd = sys.argv[1]
if cmd == "inject":
    x = np.load(sys.argv[2])
    a, b = map(int, sys.argv[4].split(":"))
    x[a:b] = float(sys.argv[5])
    np.save(sys.argv[3], x)
elif cmd == "underflow":
    d, x, y = sys.argv[2], np.load(sys.argv[3]), np.load(sys.argv[4])
    runs = {}
    for name in ("fp32", "none", "dynamic"):
        m = metrics(f"{d}/{name}.jsonl")
        runs[name] = (accuracy(f"{d}/{name}.onnx", x, y),
                      sum(r["grad_underflow"] for r in m), m[-1]["loss"])
        print(f"{name}: test accuracy {runs[name][0]:.2f}, gradient elements "
              f"flushed to zero {runs[name][1]}, final loss {runs[name][2]:.3g}")
    lost = runs["none"][1] > 0 and runs["fp32"][0] - runs["none"][0] > 20
    restored = abs(runs["fp32"][0] - runs["dynamic"][0]) <= 0.5 and \
        runs["dynamic"][1] < runs["none"][1] / 10
    print("fp16 without scaling loses gradients:", "yes" if lost else "NO")
    print("dynamic scaling restores fp32 training:",
          "yes" if restored else "NO")
    sys.exit(0 if lost and restored else 1)
elif cmd == "overflow":
    m, step = metrics(sys.argv[2]), int(sys.argv[3])
    import onnx
    from onnx import numpy_helper
    w = [numpy_helper.to_array(i) for i in onnx.load(sys.argv[4]).graph.initializer]
    skipped = [r["step"] for r in m if r["skipped"]]
    before, after = m[step - 1]["loss_scale"], m[step]["loss_scale"]
    finite = all(np.isfinite(t).all() for t in w)
    print(f"skipped steps {skipped}; loss scale {before:g} -> {after:g}; "
          f"overflowing elements {m[step - 1]['grad_overflow']}; master "
          f"weights {'finite' if finite else 'NOT FINITE'}")
    ok = skipped == [step] and after == before / 2 and finite
    sys.exit(0 if ok else 1)
