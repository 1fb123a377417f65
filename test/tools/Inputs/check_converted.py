"""Checks a model written by `mpc convert` against its FP32 original with
onnxruntime: onnx.checker's full check, Cast nodes, graph input/output
types, and the outputs' error (max |a - b| / max |b| per output).

usage: check_converted.py FP32.onnx CONVERTED.onnx NAME=FILE.npy...
       [--max-rel R] [--no-run] [--reference]
(--reference: onnx's reference evaluator runs both models instead, for
ops onnxruntime lacks, such as FlexAttention)
"""
import argparse
import sys

import numpy as np
import onnx
import onnx.parser
import onnxruntime as ort

ap = argparse.ArgumentParser()
ap.add_argument("fp32")
ap.add_argument("converted")
ap.add_argument("inputs", nargs="*")
ap.add_argument("--max-rel", type=float, default=1e-2)
ap.add_argument("--no-run", action="store_true")
ap.add_argument("--reference", action="store_true")
a = ap.parse_args()

m = onnx.load(a.converted)
onnx.checker.check_model(m, full_check=True)
print("full check: ok")
casts = sum(n.op_type == "Cast" for n in m.graph.node)
print(f"casts: {casts}")
tname = lambda t: onnx.helper.tensor_dtype_to_np_dtype(t).name
print("inputs:", ", ".join(f"{v.name}:{tname(v.type.tensor_type.elem_type)}"
                           for v in m.graph.input))
print("outputs:", ", ".join(f"{v.name}:{tname(v.type.tensor_type.elem_type)}"
                            for v in m.graph.output))
if a.no_run:
    sys.exit(0)
feeds = {k: np.load(v) for k, v in (s.split("=", 1) for s in a.inputs)}
fp32 = a.fp32
if fp32.endswith(".onnxtxt"):  # ONNX text syntax, with lit comment lines
    text = "".join(l for l in open(fp32) if not l.lstrip().startswith("#"))
    fp32 = onnx.parser.parse_model(text).SerializeToString()
if a.reference:
    from onnx.reference import ReferenceEvaluator
    ref = ReferenceEvaluator(fp32 if isinstance(fp32, str) else onnx.load_from_string(fp32)).run(None, feeds)
    got = ReferenceEvaluator(m).run(None, feeds)  # (--keep-io-types models)
else:
    ref = ort.InferenceSession(fp32, providers=["CPUExecutionProvider"]).run(
        None, feeds)
    s = ort.InferenceSession(a.converted, providers=["CPUExecutionProvider"])
    low = {i.name: feeds[i.name].astype(np.float16)
           if i.type == "tensor(float16)" else feeds[i.name] for i in s.get_inputs()}
    got = s.run(None, low)
worst = 0.0
for g, r in zip(got, ref):
    if r.dtype.kind == "f":
        err = np.abs(g.astype(np.float64) - r).max() / max(np.abs(r).max(), 1e-30)
        worst = max(worst, float(err) if np.isfinite(err) else float("inf"))
print(f"max relative error vs fp32: {worst:.2e} "
      f"{'ok' if worst <= a.max_rel else 'FAIL'} (bound {a.max_rel:g})")
sys.exit(0 if worst <= a.max_rel else 1)
