"""An opset-23 transformer block built from the new ops (RMSNormalization,
RotaryEmbedding plain and interleaved, Attention with grouped-query heads,
a causal and a boolean padding mask and a softcap) and
checked three ways: `mpc run` against onnxruntime, `mpc grad` against central
differences of onnx's reference evaluator on a float64 copy of the model,
and `mpc train` lowering the loss in fp32, fp16 and bf16.

usage: opset23_block.py MPC WORKDIR [--no-softcap | --flex FORM]
(without the softcap, mpc-fuse-attention fuses the Attention: the model is
written as block-fused.onnx). --flex writes the attention as FlexAttention
(ai.onnx.preview) on 4-D heads, its score_mod and prob_mod spelled as
exporters write them, no padding mask; the model is block-flex-FORM.onnx:
  alibi    score_mod: causal where() and an ALiBi bias (fuses)
  softcap  score_mod: a softcap, then causal (fuses)
  probmod  score_mod: a constant bias; prob_mod: probabilities * 0.9 (stays
           unfused)
onnx's reference evaluator is then the forward reference (onnxruntime has
no FlexAttention).
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
flex = sys.argv[sys.argv.index("--flex") + 1] if "--flex" in sys.argv else None
softcap = {} if "--no-softcap" in sys.argv[3:] or flex else {"softcap": 4.0}
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


def modifier(name, body):
    """A score_mod or prob_mod graph from ONNX text: `s` in, `out` out."""
    return onnx.parser.parse_graph(
        f"{name} (float[B,H,L,S] s) => (float[B,H,L,S] out) {{ {body} }}")


# Causal as the onnx node tests and torch's mask_mod write it: q_idx >=
# kv_idx from Range over the scores' own shape.
CAUSAL = """
    shape = Shape (s)
    L = Shape <start = 2, end = 3> (s)
    N = Shape <start = 3, end = 4> (s)
    zero = Constant <value = int64 {0}> ()
    one = Constant <value = int64 {1}> ()
    L0 = Squeeze (L)
    N0 = Squeeze (N)
    qr = Range (zero, L0, one)
    kr = Range (zero, N0, one)
    qcol = Constant <value = int64[2] {-1, 1}> ()
    krow = Constant <value = int64[2] {1, -1}> ()
    qi = Reshape (qr, qcol)
    ki = Reshape (kr, krow)
    keep = GreaterOrEqual (qi, ki)
    ninf = Constant <value = float {-inf}> ()"""
FLEX_MODS = {
    "alibi": {"score_mod": modifier("alibi", CAUSAL + """
    rel = Sub (ki, qi)
    relf = Cast <to = 1> (rel)
    slope = Constant <value = float[1,4,1,1] {0.5, 0.25, 0.125, 0.0625}> ()
    bias = Mul (relf, slope)
    biased = Add (s, bias)
    out = Where (keep, biased, ninf)""")},
    "softcap": {"score_mod": modifier("softcap", CAUSAL + """
    cap = Constant <value = float {4.0}> ()
    t = Div (s, cap)
    th = Tanh (t)
    capped = Mul (th, cap)
    out = Where (keep, capped, ninf)""")},
    "probmod": {"score_mod": modifier("bias", """
    b = Constant <value = float {0.5}> ()
    out = Add (s, b)"""),
                "prob_mod": modifier("damp", """
    f = Constant <value = float {0.9}> ()
    out = Mul (s, f)""")},
}
if flex:
    # The attention on 4-D heads: (B, S, heads * HEAD) -> (B, heads, S, HEAD)
    # and back.
    at = [i for i, n in enumerate(nodes) if n.op_type == "Attention"][0]
    heads = [helper.make_node("Constant", [], ["qs"], value=numpy_helper.from_array(
                 np.array([B, S, QH, HEAD], np.int64))),
             helper.make_node("Constant", [], ["kvs"], value=numpy_helper.from_array(
                 np.array([B, S, KVH, HEAD], np.int64))),
             helper.make_node("Constant", [], ["as"], value=numpy_helper.from_array(
                 np.array([B, S, D], np.int64)))]
    for name, shape in (("q", "qs"), ("k", "kvs"), ("v", "kvs")):
        heads += [helper.make_node("Reshape", [name, shape], [name + "4"]),
                  helper.make_node("Transpose", [name + "4"], [name + "h"],
                                   perm=[0, 2, 1, 3])]
    heads += [helper.make_node("FlexAttention", ["qh", "kh", "vh"], ["ah"],
                               domain="ai.onnx.preview", **FLEX_MODS[flex]),
              helper.make_node("Transpose", ["ah"], ["a4"], perm=[0, 2, 1, 3]),
              helper.make_node("Reshape", ["a4", "as"], ["a"])]
    nodes[at:at + 1] = heads

graph = helper.make_graph(
    nodes, "block",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, [B, S, D]),
     helper.make_tensor_value_info("target", TensorProto.FLOAT, [B, S, D])] +
    ([] if flex else
     [helper.make_tensor_value_info("mask", TensorProto.BOOL, [B, 1, S, S])]),
    [helper.make_tensor_value_info("loss", TensorProto.FLOAT, []),
     helper.make_tensor_value_info("y", TensorProto.FLOAT, [B, S, D])],
    params + caches)
model = helper.make_model(
    graph, opset_imports=[helper.make_opsetid("", 23)] +
    ([helper.make_opsetid("ai.onnx.preview", 1)] if flex else []))
onnx.checker.check_model(model, full_check=True)
path = os.path.join(work, f"block-flex-{flex}.onnx" if flex else
                    "block.onnx" if softcap else "block-fused.onnx")
onnx.save(model, path)

x = rng.standard_normal((B, S, D)).astype(np.float32)
target = rng.standard_normal((B, S, D)).astype(np.float32)
mask = np.ones((B, 1, S, S), dtype=bool)
mask[1, ..., 2] = mask[1, ..., 4] = False  # padding keys of sample 1
feeds = []
for name, value in (("x", x), ("target", target)) + \
        ((("mask", mask),) if not flex else ()):
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
if flex:
    want = ReferenceEvaluator(model).run(None, {"x": x, "target": target})
else:
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


def widen_modifiers(nodes):
    """FlexAttention's score_mod and prob_mod in double as well: their
    signature, float Constants and Casts to float."""
    for n in nodes:
        for a in n.attribute:
            if a.type == onnx.AttributeProto.GRAPH:
                for v in list(a.g.input) + list(a.g.output):
                    v.type.tensor_type.elem_type = TensorProto.DOUBLE
                widen_modifiers(a.g.node)
            elif n.op_type == "Constant" and a.t.data_type == TensorProto.FLOAT:
                a.t.CopyFrom(numpy_helper.from_array(
                    numpy_helper.to_array(a.t).astype(np.float64)))
            elif n.op_type == "Cast" and a.name == "to" and \
                    a.i == TensorProto.FLOAT:
                a.i = TensorProto.DOUBLE


widen_modifiers(double.graph.node)
ref = ReferenceEvaluator(double)
fixed = {"x": x.astype(np.float64), "target": target.astype(np.float64)}
if not flex:
    fixed["mask"] = mask


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
