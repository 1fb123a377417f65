"""`mpc convert` on every torch model of the suite: the converted model
passes onnx.checker's full check, runs in onnxruntime with outputs within
--max-rel of the FP32 model on seeded inputs, and converting it again
gives the same model. Also a copy of the MLP stored with external data:
the converted model keeps its weights external.

usage: convert_all.py MPC DIR MODEL... [--max-rel R]
"""
import argparse
import os
import subprocess
import sys

import numpy as np
import onnx
import onnxruntime as ort

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..",
                                "scripts"))
from model_inputs import random_inputs  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("mpc")
ap.add_argument("dir")
ap.add_argument("models", nargs="+")
ap.add_argument("--max-rel", type=float, default=1e-2)
a = ap.parse_args()
rng = np.random.default_rng(0)


def normalized(path):
    """The model's bytes with external data loaded in (the data file's
    name is the only thing allowed to differ)."""
    m = onnx.load(path)
    for t in m.graph.initializer:
        del t.external_data[:]
        t.data_location = onnx.TensorProto.DEFAULT
    return m.SerializeToString()


def check(name, src, extra=()):
    out = os.path.join(a.dir, name + ".fp16.onnx")
    subprocess.run([a.mpc, "convert", src, "-o", out, "--keep-io-types",
                    *extra], check=True, stdout=subprocess.DEVNULL)
    onnx.checker.check_model(out, full_check=True)
    feeds, _ = random_inputs(onnx.load(src), 4, a.dir, name, rng)
    run = lambda p: ort.InferenceSession(
        p, providers=["CPUExecutionProvider"]).run(None, feeds)
    worst = 0.0
    for g, r in zip(run(out), run(src)):
        if r.dtype.kind == "f":
            worst = max(worst, float(np.abs(g.astype(np.float64) - r).max()
                                     / max(np.abs(r).max(), 1e-30)))
    again = os.path.join(a.dir, name + ".again.onnx")
    subprocess.run([a.mpc, "convert", out, "-o", again], check=True,
                   stdout=subprocess.DEVNULL)
    same = normalized(out) == normalized(again)
    casts = sum(n.op_type == "Cast" for n in onnx.load(out).graph.node) - \
        sum(n.op_type == "Cast" for n in onnx.load(src).graph.node)
    ok = worst <= a.max_rel and same
    print(f"{name}: full check ok, {casts} casts added, max relative error "
          f"{worst:.2e}, reconverted {'identical' if same else 'DIFFERENT'} "
          f"{'ok' if ok else 'FAIL'}")
    return ok, out


ok = True
for path in a.models:
    good, _ = check(os.path.splitext(os.path.basename(path))[0], path)
    ok &= good
# External data: weights stay external in the converted model.
ext_dir = os.path.join(a.dir, "external")
os.makedirs(ext_dir, exist_ok=True)
ext = os.path.join(ext_dir, "mlp_ext.onnx")
onnx.save_model(onnx.load(a.models[0]), ext, save_as_external_data=True,
                all_tensors_to_one_file=True, location="mlp_ext.weights",
                size_threshold=0)
good, out = check("mlp_ext", ext)
m = onnx.load(out, load_external_data=False)
external = sum(t.data_location == onnx.TensorProto.EXTERNAL
               for t in m.graph.initializer)
print(f"external data: {external} of {len(m.graph.initializer)} initializers "
      f"in {os.path.basename(out)}.data")
ok &= good and external == len(m.graph.initializer)
print("ok" if ok else "FAIL")
sys.exit(0 if ok else 1)
