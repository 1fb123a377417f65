"""Property test of the numerics contract: seeded random graphs of
elementwise, cast and reduction ops, fed values at the edges (signed zeros,
fp32/fp16/bf16 subnormals, the largest finite values and just beyond,
infinities, NaN, softplus/exp overflow points), compiled in fp32, fp16 and
bf16, run on the CPU backend and as the emitted CUDA kernels on the host
(cuda_host_shim.h) and compared output by output:

- elementwise and cast chains: bit for bit (0 ulps): both backends call the
  same formula (runtime/Formulas.h) and round at the same points;
- ReduceMax/ReduceMin: bit for bit;
- ReduceSum/ReduceMean of magnitudes: within ulps of the computing type
  (the GPU accumulates in FP32, the CPU backend in double).

Each chain is one graph output, so one compile and one host build check
many cases. usage:
  property_graphs.py TOOLS CXX SRC WORK [--graphs N] [--chains N] [--seed S]
"""
import argparse
import os
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

ap = argparse.ArgumentParser()
ap.add_argument("tools")
ap.add_argument("cxx")
ap.add_argument("src")
ap.add_argument("work")
ap.add_argument("--graphs", type=int, default=4)
ap.add_argument("--chains", type=int, default=60)
ap.add_argument("--seed", type=int, default=0)
ap.add_argument("--precisions", default="fp32,fp16,bf16")
a = ap.parse_args()
sys.path.insert(0, os.path.join(a.src, "test/codegen/Inputs"))
from host_emulation import build_libraries, precompile_shim, run_emulated, ulps  # noqa: E402

F = TensorProto.FLOAT
ROWS, COLS = 8, 16
EDGES = np.array([
    0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 3.5,
    1e-45, -1e-45, 1e-40, 1.1754944e-38, -1.2e-38,       # fp32 subnormal/min
    6e-8, -6e-8, 3e-5, 6.1e-5, 1e-7,                     # fp16 subnormal
    65504.0, -65504.0, 65519.0, 65520.0, 7e4,            # fp16 max, beyond
    3.3895e38, 3.4e38, -3.4e38, 1e10, -1e10, 1e-20,     # bf16/fp32 max
    np.inf, -np.inf, np.nan,
    -16.7, -20.0, -100.0, 20.0, 88.7, 89.0, -87.0, -104.0,  # exp, softplus
    6.0, -3.0, 3.0, -6.0,                                  # hard swish/sigmoid
], np.float32)

UNARY = [("Relu", {}), ("Exp", {}), ("Log", {}), ("Sqrt", {}),
         ("Reciprocal", {}), ("Tanh", {}), ("Sigmoid", {}), ("Erf", {}),
         ("Atan", {}), ("Sin", {}), ("Cos", {}), ("Abs", {}), ("Neg", {}),
         ("Floor", {}), ("Ceil", {}), ("Round", {}), ("Sign", {}),
         ("Softplus", {}), ("Softsign", {}), ("Mish", {}), ("HardSwish", {}),
         ("Gelu", {}), ("Gelu", {"approximate": "tanh"}),
         ("LeakyRelu", {"alpha": 0.1}), ("Elu", {"alpha": 0.7}),
         ("Celu", {"alpha": 1.3}), ("Selu", {}),
         ("HardSigmoid", {"alpha": 0.3, "beta": 0.4}),
         ("ThresholdedRelu", {"alpha": 0.5})]
BINARY = [("Add", {}), ("Sub", {}), ("Mul", {}), ("Div", {}), ("Pow", {}),
          ("Max", {}), ("Min", {}), ("PRelu", {}), ("Mod", {"fmod": 1})]
CASTS = [TensorProto.FLOAT16, TensorProto.BFLOAT16]
REDUCE = ["ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin"]


def make_graph(rng, index):
    nodes, outputs, kinds = [], [], []
    inits = [numpy_helper.from_array(np.array([1], np.int64), "axis1"),
             numpy_helper.from_array(np.float32(-1.5), "lo"),
             numpy_helper.from_array(np.float32(2.25), "hi")]
    for c in range(a.chains):
        v, kind = "x", "elementwise"
        for k in range(int(rng.integers(1, 5))):
            out = f"c{c}_{k}"
            pick = rng.random()
            if pick < 0.55:
                op, attrs = UNARY[rng.integers(len(UNARY))]
                nodes.append(helper.make_node(op, [v], [out], **attrs))
            elif pick < 0.85:
                op, attrs = BINARY[rng.integers(len(BINARY))]
                other = "y" if rng.random() < 0.7 else "x"
                ins = [other, v] if op not in ("PRelu", "Mod") and \
                    rng.random() < 0.3 else [v, other]
                nodes.append(helper.make_node(op, ins, [out], **attrs))
            elif pick < 0.93:
                to = CASTS[rng.integers(len(CASTS))]
                nodes.append(helper.make_node("Cast", [v], [out + "h"], to=to))
                nodes.append(helper.make_node("Cast", [out + "h"], [out], to=F))
            else:
                nodes.append(helper.make_node("Clip", [v, "lo", "hi"], [out]))
            v = out
        if rng.random() < 0.25:
            op = REDUCE[rng.integers(len(REDUCE))]
            nodes.append(helper.make_node("Abs", [v], [v + "_abs"]))
            nodes.append(helper.make_node(op, [v + "_abs", "axis1"],
                                          [f"out{c}"], keepdims=0))
            outputs.append(helper.make_tensor_value_info(f"out{c}", F, [ROWS]))
            kind = "exact-reduce" if op in ("ReduceMax", "ReduceMin") \
                else "sum-reduce"
        else:
            nodes.append(helper.make_node("Identity", [v], [f"out{c}"]))
            outputs.append(helper.make_tensor_value_info(f"out{c}", F,
                                                         [ROWS, COLS]))
        kinds.append(kind)
    graph = helper.make_graph(
        nodes, f"property{index}",
        [helper.make_tensor_value_info("x", F, [ROWS, COLS]),
         helper.make_tensor_value_info("y", F, [ROWS, COLS])],
        outputs, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)])
    model.ir_version = 9
    onnx.checker.check_model(model)
    return model, kinds


def edge_inputs(rng):
    """Edge values (each at least once per input) among random normals of
    scales from 1e-4 to 1e4."""
    n = ROWS * COLS
    scales = 10.0 ** rng.integers(-4, 5, n)
    x = (rng.standard_normal(n) * scales).astype(np.float32)
    y = (rng.standard_normal(n) * scales).astype(np.float32)
    x[rng.permutation(n)[:len(EDGES)]] = EDGES
    y[rng.permutation(n)[:len(EDGES)]] = EDGES
    return x.reshape(ROWS, COLS), y.reshape(ROWS, COLS)


# Sums of magnitudes: n = 16 terms in FP32 against double, rounded once to
# the output; in fp16/bf16 runs the sum may round to the computing type.
SUM_ULPS = {"fp32": 16, "fp16": 2 << 13, "bf16": 2 << 16}

rng = np.random.default_rng(a.seed)
os.makedirs(a.work, exist_ok=True)
shim = precompile_shim(a.cxx, a.src, a.work, "-O0")
totals = {"elementwise": 0, "exact-reduce": 0, "sum-reduce": 0}
failures = []
runs = []  # (graph, its kinds and model, precision, artifact)
for g in range(a.graphs):
    model, kinds = make_graph(rng, g)
    path = os.path.join(a.work, f"property{g}.onnx")
    onnx.save(model, path)
    x, y = edge_inputs(rng)
    np.save(os.path.join(a.work, f"x{g}.npy"), x)
    np.save(os.path.join(a.work, f"y{g}.npy"), y)
    for prec in a.precisions.split(","):
        art = os.path.join(a.work, f"property{g}-{prec}")
        subprocess.run([os.path.join(a.tools, "mpc"), "compile", path, "-o",
                        art, "--precision", prec, "--no-nvcc"], check=True,
                       stdout=subprocess.DEVNULL)
        runs.append((g, kinds, model, prec, art))
# The artifacts' distinct kernels in one host library per batch of them.
BATCH = 12
batches = [[r[4] for r in runs[i:i + BATCH]] for i in range(0, len(runs), BATCH)]
libs = build_libraries(a.cxx, a.src, shim, batches, a.work, "-O0")
for i, (g, kinds, model, prec, art) in enumerate(runs):
    run = run_emulated(a.tools, art, libs[i // BATCH],
                       [f"x={a.work}/x{g}.npy", f"y={a.work}/y{g}.npy"])
    if run.returncode:
        sys.exit(f"property{g} {prec}: {run.stderr.strip()}")
    got = ulps(run.stdout)
    if len(got) != len(kinds):
        sys.exit(f"property{g} {prec}: {len(got)} outputs compared, "
                 f"expected {len(kinds)}")
    for c, (kind, u) in enumerate(zip(kinds, got)):
        totals[kind] += 1
        bound = SUM_ULPS[prec] if kind == "sum-reduce" else 0
        if u is None or u > bound:
            chain = [f"{n.op_type}" for n in model.graph.node
                     if n.output[0].startswith(f"c{c}_") or
                     n.output[0].startswith(f"out{c}")]
            failures.append(f"property{g} {prec} out{c} ({kind}: "
                            f"{' '.join(chain)}): "
                            f"{'NaN mismatch' if u is None else u} ulps "
                            f"(bound {bound})")
print(f"property cases: {sum(totals.values())} ({totals['elementwise']} "
      f"elementwise/cast chains bit-exact, {totals['exact-reduce']} max/min "
      f"reductions bit-exact, {totals['sum-reduce']} sum/mean reductions "
      f"within ulps); failures: {len(failures)}")
for f in failures:
    print("FAIL", f)
sys.exit(1 if failures else 0)
