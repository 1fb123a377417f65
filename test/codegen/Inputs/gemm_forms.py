"""GEMM forms the CUDA backend hands to cuBLASLt (or keeps on its kernel),
in one model: Gemm with transposes, alpha and beta over a full C matrix,
with a bias row (the BIAS epilogue), with a Relu after it (RELU_BIAS),
with a column C (no epilogue for it: the kernel), with both operands
transposed; MatMul batched with
both operands batched, with a shared right operand (batch stride 0), with
a shared left operand, and with a partial broadcast (no single batch
stride: the kernel).

`make DIR [--dims M,K,N,B]` writes DIR/gemm_forms.onnx and seeded inputs
DIR/in/*.npy (A is M x K, B K x N, B batches; default 24,40,20,3).
`check DIR OUTDIR --rtol R` compares the .npy outputs mpc wrote to
OUTDIR with onnxruntime's on the same inputs: per output the normwise
error max|mpc - ort| / max|ort|, which must stay under R.
"""
import os
import sys

import numpy as np

def model(M=24, K=40, N=20, B=3):
    # (onnx only to build the model: `check` runs without its 0.3 s import.)
    from onnx import TensorProto, helper
    mk = helper.make_node
    f = TensorProto.FLOAT
    vi = helper.make_tensor_value_info
    nodes = [
        mk("Gemm", ["a", "bt", "c_full"], ["gemm_full"], transB=1, alpha=0.5, beta=2.0),
        mk("Gemm", ["at", "b", "c_row"], ["gemm_bias"], transA=1),
        mk("Gemm", ["a", "b", "c_row"], ["pre"]),
        mk("Relu", ["pre"], ["gemm_relu_bias"]),
        mk("Gemm", ["a", "b", "c_col"], ["gemm_col"]),
        mk("MatMul", ["x3", "y3"], ["mm_batched"]),
        mk("MatMul", ["x3", "b"], ["mm_shared_right"]),
        mk("MatMul", ["a", "y3"], ["mm_shared_left"]),
        mk("MatMul", ["x4", "y4"], ["mm_partial"]),
        mk("Gemm", ["at", "bt"], ["gemm_tt"], transA=1, transB=1),
    ]
    inputs = [vi("a", f, [M, K]), vi("at", f, [K, M]), vi("b", f, [K, N]),
              vi("bt", f, [N, K]), vi("c_full", f, [M, N]), vi("c_row", f, [N]),
              vi("c_col", f, [M, 1]), vi("x3", f, [B, M, K]), vi("y3", f, [B, K, N]),
              vi("x4", f, [2, 1, M, K]), vi("y4", f, [1, B, K, N])]
    outputs = [vi("gemm_full", f, [M, N]), vi("gemm_bias", f, [M, N]),
               vi("gemm_relu_bias", f, [M, N]), vi("gemm_col", f, [M, N]),
               vi("mm_batched", f, [B, M, N]), vi("mm_shared_right", f, [B, M, N]),
               vi("mm_shared_left", f, [B, M, N]), vi("mm_partial", f, [2, B, M, N]),
               vi("gemm_tt", f, [M, N])]
    g = helper.make_graph(nodes, "gemm_forms", inputs, outputs)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def make(d, dims):
    os.makedirs(f"{d}/in", exist_ok=True)
    m = model(*dims)
    with open(f"{d}/gemm_forms.onnx", "wb") as f:
        f.write(m.SerializeToString())
    rng = np.random.default_rng(7)
    for i in m.graph.input:
        shape = [x.dim_value for x in i.type.tensor_type.shape.dim]
        np.save(f"{d}/in/{i.name}.npy", rng.standard_normal(shape).astype(np.float32))


def check(d, out, rtol):
    import onnxruntime as ort
    s = ort.InferenceSession(f"{d}/gemm_forms.onnx", providers=["CPUExecutionProvider"])
    feeds = {i.name: np.load(f"{d}/in/{i.name}.npy") for i in s.get_inputs()}
    want = dict(zip([o.name for o in s.get_outputs()], s.run(None, feeds)))
    ok = True
    for name, ref in want.items():
        got = np.load(f"{out}/{name}.npy").astype(np.float64)
        err = float(np.max(np.abs(got - ref)) / np.max(np.abs(ref))) if got.shape == ref.shape else np.inf
        good = err <= rtol
        ok &= good
        print(f"{name}: {err:.2e} {'ok' if good else 'FAIL'}")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    if sys.argv[1] == "make":
        dims = sys.argv[sys.argv.index("--dims") + 1] if "--dims" in sys.argv else "24,40,20,3"
        make(sys.argv[2], [int(v) for v in dims.split(",")])
    else:
        check(sys.argv[2], sys.argv[3], float(sys.argv[sys.argv.index("--rtol") + 1]))
