"""Models whose kernels reach a GPU's grid limits (2^31 - 1 x 65535 x
65535 blocks), for grid-limits.test.

`make DIR` writes DIR/NAME.onnx and seeded inputs DIR/NAME/in/*.npy:
many_heads (a MatMul batched over 70000 products of [2, 8] x [8, 4]),
tall_rows (x [1100000, 8] times a [8, 4] weight: row tiles past 65535),
long_attention (causal ONNX Attention over 4,200,000 tokens at head size
16, compiled only). `check DIR NAME OUTDIR --rtol R` compares OUTDIR/y.npy
with the product in float64 NumPy (normwise: max|mpc - ref| / max|ref|).
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

F = TensorProto.FLOAT
vi = helper.make_tensor_value_info
W = np.random.default_rng(3).standard_normal((8, 4)).astype(np.float32)


def save(d, name, nodes, ins, out, inits=(), opset=17):
    g = helper.make_graph(nodes, name, ins, [out], list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    onnx.checker.check_model(m)
    onnx.save(m, f"{d}/{name}.onnx")


def make(d):
    rng = np.random.default_rng(4)
    save(d, "many_heads", [helper.make_node("MatMul", ["a", "b"], ["y"])],
         [vi("a", F, [70000, 2, 8]), vi("b", F, [70000, 8, 4])],
         vi("y", F, [70000, 2, 4]))
    save(d, "tall_rows", [helper.make_node("MatMul", ["x", "w"], ["y"])],
         [vi("x", F, [1100000, 8])], vi("y", F, [1100000, 4]),
         [numpy_helper.from_array(W, "w")])
    save(d, "long_attention",
         [helper.make_node("Attention", ["q", "k", "v"], ["y"], is_causal=1)],
         [vi(n, F, [1, 1, 4200000, 16]) for n in "qkv"],
         vi("y", F, [1, 1, 4200000, 16]), opset=23)
    for name, shapes in (("many_heads", {"a": (70000, 2, 8), "b": (70000, 8, 4)}),
                         ("tall_rows", {"x": (1100000, 8)})):
        os.makedirs(f"{d}/{name}/in", exist_ok=True)
        for n, s in shapes.items():
            np.save(f"{d}/{name}/in/{n}.npy", rng.standard_normal(s).astype(np.float32))


def check(d, name, out, rtol):
    ins = {f[:-4]: np.load(f"{d}/{name}/in/{f}").astype(np.float64)
           for f in os.listdir(f"{d}/{name}/in")}
    ref = ins["a"] @ ins["b"] if name == "many_heads" else ins["x"] @ W.astype(np.float64)
    got = np.load(f"{out}/y.npy").astype(np.float64)
    assert got.shape == ref.shape, (got.shape, ref.shape)
    err = np.abs(got - ref).max() / np.abs(ref).max()
    print(f"{name}: {err:.2e} {'ok' if err <= rtol else 'TOO FAR'}")


if __name__ == "__main__":
    if sys.argv[1] == "make":
        make(sys.argv[2])
    else:
        check(sys.argv[2], sys.argv[3], sys.argv[4], float(sys.argv[6]))
