"""Losses that torch exports as log(sigmoid) / log(1 - sigmoid) (BCE with
logits) and log(softmax) (cross-entropy), fed logits of +-20: `mpc grad` in
fp16 and bf16 must give finite losses and gradients equal to the exact ones
(float64 NumPy) within low-precision tolerance, as FP32 does.

The models are written node for node as torch 1.13 exports them
(binary_cross_entropy_with_logits: Sigmoid, Log, Sub(1, .), Log, Mul, Mul,
Add, Neg, ReduceMean).

usage: stable_losses.py MPC WORKDIR
"""
import os
import subprocess
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper

mpc, work = sys.argv[1], sys.argv[2]
rng = np.random.default_rng(3)
mk = helper.make_node
F = TensorProto.FLOAT


def save(name, nodes, inits, inputs):
    g = helper.make_graph(nodes, name, inputs,
                          [helper.make_tensor_value_info("loss", F, [])],
                          [numpy_helper.from_array(v, k)
                           for k, v in inits.items()])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    path = os.path.join(work, name + ".onnx")
    open(path, "wb").write(m.SerializeToString())
    return path


def sigmoid(z):
    return 1 / (1 + np.exp(-z))


def softplus(z):
    return np.maximum(z, 0) + np.log1p(np.exp(-np.abs(z)))


# BCE with logits: z = x W^T + b, |z| about 20, half the labels wrong.
n, k = 16, 4
x = rng.choice([-1.0, 1.0], (n, k)).astype(np.float32)
x[:, 1:] *= 0.25
W = np.array([[20, 0.5, -0.5, 0.25]], np.float32)
b = np.array([0.125], np.float32)
t = rng.integers(0, 2, (n, 1)).astype(np.float32)
bce = save("bce", [
    mk("Gemm", ["x", "W", "b"], ["z"], transB=1),
    mk("Sigmoid", ["z"], ["s"]), mk("Log", ["s"], ["ls"]),
    mk("Constant", [], ["one"], value=numpy_helper.from_array(
        np.array([1.0], np.float32))),
    mk("Sub", ["one", "s"], ["s1"]),
    mk("Constant", [], ["one_t"], value=numpy_helper.from_array(
        np.array([1.0], np.float32))),
    mk("Sub", ["one_t", "t"], ["t1"]), mk("Log", ["s1"], ["l1"]),
    mk("Mul", ["t", "ls"], ["a"]), mk("Mul", ["t1", "l1"], ["c"]),
    mk("Add", ["a", "c"], ["sum"]), mk("Neg", ["sum"], ["nsum"]),
    mk("ReduceMean", ["nsum"], ["loss"], keepdims=0)],
    {"W": W, "b": b},
    [helper.make_tensor_value_info("x", F, [n, k]),
     helper.make_tensor_value_info("t", F, [n, 1])])
z = x.astype(np.float64) @ W.T.astype(np.float64) + b
want_bce = {"loss": np.mean(softplus(z) - t * z),
            "W": ((sigmoid(z) - t).T @ x) / n,
            "b": np.mean(sigmoid(z) - t, axis=0)}

# Cross-entropy as NLL of log(softmax): logits of +-20 over 5 classes.
c = 5
xs = rng.standard_normal((n, 3)).astype(np.float32)
Wc = (rng.choice([-1.0, 1.0], (3, c)) * 7).astype(np.float32)
labels = rng.integers(0, c, n).astype(np.int64)
ce = save("ce", [
    mk("MatMul", ["x", "W"], ["z"]), mk("Softmax", ["z"], ["p"], axis=1),
    mk("Log", ["p"], ["lp"]),
    mk("NegativeLogLikelihoodLoss", ["lp", "y"], ["loss"])],
    {"W": Wc},
    [helper.make_tensor_value_info("x", F, [n, 3]),
     helper.make_tensor_value_info("y", TensorProto.INT64, [n])])
zc = xs.astype(np.float64) @ Wc.astype(np.float64)
zs = zc - zc.max(1, keepdims=True)
lsm = zs - np.log(np.exp(zs).sum(1, keepdims=True))
onehot = np.eye(c)[labels]
want_ce = {"loss": -np.mean(lsm[np.arange(n), labels]),
           "W": xs.T.astype(np.float64) @ (np.exp(lsm) - onehot) / n}

print(f"bce logits reach {np.abs(z).max():.1f}; ce logits reach "
      f"{np.abs(zc).max():.1f}")
feeds = {"bce": {"x": x, "t": t}, "ce": {"x": xs, "y": labels}}
failed = 0
for name, path, want in [("bce", bce, want_bce), ("ce", ce, want_ce)]:
    args = []
    for k_, v in feeds[name].items():
        f = os.path.join(work, f"{name}.{k_}.npy")
        np.save(f, v)
        args += ["--input", f"{k_}={f}"]
    for prec, tol in [("fp32", 1e-5), ("fp16", 1e-2), ("bf16", 4e-2)]:
        out = os.path.join(work, f"{name}-{prec}")
        # No loss scale: the check is of the loss's own arithmetic.
        p = subprocess.run([mpc, "grad", path, "--precision", prec,
                            "--loss-scale", "none", "--output-dir", out]
                           + args, capture_output=True, text=True)
        if p.returncode:
            print(f"{name} {prec}: mpc grad failed: {p.stderr.strip()}")
            failed += 1
            continue
        # stdout: "loss  f32  []  min V  max V  mean V"
        line = next(l for l in p.stdout.splitlines() if l.startswith("loss "))
        loss = float(line.split("min")[1].split()[0])
        errs = [abs(loss - want["loss"]) / abs(want["loss"])]
        finite = np.isfinite(loss)
        for param in [k_ for k_ in want if k_ != "loss"]:
            got = np.load(os.path.join(out, param + ".npy")).astype(np.float64)
            finite &= bool(np.isfinite(got).all())
            errs.append(np.abs(got - want[param]).max() /
                        np.abs(want[param]).max())
        ok = finite and max(errs) <= tol
        failed += not ok
        print(f"{name} {prec}: loss {loss:.6g} (exact {want['loss']:.6g}), "
              f"{'finite' if finite else 'NOT FINITE'}, worst relative "
              f"error {max(errs):.1e} {'ok' if ok else 'FAIL'}")

# mpc convert does the same rewrite in the ONNX it writes: onnxruntime runs
# the fp16 model to a finite loss.
import onnxruntime as ort  # noqa: E402

for name, path, want in [("bce", bce, want_bce), ("ce", ce, want_ce)]:
    out = os.path.join(work, name + "-fp16.onnx")
    p = subprocess.run([mpc, "convert", path, "--precision", "fp16",
                        "--keep-io-types", "-o", out],
                       capture_output=True, text=True)
    if p.returncode:
        print(f"{name} convert: failed: {p.stderr.strip()}")
        failed += 1
        continue
    print(p.stdout.strip().splitlines()[-1])
    opts = ort.SessionOptions()
    opts.log_severity_level = 3
    loss = float(ort.InferenceSession(out, opts, providers=[
        "CPUExecutionProvider"]).run(None, feeds[name])[0])
    err = abs(loss - want["loss"]) / abs(want["loss"])
    ok = np.isfinite(loss) and err <= 1e-2
    failed += not ok
    print(f"{name} convert fp16 in onnxruntime: loss {loss:.6g}, relative "
          f"error {err:.1e} {'ok' if ok else 'FAIL'}")
sys.exit(1 if failed else 0)
