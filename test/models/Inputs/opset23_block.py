"""An opset-23 transformer block built from the new ops (RMSNormalization,
RotaryEmbedding plain and interleaved, Attention with grouped-query heads,
a causal and a boolean padding mask and a softcap) and
checked three ways: `mpc run` against onnxruntime, `mpc grad` against central
differences of onnx's reference evaluator on a float64 copy of the model,
and `mpc train` lowering the loss in fp32, fp16 and bf16.

usage: opset23_block.py MPC WORKDIR [--no-softcap]
(without the softcap, mpc-fuse-attention fuses the Attention: the model is
written as block-fused.onnx)
"""
import json
import os
import subprocess
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

mpc, work = sys.argv[1], sys.argv[2]
softcap = {} if "--no-softcap" in sys.argv[3:] else {"softcap": 4.0}
B, S, D, QH, KVH = 2, 6, 16, 4, 2
HEAD = D // QH
rng = np.random.default_rng(0)


def init(name, shape, scale=0.3):
    return numpy_helper.from_array(
        (rng.standard_normal(shape) * scale).astype(np.float32), name)


params = [init("w_q", [D, D]), init("w_k", [D, KVH * HEAD]),
          init("w_v", [D, KVH * HEAD]), init("w_o", [D, D]),
          numpy_helper.from_array(
              (1 + 0.1 * rng.standard_normal(D)).astype(np.float32), "norm")]
angles = np.arange(S)[:, None] / 10000 ** (np.arange(HEAD // 2) / (HEAD // 2))
caches = [numpy_helper.from_array(np.cos(angles).astype(np.float32), "cos"),
          numpy_helper.from_array(np.sin(angles).astype(np.float32), "sin"),
          numpy_helper.from_array(
              np.tile(np.arange(S, dtype=np.int64), (B, 1)), "pos")]
nodes = [
    helper.make_node("RMSNormalization", ["x", "norm"], ["h"], epsilon=1e-5),
    helper.make_node("MatMul", ["h", "w_q"], ["q0"]),
    helper.make_node("MatMul", ["h", "w_k"], ["k0"]),
    helper.make_node("MatMul", ["h", "w_v"], ["v"]),
    helper.make_node("RotaryEmbedding", ["q0", "cos", "sin", "pos"], ["q"],
                     num_heads=QH),
    helper.make_node("RotaryEmbedding", ["k0", "cos", "sin", "pos"], ["k"],
                     num_heads=KVH, interleaved=1),
    helper.make_node("Attention", ["q", "k", "v", "mask"], ["a"], is_causal=1,
                     q_num_heads=QH, kv_num_heads=KVH, **softcap),
    helper.make_node("MatMul", ["a", "w_o"], ["o"]),
    helper.make_node("Add", ["x", "o"], ["y"]),
    helper.make_node("Sub", ["y", "target"], ["e"]),
    helper.make_node("Mul", ["e", "e"], ["e2"]),
    helper.make_node("ReduceMean", ["e2"], ["loss"], keepdims=0),
]
graph = helper.make_graph(
    nodes, "block",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, [B, S, D]),
     helper.make_tensor_value_info("target", TensorProto.FLOAT, [B, S, D]),
     helper.make_tensor_value_info("mask", TensorProto.BOOL, [B, 1, S, S])],
    [helper.make_tensor_value_info("loss", TensorProto.FLOAT, []),
     helper.make_tensor_value_info("y", TensorProto.FLOAT, [B, S, D])],
    params + caches)
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 23)])
onnx.checker.check_model(model, full_check=True)
path = os.path.join(work, "block.onnx" if softcap else "block-fused.onnx")
onnx.save(model, path)

x = rng.standard_normal((B, S, D)).astype(np.float32)
target = rng.standard_normal((B, S, D)).astype(np.float32)
mask = np.ones((B, 1, S, S), dtype=bool)
mask[1, ..., 2] = mask[1, ..., 4] = False  # padding keys of sample 1
feeds = []
for name, value in (("x", x), ("target", target), ("mask", mask)):
    np.save(os.path.join(work, name + ".npy"), value)
    feeds += ["--input", f"{name}={os.path.join(work, name + '.npy')}"]

worst = {"forward": 0.0, "grad": 0.0}
ok = True


def report(kind, what, err, bound):
    global ok
    worst[kind] = max(worst[kind], err)
    ok &= err <= bound
    print(f"{kind} {what}: relative error {err:.2e} "
          f"{'ok' if err <= bound else 'FAIL'}")


# Forward against onnxruntime.
out = os.path.join(work, "run")
subprocess.run([mpc, "run", path, "--output-dir", out] + feeds, check=True,
               stdout=subprocess.DEVNULL)
want = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(
    None, {"x": x, "target": target, "mask": mask})
for name, w in zip(("loss", "y"), want):
    got = np.load(os.path.join(out, name + ".npy"))
    report("forward", name, float(np.abs(got - w).max() / np.abs(w).max()),
           1e-5)

# Gradients against central differences in float64: a copy of the model
# with every tensor in double and the parameters as inputs, so one reference
# evaluator serves all the perturbed runs.
double = onnx.ModelProto()
double.CopyFrom(model)
values = {}
for t in list(double.graph.initializer):
    if t.data_type == TensorProto.FLOAT:
        value = numpy_helper.to_array(t).astype(np.float64)
        if t.name in {p.name for p in params}:
            values[t.name] = value
            double.graph.initializer.remove(t)
            double.graph.input.append(helper.make_tensor_value_info(
                t.name, TensorProto.DOUBLE, value.shape))
        else:
            t.CopyFrom(numpy_helper.from_array(value, t.name))
for v in list(double.graph.input) + list(double.graph.output):
    if v.type.tensor_type.elem_type == TensorProto.FLOAT:
        v.type.tensor_type.elem_type = TensorProto.DOUBLE
ref = ReferenceEvaluator(double)
fixed = {"x": x.astype(np.float64), "target": target.astype(np.float64),
         "mask": mask}


def loss_at(name, value):
    return float(ref.run(["loss"], {**fixed, **values, name: value})[0])


grads = os.path.join(work, "grads")
subprocess.run([mpc, "grad", path, "--output-dir", grads] + feeds,
               check=True, stdout=subprocess.DEVNULL)
for p in params:
    got = np.load(os.path.join(grads, p.name + ".npy"))
    base = values[p.name]
    fd = np.zeros_like(base)
    h = 1e-6
    for i in np.ndindex(base.shape):
        up, down = base.copy(), base.copy()
        up[i] += h
        down[i] -= h
        fd[i] = (loss_at(p.name, up) - loss_at(p.name, down)) / (2 * h)
    report("grad", p.name, float(np.abs(got - fd).max() / np.abs(fd).max()),
           1e-4)

# Training: 40 Adam steps lower the loss tenfold in fp32, and fp16 and bf16
# (mixed precision, FP32 masters) end within 2% of fp32.
final = {}
for prec in ("fp32", "fp16", "bf16"):
    metrics = os.path.join(work, f"train-{prec}.jsonl")
    subprocess.run([mpc, "train", path, "--batch", str(B), "--steps", "40",
                    "--optimizer", "adam", "--lr", "0.01", "--precision", prec,
                    "--metrics", metrics] +
                   [f"--data={f}" for f in feeds[1::2]],
                   check=True, stdout=subprocess.DEVNULL)
    losses = [json.loads(line)["loss"] for line in open(metrics)]
    final[prec] = losses[-1]
    good = losses[-1] < losses[0] / 10 and \
        abs(losses[-1] - final["fp32"]) <= 0.02 * final["fp32"]
    ok &= good
    print(f"train {prec}: loss {losses[0]:.4f} -> {losses[-1]:.4f} "
          f"{'ok' if good else 'FAIL'}")

print(f"worst forward {worst['forward']:.2e} (bound 1e-05), "
      f"worst grad {worst['grad']:.2e} (bound 0.0001)")
sys.exit(0 if ok else 1)
