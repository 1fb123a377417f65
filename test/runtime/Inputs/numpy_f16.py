"""Checks mpc's FP16 numerics bit for bit against NumPy's own float16
(an independent implementation): Cast f16 <-> f32 over all 65536 patterns
and sampled floats, and Add/Sub/Mul/Div on f16 (FP32 compute, one rounding).

usage: numpy_f16.py MPC WORKDIR
"""
import os
import subprocess
import sys

import numpy as np
from onnx import TensorProto, helper, save

mpc, work = sys.argv[1], sys.argv[2]
H, F = TensorProto.FLOAT16, TensorProto.FLOAT
n = 65536
ops = ["Add", "Sub", "Mul", "Div"]
nodes = [helper.make_node(op, ["a", "b"], [op.lower()]) for op in ops]
nodes += [helper.make_node("Cast", ["a"], ["widened"], to=F),
          helper.make_node("Cast", ["x"], ["narrowed"], to=H)]
graph = helper.make_graph(
    nodes, "f16",
    [helper.make_tensor_value_info("a", H, [n]),
     helper.make_tensor_value_info("b", H, [n]),
     helper.make_tensor_value_info("x", F, [n])],
    [helper.make_tensor_value_info(o.lower(), H, [n]) for o in ops] +
    [helper.make_tensor_value_info("widened", F, [n]),
     helper.make_tensor_value_info("narrowed", H, [n])])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
model.ir_version = 8
save(model, os.path.join(work, "f16.onnx"))

rng = np.random.default_rng(0)
a = np.arange(n, dtype=np.uint32).astype(np.uint16).view(np.float16)
b = rng.permutation(a)
x = np.concatenate([rng.standard_normal(n // 2).astype(np.float32) *
                    np.float32(1e3),
                    rng.integers(0, 2**32, n // 2, dtype=np.uint64)
                    .astype(np.uint32).view(np.float32)])
for name, v in (("a", a), ("b", b), ("x", x)):
    np.save(os.path.join(work, name + ".npy"), v)
out = os.path.join(work, "out")
subprocess.run([mpc, "run", os.path.join(work, "f16.onnx"), "--output-dir", out]
               + [f"--input={k}={os.path.join(work, k + '.npy')}"
                  for k in "abx"], check=True, stdout=subprocess.DEVNULL)

with np.errstate(all="ignore"):
    want = {"add": a + b, "sub": a - b, "mul": a * b, "div": a / b,
            "widened": a.astype(np.float32), "narrowed": x.astype(np.float16)}
bad = 0
for name, w in want.items():
    g = np.load(os.path.join(out, name + ".npy"))
    assert g.dtype == w.dtype, (name, g.dtype, w.dtype)
    bits = np.uint16 if w.dtype == np.float16 else np.uint32
    same = (g.view(bits) == w.view(bits)) | (np.isnan(g) & np.isnan(w))
    bad += int((~same).sum())
    print(f"{name}: {len(w)} elements, {int((~same).sum())} differ from numpy")
print(f"{len(want) * n - bad} passed, {bad} failed")
sys.exit(1 if bad else 0)
